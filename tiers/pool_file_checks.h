// Checks of a persistent tier's pool file that libpmemobj does not make
// itself: the file's owner and mode in words, the PMDK signature, a
// read-only libpmempool check, an open rehearsed in a child process (a
// damaged heap can crash or hang pmemobj_open), and the temporaries a killed
// creation left. PersistentPmemTier decides from their answers whether to
// open, rebuild or refuse a file; they hold no state.
#pragma once

#include <sys/stat.h>
#include <sys/types.h>

#include <string>

namespace tiercache::pool_file {

// The directory part of path ("." when there is none).
std::string parentDir(const std::string& path);
// The file system's name for dir ("tmpfs", "ext4", ...), or "unknown fs".
std::string fsTypeName(const std::string& dir);
// Whether the file starts with PMDK's pool signature. A file without it is
// never replaced, whatever rebuildOnMismatch says.
bool startsLikePmemObjPool(int fd);
std::string userName(uid_t uid);
// "owner uid N (name), mode 0NNN"
std::string describeOwner(const struct stat& st);
// libpmempool's read-only check of PMDK's metadata: empty when consistent,
// else what it found.
std::string checkPmemObjMetadata(const std::string& path);
// Opens the pool (with `layout`) in a child process first and reports a
// crash or a hang there; empty when the child ended normally or gave no
// verdict.
std::string probeOpenInChild(const std::string& path, const std::string& layout);
// Removes this user's "<base>.creating.<pid>" files in dir whose process is gone.
void removeStaleTemporaries(const std::string& dir, const std::string& base);

}  // namespace tiercache::pool_file
