//===- Safetensors.cpp - Read and write .safetensors files ----------------===//

#include "glimmer_rt/Safetensors.h"
#include "glimmer_rt/Files.h"

#include <nlohmann/json.hpp>

#include <sys/stat.h>

#include <cstring>
#include <fstream>
#include <limits>

using namespace glimmer_rt;

int64_t TensorInfo::numElements() const {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

std::unique_ptr<SafetensorsFile>
SafetensorsFile::read(const std::string &path, std::string &error) {
  // A directory opens as a stream whose first read throws.
  struct stat st {};
  if (stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
    error = "'" + path + "' is a directory, not a safetensors file";
    return nullptr;
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    error = "cannot open '" + path + "': " + std::strerror(errno);
    return nullptr;
  }
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)),
                             std::istreambuf_iterator<char>());
  return parse(std::move(bytes), path, error);
}

std::unique_ptr<SafetensorsFile>
SafetensorsFile::parse(std::vector<uint8_t> bytes, const std::string &name,
                       std::string &error) {
  auto fail = [&](const std::string &message) {
    error = "'" + name + "' is not a valid safetensors file: " + message;
    return nullptr;
  };
  if (bytes.size() < 8)
    return fail("shorter than the 8-byte header length");
  uint64_t headerSize = 0;
  for (int i = 7; i >= 0; --i)
    headerSize = (headerSize << 8) | bytes[i];
  if (headerSize > bytes.size() - 8)
    return fail("header length " + std::to_string(headerSize) +
                " exceeds the file size (" + std::to_string(bytes.size()) +
                " bytes; truncated?)");
  std::string_view header(reinterpret_cast<const char *>(bytes.data()) + 8,
                          headerSize);
  // ordered_json keeps the file's tensor order.
  using Json = nlohmann::ordered_json;
  Json root;
  try {
    root = Json::parse(header.begin(), header.end());
  } catch (const nlohmann::json::exception &e) {
    // Malformed text (parse_error) or a number out of range (out_of_range,
    // e.g. 1e999): "[json.exception.parse_error.101] parse error at line 1,
    // column 6: ..." without the library's tag.
    std::string what = e.what();
    size_t tag = what.find("] ");
    return fail("JSON header: " +
                (tag == std::string::npos ? what : what.substr(tag + 2)));
  }
  if (!root.is_object())
    return fail("header is not a JSON object");

  auto file = std::unique_ptr<SafetensorsFile>(new SafetensorsFile());
  file->dataStart = 8 + headerSize;
  uint64_t dataSize = bytes.size() - file->dataStart;
  auto isIndex = [](const Json &v) {
    return v.is_number_unsigned() ||
           (v.is_number_integer() && v.get<int64_t>() >= 0);
  };
  for (auto &[key, value] : root.items()) {
    if (key == "__metadata__") {
      if (!value.is_object())
        return fail("__metadata__ is not an object");
      for (auto &[mk, mv] : value.items()) {
        if (!mv.is_string())
          return fail("__metadata__ values must be strings");
        file->meta[mk] = mv.get<std::string>();
      }
      continue;
    }
    if (!value.is_object())
      return fail("entry '" + key + "' is not an object");
    TensorInfo info;
    info.name = key;
    auto dtype = value.find("dtype");
    auto shape = value.find("shape");
    auto offsets = value.find("data_offsets");
    if (dtype == value.end() || shape == value.end() ||
        offsets == value.end())
      return fail("tensor '" + key + "' needs dtype, shape and data_offsets");
    // dump() of a value holding invalid UTF-8 would throw; replace it.
    std::string dtypeText =
        dtype->is_string()
            ? dtype->get<std::string>()
            : dtype->dump(-1, ' ', false, Json::error_handler_t::replace);
    std::optional<DType> dt = dtypeFromName(dtypeText);
    if (!dt)
      return fail("tensor '" + key + "' has unsupported dtype '" + dtypeText +
                  "'");
    info.dtype = *dt;
    if (!shape->is_array())
      return fail("shape of '" + key + "' is not an array");
    // The byte count is computed without overflow: a huge shape must not
    // wrap around to match a small data range.
    uint64_t expected = dtypeSize(info.dtype);
    bool overflow = false;
    for (const Json &d : *shape) {
      if (!isIndex(d) ||
          d.get<uint64_t>() > uint64_t(std::numeric_limits<int64_t>::max()))
        return fail("shape of '" + key + "' has a bad dimension");
      uint64_t n = d.get<uint64_t>();
      info.shape.push_back(int64_t(n));
      if (n != 0 && expected > std::numeric_limits<uint64_t>::max() / n)
        overflow = true;
      else
        expected *= n;
    }
    if (!offsets->is_array() || offsets->size() != 2 ||
        !isIndex((*offsets)[0]) || !isIndex((*offsets)[1]) ||
        (*offsets)[1].get<uint64_t>() < (*offsets)[0].get<uint64_t>())
      return fail("data_offsets of '" + key + "' are malformed");
    info.begin = (*offsets)[0].get<uint64_t>();
    info.end = (*offsets)[1].get<uint64_t>();
    if (info.end > dataSize)
      return fail("data of tensor '" + key + "' lies past the end of the file"
                  " (truncated?)");
    if (overflow || info.end - info.begin != expected)
      return fail("tensor '" + key + "' holds " +
                  std::to_string(info.end - info.begin) +
                  " bytes but its dtype and shape need " +
                  (overflow ? std::string("more than 2^64")
                            : std::to_string(expected)));
    file->infos.push_back(std::move(info));
  }
  file->bytes = std::move(bytes);
  return file;
}

