// The schema engine: parsing, validation, serialization and the docs table
// for any option table (config/schema.h).
#include "schema.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <memory>
#include <set>
#include <sstream>

#include "sizes.h"

namespace tiercache::config {
namespace {

// ordered_json keeps document order, so the first of several bad keys is
// the one reported, and toJson() writes keys in table order.
using Json = nlohmann::ordered_json;

size_t editDistance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

std::string describe(const Json& v) {
  switch (v.type()) {
    case Json::value_t::string: return "string " + quote(v.get_ref<const std::string&>());
    case Json::value_t::boolean: return std::string("boolean ") + (v.get<bool>() ? "true" : "false");
    case Json::value_t::number_integer:
    case Json::value_t::number_unsigned:
    case Json::value_t::number_float: return "number " + v.dump();
    case Json::value_t::array: return "array of " + std::to_string(v.size());
    default: return v.type_name();
  }
}

[[noreturn]] void typeError(const std::string& path, const std::string& expected, const Json& v) {
  throw ConfigError(path, "expected " + expected + ", got " + describe(v));
}

std::string join(const std::string& prefix, std::string_view name) {
  const std::string shown = displayKey(name);
  return prefix.empty() ? shown : prefix + "." + shown;
}

std::string indexed(const std::string& prefix, size_t i) { return prefix + "[" + std::to_string(i) + "]"; }

std::vector<std::string_view> keysOf(const Schema& s, uint8_t section) {
  std::vector<std::string_view> keys;
  for (const Option& o : s.options) {
    if (o.section == section) keys.push_back(o.name);
  }
  return keys;
}

const Option* find(const Schema& s, uint8_t section, std::string_view name) {
  for (const Option& o : s.options) {
    if (o.section == section && o.name == name) return &o;
  }
  return nullptr;
}

// Read-only access through the (mutable) field accessors: validate() and
// toJson() never write through the pointer.
Field fieldOf(const Option& o, const void* root, size_t i) { return o.field(const_cast<void*>(root), i); }

size_t enumIndex(const Option& o, const Field& f) {
  if (auto* e = std::get_if<EnumField>(&f)) return *e->value;
  const std::string& s = *std::get<std::string*>(f);
  return static_cast<size_t>(std::find(o.choices.begin(), o.choices.end(), s) - o.choices.begin());
}

// ---------------------------------------------------------------------------
// Parsing

class Parser {
 public:
  Parser(const Schema& s, std::set<std::string>* given) : s_(s), given_(given) {}

  void section(const Json& obj, uint8_t section, void* root, size_t index, const std::string& prefix) const {
    std::set<std::string_view> seen;
    for (const auto& [key, value] : obj.items()) {
      const std::string path = join(prefix, key);
      const Option* opt = find(s_, section, key);
      if (!opt) throw ConfigError(path, "unknown key" + suggestion(key, keysOf(s_, section)));
      seen.insert(opt->name);
      if (given_) given_->insert(keyPath(s_, *opt));
      this->value(*opt, value, root, index, path);
    }
    for (const Option& o : s_.options) {
      if (o.section == section && o.required && !seen.count(o.name)) {
        throw ConfigError(join(prefix, o.name), "required key is missing");
      }
    }
  }

 private:
  uint64_t size(const Json& v, const std::string& path) const {
    if (v.is_number_unsigned()) return v.get<uint64_t>();
    if (v.is_number_integer()) throw ConfigError(path, v.dump() + " is negative; a size is a number of bytes");
    if (v.is_number_float()) {
      if (s_.wholeFloats) return whole(v, path);
      throw ConfigError(path, v.dump() + " is not a whole number of bytes (write an integer, or a string such as "
                                         "\"1.5GiB\")");
    }
    if (v.is_string()) return parseSize(v.get_ref<const std::string&>(), path);
    typeError(path, "a size (a number of bytes or a string such as \"64MiB\")", v);
  }

  uint64_t count(const Json& v, const std::string& path) const {
    if (v.is_number_unsigned()) return v.get<uint64_t>();
    if (v.is_number_integer()) throw ConfigError(path, v.dump() + " is negative; expected an integer >= 0");
    if (v.is_number_float() && s_.wholeFloats) return whole(v, path);
    typeError(path, "an integer >= 0", v);
  }

