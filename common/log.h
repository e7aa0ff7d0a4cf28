// The log sink: where the library's warnings go (failed advisory bindings,
// a tier that could not get huge pages, ...). A library must not own the
// process's stderr, so the sink is replaceable.
#pragma once

#include <functional>
#include <string>

namespace tiercache {

// The default sink writes "tiercache: warning: <text>" to stderr. Tests and
// servers install their own; setWarningSink returns the previous one.
// Thread-safe: the sink is called under a lock, so it must not call
// logWarning() itself.
using WarningSink = std::function<void(const std::string&)>;
WarningSink setWarningSink(WarningSink sink);
void logWarning(const std::string& text);

}  // namespace tiercache
