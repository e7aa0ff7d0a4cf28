// The schema engine: one option table drives parsing, validation, toJson()
// and the docs table, for every program's options (the cache's in
// allocator/cache_config.cc, the bench workload's in bench/workload.cc, the
// server's in server/server_config.cc).
//
// A Schema is a list of rows. Each row is one JSON key of one section: its
// name, type, description, how to reach its field in the config struct, the
// bounds validate() enforces and any rule involving other options (`rule`
// documents what `check` enforces). The engine accepts exactly the keys in
// the table, reports an unknown key with a "did you mean", a wrong type or
// an impossible value as a ConfigError naming the key path, and words every
// message the same way for every program.
//
// The engine is type-erased (rows reach the struct through a `void*` root)
// so that it is compiled once and its header needs no JSON library; each
// table casts back to its own struct in its accessors (see CONFIG_FIELD in
// the tables). No JSON type appears here: the library's users need not have
// nlohmann-json.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <set>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "../common/name_table.h"
#include "config_error.h"

namespace tiercache::config {

enum class Type : uint8_t {
  kSize,        // bytes: JSON integer or size string ("64MiB")
  kCount,       // JSON integer >= 0
  kReal,        // JSON number
  kBool,
  kString,
  kEnum,        // JSON string from `choices`
  kCountList,   // array of kCount
  kSizeList,    // array of kSize
  kRealList,    // array of kReal
  kSizeRange,   // [min, max] of sizes, or one size for both
  kObject,      // nested section `child`
  kObjectList,  // array of `child` sections
  kIgnored,     // accepted with any content, not read (belongs to another program)
};

// An enum field (its value indexes the row's choices); one byte wide.
struct EnumField {
  uint8_t* value;
};
struct RangeField {
  uint64_t* min;
  uint64_t* max;
};
template <class E>
EnumField enumField(E& e) {
  static_assert(sizeof(E) == 1, "enum options are one byte (enum class X : uint8_t)");
  return EnumField{reinterpret_cast<uint8_t*>(&e)};
}

// Where an option lives in its config. Enum options point at the enum or at
// a string holding one of the choices.
using Field = std::variant<std::monostate, uint64_t*, uint32_t*, double*, bool*, std::string*, EnumField,
                           std::vector<uint32_t>*, std::vector<double>*, RangeField>;
// `index` selects the element for options under an object list (tiers[i]).
using FieldFn = Field (*)(void* root, size_t index);
// A rule involving other options; throws ConfigError(path, reason).
using CheckFn = void (*)(const void* root, size_t index, const std::string& path);

// Adapts a typed rule `void f(const T&, size_t index, const std::string& path)`.
template <class T, void (*F)(const T&, size_t, const std::string&)>
void rule(const void* root, size_t index, const std::string& path) {
  F(*static_cast<const T*>(root), index, path);
}

inline constexpr double kInf = std::numeric_limits<double>::infinity();

struct Option {
  uint8_t section = 0;
  std::string_view name;
  Type type = Type::kIgnored;
  std::string_view description;
  FieldFn field = nullptr;
  bool required = false;  // the key must be present (parser)
  // Bounds on the value, or on each element of a list or range (validate()).
  double min = 0;
  bool minExclusive = false;
  double max = kInf;
  uint32_t multipleOf = 0;
  bool powerOfTwo = false;
  bool nonEmpty = false;  // kString: not "" (validate()); lists: not [] when given (parser)
  std::vector<std::string_view> choices = {};  // kEnum
  std::string_view rule = {};
  CheckFn check = nullptr;
  // kObject / kObjectList
  uint8_t child = 0;
  size_t (*count)(const void* root) = nullptr;
  void (*resize)(void* root, size_t n) = nullptr;
  // kObject: a bare string stands for {shorthand: value} ("popularity": "zipf").
  std::string_view shorthand = {};
};

struct Schema {
  // "": the rows of section 0 are the document's top level; "workload": they
  // are that member of the document (absent: the defaults), and the rest of
  // the document belongs to other programs.
  std::string_view root;
  // Section id -> how its keys are written in docs ("tiers[]"); [0] = root.
  std::vector<std::string_view> sections;
  std::vector<Option> options;
  // Counts and sizes also accept a JSON number with no fraction (1e6): the
  // bench and server always did; the cache never has.
  bool wholeFloats = false;
};

// Parse a whole JSON document into `root` (a default-constructed config).
// Diagnostics, the same for every schema: syntax errors with line and
// column, keys given twice, NUL in keys, nesting deeper than kMaxJsonDepth,
// arrays longer than kMaxJsonArray, numbers out of range, unknown keys,
// wrong types, missing required keys. Bounds and rules are validate()'s.
// `given`, if not null, receives the key path (as keyPath() writes it,
// "workload.popularity.alpha") of every row the document sets, for the
// few rules about what was written rather than what it means.
void parse(const Schema& schema, std::string_view document, void* root, std::set<std::string>* given = nullptr);
// Bounds and rules of every row, in table order; throws the first ConfigError.
void validate(const Schema& schema, const void* root);
// Every row (but kIgnored) as JSON, in table order.
std::string toJson(const Schema& schema, const void* root, int indent);
// | Key | Type | Default | Valid values | Description |, defaults read from
// `defaults` (object lists there need one element).
std::string markdown(const Schema& schema, const void* defaults);
// The key path of a row as written in docs ("tiers[].name", "workload.seed").
std::string keyPath(const Schema& schema, const Option& o);

// `e` with " (in <source>)" after its reason, same path: for file parsers.
ConfigError inSource(const ConfigError& e, const std::string& source);

inline constexpr int kMaxJsonDepth = 64;        // nesting the parser accepts
inline constexpr size_t kMaxJsonArray = 65537;  // elements of one array (pools + 1)
inline constexpr uint64_t kMaxConfigFileBytes = 4ull << 20;

// A config file's text: a regular file of at most kMaxConfigFileBytes
// (devices, FIFOs and directories are refused); throws ConfigError naming it.
std::string readConfigFile(const std::string& path);

// Message pieces every table words the same way.
std::string quote(std::string_view s);          // "\"value\"", cut at 40 bytes
std::string displayKey(std::string_view key);   // control bytes escaped, cut at 40
std::string formatNumber(double v);             // 3, 0.25, 1e+20
// " (did you mean 'x'?)" for the candidate closest to `given`, or "".
std::string suggestion(std::string_view given, const std::vector<std::string_view>& candidates);

// An enum's choices, from its name table.
template <class E, size_t N>
std::vector<std::string_view> choicesOf(const std::array<NameRow<E>, N>& rows) {
  std::vector<std::string_view> out;
  for (const NameRow<E>& r : rows) out.push_back(r.name);
  return out;
}

}  // namespace tiercache::config
