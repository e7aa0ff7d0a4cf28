// Server: libevent loops, connections and their request state machine.
#include "server.h"

#include <arpa/inet.h>
#include <event2/event.h>
#include <event2/listener.h>
#include <event2/thread.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <ctime>
#include <iostream>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <unordered_set>

#include "binary_commands.h"
#include "output_queue.h"
#include "pending_reads.h"
#include "wakeup.h"

namespace tiercache::server {

namespace {
std::mutex gLogMutex;

std::string peerName(const sockaddr* sa) {
  char buf[INET6_ADDRSTRLEN] = "?";
  uint16_t port = 0;
  if (sa->sa_family == AF_INET) {
    auto* in = reinterpret_cast<const sockaddr_in*>(sa);
    inet_ntop(AF_INET, &in->sin_addr, buf, sizeof(buf));
    port = ntohs(in->sin_port);
  } else if (sa->sa_family == AF_INET6) {
    auto* in = reinterpret_cast<const sockaddr_in6*>(sa);
    inet_ntop(AF_INET6, &in->sin6_addr, buf, sizeof(buf));
    port = ntohs(in->sin6_port);
  }
  return std::string(buf) + ":" + std::to_string(port);
}

// memcached's form in `stats conns`: tcp:1.2.3.4:11211, tcp6:[::1]:11211.
std::string socketName(int fd, bool peer) {
  sockaddr_storage ss{};
  socklen_t len = sizeof(ss);
  auto* sa = reinterpret_cast<sockaddr*>(&ss);
  if ((peer ? getpeername(fd, sa, &len) : getsockname(fd, sa, &len)) != 0) return "?";
  std::string name = peerName(sa);
  if (sa->sa_family != AF_INET6) return "tcp:" + name;
  const size_t colon = name.rfind(':');
  return "tcp6:[" + name.substr(0, colon) + "]" + name.substr(colon);
}
}  // namespace

void logLine(const std::string& line) {
  std::lock_guard<std::mutex> lock(gLogMutex);
  std::cerr << "tiercache-server: " << line << std::endl;
}

// ---------------------------------------------------------------------------
// One client connection, owned by one worker thread.
//
// I/O per wake-up: one read() into the connection's own input buffer (a
// second only when the first filled it), every complete request in it is
// carried out, then the replies go out with one sendmsg. Writability is
// watched only while the socket is full, reading is paused only while the
// output is above kOutputHigh, so a steady request/reply exchange costs two
// system calls and no epoll_ctl.
//
// Requests read in one pass of the event loop are carried out after it
// (runDeferred): each read only asks for the cache lines its first key's
// lookup will load, so one connection's index and item misses overlap the
// others' instead of following one another (with one request per read, as
// closed-loop clients send, they were a third of the worker's own user time).

struct Connection;

class Worker {
 public:
  // flash: the cache has a flash store, so gets that miss memory read it
  // without blocking this worker (pending_reads.h).
  Worker(Server& server, CommandHandler& handler, const ServerConfig& config, ServerState& state, bool verbose,
         bool flash)
      : server_(server),
        handler_(handler),
        config_(config),
        state_(state),
        verbose_(verbose),
        binary_(handler),
        pinBudget_(kPinsPerServer / config.threads) {
    // Only this worker's thread touches its base (wakeup.h): no locks.
    event_config* cfg = event_config_new();
    if (cfg == nullptr) throw std::runtime_error("event_config_new failed");
    event_config_set_flag(cfg, EVENT_BASE_FLAG_NOLOCK);
    base_ = event_base_new_with_config(cfg);
    event_config_free(cfg);
    if (base_ == nullptr) throw std::runtime_error("event_base_new failed");
    notify_ = event_new(base_, wakeup_.fd(), EV_READ | EV_PERSIST, &Worker::onNotify, this);
    if (notify_ == nullptr || event_add(notify_, nullptr) != 0) throw std::runtime_error("worker wakeup event failed");
    if (flash) flashReads_ = std::make_unique<FlashReads>(wakeup_, &Worker::onFlashRead, this);
  }
  ~Worker();

