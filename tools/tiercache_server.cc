// tiercache-server: a Cache behind the memcached text protocol.
//
//   tiercache-server [--config FILE] [-p|--port N] [-l|--listen ADDR]
//                    [-t|--threads N] [-c|--max-conns N] [-m|--memory-limit MB]
//                    [-I|--max-item-size SIZE] [-u|--user NAME] [-U|--udp-port 0]
//                    [-P|--pidfile FILE] [-F] [-R N] [-B auto|binary|ascii] [-o OPT,...] [-v] [-V] [--help]
//
// Without --config it reads configs/server.json from the install (and, when
// run from a build tree, from the source tree). Flags override the config's
// "server" object (and -m tier 0's size) and are validated by the same
// rules. The flags memcached operators pass (-m -p -l -t -c -I -u -U -P -F
// -R -B -o -v -V) mean what they mean to memcached, so a usual memcached
// command line works as it is (-I up to what the config's allocation
// classes hold; -o takes the extended options with a counterpart here,
// applyExtended()); memcached flags and options with no counterpart
// (-d, -s, -o no_lru_crawler, ...) are refused with a reason, never ignored.
// SIGTERM/SIGINT stop it cleanly: no new connections, queued replies
// written, cache closed (a persistent tier then restarts warm). Exit
// status: 0 after a clean stop, 2 for a usage or config error, 1 for a
// start-up failure.
#include <grp.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "allocator/cache.h"
#include "common/split.h"
#include "server/commands.h"
#include "server/protocol.h"
#include "server/server.h"
#include "server/server_config.h"

