#include "log.h"

#include <cstdio>
#include <mutex>

namespace tiercache {

namespace {

std::mutex& sinkMutex() {
  static std::mutex m;
  return m;
}

WarningSink& sinkSlot() {
  static WarningSink sink;  // empty: stderr
  return sink;
}

}  // namespace

WarningSink setWarningSink(WarningSink sink) {
  std::lock_guard<std::mutex> lock(sinkMutex());
  WarningSink old = std::move(sinkSlot());
  sinkSlot() = std::move(sink);
  return old;
}

void logWarning(const std::string& text) {
  std::lock_guard<std::mutex> lock(sinkMutex());
  if (sinkSlot()) {
    sinkSlot()(text);
  } else {
    std::fprintf(stderr, "tiercache: warning: %s\n", text.c_str());
  }
}

}  // namespace tiercache
