//===- Progress.h - Compile stages and training steps on stderr -*- C++ -*-===//
//
// What glimmer-train and glimmer-run print while they work. On a terminal
// (or with --progress=always) one line is redrawn in place with \r: the
// current compile stage with its elapsed seconds, then a bar of the
// training steps (step i/N, loss, tokens/s, ETA). Otherwise every stage is
// one "[tool] message" line and the steps print nothing here (each step's
// "step N | loss ..." line on stdout is the record of the run, written
// either way).
//
//===----------------------------------------------------------------------===//

#ifndef GLIMMER_RT_PROGRESS_H
#define GLIMMER_RT_PROGRESS_H

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <ostream>
#include <string>
#include <thread>

namespace glimmer_rt {

/// --progress=auto|always|never.
enum class ProgressMode { Auto, Always, Never };

/// Parses "auto", "always" or "never"; false otherwise.
bool parseProgressMode(const std::string &text, ProgressMode &mode);

/// Whether `mode` redraws a live line on file descriptor `fd`: always, or
/// auto when `fd` is a terminal.
bool isLiveProgress(ProgressMode mode, int fd = 2);

class Progress {
public:
  /// Writes to `err` prefixed with "[tool] "; `live`: one line redrawn in
  /// place; not `enabled` (--quiet, or a process that does not report):
  /// nothing at all.
  Progress(std::string tool, std::ostream &err, bool live, bool enabled);
  /// Ends the live line.
  ~Progress();
  Progress(const Progress &) = delete;
  Progress &operator=(const Progress &) = delete;

  /// A stage begins ("importing model.pt"). Live, it replaces the line and
  /// its seconds tick until the next stage; otherwise it is one line.
  void stage(const std::string &message);
  /// A message to keep on its own line, live or not ("saved step 10").
  void note(const std::string &message);
  /// Writes `line` to `out` (stdout, maybe the same terminal) with the live
  /// line cleared first and redrawn after.
  void print(std::ostream &out, const std::string &line);
  /// Training step `done` of `total` finished in `seconds`: live, the bar.
  void step(int64_t done, int64_t total, double loss, double tokensPerSecond,
            double seconds);
  /// Ends the live line (a newline), so that what follows starts a line.
  void finish();

private:
  void draw();
  void clearLine();
  void tick();

  std::string tool;
  std::ostream &err;
  bool live, enabled;
  std::mutex lock;
  /// What the live line shows (empty: nothing drawn), and the stage's
  /// elapsed time after it.
  std::string line, suffix;
  /// The stage being timed (live), and when it began.
  std::string stageMessage;
  std::chrono::steady_clock::time_point stageStart;
  double stepSeconds = 0;
  std::thread ticker;
  std::condition_variable wake;
  bool stopping = false;
};

} // namespace glimmer_rt

#endif // GLIMMER_RT_PROGRESS_H