  void start() {
    thread_ = std::thread([this] { run(); });
  }
  void join() {
    if (thread_.joinable()) thread_.join();
  }
  // From the accepting thread.
  void give(int fd, int listenFd, std::string peer) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      incoming_.push_back({fd, listenFd, std::move(peer)});
    }
    wakeup_.signal();
  }
  void drain() {
    stopping_.store(true);
    wakeup_.signal();
  }
  // From any thread (stats conns): this worker's connections, each as
  // memcached's addr, listen_addr, state and secs_since_last_cmd lines.
  void describeConnections(std::vector<std::pair<int, std::string>>& out, const ReplySink* asking, int64_t now);

  WorkerCounters counters;
  // Values queued by reference (pinned) on all connections at most: far
  // below an item's refcount range, so no client pattern can saturate a
  // count (every value past the budget is copied).
  static constexpr size_t kPinsPerServer = 1u << 16;

 private:
  friend struct Connection;
  static constexpr size_t kInputInitial = 16 * 1024;
  static constexpr size_t kInputMax = 2 * kMaxGetLineLength;  // a get line may list keys up to 2 MiB
  static constexpr size_t kDirectReadMin = 16 * 1024;         // a value part this large is read straight into its item

  static void onNotify(int, short, void* self);
  static void onDrainDeadline(int, short, void* self);
  static void onReadable(int fd, short what, void* arg);
  static void onWritable(int fd, short what, void* arg);
  static void onFlashRead(void* self, void* conn);
  // A connection accepted from a listener (listenFd), handed to this worker.
  struct Accepted {
    int fd;
    int listenFd;
    std::string peer;
  };
  void open(Accepted a);
  void close(Connection* c, const char* why);
  void closeAfterWrite(Connection* c);
  void run();
  void readAndProcess(Connection* c);
  // After a read that emptied the socket: when c's input starts with a
  // whole request line, prefetches its first key's index lines and queues
  // c for runDeferred. Returns whether it did.
  bool defer(Connection* c);
  // Carries out the queued connections' requests: their items are
  // prefetched first, then each is processed and settled.
  void runDeferred();
  // Runs the requests complete in c's input, in order, until more input is
  // needed, the output is above kOutputHigh (c->paused) or c is closing.
  void process(Connection* c);
  bool processOne(Connection* c);  // false: wait for more input (or closing)
  bool lineRequest(Connection* c, std::string_view line);
  bool binaryRequest(Connection* c);
  // Writes queued output until done or the socket is full; false on a socket error.
  bool flush(Connection* c);
  // The last step of every callback: writes, closes, or sets which events c waits for.
  void settle(Connection* c);
  void finish();

  Server& server_;
  CommandHandler& handler_;
  const ServerConfig& config_;
  ServerState& state_;
  bool verbose_;
  BinaryCommands binary_;
  Wakeup wakeup_;  // before base_ and flashReads_, which use it
  event_base* base_ = nullptr;
  event* notify_ = nullptr;
  event* deadline_ = nullptr;
  std::thread thread_;
  std::mutex mutex_;
  std::vector<Accepted> incoming_;
  std::unordered_set<Connection*> conns_;  // changed on this thread only, under connsMutex_
  std::mutex connsMutex_;                  // for describeConnections' readers
  std::vector<Connection*> deferred_;      // read in this pass, processed after it
  std::atomic<bool> stopping_{false};
  bool draining_ = false;
  size_t pinsHeld_ = 0;  // values queued by reference on this worker's connections
  const size_t pinBudget_;
  std::unique_ptr<FlashReads> flashReads_;  // with a flash store only
};

struct Connection final : ReplySink {
  // kGet: a get/gets/gat/gats goes on from getNext; kMetaGet: an mg waits
  // for flash; kDump: an lru_crawler metadump/mgdump goes on from dumpCursor.
  enum class State : uint8_t { kLine, kValue, kSwallow, kGet, kMetaGet, kDump };
  Worker* worker = nullptr;
  int fd = -1;
  int listenFd = -1;  // the listener it came through (stats conns: listen_addr)
  event* readEvent = nullptr;
  event* writeEvent = nullptr;
  std::string peer;
  State state = State::kLine;
  // Input: bytes [inStart, inEnd) of in[0, inCap) are read and not yet used.
  std::unique_ptr<char[]> in;
  size_t inCap = 0, inStart = 0, inEnd = 0;
  // A request that outlives one wake-up (a value still arriving, a multiget
  // paused for output) is parsed again from its own copy of the line, so
  // req's views do not point into the input buffer, which moves.
  std::string line;
  Request req;
  size_t getNext = 0;       // kGet: next key of req to answer
  uint64_t dumpCursor = 0;  // kDump: CommandHandler::dumpFrom's cursor
  PendingValue value;  // where a value is being read to
  uint64_t filled = 0;
  uint64_t remaining = 0;  // kSwallow: bytes still to discard
  char trailer[2] = {};
  OutputQueue out;
  bool reading = false;    // readEvent added
  bool writing = false;    // writeEvent added
  bool paused = false;     // output above kOutputHigh: requests wait
  bool waiting = false;    // a get is reading flash: requests (and the socket) wait
  bool eof = false;        // the client shut down its sending side
  bool closing = false;    // write what is owed, then close
  bool failed = false;     // socket error: close now
  bool yielded = false;    // stopped at server.reqs_per_event with requests left in `in`
  bool deferred = false;   // in the worker's deferred_: input read, not yet processed
  uint64_t lookahead = 0;  // deferred: Cache::prefetchIndex's token for the first key
  uint32_t served = 0;     // requests begun in this wake-up
  const char* why = "done";
  FlashRead* flash = nullptr;  // with a flash store: the connection's lookups
  // For `stats conns` on other threads: when a request last came (the
  // wall second, time() from the vDSO) and what the connection is doing,
  // as of its last settle().
  std::atomic<int64_t> lastCommand{0};
  std::atomic<const char*> shownState{"conn_new_cmd"};

  size_t available() const { return inEnd - inStart; }

  void add(std::string_view bytes) override {
    out.add(bytes);
    worker->counters.add(worker->counters.bytes_written, bytes.size());
  }
  void addValue(ReadHandle&& h) override {
    worker->counters.add(worker->counters.bytes_written, h.value().size());
    if (out.addValue(std::move(h), worker->pinsHeld_ < worker->pinBudget_)) ++worker->pinsHeld_;
  }
  bool full() const override { return out.bytes() > Server::kOutputHigh; }
};

