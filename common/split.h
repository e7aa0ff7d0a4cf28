// Splitting text at a separator byte: every field kept, empty ones too
// ("a,,b" is three fields, "" is one), each a view into the input. The CSV
// trace readers and the server's comma lists (server.listen, lru_crawler
// class ids) use it.
#pragma once

#include <string_view>
#include <vector>

namespace tiercache {

inline std::vector<std::string_view> splitAt(std::string_view text, char separator) {
  std::vector<std::string_view> fields;
  size_t start = 0;
  while (true) {
    const size_t end = text.find(separator, start);
    fields.push_back(text.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start));
    if (end == std::string_view::npos) return fields;
    start = end + 1;
  }
}

}  // namespace tiercache
