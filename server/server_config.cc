// ServerConfig: the rows of the "server" object in the schema engine
// (config/schema.h), which parses, validates and documents them with the
// same wording as the cache's and the bench's options.
#include "server_config.h"

#include <arpa/inet.h>

#include "../allocator/cache_config.h"
#include "../common/split.h"
#include "../config/schema.h"

namespace tiercache::server {
namespace {

using config::Type;

#define SERVER_FIELD(expr)                                  \
  [](void* root, size_t) -> config::Field {                 \
    ServerConfig& c = *static_cast<ServerConfig*>(root);    \
    return &(expr);                                         \
  }

void checkListen(const ServerConfig& c, size_t, const std::string& path) {
  unsigned char buf[16];
  for (const std::string& a : c.listenAddresses()) {
    if (inet_pton(AF_INET, a.c_str(), buf) != 1 && inet_pton(AF_INET6, a.c_str(), buf) != 1) {
      throw ConfigError(path, config::quote(a) + " is not an IPv4 or IPv6 address");
    }
  }
}

const config::Schema& schema() {
  static const config::Schema kSchema{
      .root = "server",
      .sections = {"server"},
      .options =
          {
              {.name = "port",
               .type = Type::kCount,
               .description = "TCP port (0: any free port, logged at start). Flag -p/--port.",
               .field = SERVER_FIELD(c.port),
               .max = 65535},
              {.name = "listen",
               .type = Type::kString,
               .description = "Addresses to listen on: IPv4 or IPv6 literals, comma-separated as memcached's -l "
                              "takes them (\"127.0.0.1,::1\"), all on the one port. Loopback by default; all "
                              "addresses only when given (0.0.0.0 or ::). Flag -l/--listen, which may be repeated.",
               .field = SERVER_FIELD(c.listen),
               .rule = "IPv4 or IPv6 literals, comma-separated",
               .check = config::rule<ServerConfig, checkListen>},
              {.name = "threads",
               .type = Type::kCount,
               .description = "Worker threads; each owns the connections given to it. Flag -t/--threads.",
               .field = SERVER_FIELD(c.threads),
               .min = 1,
               .max = 256},
              {.name = "max_conns",
               .type = Type::kCount,
               .description = "Open client connections at most; one more gets `ERROR Too many open connections` "
                              "and is closed. Flag -c/--max-conns.",
               .field = SERVER_FIELD(c.max_conns),
               .min = 1,
               .max = 1'000'000},
              {.name = "max_item_size",
               .type = Type::kSize,
               .description = "Largest value a client may store; a larger one is refused with `SERVER_ERROR object "
                              "too large for cache` and its bytes are discarded as they arrive, never buffered. "
                              "Must fit the cache's largest allocation class.",
               .field = SERVER_FIELD(c.max_item_size),
               .min = 1,
               .max = CacheConfig::kMaxAllocSize},
              {.name = "idle_timeout",
               .type = Type::kCount,
               .description = "Seconds a connection may stay without sending a request (or without draining its "
                              "replies) before it is closed; 0 = never, as memcached: clients keep idle pooled "
                              "connections and fail a request on one the server closed. TCP keepalive closes "
                              "half-open ones either way.",
               .field = SERVER_FIELD(c.idle_timeout),
               .max = 30 * 24 * 3600},
              {.name = "strict_keys",
               .type = Type::kBool,
               .description = "Refuse keys holding control bytes (0x00-0x20, 0x7f) with `CLIENT_ERROR bad command "
                              "line format`. Off: keys are any bytes but space and NUL, as memcached takes them "
                              "(memcaslap's keys hold control bytes).",
               .field = SERVER_FIELD(c.strict_keys)},
              {.name = "flush_all_enabled",
               .type = Type::kBool,
               .description = "Off: `flush_all` is refused with `CLIENT_ERROR flush_all not allowed` and nothing "
                              "is flushed, so no client can empty a shared cache (memcached's -F).",
               .field = SERVER_FIELD(c.flush_all_enabled)},
              {.name = "binary_protocol",
               .type = Type::kBool,
               .description = "Serve memcached's binary protocol beside the text and meta ones (a connection's "
                              "first byte picks). Off (-B ascii): each binary request is answered \"not "
                              "supported\" and its body discarded.",
               .field = SERVER_FIELD(c.binary_protocol)},
              {.name = "reqs_per_event",
               .type = Type::kCount,
               .description = "Requests a connection may carry out in one wake-up before it gives way to the "
                              "other connections of its worker (and takes up the rest on the event loop's next "
                              "turn; `stats`: `conn_yields`), so that a deep pipeline cannot hold a worker; 0 = no "
                              "limit. memcached's -R.",
               .field = SERVER_FIELD(c.reqs_per_event),
               .max = 1'000'000},
              {.name = "debug_commands",
               .type = Type::kBool,
               .description = "Accept `debugtime <seconds>`, which moves the server's clock (and so every "
                              "item's expiry) that many seconds ahead, as memcached-debug does for its tests. Off: "
                              "`debugtime` is an unknown command (`ERROR`). For tests only.",
               .field = SERVER_FIELD(c.debug_commands)},
              {.name = "use_cas",
               .type = Type::kBool,
               .description = "Off: `flush_all` (without a delay) is as coarse as memcached's without CAS "
                              "(memcached -C): it flushes by the second, so a value stored in the same second "
                              "after it is lost (answered as stored, then never found). On: a flush orders "
                              "exactly against the stores around it. CAS tokens are kept and served either way. "
                              "For memcached's tests; the imprecision is memcached's, not the cache's.",
               .field = SERVER_FIELD(c.use_cas)},
          },
      .wholeFloats = true,  // the server always took 1e4 for a count
  };
  return kSchema;
}

#undef SERVER_FIELD

}  // namespace

ServerConfig ServerConfig::fromJsonString(std::string_view document) {
  ServerConfig c;
  config::parse(schema(), document, &c);
  c.validate();
  return c;
}

ServerConfig ServerConfig::fromJsonFile(const std::string& path) {
  const std::string text = config::readConfigFile(path);
  try {
    return fromJsonString(text);
  } catch (const ConfigError& e) {
    throw config::inSource(e, path);
  }
}

std::vector<std::string> ServerConfig::listenAddresses() const {
  std::vector<std::string> out;
  for (std::string_view a : splitAt(listen, ',')) out.emplace_back(a);
  return out;
}

void ServerConfig::validate() const { config::validate(schema(), this); }

std::string ServerConfig::toJson() const { return config::toJson(schema(), this, -1); }

std::string serverOptionsMarkdown() {
  const ServerConfig defaults;
  return config::markdown(schema(), &defaults);
}

}  // namespace tiercache::server