Worker::~Worker() {
  // Connections left (the loop was never run) are freed here, before the cache goes.
  finish();
  flashReads_.reset();  // drains the reads that would signal wakeup_
  if (deadline_) event_free(deadline_);
  if (notify_) event_free(notify_);
  if (base_) event_base_free(base_);
}

void Worker::finish() {
  for (Connection* c : std::vector<Connection*>(conns_.begin(), conns_.end())) close(c, "server stopping");
  // Reads still in flight belong to closed connections; their completions
  // must be in before the cache (or this loop's base) can go.
  if (flashReads_) flashReads_->drain();
  std::lock_guard<std::mutex> lock(mutex_);
  for (const Accepted& a : incoming_) {
    ::close(a.fd);
    state_.currConnections.fetch_sub(1);
    server_.connectionClosed();
  }
  incoming_.clear();
}

void Worker::run() {
  // One pass at a time, so the requests a pass read are carried out after it.
  for (;;) {
    event_base_loop(base_, EVLOOP_ONCE | EVLOOP_NO_EXIT_ON_EMPTY);
    runDeferred();
    if (event_base_got_exit(base_) || event_base_got_break(base_)) break;
  }
  finish();
}

void Worker::runDeferred() {
  if (deferred_.empty()) return;
  const Cache& cache = handler_.cache();
  for (Connection* c : deferred_) cache.prefetchItem(c->lookahead);
  // Nothing below defers again or closes another connection, so the list
  // stays as it is while it is walked.
  for (Connection* c : deferred_) {
    c->deferred = false;
    process(c);
    settle(c);
  }
  deferred_.clear();
}

bool Worker::defer(Connection* c) {
  // Only between requests, with nothing owed: no write callback can run for
  // c before runDeferred does.
  if (c->state != Connection::State::kLine || !c->out.empty()) return false;
  const char* at = c->in.get() + c->inStart;
  // A long line (a big multiget) gains little from one key's prefetch: it
  // is not scanned twice.
  const char* eol = static_cast<const char*>(std::memchr(at, '\n', std::min<size_t>(c->available(), 1024)));
  if (eol == nullptr) return false;
  // The key of almost every command is its second word (get, set, mg,
  // delete, incr, touch ...); for the others the prefetch is merely wasted.
  const char* p = at;
  while (p < eol && *p != ' ') ++p;
  while (p < eol && *p == ' ') ++p;
  const char* k = p;
  while (p < eol && *p != ' ' && *p != '\r') ++p;
  c->lookahead = handler_.cache().prefetchIndex(std::string_view(k, static_cast<size_t>(p - k)));
  c->deferred = true;
  deferred_.push_back(c);
  return true;
}

void Worker::onNotify(int, short, void* self) {
  auto* w = static_cast<Worker*>(self);
  w->wakeup_.clear();  // before taking the work, so a wake sent meanwhile runs this again
  w->runDeferred();    // a drain below closes connections: what they sent is answered first
  if (w->flashReads_) w->flashReads_->runCompleted();
  std::vector<Accepted> fds;
  {
    std::lock_guard<std::mutex> lock(w->mutex_);
    fds.swap(w->incoming_);
  }
  for (Accepted& a : fds) w->open(std::move(a));
  if (w->stopping_.load() && !w->draining_) {
    w->draining_ = true;
    for (Connection* c : std::vector<Connection*>(w->conns_.begin(), w->conns_.end())) {
      w->closeAfterWrite(c);
      w->settle(c);
    }
    if (w->conns_.empty()) {
      event_base_loopexit(w->base_, nullptr);
    } else {
      w->deadline_ = evtimer_new(w->base_, &Worker::onDrainDeadline, w);
      timeval tv{Server::kDrainSeconds, 0};
      evtimer_add(w->deadline_, &tv);
    }
  }
}

void Worker::onDrainDeadline(int, short, void* self) {
  auto* w = static_cast<Worker*>(self);
  event_base_loopexit(w->base_, nullptr);
}

void Worker::open(Accepted a) {
  const int fd = a.fd;
  if (draining_) {
    ::close(fd);
    state_.currConnections.fetch_sub(1);
    server_.connectionClosed();
    return;
  }
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));  // half-open peers eventually error out
  auto* c = new Connection;
  c->worker = this;
  c->fd = fd;
  c->listenFd = a.listenFd;
  c->peer = std::move(a.peer);
  c->readEvent = event_new(base_, fd, EV_READ | EV_PERSIST, &Worker::onReadable, c);
  c->writeEvent = event_new(base_, fd, EV_WRITE | EV_PERSIST, &Worker::onWritable, c);
  if (flashReads_) c->flash = flashReads_->make(c);
  c->lastCommand.store(::time(nullptr), std::memory_order_relaxed);
  {
    std::lock_guard<std::mutex> lock(connsMutex_);
    conns_.insert(c);
  }
  if (verbose_) logLine("connection from " + c->peer);
  settle(c);
}

