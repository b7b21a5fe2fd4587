//===- CommandLine.h - llvm::cl command lines with --config -----*- C++ -*-===//
//
// --config=FILE for tools whose options are llvm::cl options: the TOML
// file's keys are the names of the options in the tool's category (and
// `positionalKey` for its positional argument); each is checked against the
// registered option and its type, then turned into "--key=value" and put
// before the real command line, which therefore wins. Every option works in
// a config without code of its own.
//
//===----------------------------------------------------------------------===//

#ifndef GLIMMER_SUPPORT_COMMANDLINE_H
#define GLIMMER_SUPPORT_COMMANDLINE_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/CommandLine.h"

#include <string>

namespace glimmer {

/// Registers --config in `category` and parses the command line, settings
/// from the config file first. A config's `positionalKey` (e.g. "model")
/// sets `positional` when the command line does not give it. Returns false
/// after printing one error ("tool: error: FILE:LINE: unknown key 'x'")
/// for a config that cannot be read or has a key or value that does not
/// fit; llvm::cl exits by itself on a bad command line.
bool parseCommandLineWithConfig(int argc, char **argv, llvm::StringRef overview,
                                llvm::cl::OptionCategory &category,
                                llvm::cl::opt<std::string> &positional,
                                llvm::StringRef positionalKey);

} // namespace glimmer

#endif // GLIMMER_SUPPORT_COMMANDLINE_H
