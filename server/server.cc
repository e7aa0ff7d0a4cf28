// Server: libevent loops, connections and their request state machine.
#include "server.h"

#include <arpa/inet.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/listener.h>
#include <event2/thread.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <iostream>
#include <mutex>
#include <stdexcept>
#include <unordered_set>

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
}  // namespace

void logLine(const std::string& line) {
  std::lock_guard<std::mutex> lock(gLogMutex);
  std::cerr << "tiercache-server: " << line << std::endl;
}

// ---------------------------------------------------------------------------
// One client connection, owned by one worker thread.

struct Connection;

class Worker {
 public:
  Worker(Server& server, CommandHandler& handler, const ServerConfig& config, ServerState& state, bool verbose)
      : server_(server), handler_(handler), config_(config), state_(state), verbose_(verbose) {
    base_ = event_base_new();
    if (base_ == nullptr) throw std::runtime_error("event_base_new failed");
    notify_ = event_new(base_, -1, 0, &Worker::onNotify, this);
  }
  ~Worker();

  void start() { thread_ = std::thread([this] { event_base_loop(base_, EVLOOP_NO_EXIT_ON_EMPTY); finish(); }); }
  void join() {
    if (thread_.joinable()) thread_.join();
  }
  // From the accepting thread.
  void give(int fd, std::string peer) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      incoming_.emplace_back(fd, std::move(peer));
    }
    event_active(notify_, 0, 0);
  }
  void drain() {
    stopping_.store(true);
    event_active(notify_, 0, 0);
  }

  WorkerCounters counters;

 private:
  friend struct Connection;
  static void onNotify(int, short, void* self);
  static void onDrainDeadline(int, short, void* self);
  void open(int fd, std::string peer);
  void close(Connection* c, const char* why);
  void closeAfterWrite(Connection* c);
  // Runs the requests complete in c's input, in order.
  void process(Connection* c);
  bool processOne(Connection* c);  // false: wait for more input (or paused/closed)
  void finish();

  static void onRead(bufferevent*, void* arg);
  static void onWrite(bufferevent*, void* arg);
  static void onEvent(bufferevent*, short what, void* arg);

  Server& server_;
  CommandHandler& handler_;
  const ServerConfig& config_;
  ServerState& state_;
  bool verbose_;
  event_base* base_ = nullptr;
  event* notify_ = nullptr;
  event* deadline_ = nullptr;
  std::thread thread_;
  std::mutex mutex_;
  std::vector<std::pair<int, std::string>> incoming_;
  std::unordered_set<Connection*> conns_;
  std::atomic<bool> stopping_{false};
  bool draining_ = false;
};

struct Connection final : ReplySink {
  enum class State : uint8_t { kLine, kValue, kSwallow };
  Worker* worker = nullptr;
  bufferevent* bev = nullptr;
  std::string peer;
  State state = State::kLine;
  std::string line;   // the current request line; req's views point into it
  Request req;
  PendingValue value;  // where a value is being read to
  uint64_t filled = 0;
  uint64_t remaining = 0;  // kSwallow: bytes still to discard
  char trailer[2] = {};
  bool paused = false;
  bool closing = false;
  bool inProcess = false;

  void add(std::string_view bytes) override {
    evbuffer_add(bufferevent_get_output(bev), bytes.data(), bytes.size());
    worker->counters.add(worker->counters.bytes_written, bytes.size());
  }
  void addValue(ReadHandle&& h) override {
    const std::string_view v = h.value();
    worker->counters.add(worker->counters.bytes_written, v.size());
    // Large values go out from the item itself, pinned until written.
    if (v.size() >= 4096) {
      auto* pinned = new ReadHandle(std::move(h));
      evbuffer_add_reference(
          bufferevent_get_output(bev), v.data(), v.size(),
          [](const void*, size_t, void* extra) { delete static_cast<ReadHandle*>(extra); }, pinned);
    } else {
      evbuffer_add(bufferevent_get_output(bev), v.data(), v.size());
    }
  }
};

Worker::~Worker() {
  // Connections left (the loop was never run) are freed here, before the cache goes.
  finish();
  if (deadline_) event_free(deadline_);
  if (notify_) event_free(notify_);
  if (base_) event_base_free(base_);
}

void Worker::finish() {
  for (Connection* c : std::vector<Connection*>(conns_.begin(), conns_.end())) close(c, "server stopping");
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto& [fd, peer] : incoming_) {
    ::close(fd);
    state_.currConnections.fetch_sub(1);
  }
  incoming_.clear();
}

