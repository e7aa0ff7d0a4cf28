// A cache past the 256 GiB that 32-bit item references could address: a
// 4 TiB DRAM tier, reserved lazily (MAP_NORESERVE), whose items sit in slabs
// past the last slab a 32-bit reference could name, read back byte for byte.
#include <gtest/gtest.h>
#include <sys/prctl.h>

#include <string>

#include "allocator/cache.h"
#include "config/sizes.h"
#include "test_util.h"

namespace tiercache {
namespace {

using test::makeValue;
using test::smallDramConfig;

// Transparent huge pages off for this process while it lives: the DRAM tier
// advises huge pages, and one item per 16 MiB slot would then fault in
// 2 MiB per item instead of 4 KiB.
class NoThpForThisProcess {
 public:
  NoThpForThisProcess() : was_(prctl(PR_GET_THP_DISABLE, 0, 0, 0, 0) == 1) { prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0); }
  ~NoThpForThisProcess() { prctl(PR_SET_THP_DISABLE, was_ ? 1 : 0, 0, 0, 0); }

 private:
  bool was_;
};

// TSan keeps about 1.5 TiB of address space per application range, so a
// 4 TiB mapping fails there; 512 GiB still reaches past slab 255.
#if defined(__SANITIZE_THREAD__)
constexpr uint64_t kFarTierBytes = 512 * kGiB;
#else
constexpr uint64_t kFarTierBytes = 4 * kTiB;
#endif

TEST(FarSlabs, AFourTebibyteTierHoldsItemsPastThe32BitReferenceLimit) {
  NoThpForThisProcess noThp;
  // 1 GiB slabs and a 64-byte smallest class: 24 slot bits, so a 32-bit
  // reference named slabs 0..254 only (255 GiB); 4096 slabs need 40 bits.
  CacheConfig cfg = smallDramConfig(kFarTierBytes, "lru", kGiB);
  cfg.allocation.sizes = {64, 16u << 20};  // one item per 16 MiB slot: 64 per slab
  cfg.allocation.max_size = 0;
  cfg.index.bucket_power = 16;
  ASSERT_EQ(cfg.slotBits(), 24u);
  ASSERT_EQ(cfg.slabCount(), kFarTierBytes / kGiB);
  Cache cache(cfg);
  EXPECT_EQ(cache.stats().tiers.at(0).slabs_total, kFarTierBytes / kGiB);

  // Slabs 0..263: past slab 255, the first a 32-bit reference could not name.
  constexpr int kSlabs = 264, kPerSlab = 64, kItems = kSlabs * kPerSlab;
  for (int i = 0; i < kItems; ++i) {
    const std::string key = "far" + std::to_string(i);
    ASSERT_TRUE(cache.set(key, makeValue(key, 1, 200))) << key;
  }
  int past = 0;
  uint32_t highest = 0;
  for (int i = 0; i < kItems; ++i) {
    const std::string key = "far" + std::to_string(i);
    ReadHandle h = cache.find(key);
    ASSERT_TRUE(h) << key;
    EXPECT_EQ(h.value(), makeValue(key, 1, 200)) << key;
    const uint32_t slab = h.ref().slab(cfg.slotBits());
    highest = std::max(highest, slab);
    if (h.ref().raw() > UINT32_MAX) ++past;
  }
  EXPECT_EQ(highest, kSlabs - 1u);
  // Slabs 256..263 lie past 2^32 as references (255 is kNull's id there).
  EXPECT_EQ(past, (kSlabs - 256) * kPerSlab);
  EXPECT_EQ(cache.stats().tiers.at(0).slabs_used, static_cast<uint64_t>(kSlabs));
  EXPECT_EQ(cache.checkConsistency(), "");
}

}  // namespace
}  // namespace tiercache
