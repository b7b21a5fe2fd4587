//===- SizeExpr.cpp - Symbolic sizes of torch.export programs -------------===//
//
// A recursive-descent reader of sympy's srepr: NAME(ARG, ..., KEY=VALUE)
// where an argument is another call, a quoted string or an integer.
//
//===----------------------------------------------------------------------===//

#include "SizeExpr.h"

#include "llvm/ADT/StringExtras.h"

#include <vector>

using namespace glimmer::detail;

namespace {

class Reader {
public:
  Reader(llvm::StringRef text, const std::map<std::string, int64_t> &symbols,
         std::string &error)
      : rest(text), symbols(symbols), error(error) {}

  std::optional<int64_t> read() {
    std::optional<int64_t> v = call();
    if (v && !rest.trim().empty())
      return fail("unexpected '" + rest.str() + "'");
    return v;
  }

private:
  std::optional<int64_t> fail(const std::string &message) {
    if (error.empty())
      error = message;
    return std::nullopt;
  }

  std::optional<int64_t> call() {
    rest = rest.ltrim();
    llvm::StringRef name = rest.take_while(
        [](char c) { return llvm::isAlnum(c) || c == '_'; });
    rest = rest.drop_front(name.size()).ltrim();
    if (name.empty() || !rest.consume_front("("))
      return fail("expected a function call");
    std::vector<int64_t> values;
    std::string symbol;
    while (true) {
      rest = rest.ltrim();
      if (rest.consume_front(")"))
        break;
      if (rest.starts_with("'")) {
        rest = rest.drop_front();
        auto [text, after] = rest.split('\'');
        symbol = text.str();
        rest = after;
      } else if (!rest.empty() && (llvm::isDigit(rest[0]) || rest[0] == '-')) {
        llvm::StringRef digits = rest.take_while(
            [](char c) { return llvm::isDigit(c) || c == '-'; });
        int64_t v;
        if (digits.getAsInteger(10, v))
          return fail("bad integer '" + digits.str() + "'");
        values.push_back(v);
        rest = rest.drop_front(digits.size());
      } else {
        // A keyword argument (positive=True) names an assumption.
        llvm::StringRef key = rest.take_while(
            [](char c) { return llvm::isAlnum(c) || c == '_'; });
        if (!key.empty() && rest.drop_front(key.size()).starts_with("=")) {
          rest = rest.drop_front(key.size() + 1);
          rest = rest.drop_front(
              rest.take_while([](char c) { return c != ',' && c != ')'; })
                  .size());
        } else {
          std::optional<int64_t> v = call();
          if (!v)
            return std::nullopt;
          values.push_back(*v);
        }
      }
      rest = rest.ltrim();
      rest.consume_front(",");
    }
    return apply(name, values, symbol);
  }

  std::optional<int64_t> apply(llvm::StringRef name,
                               const std::vector<int64_t> &v,
                               const std::string &symbol) {
    if (name == "Symbol") {
      auto it = symbols.find(symbol);
      if (it == symbols.end())
        return fail("the size " + symbol + " is not a size of an input");
      return it->second;
    }
    if (name == "Integer" && v.size() == 1)
      return v[0];
    if ((name == "Add" || name == "Mul") && !v.empty()) {
      int64_t r = name == "Add" ? 0 : 1;
      for (int64_t x : v)
        r = name == "Add" ? r + x : r * x;
      return r;
    }
    if ((name == "FloorDiv" || name == "Mod") && v.size() == 2) {
      if (v[1] == 0)
        return fail("a division by zero");
      int64_t q = v[0] / v[1];
      if ((v[0] % v[1] != 0) && ((v[0] < 0) != (v[1] < 0)))
        --q;
      return name == "FloorDiv" ? q : v[0] - q * v[1];
    }
    if (name == "Pow" && v.size() == 2 && v[1] >= 0) {
      int64_t r = 1;
      for (int64_t i = 0; i < v[1]; ++i)
        r *= v[0];
      return r;
    }
    return fail("the function " + name.str() + " of sizes");
  }

  llvm::StringRef rest;
  const std::map<std::string, int64_t> &symbols;
  std::string &error;
};

} // namespace

std::optional<int64_t> glimmer::detail::evaluateSizeExpr(
    llvm::StringRef srepr, const std::map<std::string, int64_t> &symbols,
    std::string &error) {
  return Reader(srepr, symbols, error).read();
}
