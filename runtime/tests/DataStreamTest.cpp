//===- DataStreamTest.cpp - Shard listing and the prefetching reader ------===//

#include "glimmer_rt/DataStream.h"

#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <fstream>

using namespace glimmer_rt;

namespace {
/// A fresh directory under the test's temporary directory.
std::string freshDir(const char *name) {
  std::string dir = std::string(testing::TempDir()) + "/" + name + "." +
                    std::to_string(getpid());
  mkdir(dir.c_str(), 0700);
  return dir;
}

void touch(const std::string &path) { std::ofstream(path) << "x"; }

std::string listError(const std::string &spec) {
  try {
    DataShards::list(spec);
  } catch (const RuntimeError &e) {
    return e.message;
  }
  return "";
}
} // namespace

// A directory lists its .safetensors files in byte order, leaving out
// other files and subdirectories (even one named like a shard).
TEST(DataShards, DirectoryInNameOrder) {
  std::string dir = freshDir("shards");
  for (const char *name :
       {"b-10.safetensors", "b-02.safetensors", "a.safetensors", "notes.txt"})
    touch(dir + "/" + name);
  mkdir((dir + "/sub.safetensors").c_str(), 0700);
  DataShards shards = DataShards::list(dir);
  EXPECT_TRUE(shards.stream);
  EXPECT_EQ(shards.paths, (std::vector<std::string>{
                              dir + "/a.safetensors", dir + "/b-02.safetensors",
                              dir + "/b-10.safetensors"}));
  // A glob: the files it matches, in the same order, directories left out.
  shards = DataShards::list(dir + "/[bs]*.safetensors");
  EXPECT_TRUE(shards.stream);
  EXPECT_EQ(shards.paths,
            (std::vector<std::string>{dir + "/b-02.safetensors",
                                      dir + "/b-10.safetensors"}));
}

// A file is one batch, not a stream, even when its name has glob
// characters; whether it exists is left to its reader.
TEST(DataShards, OneFile) {
  std::string dir = freshDir("onefile");
  std::string odd = dir + "/batch[1].safetensors";
  touch(odd);
  DataShards shards = DataShards::list(odd);
  EXPECT_FALSE(shards.stream);
  EXPECT_EQ(shards.paths, std::vector<std::string>{odd});
  shards = DataShards::list(dir + "/missing.safetensors");
  EXPECT_FALSE(shards.stream);
}

TEST(DataShards, Errors) {
  std::string dir = freshDir("empty");
  touch(dir + "/readme.txt");
  EXPECT_EQ(listError(dir),
            "the directory '" + dir + "' holds no .safetensors shard");
  EXPECT_EQ(listError(dir + "/*.safetensors"),
            "the pattern '" + dir + "/*.safetensors' matches no file");
  // A directory read as a safetensors file.
  try {
    readSafetensors(dir);
    ADD_FAILURE() << "reading a directory did not throw";
  } catch (const RuntimeError &e) {
    EXPECT_EQ(e.message,
              "'" + dir + "' is a directory, not a safetensors file");
  }
}

// Items come in order, produced ahead of the consumer (while it is busy
// elsewhere) but never more than `depth` ready (plus the one being
// produced).
TEST(Prefetcher, InOrderAheadAndBounded) {
  std::atomic<int64_t> produced{0};
  Prefetcher<int64_t> items(20, 1, [&](int64_t i) {
    ++produced;
    return i * i;
  });
  for (int64_t i = 0; i < 20; ++i) {
    if (i == 3) {
      // Items 0 to 2 are taken: item 3 is read without being asked for,
      // and item 4 waits until it is taken.
      for (int k = 0; k < 500 && produced < 4; ++k)
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      EXPECT_EQ(produced, 4);
    }
    EXPECT_EQ(items.next(), i * i);
  }
  EXPECT_EQ(produced, 20);
}

// A failure is rethrown, in order, on the consumer's thread; the items
// before it are delivered.
TEST(Prefetcher, RethrowsInOrder) {
  Prefetcher<int64_t> items(5, 2, [](int64_t i) -> int64_t {
    if (i == 2)
      throw RuntimeError("shard 2 is bad");
    return i;
  });
  EXPECT_EQ(items.next(), 0);
  EXPECT_EQ(items.next(), 1);
  try {
    items.next();
    ADD_FAILURE() << "the failure was not rethrown";
  } catch (const RuntimeError &e) {
    EXPECT_EQ(e.message, "shard 2 is bad");
  }
}

// Destroying it before every item was taken stops the reader thread.
TEST(Prefetcher, StopsEarly) {
  std::atomic<int64_t> produced{0};
  {
    Prefetcher<int64_t> items(1000, 1, [&](int64_t i) {
      ++produced;
      return i;
    });
    EXPECT_EQ(items.next(), 0);
  }
  EXPECT_LE(produced, 3);
}
