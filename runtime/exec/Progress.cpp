//===- Progress.cpp - Progress of the compile stages and training steps ---===//

#include "glimmer_rt/Progress.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

using namespace glimmer_rt;

namespace {

using Clock = std::chrono::steady_clock;

/// Columns of the terminal on stderr (80 when it does not say): a live line
/// longer than that would wrap, and \r would not erase the wrapped part.
size_t terminalColumns() {
  struct winsize size;
  if (::ioctl(STDERR_FILENO, TIOCGWINSZ, &size) == 0 && size.ws_col > 0)
    return size.ws_col;
  return 80;
}

std::string duration(double seconds) {
  long s = std::lround(std::max(0.0, seconds));
  char buf[32];
  if (s >= 3600)
    std::snprintf(buf, sizeof(buf), "%ld:%02ld:%02ld", s / 3600, s / 60 % 60,
                  s % 60);
  else
    std::snprintf(buf, sizeof(buf), "%ld:%02ld", s / 60, s % 60);
  return buf;
}

} // namespace

bool glimmer_rt::parseProgressMode(const std::string &text,
                                   ProgressMode &mode) {
  if (text == "auto")
    mode = ProgressMode::Auto;
  else if (text == "always")
    mode = ProgressMode::Always;
  else if (text == "never")
    mode = ProgressMode::Never;
  else
    return false;
  return true;
}

bool glimmer_rt::isLiveProgress(ProgressMode mode, int fd) {
  return mode == ProgressMode::Always ||
         (mode == ProgressMode::Auto && ::isatty(fd));
}

Progress::Progress(std::string tool, std::ostream &err, bool live, bool enabled)
    : tool(std::move(tool)), err(err), live(live && enabled), enabled(enabled) {
  if (this->live)
    ticker = std::thread([this] { tick(); });
}

Progress::~Progress() {
  finish();
  if (ticker.joinable()) {
    {
      std::lock_guard<std::mutex> guard(lock);
      stopping = true;
    }
    wake.notify_all();
    ticker.join();
  }
}

void Progress::clearLine() {
  if (!line.empty())
    err << "\r\033[K" << std::flush;
}

void Progress::draw() {
  std::string shown = "[" + tool + "] " + line;
  // Cut the message, not the suffix (the elapsed time), to the width.
  size_t columns = terminalColumns();
  if (shown.size() + suffix.size() >= columns) {
    size_t keep = columns > suffix.size() + 4 ? columns - suffix.size() - 4 : 0;
    shown = shown.substr(0, keep) + "...";
  }
  err << "\r\033[K" << shown << suffix << std::flush;
}

void Progress::tick() {
  std::unique_lock<std::mutex> guard(lock);
  while (!stopping) {
    wake.wait_for(guard, std::chrono::seconds(1));
    if (stopping || stageMessage.empty())
      continue;
    double seconds =
        std::chrono::duration<double>(Clock::now() - stageStart).count();
    suffix = " (" + duration(seconds) + ")";
    draw();
  }
}

void Progress::stage(const std::string &message) {
  if (!enabled)
    return;
  std::lock_guard<std::mutex> guard(lock);
  if (!live) {
    err << "[" << tool << "] " << message << std::endl;
    return;
  }
  stageMessage = message;
  stageStart = Clock::now();
  line = message;
  suffix.clear();
  draw();
}

void Progress::note(const std::string &message) {
  if (!enabled)
    return;
  std::lock_guard<std::mutex> guard(lock);
  clearLine();
  err << "[" << tool << "] " << message << std::endl;
  if (live && !line.empty())
    draw();
}

void Progress::print(std::ostream &out, const std::string &text) {
  std::lock_guard<std::mutex> guard(lock);
  if (live)
    clearLine();
  out << text << std::endl;
  if (live && !line.empty())
    draw();
}

void Progress::step(int64_t done, int64_t total, double loss,
                    double tokensPerSecond, double seconds) {
  if (!live)
    return;
  std::lock_guard<std::mutex> guard(lock);
  stageMessage.clear();
  stepSeconds += seconds;
  constexpr int64_t width = 12;
  int64_t filled = total > 0 ? std::min(width, done * width / total) : width;
  char text[160];
  std::snprintf(
      text, sizeof(text),
      "step %lld/%lld [%s%s] loss %.4f | %.0f tok/s | ETA %s",
      static_cast<long long>(done), static_cast<long long>(total),
      std::string(filled, '#').c_str(),
      std::string(width - filled, '.').c_str(), loss, tokensPerSecond,
      duration(stepSeconds / std::max<int64_t>(done, 1) * double(total - done))
          .c_str());
  line = text;
  suffix.clear();
  draw();
}

void Progress::finish() {
  std::lock_guard<std::mutex> guard(lock);
  stageMessage.clear();
  if (live && !line.empty())
    err << std::endl;
  line.clear();
  suffix.clear();
}
