//===- Manifest.cpp - What a compiled program declares --------------------===//

#include "glimmer_contract/Manifest.h"

#include <sstream>

using namespace glimmer;

namespace {

std::string join(const std::vector<std::string> &parts) {
  std::string s;
  for (const std::string &p : parts)
    s += (s.empty() ? "" : ",") + p;
  return s.empty() ? "-" : s;
}

std::vector<std::string> split(const std::string &s, char sep) {
  std::vector<std::string> out;
  if (s == "-")
    return out;
  std::stringstream in(s);
  std::string item;
  while (std::getline(in, item, sep))
    out.push_back(item);
  return out;
}

void writeSlot(std::ostringstream &os, const char *kind, const Slot &slot) {
  std::vector<std::string> dims;
  for (int64_t d : slot.shape)
    dims.push_back(std::to_string(d));
  os << kind << ' ' << roleName(slot.role) << ' '
     << (slot.name.empty() ? "-" : slot.name) << ' ' << dtypeName(slot.dtype)
     << ' ' << join(dims) << ' ' << slot.shardingText() << '\n';
}

bool readSlot(std::istringstream &line, Slot &slot, std::string &error) {
  std::string role, name, dtype, shape, sharding;
  if (!(line >> role >> name >> dtype >> shape >> sharding)) {
    error = "a slot line has too few fields";
    return false;
  }
  std::optional<Role> known = roleFromName(role);
  std::optional<DType> type = dtypeFromName(dtype);
  if (!known || !type) {
    error = "unknown role or dtype in slot '" + name + "'";
    return false;
  }
  slot.role = *known;
  slot.name = name == "-" ? "" : name;
  slot.dtype = *type;
  slot.shape.clear();
  for (const std::string &d : split(shape, ','))
    slot.shape.push_back(std::stoll(d));
  return slot.parseSharding(sharding, slot.shape.size(), error);
}

} // namespace

bool Slot::isSharded() const {
  for (const auto &axes : dimAxes)
    if (!axes.empty())
      return true;
  return false;
}

std::string Slot::shardingText() const {
  if (!isSharded())
    return "-";
  std::string text;
  for (const auto &axes : dimAxes) {
    text += "[";
    for (size_t i = 0; i < axes.size(); ++i)
      text += (i ? "," : "") + axes[i];
    text += "]";
  }
  return text;
}

bool Slot::parseSharding(const std::string &text, size_t rank,
                         std::string &error) {
  dimAxes.clear();
  if (text == "-")
    return true;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t close = text.find(']', pos);
    if (text[pos] != '[' || close == std::string::npos) {
      error = "malformed sharding '" + text + "' of slot '" + name + "'";
      return false;
    }
    std::string inner = text.substr(pos + 1, close - pos - 1);
    dimAxes.push_back(inner.empty() ? std::vector<std::string>{}
                                    : split(inner, ','));
    pos = close + 1;
  }
  if (dimAxes.size() != rank) {
    error = "the sharding '" + text + "' of slot '" + name + "' has " +
            std::to_string(dimAxes.size()) + " dimensions, its shape " +
            std::to_string(rank);
    return false;
  }
  return true;
}

std::string ProgramInfo::toManifest() const {
  std::ostringstream os;
  os << "glimmer-program-manifest 2\n";
  std::string l = layout.print();
  os << "layout " << (l.empty() ? "-" : l) << '\n';
  for (const VisionMergeCheck &v : visionChecks)
    os << "vision " << v.tokensInput << ' ' << v.imageTokenId << ' '
       << v.bankRows << '\n';
  for (const TracedInput &t : tracedInputs)
    os << "traced " << t.name << ' ' << t.digest << '\n';
  for (const auto &[name, fn] : functions) {
    os << "function " << name << '\n';
    for (const Slot &s : fn.arguments)
      writeSlot(os, "arg", s);
    for (const Slot &s : fn.results)
      writeSlot(os, "result", s);
  }
  return os.str();
}

bool ProgramInfo::parseManifest(const std::string &text, ProgramInfo &info,
                                std::string &error) {
  std::istringstream in(text);
  std::string line;
  if (!std::getline(in, line) || line != "glimmer-program-manifest 2") {
    error = "not a glimmer program manifest (version 2)";
    return false;
  }
  Signature *current = nullptr;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string kind;
    fields >> kind;
    try {
      if (kind == "layout") {
        std::string l;
        fields >> l;
        std::string why;
        auto parsed = SpmdContext::parse(l == "-" ? "" : l, &why);
        if (!parsed) {
          error = "bad layout '" + l + "': " + why;
          return false;
        }
        info.layout = *parsed;
      } else if (kind == "vision") {
        VisionMergeCheck v;
        fields >> v.tokensInput >> v.imageTokenId >> v.bankRows;
        info.visionChecks.push_back(v);
      } else if (kind == "traced") {
        TracedInput t;
        fields >> t.name >> t.digest;
        info.tracedInputs.push_back(t);
      } else if (kind == "function") {
        std::string name;
        fields >> name;
        current = &info.functions[name];
      } else if (kind == "arg" || kind == "result") {
        if (!current) {
          error = "a slot before any function";
          return false;
        }
        Slot slot;
        if (!readSlot(fields, slot, error))
          return false;
        (kind == "arg" ? current->arguments : current->results).push_back(slot);
      } else if (!kind.empty()) {
        error = "unknown manifest line '" + line + "'";
        return false;
      }
    } catch (const std::exception &) {
      error = "malformed manifest line '" + line + "'";
      return false;
    }
  }
  return true;
}

std::string glimmer::manifestFunctionSource(const std::string &manifest) {
  // A raw string literal; the delimiter cannot occur in a manifest.
  return "\nextern \"C\" const char *" + std::string(kManifestSymbol) +
         "() {\n"
         "  return R\"glimmer_manifest(" +
         manifest + ")glimmer_manifest\";\n}\n";
}