const TensorInfo *SafetensorsFile::find(std::string_view name) const {
  for (const TensorInfo &info : infos)
    if (info.name == name)
      return &info;
  return nullptr;
}

bool glimmer_rt::writeSafetensors(
    const std::string &path, const std::vector<TensorView> &tensors,
    const std::map<std::string, std::string> &metadata, std::string &error,
    unsigned mode) {
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.empty())
    header["__metadata__"] = metadata;
  uint64_t offset = 0;
  std::vector<uint64_t> sizes;
  for (const TensorView &t : tensors) {
    uint64_t n = 1;
    for (int64_t d : t.shape)
      n *= uint64_t(d);
    uint64_t size = n * dtypeSize(t.dtype);
    header[t.name] = {{"dtype", std::string(dtypeName(t.dtype))},
                      {"shape", t.shape},
                      {"data_offsets", {offset, offset + size}}};
    sizes.push_back(size);
    offset += size;
  }
  // Names are written as given; invalid UTF-8 is replaced rather than
  // thrown on.
  std::string h =
      header.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  // Pad the header with spaces to 8-byte alignment, as the reference writer.
  while ((h.size() % 8) != 0)
    h += ' ';
  // Atomic: a reader, or a resume after a crash mid-save, sees the old file
  // or the new one, never a mix.
  return writeFileAtomically(
      path, mode,
      [&](const AppendFn &append) {
        char length[8];
        uint64_t hs = h.size();
        for (int i = 0; i < 8; ++i)
          length[i] = char((hs >> (8 * i)) & 0xFF);
        if (!append(length, 8) || !append(h.data(), h.size()))
          return false;
        for (size_t i = 0; i < tensors.size(); ++i)
          if (!append(tensors[i].data, sizes[i]))
            return false;
        return true;
      },
      error);
}

std::string glimmer_rt::tensorDigest(const SafetensorsFile &file,
                                     const TensorInfo &info) {
  ContentHasher hasher;
  std::string head(dtypeName(info.dtype));
  for (int64_t d : info.shape)
    head += ',' + std::to_string(d);
  hasher.update(head + '\0');
  hasher.update(file.data(info), size_t(info.end - info.begin));
  return "xxh3-128:" + hasher.hex();
}
