// Names of file systems, for tier messages and describe().
#pragma once

#include <string>

namespace tiercache {

// "tmpfs", "ext4", "xfs", ... for a statfs f_type; "fs 0x..." otherwise.
std::string fileSystemName(long magic);

}  // namespace tiercache
