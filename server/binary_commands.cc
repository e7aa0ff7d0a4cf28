// Binary requests as meta commands (binary_commands.h).
#include "binary_commands.h"

#include <cstring>
#include <optional>

namespace tiercache::server {

namespace {

// memcached's binary opcodes (protocol_binary.h).
enum Opcode : uint8_t {
  kGet = 0x00,
  kSet = 0x01,
  kAdd = 0x02,
  kReplace = 0x03,
  kDelete = 0x04,
  kIncrement = 0x05,
  kDecrement = 0x06,
  kQuit = 0x07,
  kFlush = 0x08,
  kGetQ = 0x09,
  kNoop = 0x0a,
  kVersion = 0x0b,
  kGetK = 0x0c,
  kGetKQ = 0x0d,
  kAppend = 0x0e,
  kPrepend = 0x0f,
  kStat = 0x10,
  kSetQ = 0x11,
  kAddQ = 0x12,
  kReplaceQ = 0x13,
  kDeleteQ = 0x14,
  kIncrementQ = 0x15,
  kDecrementQ = 0x16,
  kQuitQ = 0x17,
  kFlushQ = 0x18,
  kAppendQ = 0x19,
  kPrependQ = 0x1a,
  kVerbosity = 0x1b,
  kTouch = 0x1c,
  kGat = 0x1d,
  kGatQ = 0x1e,
  kGatK = 0x23,
  kGatKQ = 0x24,
};

// The quiet opcode's loud twin; `quiet` says whether it was one.
uint8_t loud(uint8_t op, bool& quiet) {
  quiet = true;
  switch (op) {
    case kGetQ: return kGet;
    case kGetKQ: return kGetK;
    case kSetQ: return kSet;
    case kAddQ: return kAdd;
    case kReplaceQ: return kReplace;
    case kDeleteQ: return kDelete;
    case kIncrementQ: return kIncrement;
    case kDecrementQ: return kDecrement;
    case kQuitQ: return kQuit;
    case kFlushQ: return kFlush;
    case kAppendQ: return kAppend;
    case kPrependQ: return kPrepend;
    case kGatQ: return kGat;
    case kGatKQ: return kGatK;
    default: quiet = false; return op;
  }
}

// A meta reply: its code (HD, VA, EN, NF, NS, EX, or an error line's first
// word), the c and f return flags and, after VA, the value.
struct MetaReply {
  std::string_view code;
  uint64_t cas = 0;
  uint32_t flags = 0;
  std::string_view value;
  std::string_view line;  // the whole first line, for an error's message
};

MetaReply readMetaReply(std::string_view text) {
  MetaReply r;
  const size_t end = text.find("\r\n");
  r.line = text.substr(0, end);
  std::string_view rest = r.line;
  size_t n = 0;
  for (; !rest.empty(); ++n) {
    const size_t sp = rest.find(' ');
    const std::string_view token = rest.substr(0, sp);
    rest = sp == std::string_view::npos ? std::string_view() : rest.substr(sp + 1);
    if (n == 0) {
      r.code = token;
    } else if (n == 1 && r.code == "VA") {
      uint64_t len = 0;
      if (parseU64(token, len) && end != std::string_view::npos && end + 2 + len <= text.size())
        r.value = text.substr(end + 2, len);
    } else if (token.size() > 1 && token[0] == 'c') {
      parseU64(token.substr(1), r.cas);
    } else if (token.size() > 1 && token[0] == 'f') {
      parseU32(token.substr(1), r.flags);
    }
  }
  return r;
}

std::string bigEndian(uint64_t v, size_t bytes) {
  std::string s;
  appendBigEndian(s, v, bytes);
  return s;
}

// What a well-formed request of a (loud) opcode carries: its extras' length
// (kZeroOrFour: flush's optional delay), whether a key of 1 to 250 bytes
// must, may or must not come, and whether a value may.
struct Shape {
  static constexpr int kZeroOrFour = -1;
  enum class Key : uint8_t { kNone, kRequired, kOptional };
  int extras;
  Key key;
  bool value;
};
std::optional<Shape> shapeOf(uint8_t op) {
  using K = Shape::Key;
  switch (op) {
    case kGet:
    case kGetK:
    case kDelete: return Shape{0, K::kRequired, false};
    case kTouch:
    case kGat:
    case kGatK: return Shape{4, K::kRequired, false};
    case kSet:
    case kAdd:
    case kReplace: return Shape{8, K::kRequired, true};
    case kAppend:
    case kPrepend: return Shape{0, K::kRequired, true};
    case kIncrement:
    case kDecrement: return Shape{20, K::kRequired, false};
    case kFlush: return Shape{Shape::kZeroOrFour, K::kNone, false};
    case kVerbosity: return Shape{4, K::kNone, false};
    case kStat: return Shape{0, K::kOptional, false};
    case kNoop:
    case kVersion:
    case kQuit: return Shape{0, K::kNone, false};
    default: return std::nullopt;  // not served: "Unknown command"
  }
}
bool fits(const Shape& shape, std::string_view extras, std::string_view key, std::string_view value) {
  const bool extrasOk = shape.extras == Shape::kZeroOrFour ? extras.empty() || extras.size() == 4
                                                           : extras.size() == static_cast<size_t>(shape.extras);
  const bool keyOk = key.size() <= kMaxKeyLength && (shape.key == Shape::Key::kRequired ? !key.empty()
                                                     : shape.key == Shape::Key::kNone   ? key.empty()
                                                                                        : true);
  return extrasOk && keyOk && (shape.value || value.empty());
}

void flag(MetaFlags& m, char letter) { m.seen |= uint64_t{1} << (letter - 'A'); }
void returnFlag(MetaFlags& m, char letter) {
  flag(m, letter);
  m.order[m.orderCount++] = letter;
}

std::string_view message(BinaryStatus s) {
  switch (s) {
    case BinaryStatus::kNotFound: return "Not found";
    case BinaryStatus::kExists: return "Data exists for key.";
    case BinaryStatus::kTooLarge: return "Too large.";
    case BinaryStatus::kInvalid: return "Invalid arguments";
    case BinaryStatus::kNotStored: return "Not stored.";
    case BinaryStatus::kNonNumeric: return "Non-numeric server-side value for incr or decr";
    case BinaryStatus::kUnknownCommand: return "Unknown command";
    case BinaryStatus::kNoMemory: return "Out of memory";
    default: return "";
  }
}

}  // namespace

Next BinaryCommands::execute(const BinaryRequestHeader& h, std::string_view body, ReplySink& out, WorkerCounters& c) {
  bool quiet = false;
  const uint8_t op = loud(h.opcode, quiet);
  std::string& reply = reply_;
  reply.clear();
  Capture& capture = capture_;
  capture.clear();
  auto respond = [&](BinaryStatus status, uint64_t cas = 0, std::string_view extras = {}, std::string_view key = {},
                     std::string_view value = {}) {
    appendBinaryResponse(reply, h, static_cast<uint16_t>(status), cas, extras, key, value);
  };
  auto fail = [&](BinaryStatus status, std::string_view text = {}) {
    if (status == BinaryStatus::kInvalid || status == BinaryStatus::kUnknownCommand) c.add(c.protocol_errors);
    respond(status, 0, {}, {}, text.empty() ? message(status) : text);
  };
  const size_t extrasBytes = h.extrasBytes, keyBytes = h.keyBytes;
  const bool framed = extrasBytes + keyBytes <= body.size();
  const std::string_view extras = framed ? body.substr(0, extrasBytes) : std::string_view();
  const std::string_view key = framed ? body.substr(extrasBytes, keyBytes) : std::string_view();
  const std::string_view value = framed ? body.substr(extrasBytes + keyBytes) : std::string_view();
  if (const std::optional<Shape> shape = shapeOf(op); shape && !(framed && fits(*shape, extras, key, value))) {
    fail(BinaryStatus::kInvalid);
    out.add(reply);
    return Next::kContinue;
  }

  Request r;
  // The meta command on this request's key, with its CAS token if it has one.
  auto keyed = [&](Command command) {
    r.command = command;
    r.keys.push_back(key);
  };
  auto compareCas = [&] {
    if (h.cas == 0) return;
    flag(r.meta, 'C');
    r.meta.compareCas = h.cas;
  };
  switch (op) {
    case kGet:
    case kGetK:
    case kTouch:
    case kGat:
    case kGatK: {
      const bool touch = op == kTouch || op == kGat || op == kGatK;
      keyed(Command::kMetaGet);
      if (op != kTouch) flag(r.meta, 'v');
      returnFlag(r.meta, 'f');
      returnFlag(r.meta, 'c');
      if (touch) {
        flag(r.meta, 'T');
        r.meta.ttl = readBigEndian(extras, 0, 4);
      }
      handler_.execute(r, capture, c);
      const MetaReply m = readMetaReply(capture.text);
      const bool withKey = op == kGetK || op == kGatK;
      if (m.code == "VA" || m.code == "HD") {
        // The value (VA) goes out from the pinned item.
        const uint64_t valueBytes = capture.value ? capture.value.value().size() : 0;
        appendBinaryResponseHead(reply, h, static_cast<uint16_t>(BinaryStatus::kOk), m.cas, bigEndian(m.flags, 4),
                                 withKey ? key : std::string_view(), valueBytes);
        out.add(reply);
        reply.clear();
        if (capture.value) out.addValue(std::move(capture.value));
      } else if (!quiet) {
        // A miss names the key to the K commands (their clients match replies by it).
        if (withKey)
          respond(BinaryStatus::kNotFound, 0, {}, key);
        else
          fail(BinaryStatus::kNotFound);
      }
      break;
    }
    case kSet:
    case kAdd:
    case kReplace:
    case kAppend:
    case kPrepend: {
      const bool append = op == kAppend || op == kPrepend;
      keyed(Command::kMetaSet);
      r.valueBytes = value.size();
      flag(r.meta, 'M');
      r.meta.mode = op == kSet ? 'S' : op == kAdd ? 'E' : op == kReplace ? 'R' : op == kAppend ? 'A' : 'P';
      if (!append) {
        flag(r.meta, 'F');
        r.meta.clientFlags = readBigEndian(extras, 0, 4);
        flag(r.meta, 'T');
        r.meta.ttl = readBigEndian(extras, 4, 4);
      }
      compareCas();
      returnFlag(r.meta, 'c');
      PendingValue pending;
      if (handler_.beginStore(r, capture, c, pending)) {
        if (!value.empty()) std::memcpy(pending.data(), value.data(), value.size());
        handler_.finishStore(r, std::move(pending), capture, c);
      }
      const MetaReply m = readMetaReply(capture.text);
      if (m.code == "HD") {
        if (!quiet) respond(BinaryStatus::kOk, m.cas);
      } else if (m.code == "EX") {
        fail(BinaryStatus::kExists);
      } else if (m.code == "NF") {
        fail(BinaryStatus::kNotFound);
      } else if (m.code == "NS") {
        // add finds the key there; replace finds none; append/prepend find none.
        fail(op == kAdd ? BinaryStatus::kExists : op == kReplace ? BinaryStatus::kNotFound : BinaryStatus::kNotStored);
      } else if (m.line.find("too large") != std::string_view::npos) {
        fail(BinaryStatus::kTooLarge);
      } else {
        fail(BinaryStatus::kNoMemory);
      }
      break;
    }
    case kDelete: {
      keyed(Command::kMetaDelete);
      compareCas();
      handler_.execute(r, capture, c);
      const MetaReply m = readMetaReply(capture.text);
      if (m.code == "HD") {
        if (!quiet) respond(BinaryStatus::kOk);
      } else {
        fail(m.code == "EX" ? BinaryStatus::kExists : BinaryStatus::kNotFound);
      }
      break;
    }
    case kIncrement:
    case kDecrement: {
      keyed(Command::kMetaArithmetic);
      flag(r.meta, 'M');
      r.meta.mode = op == kIncrement ? 'I' : 'D';
      flag(r.meta, 'D');
      r.meta.delta = readBigEndian(extras, 0, 8);
      // An expiration of all ones: no item is made for a missing key.
      const uint32_t exptime = readBigEndian(extras, 16, 4);
      if (exptime != 0xffffffffu) {
        flag(r.meta, 'N');
        r.meta.vivifyTtl = exptime;
        flag(r.meta, 'J');
        r.meta.initial = readBigEndian(extras, 8, 8);
      }
      compareCas();
      flag(r.meta, 'v');
      returnFlag(r.meta, 'c');
      handler_.execute(r, capture, c);
      const MetaReply m = readMetaReply(capture.text);
      uint64_t number = 0;
      if (m.code == "VA" && parseU64(m.value, number)) {
        if (!quiet) respond(BinaryStatus::kOk, m.cas, {}, {}, bigEndian(number, 8));
      } else if (m.code == "NF") {
        fail(BinaryStatus::kNotFound);
      } else if (m.code == "EX") {
        fail(BinaryStatus::kExists);
      } else if (m.code == "CLIENT_ERROR") {
        fail(BinaryStatus::kNonNumeric);
      } else {
        fail(BinaryStatus::kNoMemory);
      }
      break;
    }
    case kFlush: {
      r.command = Command::kFlushAll;
      r.exptime = extras.empty() ? 0 : readBigEndian(extras, 0, 4);
      handler_.execute(r, capture, c);
      if (capture.text.starts_with("OK")) {
        if (!quiet) respond(BinaryStatus::kOk);
      } else {
        fail(BinaryStatus::kNotSupported, "flush_all not allowed");
      }
      break;
    }
    case kNoop: respond(BinaryStatus::kOk); break;
    case kVersion: respond(BinaryStatus::kOk, 0, {}, {}, CommandHandler::kVersion); break;
    case kVerbosity:
      r.command = Command::kVerbosity;
      r.verbosity = readBigEndian(extras, 0, 4);
      handler_.execute(r, capture, c);
      respond(BinaryStatus::kOk);
      break;
    case kStat: {
      // The group is the key ("" for the general stats, "settings", "slabs", ...):
      // one response per STAT line, with the name as key, then an empty one.
      r.command = Command::kStats;
      r.statsArgs = key;
      handler_.execute(r, capture, c);
      std::string_view text = capture.text;
      if (!text.starts_with("STAT ") && !text.starts_with("END") && !text.starts_with("RESET")) {
        fail(BinaryStatus::kNotFound);
        break;
      }
      while (text.starts_with("STAT ")) {
        const size_t end = text.find("\r\n");
        std::string_view line = text.substr(5, end - 5);
        const size_t sp = line.find(' ');
        respond(BinaryStatus::kOk, 0, {}, line.substr(0, sp),
                sp == std::string_view::npos ? std::string_view() : line.substr(sp + 1));
        text = end == std::string_view::npos ? std::string_view() : text.substr(end + 2);
      }
      respond(BinaryStatus::kOk);
      break;
    }
    case kQuit:
      if (!quiet) respond(BinaryStatus::kOk);
      out.add(reply);
      return Next::kClose;
    default: fail(BinaryStatus::kUnknownCommand); break;
  }
  if (!reply.empty()) out.add(reply);
  capture.clear();  // no pin outlives the request
  return Next::kContinue;
}

}  // namespace tiercache::server
