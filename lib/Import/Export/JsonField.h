//===- JsonField.h - A JSON value with its path -----------------*- C++ -*-===//
//
// Private to the export archive reader: typed access to a JSON document that
// reports a missing or mistyped field by its path from the root
// ("graph_module.graph.nodes[0].target") as a SchemaError.
//
//===----------------------------------------------------------------------===//

#ifndef GLIMMER_LIB_IMPORT_EXPORT_JSONFIELD_H
#define GLIMMER_LIB_IMPORT_EXPORT_JSONFIELD_H

#include "ExportJson.h"

#include "llvm/ADT/StringRef.h"

#include <limits>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace glimmer::pt2::detail {

/// A JSON value and its path from the document's root, for messages.
struct Field {
  const nlohmann::json &value;
  std::string path;

  [[noreturn]] void fail(const std::string &message) const {
    throw SchemaError(message + " at '" + (path.empty() ? "<root>" : path) +
                      "'");
  }

  void expect(bool ok, const char *what) const {
    if (!ok)
      fail(std::string("expected ") + what + ", got " + value.type_name());
  }

  std::string child(llvm::StringRef key) const {
    return path.empty() ? key.str() : path + "." + key.str();
  }

  /// Member `key`, which must exist.
  Field at(const char *key) const {
    expect(value.is_object(), "an object");
    auto it = value.find(key);
    if (it == value.end())
      throw SchemaError("missing field '" + child(key) + "'");
    return {*it, child(key)};
  }

  /// Member `key`, or nothing when it is absent or null.
  std::optional<Field> find(const char *key) const {
    expect(value.is_object(), "an object");
    auto it = value.find(key);
    if (it == value.end() || it->is_null())
      return std::nullopt;
    return Field{*it, child(key)};
  }

  std::vector<Field> elements() const {
    expect(value.is_array(), "a list");
    std::vector<Field> out;
    for (size_t i = 0; i < value.size(); ++i)
      out.push_back({value[i], path + "[" + std::to_string(i) + "]"});
    return out;
  }

  std::vector<std::pair<std::string, Field>> members() const {
    expect(value.is_object(), "an object");
    std::vector<std::pair<std::string, Field>> out;
    for (auto it = value.begin(); it != value.end(); ++it)
      out.push_back({it.key(), {it.value(), child(it.key())}});
    return out;
  }

  /// The one member of a union.
  std::pair<std::string, Field> alternative() const {
    expect(value.is_object(), "an object");
    if (value.size() != 1)
      fail("expected one member (a union), got " +
           std::to_string(value.size()));
    auto it = value.begin();
    return {it.key(), {it.value(), child(it.key())}};
  }

  int64_t getInt() const {
    expect(value.is_number_integer(), "an integer");
    return value.get<int64_t>();
  }

  double getFloat() const {
    if (value.is_string()) {
      const std::string &s = value.get_ref<const std::string &>();
      if (s == "Infinity")
        return std::numeric_limits<double>::infinity();
      if (s == "-Infinity")
        return -std::numeric_limits<double>::infinity();
      if (s == "NaN")
        return std::numeric_limits<double>::quiet_NaN();
    }
    expect(value.is_number(), "a number");
    return value.get<double>();
  }

  bool getBool() const {
    expect(value.is_boolean(), "a bool");
    return value.get<bool>();
  }

  std::string getString() const {
    expect(value.is_string(), "a string");
    return value.get<std::string>();
  }

  template <typename T, typename F>
  std::vector<T> list(F &&read) const {
    std::vector<T> out;
    for (const Field &e : elements())
      out.push_back(read(e));
    return out;
  }

  template <typename T, typename F>
  std::map<std::string, T> map(F &&read) const {
    std::map<std::string, T> out;
    for (const auto &[key, v] : members())
      out.emplace(key, read(v));
    return out;
  }
};

} // namespace glimmer::pt2::detail

#endif // GLIMMER_LIB_IMPORT_EXPORT_JSONFIELD_H
