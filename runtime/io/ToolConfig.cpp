//===- ToolConfig.cpp - A tool's options read from a TOML file ------------===//

#include "glimmer_rt/ToolConfig.h"
#include "glimmer_rt/ToolArguments.h"

// toml++ (Debian's libtomlplusplus-dev), header-only; errors come back as
// values so the same code builds with and without C++ exceptions.
#define TOML_HEADER_ONLY 1
#define TOML_EXCEPTIONS 0
#include <toml++/toml.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>

using namespace glimmer_rt;

namespace {

const char *typeName(ConfigType type) {
  switch (type) {
  case ConfigType::Bool:
    return "true or false";
  case ConfigType::Integer:
    return "an integer";
  case ConfigType::Number:
    return "a number";
  case ConfigType::String:
    return "a string";
  case ConfigType::StringList:
    return "a string or an array of strings";
  }
  return "";
}

const char *tomlTypeName(const toml::node &node) {
  switch (node.type()) {
  case toml::node_type::table:
    return "a table";
  case toml::node_type::array:
    return "an array";
  case toml::node_type::string:
    return "a string";
  case toml::node_type::integer:
    return "an integer";
  case toml::node_type::floating_point:
    return "a floating-point number";
  case toml::node_type::boolean:
    return "a boolean";
  default:
    return "a date or time";
  }
}

std::string g17(double v) {
  char buf[40];
  std::snprintf(buf, sizeof(buf), "%.17g", v);
  return buf;
}

/// `value` relative to `dir` unless it is absolute, empty or "scheme:...".
std::string resolve(const std::string &dir, const std::string &value) {
  if (value.empty() || value[0] == '/' || dir == ".")
    return value;
  size_t colon = value.find(':');
  if (colon != std::string::npos && colon > 0 && value.find('/') > colon)
    return value;
  return dir + "/" + value;
}

/// The command-line text of `node` for an option of `option`'s type; false
/// when the type does not fit.
bool toValues(const toml::node &node, const ConfigOption &option,
              const std::string &dir, std::vector<std::string> &values) {
  auto text = [&](const std::string &s) {
    values.push_back(option.path ? resolve(dir, s) : s);
  };
  switch (option.type) {
  case ConfigType::Bool:
    if (auto b = node.value_exact<bool>()) {
      values.push_back(*b ? "true" : "false");
      return true;
    }
    return false;
  case ConfigType::Integer:
    if (auto i = node.value_exact<int64_t>()) {
      values.push_back(std::to_string(*i));
      return true;
    }
    return false;
  case ConfigType::Number:
    if (auto i = node.value_exact<int64_t>()) {
      values.push_back(std::to_string(*i));
      return true;
    }
    if (auto d = node.value_exact<double>()) {
      values.push_back(g17(*d));
      return true;
    }
    return false;
  case ConfigType::String:
    if (auto s = node.value_exact<std::string>()) {
      text(*s);
      return true;
    }
    return false;
  case ConfigType::StringList:
    if (auto s = node.value_exact<std::string>()) {
      text(*s);
      return true;
    }
    if (const toml::array *array = node.as_array()) {
      for (const toml::node &element : *array) {
        auto s = element.value_exact<std::string>();
        if (!s)
          return false;
        text(*s);
      }
      return true;
    }
    return false;
  }
  return false;
}

} // namespace

bool glimmer_rt::readToolConfig(
    const std::string &path, const std::string &tool,
    const std::function<std::optional<ConfigOption>(const std::string &)>
        &lookup,
    std::vector<ConfigSetting> &settings, std::string &error) {
  if (!checkInputFile("--config file", path, error))
    return false;
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  if (!in && !in.eof()) {
    error = "cannot read --config file '" + path + "'";
    return false;
  }
  toml::parse_result parsed = toml::parse(text.str(), path);
  if (!parsed) {
    const toml::parse_error &e = parsed.error();
    error = path + ":" + std::to_string(e.source().begin.line) +
            ": not valid TOML: " + std::string(e.description());
    return false;
  }
  size_t slash = path.rfind('/');
  std::string dir = slash == std::string::npos ? "."
                    : slash == 0               ? ""
                                               : path.substr(0, slash);
  // Checked in the file's order (toml++ keeps its table sorted by key), so
  // the first mistake in the file is the one reported.
  struct Entry {
    std::string name;
    int line;
    const toml::node *node;
  };
  std::vector<Entry> entries;
  for (auto &&[key, node] : parsed.table())
    entries.push_back(
        {std::string(key.str()), int(key.source().begin.line), &node});
  std::stable_sort(
      entries.begin(), entries.end(),
      [](const Entry &a, const Entry &b) { return a.line < b.line; });
  for (const Entry &entry : entries) {
    std::string where = path + ":" + std::to_string(entry.line) + ": ";
    std::optional<ConfigOption> option = lookup(entry.name);
    if (!option) {
      error = where + "unknown key '" + entry.name + "' (not an option of " +
              tool + ")";
      return false;
    }
    ConfigSetting setting;
    setting.name = entry.name;
    setting.line = entry.line;
    if (!toValues(*entry.node, *option, dir, setting.values)) {
      error = where + "'" + entry.name + "' must be " + typeName(option->type) +
              ", got " + tomlTypeName(*entry.node);
      return false;
    }
    settings.push_back(std::move(setting));
  }
  return true;
}

std::string
glimmer_rt::findConfigArgument(const std::vector<std::string> &args) {
  std::string config;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string &arg = args[i];
    for (const char *flag : {"--config", "-config"}) {
      std::string prefix = std::string(flag) + "=";
      if (arg.rfind(prefix, 0) == 0)
        config = arg.substr(prefix.size());
      else if (arg == flag && i + 1 < args.size())
        config = args[i + 1];
    }
  }
  return config;
}
