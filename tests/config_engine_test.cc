// The schema engine shared by the cache, bench and server options
// (config/), the enum name tables, and the one size formatter.
#include <gtest/gtest.h>

#include <string>

#include "allocator/cache_config.h"
#include "config/schema.h"
#include "config/sizes.h"
#include "eviction/eviction_policy.h"
#include "server/server_config.h"

namespace tiercache {
namespace {

// The reason of the ConfigError that `fn` throws, after "<path>: ".
template <class Fn>
std::string reasonOf(Fn fn, const std::string& path) {
  try {
    fn();
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.path(), path) << e.what();
    return e.reason();
  }
  ADD_FAILURE() << "no ConfigError at " << path;
  return "";
}

// One input mistake, one wording, whichever program's table the key is in
// (the bench's workload table: workload_test.cc, SameWordingAsTheCache).
TEST(ConfigEngine, SameMistakeSameWordingInEveryTable) {
  const auto cache = [](const std::string& v) {
    return reasonOf([&] { CacheConfig::fromJsonString(R"({"tiers":[{"name":"t","size":"64MiB"}],"index":{"bucket_power":)" + v + "}}"); },
                    "index.bucket_power");
  };
  const auto server = [](const std::string& v) {
    return reasonOf([&] { server::ServerConfig::fromJsonString(R"({"server":{"threads":)" + v + "}}"); },
                    "server.threads");
  };
  for (const std::string v : {R"("x")", "-3", "true", "[1]"}) {
    SCOPED_TRACE(v);
    const std::string reason = cache(v);
    EXPECT_FALSE(reason.empty());
    EXPECT_EQ(server(v), reason);
  }
  // Unknown keys: named, with the nearest key suggested, in all three.
  EXPECT_EQ(reasonOf([] { CacheConfig::fromJsonString(R"({"tiers":[{"name":"t","size":"64MiB"}],"index":{"bucket_powr":2}})"); },
                     "index.bucket_powr"),
            "unknown key (did you mean 'bucket_power'?)");
  EXPECT_EQ(reasonOf([] { server::ServerConfig::fromJsonString(R"({"server":{"thread":2}})"); }, "server.thread"),
            "unknown key (did you mean 'threads'?)");
  // Syntax errors and repeated keys: the document-level diagnostics are shared.
  for (auto parse : {+[](std::string_view d) { CacheConfig::fromJsonString(d); },
                     +[](std::string_view d) { server::ServerConfig::fromJsonString(d); }}) {
    EXPECT_EQ(reasonOf([&] { parse("{\n  \"workload\": {,}}"); }, ""),
              "JSON syntax error at line 2, column 16 (byte offset 17): syntax error while parsing object key - "
              "unexpected ','; expected string literal");
  }
}

// The server always accepted a count written as a JSON number without a
// fraction; it still does (the bench too: workload_test.cc).
TEST(ConfigEngine, ServerStillTakesWholeFloats) {
  EXPECT_EQ(server::ServerConfig::fromJsonString(R"({"server":{"port":11311.0}})").port, 11311u);
  EXPECT_EQ(reasonOf([] { server::ServerConfig::fromJsonString(R"({"server":{"port":1.5}})"); }, "server.port"),
            "1.5 is not a whole number >= 0");
}

TEST(EnumNames, EveryValueRoundTripsAndUnknownNamesAreRefused) {
  for (const auto& row : kTierKindNames) {
    EXPECT_EQ(tierKindName(row.value), row.name);
    EXPECT_EQ(tierKindFromName(row.name), row.value);
  }
  for (const auto& row : kBindPolicyNames) {
    EXPECT_EQ(bindPolicyName(row.value), row.name);
    EXPECT_EQ(bindPolicyFromName(row.name), row.value);
  }
  EXPECT_EQ(tierKindFromName("pmem"), std::nullopt);
  EXPECT_EQ(bindPolicyFromName("Strict"), std::nullopt);
  EXPECT_EQ(std::string(tierKindName(static_cast<TierKind>(9))), "?");
}

class OneHook final : public HookResolver {
 public:
  EvictionHook& hook(RefWord) const override { return hook_; }
  uint64_t keyHash(RefWord ref) const override { return ref; }

 private:
  mutable EvictionHook hook_;
};

// Every EvictionPolicyKind builds the policy of its own name; a value outside
// the table is refused by validate() and by the factory, never run as another.
TEST(EnumNames, EvictionPolicyKindBuildsThePolicyOfItsName) {
  OneHook resolver;
  for (const auto& row : kEvictionPolicyKindNames) {
    EvictionPolicyOptions o;
    o.kind = evictionPolicyName(row.value);
    EXPECT_EQ(std::string(makeEvictionPolicy(o, resolver)->name()), row.name);
  }
  CacheConfig c = CacheConfig::dram(64ull << 20);
  c.eviction.policy = static_cast<EvictionPolicyKind>(4);
  EXPECT_EQ(reasonOf([&] { c.validate(); }, "eviction.policy"), "unknown value");
  EvictionPolicyOptions o;
  o.kind = evictionPolicyName(c.eviction.policy);
  EXPECT_THROW(makeEvictionPolicy(o, resolver), std::invalid_argument);
}

TEST(Sizes, OneFormatterTwoSpellings) {
  EXPECT_EQ(formatSize(1536ull << 10), "1536KiB");  // exact, parses back
  EXPECT_EQ(formatSizeApprox(1536ull << 10), "1.50MiB");
  EXPECT_EQ(formatSizeApprox(3ull << 30), "3GiB");
  EXPECT_EQ(formatSizeApprox(999), "999B");
  EXPECT_EQ(formatSizeApprox(0), "0B");
  EXPECT_EQ(formatSizeApprox(1025), "1.00KiB");
  EXPECT_EQ(parseSize("1.50MiB", "x"), 1536ull << 10);
}

}  // namespace
}  // namespace tiercache