namespace {

constexpr const char* kUsage =
    "usage: tiercache-server [--config FILE] [-p|--port N] [-l|--listen ADDR] [-t|--threads N]\n"
    "                        [-c|--max-conns N] [-m|--memory-limit MB] [-I|--max-item-size SIZE]\n"
    "                        [-u|--user NAME] [-U|--udp-port 0] [-P|--pidfile FILE] [-F] [-R N]\n"
    "                        [-B auto|binary|ascii] [-o OPT,...] [-v] [-V|--version] [--help]\n"
    "Serves the memcached text protocol from a tiercache Cache (see docs/server.md).\n"
    "  --config FILE          cache tiers plus a \"server\" object (default: the installed configs/server.json)\n"
    "  -p, --port N           TCP port (server.port; 0 = any free port, printed at start)\n"
    "  -l, --listen ADDR      addresses to listen on, comma-separated or repeated (server.listen; default 127.0.0.1)\n"
    "  -t, --threads N        worker threads (server.threads)\n"
    "  -c, --max-conns N      open connections at most (server.max_conns)\n"
    "  -m, --memory-limit MB  size of tier 0 (DRAM) in MiB, as memcached's -m (tiers[0].size)\n"
    "  -I, --max-item-size S  largest value, bytes or with a k/m/g/t suffix as memcached's -I (server.max_item_size)\n"
    "  -u, --user NAME        started as root: run as NAME once the cache and the socket are set up\n"
    "  -U, --udp-port 0       UDP is not served; 0 (memcached's default) is accepted\n"
    "  -P, --pidfile FILE     write the process id there once listening (removed on a clean stop)\n"
    "  -F, --disable-flush-all  refuse flush_all (server.flush_all_enabled false)\n"
    "  -R, --max-reqs-per-event N  requests per wake-up before a connection gives way (server.reqs_per_event)\n"
    "  -B, --protocol P       auto or binary: text, meta and binary requests; ascii: binary ones are\n"
    "                         answered \"not supported\" (server.binary_protocol)\n"
    "  -o, --extended OPT,... memcached's extended options that have a counterpart here: hashpower=N\n"
    "                         (index.bucket_power), idle_timeout=N, slab_automove=0|1|2 (rebalance.enabled),\n"
    "                         ext_path=FILE:SIZE (the flash store, flash.path and flash.size), and modern,\n"
    "                         maxconns_fast, lru_crawler, lru_maintainer, slab_reassign, no_hashexpand,\n"
    "                         which are how it always runs; any other is refused\n"
    "  -v                     log connections and errors to stderr\n"
    "  -V, --version          print the version and exit\n";

bool exists(const std::string& p) {
  struct stat st {};
  return ::stat(p.c_str(), &st) == 0;
}

bool usageError(const std::string& message) {
  std::cerr << "tiercache-server: " << message << "\n" << kUsage;
  return false;
}

// A whole decimal number for a flag, or a usage error naming the flag.
bool flagNumber(const std::string& flag, const char* text, uint32_t& out) {
  uint32_t v;
  if (text == nullptr || !tiercache::server::parseU32(text, v)) {
    return usageError(flag + " needs a whole number, got '" + (text ? text : "") + "'");
  }
  out = v;
  return true;
}

// memcached's sizes (-I, -o ext_path): bytes, or with a k, m, g or t
// suffix (powers of 1024), at most 2^50 bytes.
bool parseSuffixedSize(std::string t, uint64_t& out) {
  uint64_t unit = 1;
  if (!t.empty()) {
    switch (t.back()) {
      case 'k':
      case 'K': unit = uint64_t{1} << 10; break;
      case 'm':
      case 'M': unit = uint64_t{1} << 20; break;
      case 'g':
      case 'G': unit = uint64_t{1} << 30; break;
      case 't':
      case 'T': unit = uint64_t{1} << 40; break;
      default: break;
    }
    if (unit != 1) t.pop_back();
  }
  uint64_t v;
  if (!tiercache::server::parseU64(t, v) || v > (uint64_t{1} << 50) / unit) return false;
  out = v * unit;
  return true;
}

// memcached's -I: a size as above, or a usage error naming the flag.
bool flagSize(const std::string& flag, const char* text, uint64_t& out) {
  if (text != nullptr && parseSuffixedSize(text, out)) return true;
  return usageError(flag + " needs a size in bytes (or with a k, m, g or t suffix), got '" + (text ? text : "") + "'");
}

// memcached flags with no counterpart here: refused with what to do instead.
const char* unsupportedMemcachedFlag(const std::string& a) {
  if (a == "-d" || a == "--daemon")
    return "it runs in the foreground only (start it under systemd, or start-stop-daemon --background)";
  if (a == "-s" || a == "--unix-socket" || a == "-a" || a == "--unix-mask") return "it serves TCP only, no unix socket";
  if (a == "-f" || a == "--slab-growth-factor" || a == "-n" || a == "--slab-min-size")
    return "allocation classes come from the config (allocation.growth_factor, allocation.min_size)";
  if (a == "-k" || a == "--lock-memory" || a == "-L" || a == "--enable-largepages")
    return "memory comes from the tiers of the config";
  if (a == "-S" || a == "--enable-sasl" || a == "-Y" || a == "--auth-file")
    return "it has no authentication (SASL, auth files)";
  if (a == "-A" || a == "--enable-shutdown") return "it takes no shutdown command (stop it with SIGTERM)";
  if (a == "-M" || a == "--disable-evictions") return "it always evicts when full";
  if (a == "-C" || a == "--disable-cas") return "CAS tokens are always kept (there is no per-item memory to save)";
  if (a == "-r" || a == "--enable-coredumps" || a == "-b" || a == "--listen-backlog" || a == "-e" ||
      a == "--memory-file")
    return "it has no counterpart for this flag";
  return nullptr;
}

// One of memcached's -o options, applied to the configs; throws ConfigError
// naming the option when it has no counterpart here or its value is bad.
void applyExtended(const std::string& option, tiercache::CacheConfig& cache, tiercache::server::ServerConfig& server) {
  const size_t eq = option.find('=');
  const std::string name = option.substr(0, eq);
  const std::string value = eq == std::string::npos ? "" : option.substr(eq + 1);
  const std::string field = "-o " + option;
  auto number = [&](uint32_t& to) {
    if (!tiercache::server::parseU32(value, to)) throw tiercache::ConfigError(field, "needs a whole number");
  };
  // Always so here: memcached's switches for them change nothing.
  if (name == "modern" || name == "maxconns_fast" || name == "lru_crawler" || name == "lru_maintainer" ||
      name == "no_hashexpand") {
    if (eq != std::string::npos) throw tiercache::ConfigError(field, "takes no value");
    return;
  }
  if (name == "hashpower") {
    number(cache.index.bucket_power);  // fixed here: memcached's is where its table starts
  } else if (name == "idle_timeout") {
    number(server.idle_timeout);
  } else if (name == "slab_reassign") {
    if (eq != std::string::npos) throw tiercache::ConfigError(field, "takes no value");
    cache.rebalance.enabled = true;
  } else if (name == "slab_automove") {
    uint32_t mode = 1;
    if (eq != std::string::npos) number(mode);
    if (mode > 2) throw tiercache::ConfigError(field, "takes 0, 1 or 2");
    cache.rebalance.enabled = mode != 0;
  } else if (name == "ext_path") {
    // memcached's extstore file: here the flash store behind the last memory tier (one file).
    const size_t colon = value.rfind(':');
    uint64_t size = 0;
    if (colon == std::string::npos || colon == 0 || !parseSuffixedSize(value.substr(colon + 1), size) || size == 0)
      throw tiercache::ConfigError(field, "needs FILE:SIZE, such as /var/lib/memcached/extstore:64G");
    if (cache.flash.enabled() && cache.flash.path != value.substr(0, colon))
      throw tiercache::ConfigError(field, "a second ext_path: the flash store is one file or device");
    cache.flash.path = value.substr(0, colon);
    cache.flash.size = size;
  } else if (name.starts_with("ext_")) {
    throw tiercache::ConfigError(field, "extstore's tuning has no counterpart; set flash.* in the config");
  } else if (name == "no_lru_crawler" || name == "no_lru_maintainer" || name == "no_modern") {
    throw tiercache::ConfigError(field, "the reaper and the eviction policy always run");
  } else if (name == "slab_chunk_max" || name == "slab_sizes") {
    throw tiercache::ConfigError(field, "allocation classes come from the config (allocation.*)");
  } else {
    throw tiercache::ConfigError(field, "no counterpart here (the config file holds the cache's options)");
  }
}

// What the command line asks for; applied after the config file is read.
struct Flags {
  std::string configPath;
  bool verbose = false;
  std::optional<uint32_t> port, threads, maxConns, memoryMb, reqsPerEvent;
  std::optional<uint64_t> maxItemSize;
  std::optional<std::string> listen, user, pidFile;
  std::vector<std::string> extended;   // -o, one option each
  std::optional<bool> binaryProtocol;  // -B
  bool disableFlushAll = false;
};

// Parses argv into `f`; returns 0 to go on, else the exit status (--help and
// -V exit 0 after printing, usage errors 2).
int parseFlags(int argc, char** argv, Flags& f) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> const char* { return i + 1 < argc ? argv[++i] : nullptr; };
    auto text = [&](const char* what, std::optional<std::string>& to) {
      const char* v = next();
      if (!v) return usageError(a + " needs " + what);
      to = v;
      return true;
    };
    auto number = [&](std::optional<uint32_t>& to) {
      uint32_t n = 0;
      if (!flagNumber(a, next(), n)) return false;
      to = n;
      return true;
    };
    bool ok = true;
    if (a == "--help" || a == "-h") {
      std::cout << kUsage;
      return -1;
    } else if (a == "-V" || a == "--version") {
      std::cout << "tiercache-server " << tiercache::server::CommandHandler::kVersion << "\n";
      return -1;
    } else if (a == "--config") {
      std::optional<std::string> path;
      ok = text("a file", path);
      if (ok) f.configPath = *path;
    } else if (a == "-p" || a == "--port") {
      ok = number(f.port);
    } else if (a == "-l" || a == "--listen") {
      // Repeated, as memcached takes it: every address is listened on.
      const std::optional<std::string> before = f.listen;
      ok = text("an address", f.listen);
      if (ok && before) f.listen = *before + "," + *f.listen;
    } else if (a == "-t" || a == "--threads") {
      ok = number(f.threads);
    } else if (a == "-c" || a == "--max-conns") {
      ok = number(f.maxConns);
    } else if (a == "-m" || a == "--memory-limit") {
      ok = number(f.memoryMb);
    } else if (a == "-R" || a == "--max-reqs-per-event") {
      ok = number(f.reqsPerEvent);
    } else if (a == "-I" || a == "--max-item-size") {
      uint64_t n = 0;
      ok = flagSize(a, next(), n);
      if (ok) f.maxItemSize = n;
    } else if (a == "-u" || a == "--user") {
      ok = text("a user name", f.user);
    } else if (a == "-P" || a == "--pidfile") {
      ok = text("a file", f.pidFile);
    } else if (a == "-U" || a == "--udp-port") {
      std::optional<uint32_t> udp;
      ok = number(udp) && (*udp == 0 || usageError(a + " " + std::to_string(*udp) +
                                                   ": UDP is not served (only -U 0, memcached's default, is taken)"));
    } else if (a == "-B" || a == "--protocol") {
      std::optional<std::string> proto;
      ok = text("ascii, binary or auto", proto) && (*proto == "ascii" || *proto == "auto" || *proto == "binary" ||
                                                    usageError(a + " " + *proto + ": takes ascii, binary or auto"));
      if (ok) f.binaryProtocol = *proto != "ascii";
    } else if (a == "-o" || a == "--extended") {
      std::optional<std::string> list;
      ok = text("options (memcached's -o list)", list);
      if (ok) {
        for (std::string_view o : tiercache::splitAt(*list, ',')) {
          if (!o.empty()) f.extended.emplace_back(o);
        }
      }
    } else if (a == "-F" || a == "--disable-flush-all") {
      f.disableFlushAll = true;
    } else if (a == "-v" || a == "-vv" || a == "-vvv" || a == "--verbose") {
      f.verbose = true;
    } else if (const char* why = unsupportedMemcachedFlag(a)) {
      ok = usageError("memcached's " + a + " is not taken: " + why);
    } else {
      ok = usageError("unknown argument '" + a + "'");
    }
    if (!ok) return 2;
  }
  return 0;
}

