#include "huge_mapping.h"

#include <sys/mman.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

namespace tiercache {

void* mapHugeAnonymous(size_t size) {
  constexpr size_t kHuge = size_t{2} << 20;
  const int flags = MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE;
  if (size < kHuge) {
    void* p = mmap(nullptr, size, PROT_READ | PROT_WRITE, flags, -1, 0);
    return p == MAP_FAILED ? nullptr : p;
  }
  void* raw = mmap(nullptr, size + kHuge, PROT_READ | PROT_WRITE, flags, -1, 0);
  if (raw == MAP_FAILED) return nullptr;
  const uintptr_t start = reinterpret_cast<uintptr_t>(raw);
  const uintptr_t aligned = (start + kHuge - 1) & ~(kHuge - 1);
  if (aligned > start) munmap(raw, aligned - start);
  const uintptr_t end = start + size + kHuge;
  if (end > aligned + size) munmap(reinterpret_cast<void*>(aligned + size), end - (aligned + size));
  // Advice only: where THP is off this is a no-op and 4 KiB pages are used.
  madvise(reinterpret_cast<void*>(aligned), size, MADV_HUGEPAGE);
  return reinterpret_cast<void*>(aligned);
}

uint64_t hugeMappedBytes(const void* start) {
  std::ifstream smaps("/proc/self/smaps");
  char head[32];
  std::snprintf(head, sizeof head, "%lx-", static_cast<unsigned long>(reinterpret_cast<uintptr_t>(start)));
  const size_t headLen = std::strlen(head);
  bool inside = false;
  uint64_t kib = 0;
  for (std::string line; std::getline(smaps, line);) {
    // A block starts with "start-end perms offset dev inode path", whose
    // first ':' (in dev) comes after a space; a field line ("Size: ...")
    // has its ':' before any space.
    const bool blockStart = !line.empty() && line.find(':') > line.find(' ');
    if (blockStart) {
      if (inside) break;
      inside = line.compare(0, headLen, head) == 0;
      continue;
    }
    if (!inside) continue;
    for (const char* field : {"AnonHugePages:", "ShmemPmdMapped:", "FilePmdMapped:"}) {
      if (line.rfind(field, 0) == 0) kib += std::strtoull(line.c_str() + std::strlen(field), nullptr, 10);
    }
  }
  return kib << 10;
}

}  // namespace tiercache
