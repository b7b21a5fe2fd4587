//===- CommandLine.cpp - llvm::cl command lines with --config -------------===//

#include "glimmer/Support/CommandLine.h"
#include "glimmer_rt/ToolConfig.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/WithColor.h"

#include <optional>
#include <vector>

using namespace glimmer;
namespace cl = llvm::cl;

namespace {

/// The TOML type an option's values have, from its C++ type.
glimmer_rt::ConfigType configType(cl::Option &option) {
  using glimmer_rt::ConfigType;
  if (dynamic_cast<cl::opt<bool> *>(&option))
    return ConfigType::Bool;
  if (dynamic_cast<cl::opt<int> *>(&option) ||
      dynamic_cast<cl::opt<unsigned> *>(&option) ||
      dynamic_cast<cl::opt<long> *>(&option) ||
      dynamic_cast<cl::opt<unsigned long> *>(&option) ||
      dynamic_cast<cl::opt<long long> *>(&option) ||
      dynamic_cast<cl::opt<unsigned long long> *>(&option))
    return ConfigType::Integer;
  if (dynamic_cast<cl::opt<double> *>(&option) ||
      dynamic_cast<cl::opt<float> *>(&option))
    return ConfigType::Number;
  if (option.isPositional() || option.getMiscFlags() & cl::CommaSeparated ||
      option.getNumOccurrencesFlag() == cl::ZeroOrMore ||
      option.getNumOccurrencesFlag() == cl::OneOrMore)
    return ConfigType::StringList;
  // Strings, and enumerations, whose values llvm::cl checks.
  return ConfigType::String;
}

/// Whether `args` (the real command line, without argv[0]) names option
/// `name` ("--name", "-name", "--name=...").
bool namesOption(llvm::ArrayRef<std::string> args, llvm::StringRef name) {
  return llvm::any_of(args, [&](llvm::StringRef arg) {
    if (!arg.consume_front("-"))
      return false;
    arg.consume_front("-");
    return arg == name || arg.starts_with((name + "=").str());
  });
}

} // namespace

bool glimmer::parseCommandLineWithConfig(int argc, char **argv,
                                         llvm::StringRef overview,
                                         cl::OptionCategory &category,
                                         cl::opt<std::string> &positional,
                                         llvm::StringRef positionalKey) {
  static cl::opt<std::string> configPath(
      "config",
      cl::desc("Read options from this TOML file (keys: the option names; "
               "relative paths resolve against the file's directory); the "
               "command line overrides it"),
      cl::value_desc("file"), cl::cat(category));
  std::string tool = llvm::sys::path::filename(argv[0]).str();
  std::vector<std::string> args(argv + 1, argv + argc);
  std::string path = glimmer_rt::findConfigArgument(args);
  if (path.empty())
    return cl::ParseCommandLineOptions(argc, argv, overview);

  auto options = cl::getRegisteredOptions();
  auto lookup =
      [&](const std::string &key) -> std::optional<glimmer_rt::ConfigOption> {
    if (key == positionalKey)
      return glimmer_rt::ConfigOption{glimmer_rt::ConfigType::String, true};
    auto it = options.find(key);
    if (key == "config" || it == options.end() ||
        !llvm::is_contained(it->second->Categories, &category))
      return std::nullopt;
    cl::Option &option = *it->second;
    // Options whose value is a file or directory say so in their help
    // (`file`, `dir`, or alternatives such as `file|dir|glob`).
    llvm::SmallVector<llvm::StringRef> kinds;
    option.ValueStr.split(kinds, '|');
    bool isPath = llvm::any_of(
        kinds, [](llvm::StringRef k) { return k == "file" || k == "dir"; });
    return glimmer_rt::ConfigOption{configType(option), isPath};
  };
  std::vector<glimmer_rt::ConfigSetting> settings;
  std::string error;
  if (!glimmer_rt::readToolConfig(path, tool, lookup, settings, error)) {
    llvm::WithColor::error(llvm::errs(), tool) << error << "\n";
    return false;
  }

  std::vector<std::string> merged{argv[0]};
  std::optional<std::string> configPositional;
  for (const glimmer_rt::ConfigSetting &setting : settings) {
    if (setting.name == positionalKey) {
      configPositional = setting.values.front();
      continue;
    }
    // A repeatable option given on the command line replaces the config's
    // values rather than adding to them.
    if (options.lookup(setting.name)->getNumOccurrencesFlag() != cl::Optional &&
        namesOption(args, setting.name))
      continue;
    for (const std::string &value : setting.values)
      merged.push_back("--" + setting.name + "=" + value);
  }
  merged.insert(merged.end(), args.begin(), args.end());
  // The positional argument is set after parsing, when the command line
  // has none; the parser must not require it meanwhile.
  if (configPositional)
    positional.setNumOccurrencesFlag(cl::Optional);
  std::vector<const char *> pointers;
  for (const std::string &arg : merged)
    pointers.push_back(arg.c_str());
  if (!cl::ParseCommandLineOptions(int(pointers.size()), pointers.data(),
                                   overview))
    return false;
  if (configPositional && positional.getNumOccurrences() == 0)
    positional.setValue(*configPositional);
  return true;
}
