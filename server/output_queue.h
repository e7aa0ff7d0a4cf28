// OutputQueue: the replies a connection owes its client, written with one
// sendmsg per flush.
//
// Reply bytes are appended to one growing buffer; a large value may instead
// be queued by reference to the item that holds it (zero-copy), the item
// pinned by a ReadHandle until its last byte is written. Pins are bounded:
// a queue holds at most kMaxPins of them, and a caller may give a lower
// budget (the worker's share of the item's refcount range, so no client
// pattern can saturate an item's count); past the bound a value is copied.
//
// Invariants: bytes() is the sum of the queued segments' unsent bytes;
// pins() is the number of segments holding a ReadHandle; an empty queue
// holds no pin and (once drained) no buffer beyond kKeepCapacity.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "../allocator/handle.h"

namespace tiercache::server {

class OutputQueue {
 public:
  static constexpr size_t kZeroCopyMin = 4096;  // smaller values are copied: a pin costs more than the copy
  static constexpr size_t kMaxPins = 32;
  static constexpr size_t kMaxIov = 64;  // segments per sendmsg
  static constexpr size_t kKeepCapacity = 256 * 1024;

  void add(std::string_view bytes);
  // Queues h's value: by reference when large and allowPin and fewer than
  // kMaxPins are held; copied otherwise. Returns true if it took a pin.
  bool addValue(ReadHandle&& h, bool allowPin);

  size_t bytes() const { return bytes_; }
  size_t pins() const { return pins_; }
  bool empty() const { return bytes_ == 0; }

  // One sendmsg (MSG_NOSIGNAL | MSG_DONTWAIT) of up to kMaxIov segments.
  // Returns the bytes written (0 if the queue is empty), or -1 with errno
  // set (EAGAIN: the socket is full). Pins of fully written values are
  // released; returns how many through `released`.
  ssize_t writeTo(int fd, size_t& released);
  // Drops everything queued (the connection is closing).
  void clear();

 private:
  struct Segment {
    size_t offset = 0;  // into buf_ (unpinned) or into pin's value
    size_t length = 0;
    ReadHandle pin;  // empty: the bytes are buf_[offset, offset + length)
  };
  void consume(size_t n, size_t& released);
  void compact();

  std::string buf_;
  std::vector<Segment> segs_;
  size_t head_ = 0;  // first unsent segment
  size_t bytes_ = 0;
  size_t pins_ = 0;
};

}  // namespace tiercache::server
