// NameTable: the one list of an enum's names, checked at compile time.
//
// An enum's names are written once, as {value, name} rows in the enum's own
// order. `static_assert(isDenseNameTable(kTable, Last))` in the enum's
// header fails the build when a row is missing, out of order or doubled, so
// a name can never index the wrong value; nameOf() and valueOf() are the
// only lookups (nothing maps an unknown name to a default).
#pragma once

#include <array>
#include <cstddef>
#include <optional>
#include <string_view>

namespace tiercache {

template <class E>
struct NameRow {
  E value;
  std::string_view name;
};

// Rows i = value i for every i, `last` is the last row, names not empty and
// distinct.
template <class E, size_t N>
constexpr bool isDenseNameTable(const std::array<NameRow<E>, N>& rows, E last) {
  if (N == 0 || static_cast<size_t>(last) + 1 != N) return false;
  for (size_t i = 0; i < N; ++i) {
    if (static_cast<size_t>(rows[i].value) != i || rows[i].name.empty()) return false;
    for (size_t j = 0; j < i; ++j) {
      if (rows[j].name == rows[i].name) return false;
    }
  }
  return true;
}

// The name of `value`; "?" for a value outside the table (a corrupt enum).
template <class E, size_t N>
constexpr std::string_view nameOf(const std::array<NameRow<E>, N>& rows, E value) {
  const size_t i = static_cast<size_t>(value);
  return i < N ? rows[i].name : std::string_view("?");
}

template <class E, size_t N>
constexpr std::optional<E> valueOf(const std::array<NameRow<E>, N>& rows, std::string_view name) {
  for (const NameRow<E>& r : rows) {
    if (r.name == name) return r.value;
  }
  return std::nullopt;
}

}  // namespace tiercache
