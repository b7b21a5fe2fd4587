//===- ToolArguments.h - Files named on a tool's command line ---*- C++ -*-===//
//
// The checks every command-line tool runs on the files a user hands it,
// before any work starts, so that a directory, an empty or unreadable file,
// or an output path that cannot be written gives one clear message instead
// of a failure deep in an importer or after minutes of compiling.
//
//===----------------------------------------------------------------------===//

#ifndef GLIMMER_RT_TOOLARGUMENTS_H
#define GLIMMER_RT_TOOLARGUMENTS_H

#include <string>

namespace glimmer_rt {

/// Checks that `path`, given as `what` ("--tp-plan", "the model"), names a
/// readable, non-empty file (not a directory). False and `error` ("what
/// 'path' is a directory, not a file") otherwise. The file's format is left
/// to its reader.
bool checkInputFile(const std::string &what, const std::string &path,
                    std::string &error);

/// Checks that `path`, given as `what` ("--save"), can be written: an
/// existing file (not a directory) that opens for writing, or a new name in
/// an existing directory this user may write. Nothing is created or
/// truncated. False and `error` ("cannot write --save file 'path': ...")
/// otherwise.
bool checkOutputFile(const std::string &what, const std::string &path,
                     std::string &error);

} // namespace glimmer_rt

#endif // GLIMMER_RT_TOOLARGUMENTS_H
