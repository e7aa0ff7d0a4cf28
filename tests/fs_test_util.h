// Test helpers for files and warnings, shared by the tier and topology tests.
#pragma once

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "common/log.h"

namespace tiercache::test {

// A saved topology or other fixture under tests/data/.
inline std::string dataFile(const std::string& name) { return TIERCACHE_SOURCE_DIR "/tests/data/" + name; }

// A fresh directory under `parent`, removed (with anything left in it) at scope exit.
class TempDir {
 public:
  explicit TempDir(const std::string& parent, const std::string& prefix = "tiercache-test") {
    std::string tmpl = parent + "/" + prefix + "-XXXXXX";
    if (!mkdtemp(tmpl.data())) std::abort();
    path_ = tmpl;
  }
  ~TempDir() {
    for (const std::string& e : entries()) ::unlink((path_ + "/" + e).c_str());
    ::chmod(path_.c_str(), 0700);
    ::rmdir(path_.c_str());
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }
  // Names in the directory, "." and ".." excluded.
  std::set<std::string> entries() const {
    std::set<std::string> out;
    if (DIR* d = ::opendir(path_.c_str())) {
      while (dirent* e = ::readdir(d)) {
        if (std::strcmp(e->d_name, ".") && std::strcmp(e->d_name, "..")) out.insert(e->d_name);
      }
      ::closedir(d);
    }
    return out;
  }

 private:
  std::string path_;
};

// Captures logWarning() output for the scope of the object.
class WarningCapture {
 public:
  WarningCapture() {
    old_ = setWarningSink([this](const std::string& w) { warnings.push_back(w); });
  }
  ~WarningCapture() { setWarningSink(std::move(old_)); }
  std::vector<std::string> warnings;

 private:
  WarningSink old_;
};

}  // namespace tiercache::test