  static uint64_t whole(const Json& v, const std::string& path) {
    const double d = v.get<double>();
    if (d >= 0 && d == std::floor(d) && d < 1.8e19) return static_cast<uint64_t>(d);
    throw ConfigError(path, v.dump() + " is not a whole number >= 0");
  }

  static double real(const Json& v, const std::string& path) {
    if (!v.is_number()) typeError(path, "a number", v);
    return v.get<double>();
  }

  static uint32_t narrow32(uint64_t v, const std::string& path) {
    if (v > std::numeric_limits<uint32_t>::max()) {
      throw ConfigError(path, std::to_string(v) + " is out of range (at most 4294967295)");
    }
    return static_cast<uint32_t>(v);
  }

  static void store(const Field& f, uint64_t v, const std::string& path) {
    if (auto* p = std::get_if<uint64_t*>(&f)) **p = v;
    else **std::get_if<uint32_t*>(&f) = narrow32(v, path);
  }

  void value(const Option& o, const Json& v, void* root, size_t index, const std::string& path) const {
    switch (o.type) {
      case Type::kIgnored: return;
      case Type::kObject:
        if (v.is_string() && !o.shorthand.empty()) {
          // Reported at the object's own path: the user wrote no inner key.
          const Option& inner = *find(s_, o.child, o.shorthand);
          if (given_) given_->insert(keyPath(s_, inner));
          this->value(inner, v, root, index, path);
          return;
        }
        if (!v.is_object()) typeError(path, o.shorthand.empty() ? "an object" : "a name or an object", v);
        section(v, o.child, root, index, path);
        return;
      case Type::kObjectList: {
        if (!v.is_array()) typeError(path, "an array of objects", v);
        if (o.nonEmpty && v.empty()) throw ConfigError(path, "must not be empty when given");
        if (static_cast<double>(v.size()) > o.max) {
          throw ConfigError(path, std::to_string(v.size()) + " entries, at most " + formatNumber(o.max));
        }
        o.resize(root, v.size());
        for (size_t k = 0; k < v.size(); ++k) {
          if (!v[k].is_object()) typeError(indexed(path, k), "an object", v[k]);
          section(v[k], o.child, root, k, indexed(path, k));
        }
        return;
      }
      default: break;
    }
    const Field f = o.field(root, index);
    switch (o.type) {
      case Type::kSize: store(f, size(v, path), path); return;
      case Type::kCount: store(f, count(v, path), path); return;
      case Type::kReal: *std::get<double*>(f) = real(v, path); return;
      case Type::kBool:
        if (!v.is_boolean()) typeError(path, "true or false", v);
        *std::get<bool*>(f) = v.get<bool>();
        return;
      case Type::kString:
        if (!v.is_string()) typeError(path, "a string", v);
        *std::get<std::string*>(f) = v.get<std::string>();
        return;
      case Type::kEnum: {
        std::string list;
        for (std::string_view ch : o.choices) list += (list.empty() ? "" : ", ") + std::string(ch);
        if (!v.is_string()) typeError(path, "one of: " + list, v);
        const std::string& s = v.get_ref<const std::string&>();
        const auto it = std::find(o.choices.begin(), o.choices.end(), s);
        if (it == o.choices.end()) {
          throw ConfigError(path, "unknown value " + quote(s) + ", expected one of: " + list + suggestion(s, o.choices));
        }
        const size_t idx = static_cast<size_t>(it - o.choices.begin());
        if (auto* e = std::get_if<EnumField>(&f)) *e->value = static_cast<uint8_t>(idx);
        else *std::get<std::string*>(f) = std::string(o.choices[idx]);
        return;
      }
      case Type::kCountList:
      case Type::kSizeList: {
        const bool sizes = o.type == Type::kSizeList;
        if (!v.is_array()) typeError(path, sizes ? "an array of sizes" : "an array of integers", v);
        std::vector<uint32_t>& out = *std::get<std::vector<uint32_t>*>(f);
        out.clear();
        for (size_t k = 0; k < v.size(); ++k) {
          const std::string p = indexed(path, k);
          out.push_back(narrow32(sizes ? size(v[k], p) : count(v[k], p), p));
        }
        return;
      }
      case Type::kRealList: {
        if (!v.is_array()) typeError(path, "an array of numbers", v);
        if (o.nonEmpty && v.empty()) throw ConfigError(path, "must not be empty when given");
        std::vector<double>& out = *std::get<std::vector<double>*>(f);
        out.clear();
        for (size_t k = 0; k < v.size(); ++k) out.push_back(real(v[k], indexed(path, k)));
        return;
      }
      case Type::kSizeRange: {
        const RangeField r = std::get<RangeField>(f);
        if (v.is_array()) {
          if (v.size() != 2) typeError(path, "a size or [min, max]", v);
          *r.min = size(v[0], indexed(path, 0));
          *r.max = size(v[1], indexed(path, 1));
        } else {
          *r.min = *r.max = size(v, path);
        }
        return;
      }
      default: return;
    }
  }

