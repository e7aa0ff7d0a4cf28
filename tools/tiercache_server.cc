// tiercache-server: a Cache behind the memcached text protocol.
//
//   tiercache-server [--config FILE] [-p|--port N] [-l|--listen ADDR]
//                    [-t|--threads N] [-c|--max-conns N] [-v]
//
// Without --config it reads configs/server.json from the install (and, when
// run from a build tree, from the source tree). Flags override the config's
// "server" object and are validated by the same rules. SIGTERM/SIGINT stop
// it cleanly: no new connections, queued replies written, cache closed (a
// persistent tier then restarts warm). Exit status: 0 after a clean stop,
// 2 for a usage or config error, 1 for a start-up failure.
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <iostream>
#include <string>

#include "allocator/cache.h"
#include "server/commands.h"
#include "server/protocol.h"
#include "server/server.h"
#include "server/server_config.h"

namespace {

constexpr const char* kUsage =
    "usage: tiercache-server [--config FILE] [-p|--port N] [-l|--listen ADDR] [-t|--threads N]\n"
    "                        [-c|--max-conns N] [-v] [--help]\n"
    "Serves the memcached text protocol from a tiercache Cache (see docs/server.md).\n"
    "  --config FILE     cache tiers plus a \"server\" object (default: the installed configs/server.json)\n"
    "  -p, --port N      TCP port (server.port; 0 = any free port, printed at start)\n"
    "  -l, --listen ADDR address to listen on (server.listen; default 127.0.0.1)\n"
    "  -t, --threads N   worker threads (server.threads)\n"
    "  -c, --max-conns N open connections at most (server.max_conns)\n"
    "  -v                log connections and errors to stderr\n";

bool exists(const std::string& p) {
  struct stat st {};
  return ::stat(p.c_str(), &st) == 0;
}

// A whole decimal number for a flag, or a usage error naming the flag.
bool flagNumber(const std::string& flag, const char* text, uint32_t& out) {
  uint32_t v;
  if (text == nullptr || !tiercache::server::parseU32(text, v)) {
    std::cerr << "tiercache-server: " << flag << " needs a whole number, got '" << (text ? text : "") << "'\n"
              << kUsage;
    return false;
  }
  out = v;
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  using tiercache::server::ServerConfig;
  std::string configPath;
  bool verbose = false;
  // Flags are applied after the file is read; remember them first.
  std::optional<uint32_t> port, threads, maxConns;
  std::optional<std::string> listen;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> const char* { return i + 1 < argc ? argv[++i] : nullptr; };
    uint32_t n = 0;
    if (a == "--help" || a == "-h") {
      std::cout << kUsage;
      return 0;
    } else if (a == "--config") {
      const char* v = next();
      if (!v) { std::cerr << "tiercache-server: --config needs a file\n" << kUsage; return 2; }
      configPath = v;
    } else if (a == "-p" || a == "--port") {
      if (!flagNumber(a, next(), n)) return 2;
      port = n;
    } else if (a == "-l" || a == "--listen") {
      const char* v = next();
      if (!v) { std::cerr << "tiercache-server: " << a << " needs an address\n" << kUsage; return 2; }
      listen = v;
    } else if (a == "-t" || a == "--threads") {
      if (!flagNumber(a, next(), n)) return 2;
      threads = n;
    } else if (a == "-c" || a == "--max-conns") {
      if (!flagNumber(a, next(), n)) return 2;
      maxConns = n;
    } else if (a == "-v" || a == "-vv" || a == "--verbose") {
      verbose = true;
    } else {
      std::cerr << "tiercache-server: unknown argument '" << a << "'\n" << kUsage;
      return 2;
    }
  }
  if (configPath.empty()) {
    // The install this binary belongs to (prefix/bin/.. /share/...), wherever it
    // was installed to; then the configured prefix; then the source tree (a build tree).
    std::string candidates[3] = {"", TIERCACHE_DEFAULT_SERVER_CONFIG, TIERCACHE_SOURCE_SERVER_CONFIG};
    char exe[4096];
    ssize_t n = ::readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    if (n > 0) {
      std::string dir(exe, static_cast<size_t>(n));
      dir = dir.substr(0, dir.rfind('/'));
      candidates[0] = dir + "/../" TIERCACHE_DATADIR "/tiercache/configs/server.json";
    }
    configPath = candidates[1];
    for (const std::string& c : candidates) {
      if (!c.empty() && exists(c)) {
        configPath = c;
        break;
      }
    }
  }

  tiercache::CacheConfig cacheConfig;
  ServerConfig config;
  try {
    cacheConfig = tiercache::CacheConfig::fromJsonFile(configPath);
    config = ServerConfig::fromJsonFile(configPath);
    if (port) config.port = *port;
    if (listen) config.listen = *listen;
    if (threads) config.threads = *threads;
    if (maxConns) config.max_conns = *maxConns;
    config.validate();
  } catch (const tiercache::ConfigError& e) {
    std::cerr << "tiercache-server: " << e.what() << "\n";
    return 2;
  }

  try {
    tiercache::CacheHooks hooks;
    // debugtime moves the server's clock; the cache's expiry must follow it.
    if (config.debug_commands) {
      tiercache::server::serverClock().wholeSeconds.store(true);
      hooks.clock = tiercache::server::serverNow;
    }
    tiercache::Cache cache(cacheConfig, hooks);
    const size_t fits = cache.maxValueSize(tiercache::server::kMaxKeyLength);
    if (config.max_item_size > fits) {
      std::cerr << "tiercache-server: server.max_item_size: " << config.max_item_size
                << " bytes do not fit the cache's largest allocation class (at most " << fits
                << " bytes with a 250-byte key; raise allocation.max_size or slab_size)\n";
      return 2;
    }
    tiercache::server::Server server(cache, config, verbose);
    const uint16_t bound = server.listen();
    // One line on stdout so that scripts started with port 0 learn the port.
    std::printf("tiercache-server listening on %s port %u (%u threads, config %s)\n", config.listen.c_str(),
                static_cast<unsigned>(bound), config.threads, configPath.c_str());
    std::fflush(stdout);
    server.run(/*handleSignals=*/true);
  } catch (const std::exception& e) {
    std::cerr << "tiercache-server: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