void Worker::onNotify(int, short, void* self) {
  auto* w = static_cast<Worker*>(self);
  std::vector<std::pair<int, std::string>> fds;
  {
    std::lock_guard<std::mutex> lock(w->mutex_);
    fds.swap(w->incoming_);
  }
  for (auto& [fd, peer] : fds) w->open(fd, std::move(peer));
  if (w->stopping_.load() && !w->draining_) {
    w->draining_ = true;
    for (Connection* c : std::vector<Connection*>(w->conns_.begin(), w->conns_.end())) w->closeAfterWrite(c);
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

void Worker::open(int fd, std::string peer) {
  if (draining_) {
    ::close(fd);
    state_.currConnections.fetch_sub(1);
    return;
  }
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));  // half-open peers eventually error out
  auto* c = new Connection;
  c->worker = this;
  c->peer = std::move(peer);
  c->bev = bufferevent_socket_new(base_, fd, BEV_OPT_CLOSE_ON_FREE);
  if (c->bev == nullptr) {
    ::close(fd);
    delete c;
    state_.currConnections.fetch_sub(1);
    return;
  }
  conns_.insert(c);
  bufferevent_setcb(c->bev, &Worker::onRead, &Worker::onWrite, &Worker::onEvent, c);
  bufferevent_setwatermark(c->bev, EV_WRITE, Server::kOutputLow, 0);
  if (config_.idle_timeout > 0) {
    timeval tv{static_cast<time_t>(config_.idle_timeout), 0};
    bufferevent_set_timeouts(c->bev, &tv, &tv);
  }
  bufferevent_enable(c->bev, EV_READ | EV_WRITE);
  if (verbose_) logLine("connection from " + c->peer);
}

void Worker::close(Connection* c, const char* why) {
  if (verbose_) logLine("closing " + c->peer + ": " + why);
  conns_.erase(c);
  c->value = PendingValue();
  bufferevent_free(c->bev);  // frees queued output, releasing pinned values
  delete c;
  state_.currConnections.fetch_sub(1);
  if (draining_ && conns_.empty()) event_base_loopexit(base_, nullptr);
}

void Worker::closeAfterWrite(Connection* c) {
  c->closing = true;
  bufferevent_disable(c->bev, EV_READ);
  if (evbuffer_get_length(bufferevent_get_output(c->bev)) == 0) {
    if (!c->inProcess) close(c, "done");
    return;
  }
  bufferevent_setwatermark(c->bev, EV_WRITE, 0, 0);  // onWrite once everything is out
}

void Worker::onRead(bufferevent*, void* arg) {
  auto* c = static_cast<Connection*>(arg);
  c->worker->process(c);
}

void Worker::onWrite(bufferevent* bev, void* arg) {
  auto* c = static_cast<Connection*>(arg);
  Worker* w = c->worker;
  const size_t queued = evbuffer_get_length(bufferevent_get_output(bev));
  if (c->closing) {
    if (queued == 0) w->close(c, "done");
    return;
  }
  if (c->paused && queued <= Server::kOutputLow) {
    c->paused = false;
    bufferevent_enable(bev, EV_READ);
    w->process(c);  // requests may be waiting in the input already
  }
}

void Worker::onEvent(bufferevent*, short what, void* arg) {
  auto* c = static_cast<Connection*>(arg);
  if ((what & BEV_EVENT_EOF) && !(what & BEV_EVENT_ERROR) && !c->closing) {
    // The client is done sending (e.g. shut down its write side after a
    // pipeline): its requests are answered, so write what it is owed, then close.
    if (c->worker->verbose_) logLine(c->peer + " finished sending");
    c->worker->closeAfterWrite(c);
    return;
  }
  const char* why = (what & BEV_EVENT_TIMEOUT) ? "idle timeout" : (what & BEV_EVENT_EOF) ? "closed by peer" : "socket error";
  c->worker->close(c, why);
}

void Worker::process(Connection* c) {
  c->inProcess = true;
  evbuffer* in = bufferevent_get_input(c->bev);
  counters.add(counters.bytes_read, 0);
  while (!c->closing && processOne(c)) {
  }
  (void)in;
  c->inProcess = false;
  if (c->closing && evbuffer_get_length(bufferevent_get_output(c->bev)) == 0) close(c, "done");
}