  const Schema& s_;
  std::set<std::string>* given_;
};

// nlohmann keeps the last of two equal keys silently; a config with a key
// twice is almost always a mistake, so the first repeat under each
// top-level key is kept with its path (each program reports those in its
// own part of the document). Also bounds depth and array length while the
// parser runs, before any of it is built.
class DocumentChecker {
 public:
  bool operator()(int depth, Json::parse_event_t event, Json& parsed) {
    // Refused before the parser builds the level: a deep document must not
    // cost stack in whatever walks the parsed tree.
    if (depth > kMaxJsonDepth) {
      throw ConfigError(path(), "nested deeper than " + std::to_string(kMaxJsonDepth) + " levels");
    }
    switch (event) {
      case Json::parse_event_t::object_start: stack_.push_back(Frame{}); break;
      case Json::parse_event_t::array_start: stack_.push_back(Frame{.array = true}); break;
      case Json::parse_event_t::key: {
        Frame& f = stack_.back();
        f.key = parsed.get<std::string>();
        if (f.key.find('\0') != std::string::npos) throw ConfigError(path(), "key contains a NUL byte");
        if (!f.keys.insert(f.key).second) {
          const std::string top = stack_.size() > 1 ? stack_.front().key : std::string();
          if (tops_.insert(top).second) duplicates_.emplace_back(top, path());  // the first under `top` stays
        }
        break;
      }
      case Json::parse_event_t::object_end:
      case Json::parse_event_t::array_end:
        stack_.pop_back();
        elementDone();
        break;
      case Json::parse_event_t::value: elementDone(); break;
    }
    return true;
  }
  // The first repeated key under top-level key `top` ("" : the top level itself).
  std::string duplicateUnder(const std::string& top) const {
    for (const auto& [t, p] : duplicates_) {
      if (t == top) return p;
    }
    return "";
  }
  // (top-level key, path of its first repeated key), in document order.
  const std::vector<std::pair<std::string, std::string>>& duplicates() const { return duplicates_; }
  // Key path of the element being parsed (for errors raised inside the parser).
  std::string path() const {
    std::string p;
    for (const Frame& f : stack_) p = f.array ? indexed(p, f.index) : join(p, f.key);
    return p;
  }

