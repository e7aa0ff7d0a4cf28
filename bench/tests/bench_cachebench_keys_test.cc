// The cachebench key table (bench/cachebench_keys.h) drives the import and
// docs/cachebench.md: every key the import takes is a row that says it is
// read, every such row is taken, an ignored row's key is warned about as
// known, any other key as unknown, and the docs hold the generated tables.
#include "bench/cachebench_keys.h"

#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "bench/cachebench.h"

namespace tiercache::bench {
namespace {

const char* sectionName(CachebenchSection s) {
  return s == CachebenchSection::kCacheConfig ? "cache_config" : "test_config";
}

// "cache_config.key" for every key of the rows with this handling.
std::set<std::string> rowKeys(bool (*pick)(CachebenchHandling)) {
  std::set<std::string> out;
  for (const CachebenchKey& row : cachebenchKeyTable()) {
    if (!pick(row.handling)) continue;
    std::istringstream keys(row.keys);
    for (std::string k; keys >> k;) out.insert(std::string(sectionName(row.section)) + "." + k);
  }
  return out;
}
bool isRead(CachebenchHandling h) {
  return h == CachebenchHandling::kHonoured || h == CachebenchHandling::kRefusedIfSet;
}
bool isIgnored(CachebenchHandling h) { return h == CachebenchHandling::kIgnored; }

constexpr const char* kMinimal =
    R"({"cache_config": {"cacheSizeMB": 64}, "test_config": {"numKeys": 100, "getRatio": 1}})";

TEST(CachebenchKeys, TheImportTakesExactlyTheRowsThatSayTheyAreRead) {
  const CachebenchConfig cb = importCachebench(kMinimal);
  const std::set<std::string> taken(cb.handled_keys.begin(), cb.handled_keys.end());
  EXPECT_EQ(taken.size(), cb.handled_keys.size()) << "a key is taken twice";
  const std::set<std::string> read = rowKeys(isRead);
  for (const std::string& k : read) EXPECT_TRUE(taken.count(k)) << k << " is a read row the import does not take";
  for (const std::string& k : taken) EXPECT_TRUE(read.count(k)) << k << " is taken but no row says it is read";
  EXPECT_GT(read.size(), 60u);
}

TEST(CachebenchKeys, EachKeyHasOneRowAndEveryRowSaysWhy) {
  std::set<std::string> seen;
  for (const CachebenchKey& row : cachebenchKeyTable()) {
    EXPECT_NE(std::string(row.display), "");
    // A refused or ignored key says why; an honoured one says what it sets.
    if (row.handling == CachebenchHandling::kIgnored || row.handling == CachebenchHandling::kRefusedIfSet)
      EXPECT_NE(std::string(row.note), "") << row.keys;
    if (row.handling == CachebenchHandling::kHonoured) EXPECT_NE(std::string(row.target) + row.note, "") << row.keys;
    if (isRead(row.handling)) EXPECT_NE(std::string(row.type), "") << row.keys << " has no type";
    std::istringstream keys(row.keys);
    for (std::string k; keys >> k;) {
      EXPECT_TRUE(seen.insert(std::string(sectionName(row.section)) + "." + k).second) << k << " is in two rows";
      EXPECT_EQ(findCachebenchKey(row.section, k), &row) << k;
    }
  }
  EXPECT_EQ(findCachebenchKey(CachebenchSection::kCacheConfig, "numOps"), nullptr);  // a test_config key
  EXPECT_EQ(findCachebenchKey(CachebenchSection::kTestConfig, "noSuchKey"), nullptr);
}

// Every ignored row's key is named in the warning as known; a key no row
// holds is named as unknown.
TEST(CachebenchKeys, IgnoredRowsAreWarnedAboutAndOthersAreUnknown) {
  std::string cache = R"("cacheSizeMB": 64)", test = R"("numKeys": 100, "getRatio": 1)";
  const std::set<std::string> ignored = rowKeys(isIgnored);
  ASSERT_GT(ignored.size(), 80u);
  for (const std::string& k : ignored) {
    const bool inCache = k.rfind("cache_config.", 0) == 0;
    std::string& obj = inCache ? cache : test;
    obj += ", \"" + k.substr(k.find('.') + 1) + "\": 0";
  }
  cache += R"(, "noSuchCacheKey": 1)";
  test += R"(, "noSuchTestKey": 1)";
  const CachebenchConfig cb = importCachebench("{\"cache_config\": {" + cache + "}, \"test_config\": {" + test + "}}");
  const std::set<std::string> warned(cb.ignored.begin(), cb.ignored.end());
  for (const std::string& k : ignored) {
    // A row with a brief reason names it after the key: "cache_config.navyBlockSize (flash I/O is ...)".
    const bool inCache = k.rfind("cache_config.", 0) == 0;
    const CachebenchKey* row = findCachebenchKey(
        inCache ? CachebenchSection::kCacheConfig : CachebenchSection::kTestConfig, k.substr(k.find('.') + 1));
    ASSERT_NE(row, nullptr) << k;
    const std::string named = *row->brief ? k + " (" + row->brief + ")" : k;
    EXPECT_TRUE(warned.count(named)) << named << " is not in the warning as known";
  }
  EXPECT_TRUE(warned.count("cache_config.noSuchCacheKey (unknown key)"));
  EXPECT_TRUE(warned.count("test_config.noSuchTestKey (unknown key)"));
  EXPECT_EQ(warned.size(), ignored.size() + 2);
}

TEST(CachebenchKeys, DocumentationContainsTheGeneratedTables) {
  const std::string path = std::string(TIERCACHE_SOURCE_DIR) + "/docs/cachebench.md";
  std::ifstream in(path);
  ASSERT_TRUE(in) << "cannot read " << path;
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string doc = ss.str();
  for (CachebenchSection s : {CachebenchSection::kCacheConfig, CachebenchSection::kTestConfig}) {
    const std::string md = cachebenchKeysMarkdown(s);
    if (doc.find(md) == std::string::npos) {
      const std::string out = std::string(TIERCACHE_BINARY_DIR) + "/cachebench_keys_" + sectionName(s) + ".md";
      std::ofstream(out) << md;
      ADD_FAILURE() << path << " is out of date: replace its block for " << sectionName(s) << " with " << out;
    }
  }
}

}  // namespace
}  // namespace tiercache::bench
