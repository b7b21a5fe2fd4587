//===- ToolConfig.h - A tool's options read from a TOML file ----*- C++ -*-===//
//
// --config=FILE: a TOML table whose keys are a tool's option names (and the
// name of its positional argument), e.g.
//
//   model = "reference_vlm.pt"
//   data = "reference_vlm.batch.safetensors"
//   spmd = "dp_shard=2,cp=2"
//   steps = 10
//   forward-only = false
//
// Each key is checked against the options the tool has and each value
// against the option's type; the settings come back as the values the
// command line would carry, which the tool puts before the real command
// line so that the latter wins. Relative paths resolve against the config
// file's directory.
//
//===----------------------------------------------------------------------===//

#ifndef GLIMMER_RT_TOOLCONFIG_H
#define GLIMMER_RT_TOOLCONFIG_H

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace glimmer_rt {

/// What an option's value is, as written in TOML.
enum class ConfigType {
  Bool,       // true / false (a flag)
  Integer,    // 10
  Number,     // 1e-3 or 1
  String,     // "cp=2"
  StringList, // ["a", "b"] (a repeatable option; a single string also does)
};

struct ConfigOption {
  ConfigType type = ConfigType::String;
  /// The value names a file or directory: a relative one is taken relative
  /// to the config file's directory. A value of the form "scheme:..."
  /// ("synthetic:batch=2") is not a path and is kept.
  bool path = false;
};

struct ConfigSetting {
  std::string name;
  /// The option's value(s) as command-line text ("10", "true", "/abs/x").
  std::vector<std::string> values;
  int line = 0;
};

/// Reads the TOML file `path`. `lookup` says whether a key is an option of
/// `tool` and of which type. False and `error` ("FILE:LINE: unknown key 'x'
/// (not an option of glimmer-train)") on a file that cannot be read, a
/// TOML syntax error, an unknown key or a value of the wrong type.
bool readToolConfig(
    const std::string &path, const std::string &tool,
    const std::function<std::optional<ConfigOption>(const std::string &)>
        &lookup,
    std::vector<ConfigSetting> &settings, std::string &error);

/// The value of --config in `args` ("--config=F", "-config=F", "--config F");
/// empty when none.
std::string findConfigArgument(const std::vector<std::string> &args);

} // namespace glimmer_rt

#endif // GLIMMER_RT_TOOLCONFIG_H