 private:
  struct Frame {
    bool array = false;
    size_t index = 0;
    std::string key = {};
    std::set<std::string> keys = {};
  };
  void elementDone() {
    if (stack_.empty() || !stack_.back().array) return;
    if (++stack_.back().index > kMaxJsonArray) {
      --stack_.back().index;  // the path names the array, not the element past it
      std::string p = path();
      p = p.substr(0, p.rfind('['));
      throw ConfigError(p, "more than " + std::to_string(kMaxJsonArray) + " elements");
    }
  }
  std::vector<Frame> stack_;
  std::set<std::string> tops_;
  std::vector<std::pair<std::string, std::string>> duplicates_;
};

Json parseJson(std::string_view text, DocumentChecker& checker) {
  try {
    return Json::parse(text.begin(), text.end(),
                       [&checker](int depth, Json::parse_event_t e, Json& parsed) { return checker(depth, e, parsed); });
  } catch (const Json::out_of_range&) {
    // A number the parser cannot hold (1e400): reported at its key.
    throw ConfigError(checker.path(), "number out of range");
  } catch (const Json::parse_error& e) {
    // e.byte is the 1-based offset of the last byte read; past the end at EOF.
    const size_t pos = std::min<size_t>(e.byte > 0 ? e.byte - 1 : 0, text.size());
    const size_t line = 1 + static_cast<size_t>(std::count(text.begin(), text.begin() + pos, '\n'));
    const size_t lineStart = text.rfind('\n', pos == 0 ? std::string_view::npos : pos - 1);
    const size_t column = lineStart == std::string_view::npos || pos == 0 ? pos + 1 : pos - lineStart;
    std::string what = e.what();
    const size_t detail = what.find(": ", what.find("parse error"));
    if (detail != std::string::npos) what = what.substr(detail + 2);
    throw ConfigError("", "JSON syntax error at line " + std::to_string(line) + ", column " + std::to_string(column) +
                              " (byte offset " + std::to_string(pos) + "): " + what);
  } catch (const Json::exception& e) {
    throw ConfigError(checker.path(), std::string("cannot parse: ") + e.what());
  }
}

// ---------------------------------------------------------------------------
// Validation

std::string showValue(const Option& o, double v) {
  if (v == 0) return "0";
  const bool size = o.type == Type::kSize || o.type == Type::kSizeList || o.type == Type::kSizeRange;
  return size ? formatSize(static_cast<uint64_t>(v)) : formatNumber(v);
}

std::string rangeText(const Option& o) {
  // Reals can be negative, so their lower bound is always worth stating.
  const bool real = o.type == Type::kReal || o.type == Type::kRealList;
  const bool hasMin = o.min > 0 || o.minExclusive || real;
  const bool hasMax = o.max != kInf;
  if (!hasMin && !hasMax) return "";
  if (!hasMax) return (o.minExclusive ? "> " : ">= ") + showValue(o, o.min);
  return std::string(o.minExclusive ? "(" : "[") + showValue(o, o.min) + ", " + showValue(o, o.max) + "]";
}

// Bounds of one number (a scalar option or one element of a list).
void checkNumber(const Option& o, double v, uint64_t integer, const std::string& path) {
  const bool low = o.minExclusive ? v <= o.min : v < o.min;
  if (low || v > o.max) throw ConfigError(path, showValue(o, v) + " is out of range " + rangeText(o));
  if (o.multipleOf != 0 && integer % o.multipleOf != 0) {
    throw ConfigError(path, showValue(o, v) + " is not a multiple of " + std::to_string(o.multipleOf));
  }
  if (o.powerOfTwo && !std::has_single_bit(integer)) {
    throw ConfigError(path, showValue(o, v) + " is not a power of two");
  }
}

void checkReal(const Option& o, double v, const std::string& path) {
  if (!std::isfinite(v)) throw ConfigError(path, "not a finite number");
  checkNumber(o, v, 0, path);
}

void validateSection(const Schema& s, uint8_t section, const void* root, size_t index, const std::string& prefix);

void validateOption(const Schema& s, const Option& o, const void* root, size_t index, const std::string& path) {
  switch (o.type) {
    case Type::kIgnored: return;
    case Type::kObject: validateSection(s, o.child, root, index, path); break;
    case Type::kObjectList: {
      const size_t n = o.count(root);
      if (static_cast<double>(n) > o.max) {
        throw ConfigError(path, std::to_string(n) + " entries, at most " + formatNumber(o.max));
      }
      for (size_t k = 0; k < n; ++k) validateSection(s, o.child, root, k, indexed(path, k));
      break;
    }
    default: {
      const Field f = fieldOf(o, root, index);
      if (auto* p = std::get_if<uint64_t*>(&f)) checkNumber(o, static_cast<double>(**p), **p, path);
      if (auto* p = std::get_if<uint32_t*>(&f)) checkNumber(o, **p, **p, path);
      if (auto* p = std::get_if<double*>(&f)) checkReal(o, **p, path);
      if (auto* p = std::get_if<std::vector<uint32_t>*>(&f)) {
        for (size_t k = 0; k < (*p)->size(); ++k) checkNumber(o, (**p)[k], (**p)[k], indexed(path, k));
      }
      if (auto* p = std::get_if<std::vector<double>*>(&f)) {
        for (size_t k = 0; k < (*p)->size(); ++k) checkReal(o, (**p)[k], indexed(path, k));
      }
      if (auto* r = std::get_if<RangeField>(&f)) {
        if (*r->min > *r->max) {
          throw ConfigError(path, "min must not exceed max (" + showValue(o, static_cast<double>(*r->min)) + " > " +
                                      showValue(o, static_cast<double>(*r->max)) + ")");
        }
        checkNumber(o, static_cast<double>(*r->min), *r->min, path);
        checkNumber(o, static_cast<double>(*r->max), *r->max, path);
      }
      if (o.type == Type::kString && o.nonEmpty && std::get<std::string*>(f)->empty()) {
        throw ConfigError(path, "must not be empty");
      }
      if (o.type == Type::kEnum && enumIndex(o, f) >= o.choices.size()) {
        const auto* str = std::get_if<std::string*>(&f);
        throw ConfigError(path, "unknown value" + (str ? " " + quote(**str) : std::string()));
      }
    }
  }
  if (o.check) o.check(root, index, path);
}

void validateSection(const Schema& s, uint8_t section, const void* root, size_t index, const std::string& prefix) {
  for (const Option& o : s.options) {
    if (o.section == section) validateOption(s, o, root, index, join(prefix, o.name));
  }
}

// ---------------------------------------------------------------------------
// Serialization

// Sizes that are whole KiB are written with a unit ("4MiB"), others as numbers.
Json sizeToJson(uint64_t bytes) {
  if (bytes != 0 && bytes % kKiB == 0) return formatSize(bytes);
  return bytes;
}

Json sectionToJson(const Schema& s, uint8_t section, const void* root, size_t index);

Json optionToJson(const Schema& s, const Option& o, const void* root, size_t index) {
  if (o.type == Type::kObject) return sectionToJson(s, o.child, root, index);
  if (o.type == Type::kObjectList) {
    Json arr = Json::array();
    for (size_t k = 0; k < o.count(root); ++k) arr.push_back(sectionToJson(s, o.child, root, k));
    return arr;
  }
  const Field f = fieldOf(o, root, index);
  switch (o.type) {
    case Type::kSize:
      if (auto* p = std::get_if<uint64_t*>(&f)) return sizeToJson(**p);
      return sizeToJson(**std::get_if<uint32_t*>(&f));
    case Type::kCount:
      if (auto* p = std::get_if<uint64_t*>(&f)) return **p;
      return **std::get_if<uint32_t*>(&f);
    case Type::kReal: return *std::get<double*>(f);
    case Type::kBool: return *std::get<bool*>(f);
    case Type::kString: return *std::get<std::string*>(f);
    case Type::kEnum: {
      const size_t idx = enumIndex(o, f);
      if (idx < o.choices.size()) return std::string(o.choices[idx]);
      if (auto* str = std::get_if<std::string*>(&f)) return **str;  // invalid, but say what it is
      return idx;
    }
    case Type::kCountList:
    case Type::kSizeList: {
      Json arr = Json::array();
      for (uint32_t v : *std::get<std::vector<uint32_t>*>(f)) {
        arr.push_back(o.type == Type::kSizeList ? sizeToJson(v) : Json(v));
      }
      return arr;
    }
    case Type::kRealList: return *std::get<std::vector<double>*>(f);
    case Type::kSizeRange: {
      const RangeField r = std::get<RangeField>(f);
      return Json::array({sizeToJson(*r.min), sizeToJson(*r.max)});
    }
    default: return nullptr;
  }
}

Json sectionToJson(const Schema& s, uint8_t section, const void* root, size_t index) {
  Json obj = Json::object();
  for (const Option& o : s.options) {
    if (o.section == section && o.type != Type::kIgnored) obj[std::string(o.name)] = optionToJson(s, o, root, index);
  }
  return obj;
}

// ---------------------------------------------------------------------------
// Documentation

std::string typeText(const Option& o) {
  switch (o.type) {
    case Type::kSize: return "size";
    case Type::kCount: return "integer";
    case Type::kReal: return "number";
    case Type::kBool: return "boolean";
    case Type::kString: return "string";
    case Type::kEnum: return "string";
    case Type::kCountList: return "array of integers";
    case Type::kSizeList: return "array of sizes";
    case Type::kRealList: return "array of numbers";
    case Type::kSizeRange: return "size or [min, max]";
    case Type::kObject: return o.shorthand.empty() ? "object" : "string or object";
    case Type::kObjectList: return "array of objects";
    case Type::kIgnored: return "any";
  }
  return "";
}

std::string defaultText(const Schema& s, const Option& o, const void* defaults) {
  if (o.required) return "required";
  if (o.type == Type::kObject || o.type == Type::kIgnored) return "";
  if (o.type == Type::kObjectList) return "`[]`";
  return "`" + optionToJson(s, o, defaults, 0).dump() + "`";
}

std::string validText(const Option& o) {
  std::vector<std::string> parts;
  if (o.type == Type::kEnum) {
    std::string list;
    for (std::string_view ch : o.choices) list += (list.empty() ? "" : ", ") + ("`" + std::string(ch) + "`");
    parts.push_back(list);
  }
  std::string range = rangeText(o);
  const bool each = o.type == Type::kSizeList || o.type == Type::kCountList || o.type == Type::kRealList;
  if (!range.empty()) parts.push_back((each ? "each " : "") + range);
  if (o.multipleOf) parts.push_back("multiple of " + std::to_string(o.multipleOf));
  if (o.powerOfTwo) parts.push_back("power of two");
  if (o.nonEmpty) parts.push_back(o.type == Type::kString ? "not empty" : "not empty when given");
  if (!o.rule.empty()) parts.push_back(std::string(o.rule));
  std::string out;
  for (const std::string& p : parts) out += (out.empty() ? "" : "; ") + p;
  return out;
}

}  // namespace

// ---------------------------------------------------------------------------
// Public API

std::string quote(std::string_view s) {
  constexpr size_t kMax = 40;
  std::string out = "\"";
  out += s.size() > kMax ? std::string(s.substr(0, kMax)) + "..." : std::string(s);
  return out + "\"";
}

std::string displayKey(std::string_view key) {
  constexpr size_t kMax = 40;
  std::string out;
  for (size_t i = 0; i < key.size() && i < kMax; ++i) {
    const unsigned char ch = static_cast<unsigned char>(key[i]);
    if (ch < 0x20 || ch == 0x7f) {
      static const char kHex[] = "0123456789abcdef";
      out += "\\x";
      out += kHex[ch >> 4];
      out += kHex[ch & 15];
    } else {
      out += static_cast<char>(ch);
    }
  }
  if (key.size() > kMax) out += "...(" + std::to_string(key.size()) + " bytes)";
  return out;
}

std::string formatNumber(double v) {
  if (v == std::floor(v) && std::fabs(v) < 1e15) return std::to_string(static_cast<int64_t>(v));
  std::ostringstream os;
  os << v;
  return os.str();
}

std::string suggestion(std::string_view given, const std::vector<std::string_view>& candidates) {
  // Edit distance costs |given| x |candidate| per candidate: a key far
  // longer than any option name (a 10 MB key) is no typo of one.
  constexpr size_t kMaxSuggestLength = 64;
  if (given.size() > kMaxSuggestLength) return "";
  std::string_view best;
  size_t bestDist = std::numeric_limits<size_t>::max();
  for (std::string_view c : candidates) {
    const size_t d = editDistance(given, c);
    if (d < bestDist) bestDist = d, best = c;
  }
  if (!best.empty() && bestDist <= std::max<size_t>(1, std::min<size_t>(2, given.size() / 3))) {
    return " (did you mean '" + std::string(best) + "'?)";
  }
  if (given.size() >= 3) {
    for (std::string_view c : candidates) {
      if (c.starts_with(given)) return " (did you mean '" + std::string(c) + "'?)";
    }
  }
  return "";
}

void parse(const Schema& schema, std::string_view document, void* root, std::set<std::string>* given) {
  DocumentChecker checker;
  const Json doc = parseJson(document, checker);
  if (schema.root.empty()) {
    // The whole document is ours, but for the members other programs own.
    for (const auto& [top, path] : checker.duplicates()) {
      const Option* o = find(schema, 0, top);
      if (!(o && o->type == Type::kIgnored)) throw ConfigError(path, "key appears more than once");
    }
  } else {
    const std::string top(schema.root);
    std::string dup = checker.duplicateUnder("");
    if (dup != top) dup = checker.duplicateUnder(top);
    if (!dup.empty()) throw ConfigError(dup, "key appears more than once");
  }
  if (!doc.is_object()) typeError("", "a JSON object at the top level", doc);
  const Parser parser(schema, given);
  if (schema.root.empty()) {
    parser.section(doc, 0, root, 0, "");
    return;
  }
  const auto it = doc.find(std::string(schema.root));
  if (it == doc.end()) return;
  if (!it->is_object()) typeError(std::string(schema.root), "an object", *it);
  parser.section(*it, 0, root, 0, std::string(schema.root));
}

void validate(const Schema& schema, const void* root) {
  validateSection(schema, 0, root, 0, std::string(schema.root));
}

std::string toJson(const Schema& schema, const void* root, int indent) {
  return sectionToJson(schema, 0, root, 0).dump(indent, ' ', false, Json::error_handler_t::replace);
}

std::string keyPath(const Schema& schema, const Option& o) {
  const std::string_view prefix = o.section < schema.sections.size() ? schema.sections[o.section] : "";
  return prefix.empty() ? std::string(o.name) : std::string(prefix) + "." + std::string(o.name);
}

std::string markdown(const Schema& schema, const void* defaults) {
  std::string md = "| Key | Type | Default | Valid values | Description |\n|---|---|---|---|---|\n";
  for (const Option& o : schema.options) {
    md += "| `" + keyPath(schema, o) + "` | " + typeText(o) + " | " + defaultText(schema, o, defaults) + " | " +
          validText(o) + " | " + std::string(o.description) + " |\n";
  }
  return md;
}

ConfigError inSource(const ConfigError& e, const std::string& source) {
  // A syntax error names the file first, as compilers do ("f.json: JSON syntax error at line 3 ...").
  if (e.path().empty() && std::string_view(e.what()).starts_with("JSON syntax error")) {
    return ConfigError("", source + ": " + e.what());
  }
  return ConfigError(e.path(), e.reason() + " (in " + source + ")");
}

std::string readConfigFile(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) throw ConfigError("", "cannot open config file '" + path + "': " + std::strerror(errno));
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0) throw ConfigError("", "cannot read config file '" + path + "': " + std::strerror(errno));
  if (S_ISDIR(st.st_mode)) throw ConfigError("", "cannot read config file '" + path + "': it is a directory");
  // A device (/dev/zero) or a FIFO has no size to check; only regular files.
  if (!S_ISREG(st.st_mode)) throw ConfigError("", "config file '" + path + "' is not a regular file");
  if (static_cast<uint64_t>(st.st_size) > kMaxConfigFileBytes) {
    throw ConfigError("", "config file '" + path + "' is " + formatSize(static_cast<uint64_t>(st.st_size)) +
                              ", more than the " + formatSize(kMaxConfigFileBytes) + " a config may be");
  }
  std::string text;
  char buf[65536];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw ConfigError("", "cannot read config file '" + path + "': " + std::strerror(errno));
    if (n == 0) break;
    text.append(buf, static_cast<size_t>(n));
    // The file may grow while it is read.
    if (text.size() > kMaxConfigFileBytes) {
      throw ConfigError("", "config file '" + path + "' is more than the " + formatSize(kMaxConfigFileBytes) +
                                " a config may be");
    }
  }
  return text;
}

}  // namespace tiercache::config
