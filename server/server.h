// Server: the memcached text protocol over TCP, on libevent.
//
// Threads: the thread that calls run() accepts connections (and handles
// SIGTERM/SIGINT); `threads` workers each run
// their own event_base and own the connections handed to them round-robin
// (a connection never changes thread, so its state needs no lock). Requests
// are parsed (protocol.h) and carried out (commands.h) on the worker, in
// the order they arrived; pipelined replies go out in the same order.
//
// I/O: each connection is a nonblocking socket with a read event on its
// worker's loop (no bufferevent). A wake-up reads once into the
// connection's own buffer, carries out every complete request in it and
// sends the replies with one sendmsg; the write event is added only while
// the socket is full.
//
// Bounds per connection: a request line is at most kMaxLineLength bytes; a
// value is read straight into the item allocated for it, and one above
// max_item_size is discarded as it arrives; when a client does not read its
// replies, requests stop being carried out (and the socket read) once
// kOutputHigh bytes are queued, even inside a multiget, which goes on from
// the next key once the output is down to kOutputLow (so a slow client costs
// a bounded amount of memory and no other client waits). Values of 4 KiB
// and more may be queued by reference to their pinned items, at most
// OutputQueue::kMaxPins per connection and a fixed budget per server.
//
// Accepting: when accept() fails for want of descriptors (EMFILE, ENFILE)
// or memory, the listener is disabled until a connection closes or
// kAcceptRetryMs pass (stats: listen_disabled_num), instead of being woken
// again at once by the connection still waiting.
//
// Stopping (stop(), SIGTERM, SIGINT): the listener closes first; each
// connection stops reading, its queued replies are written, then it is
// closed; after kDrainSeconds whatever is left is closed anyway. run()
// returns once every worker has stopped, so the Cache can then be closed.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "../allocator/cache.h"
#include "commands.h"
#include "server_config.h"

struct event_base;
struct sockaddr;
struct event;
struct evconnlistener;

namespace tiercache::server {

class Worker;

class Server {
 public:
  static constexpr size_t kOutputHigh = 4u << 20;  // pause reading above this many queued reply bytes
  static constexpr size_t kOutputLow = 1u << 20;   // resume once drained below this
  static constexpr int kDrainSeconds = 5;
  static constexpr int kAcceptRetryMs = 100;

  // verbose: log connections and errors to stderr (-v).
  Server(Cache& cache, const ServerConfig& config, bool verbose);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Binds and listens on every address of server.listen, all on one port;
  // throws std::runtime_error naming the address and the system error.
  // Returns the port (useful with port 0).
  uint16_t listen();
  // Serves until stop() or, with handleSignals, SIGTERM/SIGINT.
  void run(bool handleSignals);
  // Thread-safe and async-signal-unsafe; may be called before run().
  void stop();

  ServerState& state() { return state_; }
  // From any worker: a descriptor was freed, so a paused listener may accept again.
  void connectionClosed();
  // From any thread: the address a listener serves ("tcp:127.0.0.1:11211"), as stats conns shows it.
  std::string listenerName(int fd);

 private:
  static void onAccept(evconnlistener*, int fd, ::sockaddr*, int, void* self);
  static void onAcceptError(evconnlistener*, void* self);
  // Binds one address of server.listen on `port`; returns the port bound.
  uint16_t listenOn(const std::string& address, uint16_t port);
  static void onAcceptResume(int, short, void* self);
  static void onStop(int, short, void* self);

  Cache& cache_;
  ServerConfig config_;
  bool verbose_;
  ServerState state_;
  std::unique_ptr<CommandHandler> handler_;
  event_base* base_ = nullptr;
  std::vector<evconnlistener*> listeners_;              // one per address of server.listen
  std::mutex listenersMutex_;                           // for stats conns on the workers
  std::vector<std::pair<int, std::string>> listening_;  // each listener's fd and address
  event* stopEvent_ = nullptr;
  event* acceptResume_ = nullptr;  // timer, or made active by connectionClosed()
  std::vector<event*> signalEvents_;
  std::vector<std::unique_ptr<Worker>> workers_;
  size_t nextWorker_ = 0;
  std::atomic<bool> stopRequested_{false};
};

// stderr logging for -v; one line at a time across threads.
void logLine(const std::string& line);

}  // namespace tiercache::server
