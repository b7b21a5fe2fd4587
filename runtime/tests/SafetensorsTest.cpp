//===- SafetensorsTest.cpp - safetensors reader and writer ----------------===//

#include "glimmer_rt/Safetensors.h"

#include <gtest/gtest.h>

#include <sys/stat.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <unistd.h>

using namespace glimmer_rt;

namespace {
std::string tempPath(const char *name) {
  return std::string(testing::TempDir()) + "/" + name + "." +
         std::to_string(getpid()) + ".safetensors";
}

std::vector<uint8_t> slurp(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::string parseError(std::vector<uint8_t> bytes) {
  std::string error;
  EXPECT_EQ(SafetensorsFile::parse(std::move(bytes), "x", error), nullptr);
  return error;
}

std::vector<uint8_t> withHeader(const std::string &json,
                                std::vector<uint8_t> data = {}) {
  std::vector<uint8_t> out(8);
  uint64_t n = json.size();
  for (int i = 0; i < 8; ++i)
    out[i] = (n >> (8 * i)) & 0xFF;
  out.insert(out.end(), json.begin(), json.end());
  out.insert(out.end(), data.begin(), data.end());
  return out;
}
} // namespace

TEST(Safetensors, RoundTrip) {
  std::vector<float> a = {1.5f, -2.0f, 3.25f, 0.0f, 7.0f, 8.0f};
  std::vector<int64_t> b = {-100, 3, 42};
  std::vector<double> c = {3.141592653589793};
  std::string path = tempPath("roundtrip");
  std::string error;
  ASSERT_TRUE(writeSafetensors(path,
                               {{"layers.0.w", DType::F32, {2, 3}, a.data()},
                                {"labels", DType::I64, {3}, b.data()},
                                {"scalar", DType::F64, {}, c.data()}},
                               {{"format", "pt"}}, error))
      << error;
  auto file = SafetensorsFile::read(path, error);
  ASSERT_NE(file, nullptr) << error;
  ASSERT_EQ(file->tensors().size(), 3u);
  EXPECT_EQ(file->metadata().at("format"), "pt");
  const TensorInfo *w = file->find("layers.0.w");
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->dtype, DType::F32);
  EXPECT_EQ(w->shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(std::memcmp(file->data(*w), a.data(), sizeof(float) * 6), 0);
  const TensorInfo *l = file->find("labels");
  ASSERT_NE(l, nullptr);
  EXPECT_EQ(reinterpret_cast<const int64_t *>(file->data(*l))[0], -100);
  const TensorInfo *s = file->find("scalar");
  ASSERT_NE(s, nullptr);
  EXPECT_TRUE(s->shape.empty());
  EXPECT_EQ(s->numElements(), 1);
  EXPECT_EQ(file->find("missing"), nullptr);
  std::remove(path.c_str());
}

TEST(Safetensors, MissingFile) {
  std::string error;
  EXPECT_EQ(SafetensorsFile::read("/nonexistent/x.safetensors", error),
            nullptr);
  EXPECT_NE(error.find("cannot open '/nonexistent/x.safetensors'"),
            std::string::npos);
}

TEST(Safetensors, TruncatedFiles) {
  std::vector<float> a(16, 1.0f);
  std::string path = tempPath("trunc");
  std::string error;
  ASSERT_TRUE(writeSafetensors(path, {{"a", DType::F32, {16}, a.data()}}, {},
                               error));
  std::vector<uint8_t> bytes = slurp(path);
  std::remove(path.c_str());
  EXPECT_NE(parseError({bytes.begin(), bytes.begin() + 4}).find("shorter than"),
            std::string::npos);
  EXPECT_NE(parseError({bytes.begin(), bytes.begin() + 20})
                .find("exceeds the file size"),
            std::string::npos);
  EXPECT_NE(parseError({bytes.begin(), bytes.end() - 4})
                .find("past the end of the file"),
            std::string::npos);
}

TEST(Safetensors, MalformedHeaders) {
  EXPECT_NE(parseError(withHeader("[1,2]")).find("not a JSON object"),
            std::string::npos);
  EXPECT_NE(parseError(withHeader("{\"a\":")).find("unexpected end"),
            std::string::npos);
  EXPECT_NE(parseError(withHeader("{\"a\":{\"dtype\":\"F32\"}}"))
                .find("needs dtype, shape and data_offsets"),
            std::string::npos);
  EXPECT_NE(parseError(withHeader("{\"a\":{\"dtype\":\"C64\",\"shape\":[1],"
                                  "\"data_offsets\":[0,8]}}",
                                  std::vector<uint8_t>(8)))
                .find("unsupported dtype 'C64'"),
            std::string::npos);
  EXPECT_NE(parseError(withHeader("{\"a\":{\"dtype\":\"F32\",\"shape\":[3],"
                                  "\"data_offsets\":[0,8]}}",
                                  std::vector<uint8_t>(8)))
                .find("holds 8 bytes but its dtype and shape need 12"),
            std::string::npos);
  EXPECT_NE(parseError(withHeader("{} x")).find("expected end of input"),
            std::string::npos);
  // A number out of range is an error, not an exception (found by fuzzing:
  // the 13-byte file 05 00 00 00 00 00 00 00 "1e999").
  EXPECT_NE(parseError(withHeader("1e999")).find("JSON header:"),
            std::string::npos);
  EXPECT_NE(parseError(withHeader("{\"a\":1e999}")).find("JSON header:"),
            std::string::npos);
  // Dimensions whose product wraps around 2^64 must not match a small
  // data range.
  EXPECT_NE(parseError(withHeader("{\"a\":{\"dtype\":\"F32\",\"shape\":"
                                  "[4294967296,4294967296],"
                                  "\"data_offsets\":[0,0]}}"))
                .find("need more than 2^64"),
            std::string::npos);
  EXPECT_NE(parseError(withHeader("{\"a\":{\"dtype\":\"F32\",\"shape\":[-1],"
                                  "\"data_offsets\":[0,0]}}"))
                .find("bad dimension"),
            std::string::npos);
}

TEST(Safetensors, WriteIsAtomicAndPrivateWhenAsked) {
  std::string path = tempPath("private");
  std::vector<float> a(4, 1.0f);
  std::string error;
  ASSERT_TRUE(writeSafetensors(path, {{"a", DType::F32, {4}, a.data()}},
                               {{"k", "v"}}, error, 0600))
      << error;
  struct stat st {};
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  // Overwriting replaces the file whole (a new inode, no temporary left).
  ASSERT_TRUE(writeSafetensors(path, {{"a", DType::F32, {4}, a.data()}}, {},
                               error));
  struct stat again {};
  ASSERT_EQ(stat(path.c_str(), &again), 0);
  EXPECT_NE(st.st_ino, again.st_ino);
  EXPECT_EQ(again.st_mode & 0777, 0644u);
  auto file = SafetensorsFile::read(path, error);
  ASSERT_TRUE(file) << error;
  EXPECT_TRUE(file->metadata().empty());
  std::remove(path.c_str());
  // A directory that does not exist: an error, no crash.
  EXPECT_FALSE(writeSafetensors(::testing::TempDir() + "/no/such/dir/x",
                                {{"a", DType::F32, {4}, a.data()}}, {}, error));
  EXPECT_NE(error.find("cannot write"), std::string::npos);
}

TEST(Safetensors, DigestSeesValuesShapeAndDtype) {
  // The digest that guards a traced input: equal for equal tensors, and
  // different when a value, the shape or the dtype differs.
  std::vector<int64_t> ids = {0, 1, 1, 0, 0, 1};
  std::vector<int64_t> changed = {0, 1, 1, 0, 1, 1};
  std::vector<int32_t> narrow = {0, 1, 1, 0, 0, 1};
  std::string path = tempPath("digest");
  std::string error;
  ASSERT_TRUE(writeSafetensors(path,
                               {{"a", DType::I64, {2, 3}, ids.data()},
                                {"same", DType::I64, {2, 3}, ids.data()},
                                {"changed", DType::I64, {2, 3}, changed.data()},
                                {"reshaped", DType::I64, {3, 2}, ids.data()},
                                {"i32", DType::I32, {2, 3}, narrow.data()}},
                               {}, error))
      << error;
  auto file = SafetensorsFile::read(path, error);
  ASSERT_NE(file, nullptr) << error;
  auto digest = [&](const char *name) {
    return tensorDigest(*file, *file->find(name));
  };
  EXPECT_EQ(digest("a"), digest("same"));
  EXPECT_NE(digest("a"), digest("changed"));
  EXPECT_NE(digest("a"), digest("reshaped"));
  EXPECT_NE(digest("a"), digest("i32"));
  std::remove(path.c_str());
}
