// memcached's binary protocol, carried out by the same CommandHandler as the
// text protocol: each binary request becomes the meta command that does the
// same thing (get -> mg, set/add/replace/append/prepend -> ms with a mode,
// delete -> md, incr/decr -> ma with N and J for the initial value), whose
// reply is then written as the binary response. So CAS, TTL, flags, counters
// and every store rule are the text protocol's, not a second copy of them.
//
// Covered: get/getq/getk/getkq, set/add/replace (+q), append/prepend (+q),
// delete (+q), increment/decrement (+q), touch, gat/gatq/gatk/gatkq, flush
// (+q), noop, version, verbosity, stat (a group as the key), quit (+q).
// SASL and the range commands answer "unknown command", as a memcached
// built without SASL does. A quiet request sends nothing on success (a
// quiet get nothing on a miss); errors are always sent.
//
// A hit's value is queued by reference, as the text path's (no copy); the
// buffers are the object's, kept between requests (one per worker).
// Unlike the text path, a get whose item is on flash waits for the read on
// the worker (binary clients are legacy ones; the meta protocol is the
// fast path there).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "commands.h"
#include "protocol.h"

namespace tiercache::server {

// The binary protocol's statuses (memcached's protocol_binary.h values).
enum class BinaryStatus : uint16_t {
  kOk = 0x00,
  kNotFound = 0x01,
  kExists = 0x02,
  kTooLarge = 0x03,
  kInvalid = 0x04,
  kNotStored = 0x05,
  kNonNumeric = 0x06,
  kUnknownCommand = 0x81,
  kNoMemory = 0x82,
  kNotSupported = 0x83,
};

class BinaryCommands {
 public:
  explicit BinaryCommands(CommandHandler& handler) : handler_(handler) {}

  // One whole request: `h` and its body (extras, key, value; h.bodyBytes
  // long). Appends its response(s), if any, to `out`; kClose after quit.
  Next execute(const BinaryRequestHeader& h, std::string_view body, ReplySink& out, WorkerCounters& c);

 private:
  // What the CommandHandler replies to the meta command: its text, and an
  // mg's value still pinned.
  class Capture final : public ReplySink {
   public:
    void add(std::string_view bytes) override { text.append(bytes); }
    void addValue(ReadHandle&& h) override { value = std::move(h); }
    void clear() {
      text.clear();
      value = ReadHandle();
    }
    std::string text;
    ReadHandle value;
  };

  CommandHandler& handler_;
  Capture capture_;
  std::string reply_;
};

}  // namespace tiercache::server
