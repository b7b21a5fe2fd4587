//===- Safetensors.cpp - Read and write .safetensors files ----------------===//

#include "glimmer_rt/Safetensors.h"

#include <cctype>
#include <cstring>
#include <fstream>
#include <limits>
#include <sstream>

using namespace glimmer_rt;

namespace {
struct DTypeEntry {
  DType dtype;
  const char *name;
  size_t size;
};
constexpr DTypeEntry kDTypes[] = {
    {DType::F64, "F64", 8}, {DType::F32, "F32", 4},  {DType::BF16, "BF16", 2},
    {DType::F16, "F16", 2}, {DType::I64, "I64", 8},  {DType::I32, "I32", 4},
    {DType::I16, "I16", 2}, {DType::I8, "I8", 1},    {DType::U8, "U8", 1},
    {DType::Bool, "BOOL", 1}};
} // namespace

size_t glimmer_rt::dtypeSize(DType dtype) {
  for (const DTypeEntry &e : kDTypes)
    if (e.dtype == dtype)
      return e.size;
  return 0;
}

std::string_view glimmer_rt::dtypeName(DType dtype) {
  for (const DTypeEntry &e : kDTypes)
    if (e.dtype == dtype)
      return e.name;
  return "?";
}

std::optional<DType> glimmer_rt::dtypeFromName(std::string_view name) {
  for (const DTypeEntry &e : kDTypes)
    if (name == e.name)
      return e.dtype;
  return std::nullopt;
}

bool glimmer_rt::isFloating(DType dtype) {
  return dtype == DType::F64 || dtype == DType::F32 || dtype == DType::BF16 ||
         dtype == DType::F16;
}