void Worker::close(Connection* c, const char* why) {
  if (verbose_) logLine("closing " + c->peer + ": " + why);
  {
    std::lock_guard<std::mutex> lock(connsMutex_);
    conns_.erase(c);
  }
  if (c->deferred) std::erase(deferred_, c);     // closed by a timeout in the pass that read it
  if (c->flash) flashReads_->release(c->flash);  // a read in flight finds it orphaned
  c->value = PendingValue();
  pinsHeld_ -= c->out.pins();
  c->out.clear();  // releases pinned values
  event_free(c->readEvent);
  event_free(c->writeEvent);
  ::close(c->fd);
  delete c;
  state_.currConnections.fetch_sub(1);
  server_.connectionClosed();
  if (draining_ && conns_.empty()) event_base_loopexit(base_, nullptr);
}

void Worker::closeAfterWrite(Connection* c) { c->closing = true; }

void Worker::settle(Connection* c) {
  if (!c->failed && !c->out.empty() && !flush(c)) c->failed = true, c->why = "socket error";
  // A client that shut down its side is owed the replies to what it sent.
  if (c->eof && !c->paused && !c->yielded && !c->waiting && c->state != Connection::State::kGet &&
      c->state != Connection::State::kDump)
    c->closing = true;
  // A request waiting for flash is answered before a closing connection goes.
  if (c->failed || (c->closing && c->out.empty() && !c->waiting)) {
    close(c, c->why);
    return;
  }
  timeval idle{static_cast<time_t>(config_.idle_timeout), 0};
  const timeval* tv = config_.idle_timeout > 0 && !draining_ ? &idle : nullptr;
  const bool wantWrite = !c->out.empty();
  if (wantWrite != c->writing) {
    wantWrite ? event_add(c->writeEvent, tv) : event_del(c->writeEvent);
    c->writing = wantWrite;
  }
  const bool wantRead = !c->closing && !c->paused && !c->eof && !c->waiting;
  if (wantRead != c->reading) {
    wantRead ? event_add(c->readEvent, tv) : event_del(c->readEvent);
    c->reading = wantRead;
  }
  // What `stats conns` shows, in memcached's state names.
  const char* shown = c->closing                                ? "conn_closing"
                      : wantWrite                               ? "conn_mwrite"
                      : c->waiting                              ? "conn_io_queue"
                      : c->state == Connection::State::kValue   ? "conn_nread"
                      : c->state == Connection::State::kSwallow ? "conn_swallow"
                                                                : "conn_waiting";
  c->shownState.store(shown, std::memory_order_relaxed);
}

void Worker::describeConnections(std::vector<std::pair<int, std::string>>& out, const ReplySink* asking, int64_t now) {
  std::lock_guard<std::mutex> lock(connsMutex_);
  for (const Connection* c : conns_) {
    const std::string p = "STAT " + std::to_string(c->fd) + ":";
    std::string& s = out.emplace_back(c->fd, std::string()).second;
    s += p + "addr " + socketName(c->fd, true) + "\r\n";
    s += p + "listen_addr " + server_.listenerName(c->listenFd) + "\r\n";
    s += p + "state " + (c == asking ? "conn_parse_cmd" : c->shownState.load(std::memory_order_relaxed)) + "\r\n";
    const int64_t idle = now - c->lastCommand.load(std::memory_order_relaxed);
    s += p + "secs_since_last_cmd " + std::to_string(std::max<int64_t>(idle, 0)) + "\r\n";
  }
}

bool Worker::flush(Connection* c) {
  while (!c->out.empty()) {
    size_t released = 0;
    const ssize_t n = c->out.writeTo(c->fd, released);
    pinsHeld_ -= released;
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno == EAGAIN || errno == EWOULDBLOCK;
    }
  }
  return true;
}

void Worker::onReadable(int, short what, void* arg) {
  auto* c = static_cast<Connection*>(arg);
  Worker* w = c->worker;
  if (what & EV_TIMEOUT) {
    w->close(c, "idle timeout");
    return;
  }
  c->served = 0;
  if (c->yielded) {
    // Back after giving way (server.reqs_per_event): the requests left first.
    c->yielded = false;
    w->process(c);
  }
  if (!c->yielded) w->readAndProcess(c);
  if (c->deferred) return;  // settled by runDeferred
  w->settle(c);
}

void Worker::onWritable(int, short what, void* arg) {
  auto* c = static_cast<Connection*>(arg);
  Worker* w = c->worker;
  if (what & EV_TIMEOUT) {
    w->close(c, "idle timeout");
    return;
  }
  if (!w->flush(c)) {
    c->failed = true, c->why = "socket error";
  } else if (c->paused && c->out.bytes() <= Server::kOutputLow) {
    c->paused = false;
    w->process(c);  // requests may be waiting in the input already
  }
  w->settle(c);
}

