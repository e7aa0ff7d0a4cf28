#include "file_system.h"

#include <cstdio>

namespace tiercache {

std::string fileSystemName(long magic) {
  switch (static_cast<unsigned long>(magic)) {
    case 0x01021994: return "tmpfs";
    case 0xEF53: return "ext4";
    case 0x58465342: return "xfs";
    case 0x9123683E: return "btrfs";
    case 0x794c7630: return "overlay";
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, "fs 0x%lx", static_cast<unsigned long>(magic));
  return buf;
}

}  // namespace tiercache
