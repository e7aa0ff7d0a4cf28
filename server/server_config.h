// ServerConfig: the "server" object of a tiercache-server config file.
//
// The same JSON file holds the cache config (parsed by CacheConfig, which
// accepts "server" and leaves it alone) and this object, parsed here with the
// same rules as the rest of the config: every option is one row of a table
// (server_config.cc) from which parsing, validation and the docs table come;
// an unknown key, a wrong type or an impossible value is a ConfigError that
// names the key path ("server.port: must be in [0,65535]"). Command-line
// flags override single fields and go through validate() the same way.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tiercache::server {

struct ServerConfig {
  uint32_t port = 11211;              // 0: any free port (the chosen one is logged)
  std::string listen = "127.0.0.1";   // IPv4/IPv6 literals, comma-separated; never all addresses unless given
  uint32_t threads = 4;               // worker threads, each owning its connections
  uint32_t max_conns = 1024;          // open client connections; one more is told and closed
  uint64_t max_item_size = 1u << 20;  // largest value a client may store (bytes)
  uint32_t idle_timeout = 0;          // seconds without a request before a connection is closed; 0 = never (memcached)
  bool strict_keys = false;           // refuse control bytes in keys (memcached accepts all but space and NUL)
  bool flush_all_enabled = true;      // false: flush_all is refused (memcached -F)
  bool binary_protocol = true;        // false: binary requests answered "not supported" (memcached -B ascii)
  uint32_t reqs_per_event = 0;        // requests per wake-up before a connection gives way; 0 = no limit
  bool debug_commands = false;        // accept `debugtime` (memcached-debug's clock shift), tests only
  bool use_cas = true;                // false: memcached -C's whole-second flush_all (see server_config.cc)

  // Parse the "server" object of a whole config document (absent: defaults);
  // throws ConfigError.
  static ServerConfig fromJsonString(std::string_view document);
  static ServerConfig fromJsonFile(const std::string& path);
  // Throws ConfigError naming "server.<key>" for an impossible value.
  void validate() const;
  // The addresses of `listen`, split at its commas.
  std::vector<std::string> listenAddresses() const;
  std::string toJson() const;
};

// The option table as Markdown (key, type, default, description), for docs/server.md.
std::string serverOptionsMarkdown();

}  // namespace tiercache::server
