// The server's OutputQueue over a real socket pair: zero-copy values and
// their pins are bounded, partial writes resume where they stopped, and a
// written value's pin is released (server/output_queue.h).
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>

#include "allocator/cache.h"
#include "server/output_queue.h"
#include "test_util.h"

namespace tiercache::server {
namespace {

std::string readAll(int fd, size_t n) {
  std::string got;
  char buf[65536];
  while (got.size() < n) {
    const ssize_t r = ::read(fd, buf, sizeof(buf));
    if (r <= 0) break;
    got.append(buf, static_cast<size_t>(r));
  }
  return got;
}

TEST(OutputQueue, PinsAreBoundedAndReleasedOnceWritten) {
  Cache cache(test::smallDramConfig(8 << 20));
  const std::string big(OutputQueue::kZeroCopyMin + 100, 'b');
  const std::string small(100, 's');
  ASSERT_TRUE(cache.set("big", big));
  ASSERT_TRUE(cache.set("small", small));
  int sv[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
  const int smallBuffer = 4096;  // so that writes are partial
  ASSERT_EQ(setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &smallBuffer, sizeof(smallBuffer)), 0);

  OutputQueue q;
  std::string want;
  for (size_t i = 0; i < OutputQueue::kMaxPins + 5; ++i) {
    q.add("V\r\n");
    const bool pinned = q.addValue(cache.find("big"), true);
    EXPECT_EQ(pinned, i < OutputQueue::kMaxPins) << i;  // past the bound a value is copied
    want += "V\r\n" + big;
  }
  EXPECT_FALSE(q.addValue(cache.find("small"), true));  // small values are always copied
  EXPECT_FALSE(q.addValue(cache.find("big"), false));   // and so is any when the caller has no pin budget
  want += small + big;
  EXPECT_EQ(q.pins(), OutputQueue::kMaxPins);
  EXPECT_EQ(q.bytes(), want.size());

  // The socket takes less than the queue holds: writes resume where they stopped.
  size_t released = 0, total = 0;
  std::string got;
  while (!q.empty()) {
    const ssize_t n = q.writeTo(sv[0], released);
    if (n < 0) {
      ASSERT_TRUE(errno == EAGAIN || errno == EWOULDBLOCK);
      got += readAll(sv[1], 1);
      continue;
    }
    total += released;
    EXPECT_EQ(q.pins() + total, OutputQueue::kMaxPins);
  }
  got += readAll(sv[1], want.size() - got.size());
  EXPECT_TRUE(got == want);
  EXPECT_EQ(q.pins(), 0u);
  EXPECT_EQ(total, OutputQueue::kMaxPins);
  ::close(sv[0]);
  ::close(sv[1]);
}

TEST(OutputQueue, ClearDropsBytesAndPins) {
  Cache cache(test::smallDramConfig(8 << 20));
  ASSERT_TRUE(cache.set("big", std::string(OutputQueue::kZeroCopyMin, 'x')));
  OutputQueue q;
  q.add("abc");
  EXPECT_TRUE(q.addValue(cache.find("big"), true));
  q.clear();
  EXPECT_TRUE(q.empty());
  EXPECT_EQ(q.pins(), 0u);
  size_t released = 0;
  EXPECT_EQ(q.writeTo(-1, released), 0);  // nothing to write: no system call
}

}  // namespace
}  // namespace tiercache::server