void Worker::readAndProcess(Connection* c) {
  for (int round = 0; round < 4 && !c->closing && !c->paused && !c->failed && !c->yielded && !c->waiting; ++round) {
    char* to;
    size_t room;
    const uint64_t valueLeft =
        c->state == Connection::State::kValue && c->filled < c->req.valueBytes ? c->req.valueBytes - c->filled : 0;
    const bool direct = c->available() == 0 && valueLeft >= kDirectReadMin;
    if (direct) {
      to = c->value.data() + c->filled;  // straight into the item
      room = valueLeft;
    } else {
      if (c->available() == 0) c->inStart = c->inEnd = 0;
      if (c->inCap == 0) {
        c->in.reset(new char[kInputInitial]);
        c->inCap = kInputInitial;
      } else if (c->inEnd == c->inCap || c->inCap - c->inEnd < 1024) {
        if (c->inStart > 0) {
          std::memmove(c->in.get(), c->in.get() + c->inStart, c->available());
          c->inEnd -= c->inStart;
          c->inStart = 0;
        }
        if (c->inEnd == c->inCap && c->inCap < kInputMax) {
          std::unique_ptr<char[]> bigger(new char[c->inCap * 2]);
          std::memcpy(bigger.get(), c->in.get(), c->inEnd);
          c->in = std::move(bigger);
          c->inCap *= 2;
        }
      }
      to = c->in.get() + c->inEnd;
      room = c->inCap - c->inEnd;
    }
    const ssize_t n = ::read(c->fd, to, room);
    if (n == 0) {
      if (verbose_) logLine(c->peer + " finished sending");
      c->eof = true;
      c->why = "closed by peer";
      return;
    }
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK) c->failed = true, c->why = "socket error";
      return;
    }
    counters.add(counters.bytes_read, static_cast<uint64_t>(n));
    if (direct) {
      c->filled += static_cast<uint64_t>(n);
    } else {
      c->inEnd += static_cast<size_t>(n);
    }
    const bool drained = static_cast<size_t>(n) < room;  // no second read to learn EAGAIN
    if (drained && !direct && defer(c)) return;
    process(c);
    if (drained) return;
  }
}

void Worker::process(Connection* c) {
  if (c->available() > 0) c->lastCommand.store(::time(nullptr), std::memory_order_relaxed);
  while (!c->closing && !c->failed && !c->waiting) {
    // Only between requests (kLine) or a multiget's batches (kGet): a value
    // in flight is always finished from the bytes already read.
    const bool boundary = c->state == Connection::State::kLine || c->state == Connection::State::kGet ||
                          c->state == Connection::State::kDump;
    if (boundary && c->out.bytes() > Server::kOutputHigh) {
      // A client that does not read its replies stops being read from.
      if (!flush(c)) {
        c->failed = true, c->why = "socket error";
        return;
      }
      if (c->out.bytes() > Server::kOutputHigh) {
        c->paused = true;
        return;
      }
    }
    if (c->state == Connection::State::kLine && config_.reqs_per_event != 0 && c->served >= config_.reqs_per_event &&
        c->available() > 0) {
      // memcached's -R: after this many requests the connection gives way to
      // the others of this worker, and takes up the rest on the loop's next turn.
      state_.connYields.fetch_add(1, std::memory_order_relaxed);
      c->yielded = true;
      event_active(c->readEvent, EV_READ, 0);
      break;
    }
    const bool request = c->state == Connection::State::kLine;
    if (!processOne(c)) break;
    if (request) ++c->served;
  }
  // An emptied buffer that grew for a long line goes back to its first size.
  if (c->available() == 0 && c->inCap > kInputInitial) {
    c->in.reset();
    c->inCap = c->inStart = c->inEnd = 0;
  }
}

bool Worker::processOne(Connection* c) {
  const size_t avail = c->available();
  char* const at = c->in.get() + c->inStart;
  switch (c->state) {
    case Connection::State::kSwallow: {
      const size_t n = std::min<uint64_t>(c->remaining, avail);
      c->inStart += n;
      c->remaining -= n;
      if (c->remaining > 0) return false;
      c->state = Connection::State::kLine;
      return true;
    }
    case Connection::State::kValue: {
      const uint64_t want = c->req.valueBytes;
      size_t used = 0;
      if (c->filled < want) {
        used = std::min<uint64_t>(want - c->filled, avail);
        std::memcpy(c->value.data() + c->filled, at, used);  // straight into the item
        c->filled += used;
        if (c->filled < want) {
          c->inStart += used;
          return false;
        }
      }
      while (c->filled < want + 2 && used < avail) c->trailer[c->filled++ - want] = at[used++];
      c->inStart += used;
      if (c->filled < want + 2) return false;
      c->state = Connection::State::kLine;
      if (c->trailer[0] != '\r' || c->trailer[1] != '\n') {
        c->value = PendingValue();
        counters.add(counters.protocol_errors);
        if (!c->req.noreply) c->add("CLIENT_ERROR bad data chunk\r\n");  // memcached: noreply hides errors too
        return true;
      }
      handler_.finishStore(c->req, std::move(c->value), *c, counters);
      c->value = PendingValue();
      return true;
    }
    case Connection::State::kGet:
      c->getNext = handler_.getFrom(c->req, c->getNext, *c, counters, c->flash);
      if (c->flash && c->flash->inFlight()) {
        c->waiting = true;
        return false;
      }
      if (c->getNext == c->req.keys.size()) c->state = Connection::State::kLine;
      return true;
    case Connection::State::kMetaGet:
      handler_.execute(c->req, *c, counters, c->flash);
      if (c->flash && c->flash->inFlight()) {
        c->waiting = true;
        return false;
      }
      c->state = Connection::State::kLine;
      return true;
    case Connection::State::kDump:
      c->dumpCursor = handler_.dumpFrom(c->req, c->dumpCursor, *c);
      if (c->dumpCursor == Cache::kWalkDone) {
        c->state = Connection::State::kLine;
        return true;
      }
      if (c->full()) return true;  // process() flushes, or pauses until the client reads
      // The turn's share of the index is walked: the worker's other
      // connections go first, the dump goes on at the loop's next turn.
      c->yielded = true;
      event_active(c->readEvent, EV_READ, 0);
      return false;
    case Connection::State::kLine:
      break;
  }
  if (avail > 0 && static_cast<unsigned char>(at[0]) == kBinaryRequestMagic) return binaryRequest(c);
  const size_t maxLine = maxLineLength(std::string_view(at, std::min<size_t>(avail, 3)));
  const char* eol = avail > 0 ? static_cast<const char*>(std::memchr(at, '\n', avail)) : nullptr;
  if (eol == nullptr || static_cast<size_t>(eol - at) > maxLine) {
    if (eol != nullptr || avail > maxLine) {
      counters.add(counters.protocol_errors);
      c->add("CLIENT_ERROR line too long\r\n");
      c->inStart = c->inEnd;
      closeAfterWrite(c);
    }
    return false;
  }
  const size_t lineLen = static_cast<size_t>(eol - at);
  c->inStart += lineLen + 1;
  return lineRequest(c, std::string_view(at, lineLen));
}

