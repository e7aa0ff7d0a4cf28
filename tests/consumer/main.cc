// Smoke test of an installed tiercache: build a DRAM cache, store a value
// that is not plain text, read it back. Exit 0 only on a byte-for-byte match.
#include <tiercache/tiercache.h>

#include <cstdio>
#include <optional>
#include <string>

int main() {
  std::string value(1000, '\0');
  for (size_t i = 0; i < value.size(); ++i) value[i] = static_cast<char>(i * 7 + 3);  // embedded NULs too

  tiercache::Cache cache(tiercache::CacheConfig::dram(64 << 20));
  if (!cache.set("consumer-key", value)) {
    std::fprintf(stderr, "set failed\n");
    return 1;
  }
  std::optional<std::string> got = cache.get("consumer-key");
  if (!got) {
    std::fprintf(stderr, "get missed a key just set\n");
    return 1;
  }
  if (*got != value) {
    std::fprintf(stderr, "value differs: %zu bytes read, %zu written\n", got->size(), value.size());
    return 1;
  }
  if (cache.get("absent-key")) {
    std::fprintf(stderr, "get found a key never set\n");
    return 1;
  }
  std::printf("ok: %zu bytes read back\n", got->size());
  return 0;
}