bool Worker::processOne(Connection* c) {
  evbuffer* in = bufferevent_get_input(c->bev);
  evbuffer* out = bufferevent_get_output(c->bev);
  const size_t avail = evbuffer_get_length(in);
  switch (c->state) {
    case Connection::State::kSwallow: {
      const size_t n = std::min<uint64_t>(c->remaining, avail);
      evbuffer_drain(in, n);
      counters.add(counters.bytes_read, n);
      c->remaining -= n;
      if (c->remaining > 0) return false;
      c->state = Connection::State::kLine;
      return true;
    }
    case Connection::State::kValue: {
      const uint64_t want = c->req.valueBytes;
      if (c->filled < want) {
        const size_t n = std::min<uint64_t>(want - c->filled, avail);
        evbuffer_remove(in, c->value.data() + c->filled, n);  // straight into the item
        c->filled += n;
        counters.add(counters.bytes_read, n);
        if (c->filled < want) return false;
      }
      while (c->filled < want + 2) {
        if (evbuffer_get_length(in) == 0) return false;
        evbuffer_remove(in, &c->trailer[c->filled - want], 1);
        ++c->filled;
        counters.add(counters.bytes_read, 1);
      }
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
    case Connection::State::kLine:
      break;
  }
  // A client that does not read its replies stops being read from.
  if (evbuffer_get_length(out) > Server::kOutputHigh) {
    c->paused = true;
    bufferevent_disable(c->bev, EV_READ);
    return false;
  }
  size_t eolLen = 0;
  evbuffer_ptr eol = evbuffer_search_eol(in, nullptr, &eolLen, EVBUFFER_EOL_LF);
  char start[3] = {};
  evbuffer_copyout(in, start, sizeof(start));
  const size_t maxLine = maxLineLength(std::string_view(start, std::min(avail, sizeof(start))));
  if (eol.pos < 0) {
    if (avail > maxLine) {
      counters.add(counters.protocol_errors);
      c->add("CLIENT_ERROR line too long\r\n");
      closeAfterWrite(c);
    }
    return false;
  }
  const size_t lineLen = static_cast<size_t>(eol.pos);
  if (lineLen > maxLine) {
    counters.add(counters.protocol_errors);
    c->add("CLIENT_ERROR line too long\r\n");
    closeAfterWrite(c);
    return false;
  }
  c->line.resize(lineLen);
  evbuffer_remove(in, c->line.data(), lineLen);
  evbuffer_drain(in, eolLen);
  counters.add(counters.bytes_read, lineLen + eolLen);

  ParseResult p = parseLine(c->line, c->req, ParseOptions{config_.strict_keys});
  if (p.status == ParseResult::kError) {
    counters.add(counters.protocol_errors);
    if (verbose_) logLine(c->peer + ": " + std::string(p.error));
    if (!p.silent) {
      c->add(p.error);
      c->add("\r\n");
    }
    if (p.swallow > 0) {
      c->state = Connection::State::kSwallow;
      c->remaining = p.swallow;
    }
    return true;
  }
  if (isStorage(c->req.command)) {
    c->value = PendingValue();
    if (!handler_.beginStore(c->req, *c, counters, c->value)) {
      c->state = Connection::State::kSwallow;
      c->remaining = c->req.valueBytes + 2;
    } else {
      c->state = Connection::State::kValue;
      c->filled = 0;
    }
    return true;
  }
  if (handler_.execute(c->req, *c, counters) == Next::kClose) {
    closeAfterWrite(c);
    return false;
  }
  return true;
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
  for (uint32_t i = 0; i < config_.threads; ++i) {
    workers_.push_back(std::make_unique<Worker>(*this, *handler_, config_, state_, verbose_));
    state_.workers.push_back(&workers_.back()->counters);
  }
}

Server::~Server() {
  for (auto& w : workers_) {
    w->drain();
    w->join();
  }
  workers_.clear();
  if (listener_) evconnlistener_free(listener_);
  for (event* e : signalEvents_) event_free(e);
  if (stopEvent_) event_free(stopEvent_);
  if (base_) event_base_free(base_);
}

uint16_t Server::listen() {
  sockaddr_storage addr{};
  socklen_t len = 0;
  auto* in4 = reinterpret_cast<sockaddr_in*>(&addr);
  auto* in6 = reinterpret_cast<sockaddr_in6*>(&addr);
  if (inet_pton(AF_INET, config_.listen.c_str(), &in4->sin_addr) == 1) {
    in4->sin_family = AF_INET;
    in4->sin_port = htons(static_cast<uint16_t>(config_.port));
    len = sizeof(sockaddr_in);
  } else if (inet_pton(AF_INET6, config_.listen.c_str(), &in6->sin6_addr) == 1) {
    in6->sin6_family = AF_INET6;
    in6->sin6_port = htons(static_cast<uint16_t>(config_.port));
    len = sizeof(sockaddr_in6);
  } else {
    throw std::runtime_error("cannot listen on \"" + config_.listen + "\": not an IP address");
  }
  const std::string where = config_.listen + ":" + std::to_string(config_.port);
  int fd = socket(addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) throw std::runtime_error("socket: " + std::string(strerror(errno)));
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), len) != 0 || ::listen(fd, 1024) != 0) {
    int e = errno;
    ::close(fd);
    throw std::runtime_error("cannot listen on " + where + ": " + strerror(e));
  }
  sockaddr_storage bound{};
  socklen_t blen = sizeof(bound);
  getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &blen);
  const uint16_t port = ntohs(bound.ss_family == AF_INET ? reinterpret_cast<sockaddr_in*>(&bound)->sin_port
                                                         : reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port);
  listener_ = evconnlistener_new(base_, &Server::onAccept, this, LEV_OPT_CLOSE_ON_FREE, -1, fd);
  if (listener_ == nullptr) {
    ::close(fd);
    throw std::runtime_error("evconnlistener_new failed for " + where);
  }
  config_.port = port;
  return port;
}

void Server::onAccept(evconnlistener*, int fd, sockaddr* sa, int, void* self) {
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
  s->workers_[s->nextWorker_++ % s->workers_.size()]->give(fd, std::move(peer));
}

void Server::run(bool handleSignals) {
  if (listener_ == nullptr) listen();
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
  evconnlistener_free(listener_);
  listener_ = nullptr;
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