// A binary-protocol request: answered "not supported" once its header is
// in, its body discarded as it arrives (kSwallow), so the client gets an
// error it can read and the next request is framed where it starts.
bool Worker::binaryRequest(Connection* c) {
  if (c->available() < kBinaryHeaderBytes) return false;
  const BinaryRequestHeader h = parseBinaryHeader(std::string_view(c->in.get() + c->inStart, kBinaryHeaderBytes));
  // The whole body is read into the input buffer first (it grows to
  // kInputMax); one that cannot fit there is refused as too large.
  const uint64_t whole = kBinaryHeaderBytes + uint64_t{h.bodyBytes};
  if (config_.binary_protocol && whole <= kInputMax) {
    if (c->available() < whole) return false;
    const std::string_view body(c->in.get() + c->inStart + kBinaryHeaderBytes, h.bodyBytes);
    const Next next = binary_.execute(h, body, *c, counters);
    c->inStart += whole;
    if (next == Next::kClose) {
      closeAfterWrite(c);
      return false;
    }
    return true;
  }
  c->inStart += kBinaryHeaderBytes;
  counters.add(counters.protocol_errors);
  std::string reply;
  if (config_.binary_protocol) {
    appendBinaryResponse(reply, h, static_cast<uint16_t>(BinaryStatus::kTooLarge), 0, {}, {}, "Too large.");
  } else {
    if (verbose_) logLine(c->peer + ": binary protocol request (opcode " + std::to_string(h.opcode) + "), turned off");
    appendBinaryNotSupported(h, reply);
  }
  c->add(reply);
  if (h.bodyBytes > 0) {
    c->state = Connection::State::kSwallow;
    c->remaining = h.bodyBytes;
  }
  return true;
}

// One request line, its bytes still in the input buffer (valid until the
// next read). Returns false when the connection is to close.
bool Worker::lineRequest(Connection* c, std::string_view line) {
  ParseResult p = parseLine(line, c->req, ParseOptions{config_.strict_keys});
  if (p.status == ParseResult::kError) {
    counters.add(counters.protocol_errors);
    if (verbose_) logLine(c->peer + ": " + std::string(p.error));
    if (!p.silent) {
      c->add(p.error);
      c->add("\r\n");
    }
    if (p.close) {
      closeAfterWrite(c);
      return false;
    }
    if (p.swallow > 0) {
      c->state = Connection::State::kSwallow;
      c->remaining = p.swallow;
    }
    return true;
  }
  const Command cmd = c->req.command;
  // Counted where the text arrives, once (not again when an mg resumes
  // after flash; binary requests, carried out as meta commands, are not).
  if (isMeta(cmd)) counters.add(counters.cmd_meta);
  if (isStorage(cmd)) {
    c->value = PendingValue();
    if (!handler_.beginStore(c->req, *c, counters, c->value)) {
      c->state = Connection::State::kSwallow;
      c->remaining = c->req.valueBytes + 2;
      return true;
    }
    c->filled = 0;
    c->state = Connection::State::kValue;
    if (c->available() < c->req.valueBytes + 2) {
      // The value arrives over later reads: keep the line.
      c->line.assign(line);
      parseLine(c->line, c->req);
    }
    return true;
  }
  if (isKeyDump(c->req)) {
    c->line.assign(line);  // the dump outlives this input buffer
    parseLine(c->line, c->req);
    c->dumpCursor = 0;
    c->state = Connection::State::kDump;
    return true;
  }
  if (cmd == Command::kGet || cmd == Command::kGets || cmd == Command::kGat || cmd == Command::kGats) {
    c->getNext = handler_.getFrom(c->req, 0, *c, counters, c->flash);
    if (c->getNext < c->req.keys.size()) {
      // The output filled up mid-multiget, or a batch is reading flash: the
      // rest waits for the client to read, or for the read.
      c->line.assign(line);
      parseLine(c->line, c->req);
      c->state = Connection::State::kGet;
      if (c->flash && c->flash->inFlight()) {
        c->waiting = true;
        return false;
      }
    }
    return true;
  }
  if (handler_.execute(c->req, *c, counters, c->flash) == Next::kClose) {
    closeAfterWrite(c);
    return false;
  }
  if (c->flash && c->flash->inFlight()) {
    // An mg reading flash: carried out again (its reply only) once the read is in.
    c->line.assign(line);
    parseLine(c->line, c->req);
    c->state = Connection::State::kMetaGet;
    c->waiting = true;
    return false;
  }
  return true;
}

