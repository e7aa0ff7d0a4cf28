// OutputQueue (see output_queue.h).
#include "output_queue.h"

#include <sys/socket.h>
#include <sys/uio.h>

#include <algorithm>

namespace tiercache::server {

void OutputQueue::add(std::string_view bytes) {
  if (bytes.empty()) return;
  if (head_ < segs_.size()) {
    Segment& last = segs_.back();
    if (!last.pin && last.offset + last.length == buf_.size()) {
      last.length += bytes.size();
      buf_.append(bytes);
      bytes_ += bytes.size();
      return;
    }
  }
  segs_.push_back(Segment{buf_.size(), bytes.size(), ReadHandle()});
  buf_.append(bytes);
  bytes_ += bytes.size();
}

bool OutputQueue::addValue(ReadHandle&& h, bool allowPin) {
  const std::string_view v = h.value();
  if (!allowPin || v.size() < kZeroCopyMin || pins_ >= kMaxPins) {
    add(v);
    return false;
  }
  segs_.push_back(Segment{0, v.size(), std::move(h)});
  bytes_ += v.size();
  ++pins_;
  return true;
}

ssize_t OutputQueue::writeTo(int fd, size_t& released) {
  released = 0;
  if (bytes_ == 0) return 0;
  iovec iov[kMaxIov];
  size_t n = 0;
  for (size_t i = head_; i < segs_.size() && n < kMaxIov; ++i, ++n) {
    const Segment& s = segs_[i];
    const char* base = s.pin ? s.pin.value().data() : buf_.data();
    iov[n].iov_base = const_cast<char*>(base + s.offset);
    iov[n].iov_len = s.length;
  }
  msghdr msg{};
  msg.msg_iov = iov;
  msg.msg_iovlen = n;
  const ssize_t w = ::sendmsg(fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
  if (w > 0) consume(static_cast<size_t>(w), released);
  return w;
}

void OutputQueue::consume(size_t n, size_t& released) {
  bytes_ -= n;
  while (n > 0) {
    Segment& s = segs_[head_];
    if (n < s.length) {
      s.offset += n;
      s.length -= n;
      break;
    }
    n -= s.length;
    if (s.pin) {
      s.pin.reset();
      --pins_;
      ++released;
    }
    ++head_;
  }
  compact();
}

void OutputQueue::compact() {
  if (head_ == segs_.size()) {
    segs_.clear();
    head_ = 0;
    buf_.clear();
    if (buf_.capacity() > kKeepCapacity) std::string().swap(buf_);
    if (segs_.capacity() > 1024) std::vector<Segment>().swap(segs_);
    return;
  }
  // A client that keeps a little behind never lets the queue empty: drop the
  // written prefix of the buffer once it is the larger part.
  size_t dead = buf_.size();
  for (size_t i = head_; i < segs_.size(); ++i) {
    if (!segs_[i].pin) {
      dead = segs_[i].offset;
      break;
    }
  }
  if (dead > kKeepCapacity && dead > buf_.size() / 2) {
    buf_.erase(0, dead);
    for (size_t i = head_; i < segs_.size(); ++i) {
      if (!segs_[i].pin) segs_[i].offset -= dead;
    }
  }
  if (head_ > 256 && head_ > segs_.size() / 2) {
    segs_.erase(segs_.begin(), segs_.begin() + static_cast<std::ptrdiff_t>(head_));
    head_ = 0;
  }
}

void OutputQueue::clear() {
  segs_.clear();
  head_ = 0;
  buf_.clear();
  bytes_ = 0;
  pins_ = 0;
}

}  // namespace tiercache::server
