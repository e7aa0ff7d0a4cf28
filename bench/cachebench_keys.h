// The CacheLib cachebench keys tiercache-bench knows, one row each: what a
// key maps to, its type, and whether it is honoured, refused when set, or
// ignored (and why). The import (bench/cachebench.cc) takes a key only when
// its row says it is honoured or refused when set, lists a key of an
// ignored row in its one warning, and calls any other key unknown.
// docs/cachebench.md's key tables are generated from these rows
// (cachebenchKeysMarkdown); a test keeps the three in step.
#pragma once

#include <span>
#include <string>
#include <string_view>

namespace tiercache::bench {

enum class CachebenchSection { kCacheConfig, kTestConfig };

enum class CachebenchHandling {
  kHonoured,      // mapped onto `target` (a value tiercache cannot honour is refused, as the note says)
  kRefusedIfSet,  // accepted at cachebench's zero/false default, refused otherwise (why: the note)
  kIgnored,       // read and dropped, named in the warning (why: the note)
  kNote,          // documentation only: a field of the key above, or what happens without a key
};

struct CachebenchKey {
  CachebenchSection section;
  const char* keys;     // the row's keys in the section's object, space-separated ("" for kNote)
  const char* display;  // the docs' key cell (markdown)
  const char* type;     // JSON type ("" when the row has no key)
  CachebenchHandling handling;
  const char* target;      // the tiercache option(s) it sets (markdown), "" if none
  const char* note;        // how it is mapped, or why it is refused or ignored (markdown)
  const char* brief = "";  // an ignored key's reason in the run's warning ("" when the docs alone say it)
};

std::span<const CachebenchKey> cachebenchKeyTable();
// The row holding `key` in `section` (nullptr: an unknown key).
const CachebenchKey* findCachebenchKey(CachebenchSection section, std::string_view key);
// The section's key tables as docs/cachebench.md holds them: the keys it
// reads, then the keys it ignores with the reason (rows sharing a reason
// are joined).
std::string cachebenchKeysMarkdown(CachebenchSection section);

}  // namespace tiercache::bench