int64_t TensorInfo::numElements() const {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

//===----------------------------------------------------------------------===//
// A minimal JSON reader for the header: objects, arrays, strings, integers.
//===----------------------------------------------------------------------===//

namespace {
struct JsonValue {
  enum Kind { Object, Array, String, Integer } kind = Integer;
  std::vector<std::pair<std::string, JsonValue>> members;
  std::vector<JsonValue> elements;
  std::string string;
  int64_t integer = 0;
};

class JsonReader {
public:
  explicit JsonReader(std::string_view text) : text(text) {}

  bool parse(JsonValue &out, std::string &error) {
    if (!value(out, 0))
      return fail(error);
    skipSpace();
    if (pos != text.size()) {
      problem = "trailing characters after the JSON header";
      return fail(error);
    }
    return true;
  }

private:
  bool fail(std::string &error) {
    error = problem + " (at byte " + std::to_string(pos) + " of the header)";
    return false;
  }
  void skipSpace() {
    while (pos < text.size() && std::isspace(static_cast<unsigned char>(text[pos])))
      ++pos;
  }
  bool expect(char c) {
    skipSpace();
    if (pos < text.size() && text[pos] == c) {
      ++pos;
      return true;
    }
    problem = std::string("expected '") + c + "'";
    return false;
  }
  bool value(JsonValue &out, int depth) {
    if (depth > 8) {
      problem = "JSON header nested too deeply";
      return false;
    }
    skipSpace();
    if (pos >= text.size()) {
      problem = "unexpected end of JSON header";
      return false;
    }
    char c = text[pos];
    if (c == '{') {
      out.kind = JsonValue::Object;
      ++pos;
      skipSpace();
      if (pos < text.size() && text[pos] == '}') {
        ++pos;
        return true;
      }
      while (true) {
        JsonValue key;
        if (!string(key.string) || !expect(':'))
          return false;
        JsonValue member;
        if (!value(member, depth + 1))
          return false;
        out.members.emplace_back(std::move(key.string), std::move(member));
        skipSpace();
        if (pos < text.size() && text[pos] == ',') {
          ++pos;
          continue;
        }
        return expect('}');
      }
    }
    if (c == '[') {
      out.kind = JsonValue::Array;
      ++pos;
      skipSpace();
      if (pos < text.size() && text[pos] == ']') {
        ++pos;
        return true;
      }
      while (true) {
        JsonValue element;
        if (!value(element, depth + 1))
          return false;
        out.elements.push_back(std::move(element));
        skipSpace();
        if (pos < text.size() && text[pos] == ',') {
          ++pos;
          continue;
        }
        return expect(']');
      }
    }
    if (c == '"') {
      out.kind = JsonValue::String;
      return string(out.string);
    }
    if (c == '-' || std::isdigit(static_cast<unsigned char>(c))) {
      out.kind = JsonValue::Integer;
      bool negative = c == '-';
      if (negative)
        ++pos;
      if (pos >= text.size() || !std::isdigit(static_cast<unsigned char>(text[pos]))) {
        problem = "malformed number";
        return false;
      }
      uint64_t v = 0;
      while (pos < text.size() && std::isdigit(static_cast<unsigned char>(text[pos]))) {
        if (v > (uint64_t(std::numeric_limits<int64_t>::max()) - 9) / 10) {
          problem = "integer out of range";
          return false;
        }
        v = v * 10 + (text[pos++] - '0');
      }
      out.integer = negative ? -int64_t(v) : int64_t(v);
      return true;
    }
    problem = std::string("unexpected character '") + c + "'";
    return false;
  }
  bool string(std::string &out) {
    skipSpace();
    if (pos >= text.size() || text[pos] != '"') {
      problem = "expected a string";
      return false;
    }
    ++pos;
    while (pos < text.size() && text[pos] != '"') {
      char c = text[pos++];
      if (c == '\\') {
        if (pos >= text.size())
          break;
        char e = text[pos++];
        switch (e) {
        case '"': case '\\': case '/': out += e; break;
        case 'n': out += '\n'; break;
        case 't': out += '\t'; break;
        case 'r': out += '\r'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'u': {
          if (pos + 4 > text.size()) {
            problem = "truncated \\u escape";
            return false;
          }
          unsigned code = std::stoul(std::string(text.substr(pos, 4)), nullptr, 16);
          pos += 4;
          // Header keys are ASCII in practice; keep BMP code points as UTF-8.
          if (code < 0x80) {
            out += char(code);
          } else if (code < 0x800) {
            out += char(0xC0 | (code >> 6));
            out += char(0x80 | (code & 0x3F));
          } else {
            out += char(0xE0 | (code >> 12));
            out += char(0x80 | ((code >> 6) & 0x3F));
            out += char(0x80 | (code & 0x3F));
          }
          break;
        }
        default:
          problem = "bad escape in string";
          return false;
        }
      } else {
        out += c;
      }
    }
    if (pos >= text.size()) {
      problem = "unterminated string";
      return false;
    }
    ++pos;
    return true;
  }

  std::string_view text;
  size_t pos = 0;
  std::string problem;
};

std::string jsonEscape(const std::string &s) {
  std::string out;
  for (char c : s) {
    switch (c) {
    case '"': out += "\\\""; break;
    case '\\': out += "\\\\"; break;
    case '\n': out += "\\n"; break;
    default:
      if (static_cast<unsigned char>(c) < 0x20) {
        char buf[8];
        std::snprintf(buf, sizeof(buf), "\\u%04x", c);
        out += buf;
      } else {
        out += c;
      }
    }
  }
  return out;
}
} // namespace

std::unique_ptr<SafetensorsFile>
SafetensorsFile::read(const std::string &path, std::string &error) {
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
  JsonValue root;
  std::string jsonError;
  if (!JsonReader(header).parse(root, jsonError))
    return fail(jsonError);
  if (root.kind != JsonValue::Object)
    return fail("header is not a JSON object");

  auto file = std::unique_ptr<SafetensorsFile>(new SafetensorsFile());
  file->dataStart = 8 + headerSize;
  uint64_t dataSize = bytes.size() - file->dataStart;
  for (auto &[key, value] : root.members) {
    if (key == "__metadata__") {
      if (value.kind != JsonValue::Object)
        return fail("__metadata__ is not an object");
      for (auto &[mk, mv] : value.members) {
        if (mv.kind != JsonValue::String)
          return fail("__metadata__ values must be strings");
        file->meta[mk] = mv.string;
      }
      continue;
    }
    if (value.kind != JsonValue::Object)
      return fail("entry '" + key + "' is not an object");
    TensorInfo info;
    info.name = key;
    bool haveDtype = false, haveShape = false, haveOffsets = false;
    for (auto &[field, v] : value.members) {
      if (field == "dtype") {
        std::optional<DType> dt =
            v.kind == JsonValue::String ? dtypeFromName(v.string) : std::nullopt;
        if (!dt)
          return fail("tensor '" + key + "' has unsupported dtype '" +
                      v.string + "'");
        info.dtype = *dt;
        haveDtype = true;
      } else if (field == "shape") {
        if (v.kind != JsonValue::Array)
          return fail("shape of '" + key + "' is not an array");
        for (const JsonValue &d : v.elements) {
          if (d.kind != JsonValue::Integer || d.integer < 0)
            return fail("shape of '" + key + "' has a bad dimension");
          info.shape.push_back(d.integer);
        }
        haveShape = true;
      } else if (field == "data_offsets") {
        if (v.kind != JsonValue::Array || v.elements.size() != 2 ||
            v.elements[0].kind != JsonValue::Integer ||
            v.elements[1].kind != JsonValue::Integer ||
            v.elements[0].integer < 0 ||
            v.elements[1].integer < v.elements[0].integer)
          return fail("data_offsets of '" + key + "' are malformed");
        info.begin = v.elements[0].integer;
        info.end = v.elements[1].integer;
        haveOffsets = true;
      }
    }
    if (!haveDtype || !haveShape || !haveOffsets)
      return fail("tensor '" + key +
                  "' needs dtype, shape and data_offsets");
    if (info.end > dataSize)
      return fail("data of tensor '" + key + "' lies past the end of the file"
                  " (truncated?)");
    uint64_t expected = uint64_t(info.numElements()) * dtypeSize(info.dtype);
    if (info.end - info.begin != expected)
      return fail("tensor '" + key + "' holds " +
                  std::to_string(info.end - info.begin) +
                  " bytes but its dtype and shape need " +
                  std::to_string(expected));
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
    const std::map<std::string, std::string> &metadata, std::string &error) {
  std::ostringstream header;
  header << "{";
  bool first = true;
  if (!metadata.empty()) {
    header << "\"__metadata__\":{";
    bool firstMeta = true;
    for (auto &[k, v] : metadata) {
      header << (firstMeta ? "" : ",") << "\"" << jsonEscape(k) << "\":\""
             << jsonEscape(v) << "\"";
      firstMeta = false;
    }
    header << "}";
    first = false;
  }
  uint64_t offset = 0;
  for (const TensorView &t : tensors) {
    uint64_t n = 1;
    for (int64_t d : t.shape)
      n *= uint64_t(d);
    uint64_t size = n * dtypeSize(t.dtype);
    header << (first ? "" : ",") << "\"" << jsonEscape(t.name)
           << "\":{\"dtype\":\"" << dtypeName(t.dtype) << "\",\"shape\":[";
    for (size_t i = 0; i < t.shape.size(); ++i)
      header << (i ? "," : "") << t.shape[i];
    header << "],\"data_offsets\":[" << offset << "," << offset + size << "]}";
    offset += size;
    first = false;
  }
  header << "}";
  std::string h = header.str();
  // Pad the header with spaces to 8-byte alignment, as the reference writer.
  while ((h.size() % 8) != 0)
    h += ' ';
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) {
    error = "cannot write '" + path + "': " + std::strerror(errno);
    return false;
  }
  uint64_t hs = h.size();
  for (int i = 0; i < 8; ++i)
    out.put(char((hs >> (8 * i)) & 0xFF));
  out.write(h.data(), h.size());
  for (const TensorView &t : tensors) {
    uint64_t n = 1;
    for (int64_t d : t.shape)
      n *= uint64_t(d);
    out.write(static_cast<const char *>(t.data), n * dtypeSize(t.dtype));
  }
  if (!out) {
    error = "error while writing '" + path + "'";
    return false;
  }
  return true;
}
