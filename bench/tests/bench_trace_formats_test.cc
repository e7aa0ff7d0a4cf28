// Public trace formats (oracleGeneral, Twitter, Meta kvcache): small traces
// written here byte by byte, read back record by record, detected by shape,
// refused with the line named when malformed, and replayed on a real cache.
#include "bench/trace_formats.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "allocator/cache.h"
#include "allocator/item.h"
#include "bench/runner.h"
#include "test_util.h"

namespace tiercache::bench {
namespace {

std::string oracleRecord(uint32_t time, uint64_t id, uint32_t size, int64_t next) {
  std::string r(24, '\0');
  std::memcpy(r.data(), &time, 4);
  std::memcpy(r.data() + 4, &id, 8);
  std::memcpy(r.data() + 12, &size, 4);
  std::memcpy(r.data() + 16, &next, 8);
  return r;
}

TEST(TraceFormats, OracleGeneralRecordsAreGetsOfDecimalIds) {
  const std::string bytes = oracleRecord(1, 42, 100, 2) + oracleRecord(2, 7, 0, -1) +
                            oracleRecord(3, 18446744073709551615ull, 4096, -1) + oracleRecord(4, 42, 100, -1);
  EXPECT_EQ(detectTraceFormat("w.oracleGeneral.bin", bytes), "oracle-general");
  const Trace t = parseTrace("auto", bytes, "w.oracleGeneral.bin");
  ASSERT_EQ(t.size(), 3u) << "the size-0 record is skipped";
  EXPECT_EQ(t[0].key, "42");
  EXPECT_EQ(t[0].size, 100u);
  EXPECT_EQ(t[0].op, RequestOp::kGet);
  EXPECT_EQ(t[1].key, "18446744073709551615");
  EXPECT_EQ(t[1].size, 4096u);
  EXPECT_EQ(t[2].key, "42");
}

TEST(TraceFormats, OracleGeneralTruncatedFileIsRefused) {
  const std::string bytes = oracleRecord(1, 42, 100, 2) + "abc";
  try {
    parseTrace("oracle-general", bytes, "t.oracleGeneral");
    FAIL() << "no throw";
  } catch (const TraceError& e) {
    EXPECT_NE(std::string(e.what()).find("t.oracleGeneral: 27 bytes"), std::string::npos) << e.what();
  }
}

TEST(TraceFormats, TwitterOpsMapToGetSetDel) {
  const std::string text =
      "0,user:1,6,300,12,get,0\n"
      "1,user:1,6,300,12,set,3600\r\n"
      "2,user:2,6,40,3,gets,0\n"
      "3,user:2,6,41,3,cas,0\n"
      "4,user:2,6,0,3,delete,0\n"
      "5,ctr,3,8,1,incr,0\n";
  EXPECT_EQ(detectTraceFormat("cluster52.csv", text), "twitter");
  const Trace t = parseTrace("auto", text, "cluster52.csv");
  ASSERT_EQ(t.size(), 6u);
  EXPECT_EQ(t[0].key, "user:1");
  EXPECT_EQ(t[0].size, 300u);
  EXPECT_EQ(t[0].op, RequestOp::kGet);
  EXPECT_EQ(t[1].op, RequestOp::kSet);
  EXPECT_EQ(t[2].op, RequestOp::kGet);
  EXPECT_EQ(t[3].op, RequestOp::kSet);
  EXPECT_EQ(t[3].size, 41u);
  EXPECT_EQ(t[4].op, RequestOp::kDel);
  EXPECT_EQ(t[5].op, RequestOp::kSet);
}

TEST(TraceFormats, TwitterBadLineIsNamed) {
  const std::string text = "0,a,1,3,1,get,0\n1,b,1,x,1,get,0\n";
  try {
    parseTrace("twitter", text, "c.csv");
    FAIL() << "no throw";
  } catch (const TraceError& e) {
    EXPECT_EQ(std::string(e.what()), "c.csv:2: value size \"x\" is not a whole number");
  }
  EXPECT_THROW(parseTrace("twitter", "0,a,1,3,1,frobnicate,0\n", "c.csv"), TraceError);
}

TEST(TraceFormats, MetaKvHeaderNamesColumnsAndOpCountRepeats) {
  const std::string text =
      "key,op,size,op_count,key_size\n"
      "k1,GET,120,2,2\n"
      "k2,SET,50,1,2\n"
      "k1,DELETE,0,1,2\n";
  EXPECT_EQ(detectTraceFormat("kvcache_traces_1.csv", text), "meta-kv");
  const Trace t = parseTrace("auto", text, "kv.csv");
  ASSERT_EQ(t.size(), 4u);
  EXPECT_EQ(t[0].key, "k1");
  EXPECT_EQ(t[0].size, 120u);
  EXPECT_EQ(t[1].key, "k1");
  EXPECT_EQ(t[1].op, RequestOp::kGet);
  EXPECT_EQ(t[2].op, RequestOp::kSet);
  EXPECT_EQ(t[3].op, RequestOp::kDel);
  // Another column order works the same (the newer Meta traces).
  const Trace u = parseTrace("meta-kv", "op_time,key,key_size,op,op_count,size\n9,kx,2,GET,1,77\n", "kv2.csv");
  ASSERT_EQ(u.size(), 1u);
  EXPECT_EQ(u[0].key, "kx");
  EXPECT_EQ(u[0].size, 77u);
}

TEST(TraceFormats, OwnFormatsAreStillDetectedAndUnknownNamesRefused) {
  EXPECT_EQ(detectTraceFormat("t.csv", "key,size,op\na,1,get\n"), "tiercache");
  EXPECT_EQ(parseTrace("auto", "key,size,op\na,1,get\n", "t.csv").size(), 1u);
  try {
    parseTrace("parquet", "", "t");
    FAIL() << "no throw";
  } catch (const TraceError& e) {
    EXPECT_NE(std::string(e.what()).find("'parquet'"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("meta-kv"), std::string::npos);
  }
}

TEST(TraceFormats, TwitterTraceReplaysOnARealCache) {
  std::string text;
  for (int round = 0; round < 3; ++round) {
    for (int k = 0; k < 50; ++k) text += std::to_string(round * 50 + k) + ",key" + std::to_string(k) + ",5,200,1,get,0\n";
  }
  const Trace t = parseTrace("auto", text, "tw.csv");
  Cache cache(test::smallDramConfig(4 << 20, "s3fifo", 64 << 10));
  ReplayConfig rc;
  const WorkloadResult r = runTrace(cache, t, rc);
  EXPECT_EQ(r.ops.gets, 150u);
  EXPECT_EQ(r.ops.get_hits, 100u) << "50 cold misses, then every key is held";
  EXPECT_EQ(r.ops.lookaside_stored, 50u);
  EXPECT_EQ(r.ops.value_mismatches, 0u);
  // key0..key9 have 4 bytes, key10..key49 five; each get asks for header + key + value.
  const uint64_t perRound = 10 * (sizeof(Item) + 4 + 200) + 40 * (sizeof(Item) + 5 + 200);
  EXPECT_EQ(r.ops.get_bytes, 3 * perRound);
  EXPECT_EQ(r.ops.get_hit_bytes, 2 * perRound);
}

}  // namespace
}  // namespace tiercache::bench