// memcached's -P: the process id and a newline.
bool writePidFile(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "w");
  bool ok = f != nullptr && std::fprintf(f, "%ld\n", static_cast<long>(::getpid())) > 0;
  if (f != nullptr) ok = std::fclose(f) == 0 && ok;
  if (!ok)
    std::cerr << "tiercache-server: -P " << path << ": cannot write the pid file: " << std::strerror(errno) << "\n";
  return ok;
}

// Started as root with -u: the user's groups, group and user from here on
// (memcached's -u). The cache's files and the socket are already open.
bool dropPrivileges(const std::string& name) {
  if (::geteuid() != 0) return true;  // not root: nothing to give up (memcached ignores -u then too)
  errno = 0;
  const passwd* pw = ::getpwnam(name.c_str());
  if (pw == nullptr) {
    std::cerr << "tiercache-server: -u " << name << ": no such user\n";
    return false;
  }
  if (::initgroups(pw->pw_name, pw->pw_gid) != 0 || ::setgid(pw->pw_gid) != 0 || ::setuid(pw->pw_uid) != 0) {
    std::cerr << "tiercache-server: -u " << name << ": cannot switch to the user: " << std::strerror(errno) << "\n";
    return false;
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  using tiercache::server::ServerConfig;
  Flags flags;
  if (const int status = parseFlags(argc, argv, flags); status != 0) return status < 0 ? 0 : status;
  std::string& configPath = flags.configPath;
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
    if (flags.port) config.port = *flags.port;
    if (flags.listen) config.listen = *flags.listen;
    if (flags.threads) config.threads = *flags.threads;
    if (flags.maxConns) config.max_conns = *flags.maxConns;
    if (flags.maxItemSize) config.max_item_size = *flags.maxItemSize;
    if (flags.reqsPerEvent) config.reqs_per_event = *flags.reqsPerEvent;
    if (flags.disableFlushAll) config.flush_all_enabled = false;
    if (flags.binaryProtocol) config.binary_protocol = *flags.binaryProtocol;
    for (const std::string& o : flags.extended) applyExtended(o, cacheConfig, config);
    if (!flags.extended.empty()) cacheConfig.validate();
    config.validate();
    if (flags.memoryMb) {
      // memcached's -m: the memory the cache holds items in, here tier 0's.
      tiercache::TierConfig& t0 = cacheConfig.tiers.at(0);
      if (t0.kind != tiercache::TierKind::kDram) {
        throw tiercache::ConfigError("-m", "tiers[0] (" + t0.name + ") is not a dram tier; set its size in the config");
      }
      t0.size = uint64_t{*flags.memoryMb} << 20;
      t0.ratio = 0;
      cacheConfig.validate();
    }
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
    tiercache::server::Server server(cache, config, flags.verbose);
    const uint16_t bound = server.listen();
    // The pid file as root (under /run, say), before -u gives root up.
    if (flags.pidFile && !writePidFile(*flags.pidFile)) return 1;
    if (flags.user && !dropPrivileges(*flags.user)) {
      if (flags.pidFile) ::unlink(flags.pidFile->c_str());
      return 1;
    }
    // One line on stdout so that scripts started with port 0 learn the port.
    std::printf("tiercache-server listening on %s port %u (%u threads, config %s)\n", config.listen.c_str(),
                static_cast<unsigned>(bound), config.threads, configPath.c_str());
    std::fflush(stdout);
    server.run(/*handleSignals=*/true);
    // Best effort, as memcached: after -u the directory may not be ours to change.
    if (flags.pidFile) ::unlink(flags.pidFile->c_str());
  } catch (const std::exception& e) {
    std::cerr << "tiercache-server: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