// A connection's flash read is in: the request that waited for it is
// carried out (even on a connection draining to close), then the requests
// queued behind it.
void Worker::onFlashRead(void* self, void* conn) {
  auto* w = static_cast<Worker*>(self);
  auto* c = static_cast<Connection*>(conn);
  c->waiting = false;
  c->served = 0;  // a new wake-up for server.reqs_per_event
  if (!c->failed) {
    if (c->closing) {
      w->processOne(c);
    } else {
      w->process(c);
    }
  }
  w->settle(c);
}

// ---------------------------------------------------------------------------

Server::Server(Cache& cache, const ServerConfig& config, bool verbose)
    : cache_(cache), config_(config), verbose_(verbose) {
  config_.validate();
  static std::once_flag threadsOnce;
  std::call_once(threadsOnce, [] { evthread_use_pthreads(); });
  if (verbose_) state_.verbosity.store(1);
  handler_ = std::make_unique<CommandHandler>(cache_, config_, state_);
  base_ = event_base_new();
  if (base_ == nullptr) throw std::runtime_error("event_base_new failed");
  stopEvent_ = event_new(base_, -1, 0, &Server::onStop, this);
  acceptResume_ = evtimer_new(base_, &Server::onAcceptResume, this);
  const bool flash = cache_.config().flash.enabled();
  for (uint32_t i = 0; i < config_.threads; ++i) {
    workers_.push_back(std::make_unique<Worker>(*this, *handler_, config_, state_, verbose_, flash));
    state_.workers.push_back(&workers_.back()->counters);
  }
  state_.describeConnections = [this](std::string& out, const ReplySink* asking) {
    // In descriptor order, listeners among them, as memcached lists them.
    std::vector<std::pair<int, std::string>> sockets;
    {
      std::lock_guard<std::mutex> lock(listenersMutex_);
      for (const auto& [fd, name] : listening_) {
        const std::string p = "STAT " + std::to_string(fd) + ":";
        sockets.emplace_back(fd, p + "addr " + name + "\r\n" + p + "state conn_listening\r\n");
      }
    }
    const int64_t now = ::time(nullptr);
    for (const auto& w : workers_) w->describeConnections(sockets, asking, now);
    std::sort(sockets.begin(), sockets.end());
    for (const auto& [fd, lines] : sockets) out += lines;
  };
}

Server::~Server() {
  for (auto& w : workers_) {
    w->drain();
    w->join();
  }
  workers_.clear();
  for (evconnlistener* l : listeners_) evconnlistener_free(l);
  for (event* e : signalEvents_) event_free(e);
  if (stopEvent_) event_free(stopEvent_);
  if (acceptResume_) event_free(acceptResume_);
  if (base_) event_base_free(base_);
}

uint16_t Server::listen() {
  // Every address on one port: the first bind picks it when the config says 0.
  uint16_t port = static_cast<uint16_t>(config_.port);
  try {
    for (const std::string& address : config_.listenAddresses()) port = listenOn(address, port);
  } catch (...) {
    for (evconnlistener* l : listeners_) evconnlistener_free(l);
    listeners_.clear();
    {
      std::lock_guard<std::mutex> lock(listenersMutex_);
      listening_.clear();
    }
    throw;
  }
  config_.port = port;
  return port;
}

uint16_t Server::listenOn(const std::string& address, uint16_t port) {
  sockaddr_storage addr{};
  socklen_t len = 0;
  auto* in4 = reinterpret_cast<sockaddr_in*>(&addr);
  auto* in6 = reinterpret_cast<sockaddr_in6*>(&addr);
  if (inet_pton(AF_INET, address.c_str(), &in4->sin_addr) == 1) {
    in4->sin_family = AF_INET;
    in4->sin_port = htons(port);
    len = sizeof(sockaddr_in);
  } else if (inet_pton(AF_INET6, address.c_str(), &in6->sin6_addr) == 1) {
    in6->sin6_family = AF_INET6;
    in6->sin6_port = htons(port);
    len = sizeof(sockaddr_in6);
  } else {
    throw std::runtime_error("cannot listen on \"" + address + "\": not an IP address");
  }
  const std::string where = address + ":" + std::to_string(port);
  int fd = socket(addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) throw std::runtime_error("socket: " + std::string(strerror(errno)));
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  // Beside other addresses an IPv6 socket takes IPv6 only, so that
  // "0.0.0.0,::" binds both; alone, "::" stays dual-stack as it always was.
  if (addr.ss_family == AF_INET6 && config_.listenAddresses().size() > 1) {
    setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
  }
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), len) != 0 || ::listen(fd, 1024) != 0) {
    int e = errno;
    ::close(fd);
    throw std::runtime_error("cannot listen on " + where + ": " + strerror(e));
  }
  sockaddr_storage bound{};
  socklen_t blen = sizeof(bound);
  getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &blen);
  const uint16_t got = ntohs(bound.ss_family == AF_INET ? reinterpret_cast<sockaddr_in*>(&bound)->sin_port
                                                        : reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port);
  evconnlistener* l = evconnlistener_new(base_, &Server::onAccept, this, LEV_OPT_CLOSE_ON_FREE, -1, fd);
  if (l == nullptr) {
    ::close(fd);
    throw std::runtime_error("evconnlistener_new failed for " + where);
  }
  evconnlistener_set_error_cb(l, &Server::onAcceptError);
  listeners_.push_back(l);
  {
    std::lock_guard<std::mutex> lock(listenersMutex_);
    listening_.emplace_back(evconnlistener_get_fd(l), socketName(evconnlistener_get_fd(l), false));
  }
  return got;
}

