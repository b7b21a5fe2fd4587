//===- DataStream.h - One batch or a stream of shards -----------*- C++ -*-===//
//
// What glimmer-train and glimmer-run train on: one batch file (every step
// on it), or a stream of shards, each one global batch (a directory's
// `*.safetensors` files, or the files a glob pattern matches, in name
// order). Step k trains on shard k mod N, so the steps cycle through the
// shards in epochs. A prefetching reader reads and checks the next shard on
// a background thread while the current step runs.
//
//===----------------------------------------------------------------------===//

#ifndef GLIMMER_RT_DATASTREAM_H
#define GLIMMER_RT_DATASTREAM_H

#include "glimmer_rt/Safetensors.h"
#include "glimmer_rt/Tensor.h"

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace glimmer_rt {

/// The files of a `--data` value: a directory's `*.safetensors` files, the
/// files a glob pattern (one with `*`, `?` or `[`) matches, or the one file
/// named (whether it exists is left to its reader). Directories and globs
/// list in name order and are `stream`s. Throws RuntimeError for an empty
/// directory, a pattern matching nothing, or a directory or pattern that
/// cannot be read.
struct DataShards {
  std::vector<std::string> paths;
  bool stream = false;

  static DataShards list(const std::string &spec);
};

/// What the training loop trains on.
struct TrainingData {
  DataShards shards;
  /// The first shard, read (the tools read it before compiling: it is the
  /// example the program's shapes come from).
  std::shared_ptr<const SafetensorsFile> first;

  /// Lists `spec` and reads its first shard. Throws RuntimeError.
  static TrainingData open(const std::string &spec);
  /// The shard step `step` (counting from 0) trains on.
  size_t shardOf(int64_t step) const {
    return size_t(step % int64_t(shards.paths.size()));
  }
};

/// Reads a safetensors file, or throws RuntimeError (a directory, an
/// unreadable or invalid file).
std::shared_ptr<const SafetensorsFile> readSafetensors(const std::string &path);

/// Produces items 0, 1, ..., count - 1 with `produce(i)` on a background
/// thread, at most `depth` ahead of the consumer, and hands them out in
/// order with next(). An exception `produce` throws is rethrown by the
/// next() that would have returned its item. Destroying the prefetcher
/// stops the thread after the item it is producing.
template <typename T> class Prefetcher {
public:
  Prefetcher(int64_t count, size_t depth, std::function<T(int64_t)> produce)
      : count(count), depth(depth), produce(std::move(produce)),
        worker([this] { run(); }) {}
  ~Prefetcher() {
    {
      std::lock_guard<std::mutex> guard(lock);
      stopping = true;
    }
    changed.notify_all();
    worker.join();
  }
  Prefetcher(const Prefetcher &) = delete;
  Prefetcher &operator=(const Prefetcher &) = delete;

  /// The next item; blocks until it is produced. Rethrows its failure.
  T next() {
    std::unique_lock<std::mutex> guard(lock);
    changed.wait(guard, [&] { return !ready.empty() || failure; });
    if (ready.empty())
      std::rethrow_exception(failure);
    T item = std::move(ready.front());
    ready.pop_front();
    changed.notify_all();
    return item;
  }

private:
  void run() {
    for (int64_t i = 0; i < count; ++i) {
      {
        std::unique_lock<std::mutex> guard(lock);
        changed.wait(guard, [&] { return stopping || ready.size() < depth; });
        if (stopping)
          return;
      }
      try {
        T item = produce(i);
        std::lock_guard<std::mutex> guard(lock);
        ready.push_back(std::move(item));
      } catch (...) {
        std::lock_guard<std::mutex> guard(lock);
        failure = std::current_exception();
      }
      changed.notify_all();
      if (failure)
        return;
    }
  }

  const int64_t count;
  const size_t depth;
  std::function<T(int64_t)> produce;
  std::mutex lock;
  std::condition_variable changed;
  std::deque<T> ready;
  std::exception_ptr failure;
  bool stopping = false;
  // Last: it starts running once everything above is constructed.
  std::thread worker;
};

} // namespace glimmer_rt

#endif // GLIMMER_RT_DATASTREAM_H
