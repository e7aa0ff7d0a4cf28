// ConfigError: the one error type of every config parser (cache, bench
// workload, server). path() is the JSON key path ("tiers[1].size",
// "workload.threads"; "" for the whole document, e.g. a syntax error);
// what() is "<path>: <reason>".
#pragma once

#include <stdexcept>
#include <string>
#include <utility>

namespace tiercache {

class ConfigError : public std::runtime_error {
 public:
  ConfigError(std::string path, const std::string& reason)
      : std::runtime_error(path.empty() ? reason : path + ": " + reason), path_(std::move(path)) {}
  const std::string& path() const noexcept { return path_; }
  // The reason alone, without the "<path>: " prefix.
  std::string reason() const {
    const std::string what = this->what();
    return path_.empty() ? what : what.substr(path_.size() + 2);
  }

 private:
  std::string path_;
};

}  // namespace tiercache