void Server::onAccept(evconnlistener* listener, int fd, sockaddr* sa, int, void* self) {
  auto* s = static_cast<Server*>(self);
  std::string peer = peerName(sa);
  if (s->state_.currConnections.load() >= s->config_.max_conns) {
    // As memcached does: say why, then close.
    static constexpr char kMsg[] = "ERROR Too many open connections\r\n";
    [[maybe_unused]] ssize_t n = ::send(fd, kMsg, sizeof(kMsg) - 1, MSG_NOSIGNAL | MSG_DONTWAIT);
    ::close(fd);
    s->state_.rejectedConnections.fetch_add(1);
    if (s->verbose_) logLine("refused " + peer + ": max_conns " + std::to_string(s->config_.max_conns) + " reached");
    return;
  }
  s->state_.currConnections.fetch_add(1);
  s->state_.totalConnections.fetch_add(1);
  evutil_make_socket_nonblocking(fd);
  s->workers_[s->nextWorker_++ % s->workers_.size()]->give(fd, evconnlistener_get_fd(listener), std::move(peer));
}

std::string Server::listenerName(int fd) {
  std::lock_guard<std::mutex> lock(listenersMutex_);
  for (const auto& [listenFd, name] : listening_) {
    if (listenFd == fd) return name;
  }
  return "?";  // closed: the server is stopping
}

void Server::onAcceptError(evconnlistener* listener, void* self) {
  auto* s = static_cast<Server*>(self);
  const int e = EVUTIL_SOCKET_ERROR();
  if (e != EMFILE && e != ENFILE && e != ENOBUFS && e != ENOMEM) {
    if (s->verbose_) logLine(std::string("accept: ") + strerror(e));
    return;
  }
  // The waiting connection keeps the listener readable: accepting again at
  // once would spin. Wait for a descriptor to be freed, or a while.
  evconnlistener_disable(listener);
  s->state_.acceptPaused.store(true);
  s->state_.listenDisabled.fetch_add(1);
  if (s->verbose_) logLine(std::string("accept: ") + strerror(e) + "; not accepting for now");
  timeval tv{0, Server::kAcceptRetryMs * 1000};
  evtimer_add(s->acceptResume_, &tv);
}

void Server::onAcceptResume(int, short, void* self) {
  auto* s = static_cast<Server*>(self);
  if (!s->state_.acceptPaused.exchange(false) || s->listeners_.empty()) return;
  evtimer_del(s->acceptResume_);
  for (evconnlistener* l : s->listeners_) evconnlistener_enable(l);
}

void Server::connectionClosed() {
  if (state_.acceptPaused.load(std::memory_order_relaxed)) event_active(acceptResume_, EV_TIMEOUT, 0);
}

void Server::run(bool handleSignals) {
  if (listeners_.empty()) listen();
  if (handleSignals) {
    std::signal(SIGPIPE, SIG_IGN);
    for (int sig : {SIGTERM, SIGINT}) {
      event* e = evsignal_new(base_, sig, &Server::onStop, this);
      event_add(e, nullptr);
      signalEvents_.push_back(e);
    }
  }
  for (auto& w : workers_) w->start();
  if (!stopRequested_.load()) event_base_loop(base_, EVLOOP_NO_EXIT_ON_EMPTY);
  // Stop accepting, then let every worker write what it owes and close.
  for (evconnlistener* l : listeners_) evconnlistener_free(l);
  listeners_.clear();
  {
    std::lock_guard<std::mutex> lock(listenersMutex_);
    listening_.clear();
  }
  for (auto& w : workers_) w->drain();
  for (auto& w : workers_) w->join();
  if (verbose_) logLine("stopped");
}

void Server::stop() {
  stopRequested_.store(true);
  event_active(stopEvent_, 0, 0);
}

void Server::onStop(int sig, short, void* self) {
  auto* s = static_cast<Server*>(self);
  if (s->verbose_ && sig > 0) logLine(std::string("signal ") + strsignal(sig) + ": stopping");
  s->stopRequested_.store(true);
  event_base_loopexit(s->base_, nullptr);
}

}  // namespace tiercache::server
