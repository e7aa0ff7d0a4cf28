// ServerConfig parsing and validation, driven by one table of options.
#include "server_config.h"

#include <arpa/inet.h>

#include <nlohmann/json.hpp>

#include <cmath>
#include <fstream>
#include <functional>
#include <set>
#include <sstream>
#include <vector>

#include "../allocator/cache_config.h"

namespace tiercache::server {
namespace {

using Json = nlohmann::ordered_json;

std::string typeName(const Json& v) { return v.type_name(); }

uint64_t parseUint(const Json& v, const std::string& path) {
  if (v.is_number_unsigned()) return v.get<uint64_t>();
  if (v.is_number_integer()) throw ConfigError(path, "must not be negative");
  if (v.is_number_float()) {
    double d = v.get<double>();
    if (d >= 0 && d == std::floor(d) && d < 1.8e19) return static_cast<uint64_t>(d);
    throw ConfigError(path, "must be a whole number >= 0");
  }
  throw ConfigError(path, "must be an integer, not " + typeName(v));
}

// Sizes take the cache's syntax: 1048576 or "1MiB".
uint64_t parseSizeValue(const Json& v, const std::string& path) {
  if (v.is_string()) return parseSize(v.get<std::string>(), path);
  return parseUint(v, path);
}

uint32_t parseU32(const Json& v, const std::string& path) {
  uint64_t n = parseUint(v, path);
  if (n > UINT32_MAX) throw ConfigError(path, "must be at most " + std::to_string(UINT32_MAX));
  return static_cast<uint32_t>(n);
}

enum class Type { kUint, kSize, kString };

// One row per key of the "server" object.
struct Option {
  const char* name;
  Type type;
  const char* description;
  std::function<void(ServerConfig&, const Json&, const std::string&)> parse;
  std::function<Json(const ServerConfig&)> value;
};

const std::vector<Option>& options() {
  static const std::vector<Option> kOptions = {
      {"port", Type::kUint, "TCP port (0: any free port, logged at start). Flag -p/--port.",
       [](ServerConfig& c, const Json& v, const std::string& p) { c.port = parseU32(v, p); },
       [](const ServerConfig& c) { return Json(c.port); }},
      {"listen", Type::kString,
       "Address to listen on, an IPv4 or IPv6 literal. Loopback by default; all addresses only when given "
       "(0.0.0.0 or ::). Flag -l/--listen.",
       [](ServerConfig& c, const Json& v, const std::string& p) {
         if (!v.is_string()) throw ConfigError(p, "must be a string, not " + typeName(v));
         c.listen = v.get<std::string>();
       },
       [](const ServerConfig& c) { return Json(c.listen); }},
      {"threads", Type::kUint, "Worker threads; each owns the connections given to it. Flag -t/--threads.",
       [](ServerConfig& c, const Json& v, const std::string& p) { c.threads = parseU32(v, p); },
       [](const ServerConfig& c) { return Json(c.threads); }},
      {"max_conns", Type::kUint,
       "Open client connections at most; one more gets `ERROR Too many open connections` and is closed. "
       "Flag -c/--max-conns.",
       [](ServerConfig& c, const Json& v, const std::string& p) { c.max_conns = parseU32(v, p); },
       [](const ServerConfig& c) { return Json(c.max_conns); }},
      {"max_item_size", Type::kSize,
       "Largest value a client may store; a larger one is refused with `SERVER_ERROR object too large for "
       "cache` and its bytes are discarded as they arrive, never buffered. Must fit the cache's largest "
       "allocation class.",
       [](ServerConfig& c, const Json& v, const std::string& p) { c.max_item_size = parseSizeValue(v, p); },
       [](const ServerConfig& c) { return Json(formatSize(c.max_item_size)); }},
      {"idle_timeout", Type::kUint,
       "Seconds a connection may stay without sending a request (or without draining its replies) before "
       "it is closed; 0 = never.",
       [](ServerConfig& c, const Json& v, const std::string& p) { c.idle_timeout = parseU32(v, p); },
       [](const ServerConfig& c) { return Json(c.idle_timeout); }},
  };
  return kOptions;
}

const char* typeLabel(Type t) {
  switch (t) {
    case Type::kUint: return "integer";
    case Type::kSize: return "size";
    case Type::kString: return "string";
  }
  return "?";
}

}  // namespace

ServerConfig ServerConfig::fromJsonString(std::string_view document) {
  Json doc;
  // The parser keeps the last of two equal keys silently; a key given twice
  // under "server" is reported (the cache parser leaves this object to us).
  std::string top, duplicate;
  std::set<std::string> seen;
  auto findDuplicates = [&](int depth, Json::parse_event_t event, Json& parsed) {
    if (event == Json::parse_event_t::key) {
      const std::string key = parsed.get<std::string>();
      if (depth == 1) {
        top = key;
        seen.clear();
      } else if (depth == 2 && top == "server" && !seen.insert(key).second && duplicate.empty()) {
        duplicate = "server." + key;
      }
    }
    return true;
  };
  try {
    doc = Json::parse(document.begin(), document.end(), findDuplicates);
  } catch (const Json::parse_error& e) {
    throw ConfigError("", std::string("invalid JSON: ") + e.what());
  }
  if (!duplicate.empty()) throw ConfigError(duplicate, "key appears more than once");
  if (!doc.is_object()) throw ConfigError("", "the config must be a JSON object");
  ServerConfig c;
  auto it = doc.find("server");
  if (it == doc.end()) return c;
  if (!it->is_object()) throw ConfigError("server", "must be an object");
  for (const auto& [key, val] : it->items()) {
    const std::string path = "server." + key;
    const Option* row = nullptr;
    for (const Option& o : options()) {
      if (key == o.name) row = &o;
    }
    if (row == nullptr) {
      std::string known;
      for (const Option& o : options()) known += std::string(known.empty() ? "" : ", ") + o.name;
      throw ConfigError(path, "unknown key (known: " + known + ")");
    }
    row->parse(c, val, path);
  }
  c.validate();
  return c;
}

ServerConfig ServerConfig::fromJsonFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw ConfigError("", "cannot open config file " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  try {
    return fromJsonString(ss.str());
  } catch (const ConfigError& e) {
    std::string what = e.what();
    std::string reason = e.path().empty() ? what : what.substr(e.path().size() + 2);
    throw ConfigError(e.path(), reason + " (in " + path + ")");
  }
}

void ServerConfig::validate() const {
  if (port > 65535) throw ConfigError("server.port", "must be in [0,65535]");
  unsigned char buf[16];
  if (inet_pton(AF_INET, listen.c_str(), buf) != 1 && inet_pton(AF_INET6, listen.c_str(), buf) != 1)
    throw ConfigError("server.listen", "\"" + listen.substr(0, 40) + "\" is not an IPv4 or IPv6 address");
  if (threads < 1 || threads > 256) throw ConfigError("server.threads", "must be in [1,256]");
  if (max_conns < 1 || max_conns > 1'000'000) throw ConfigError("server.max_conns", "must be in [1,1000000]");
  if (max_item_size < 1 || max_item_size > CacheConfig::kMaxAllocSize)
    throw ConfigError("server.max_item_size", "must be in [1B," + formatSize(CacheConfig::kMaxAllocSize) + "]");
  if (idle_timeout > 30 * 24 * 3600) throw ConfigError("server.idle_timeout", "must be at most 2592000 (30 days)");
}

std::string ServerConfig::toJson() const {
  Json o = Json::object();
  for (const Option& row : options()) o[row.name] = row.value(*this);
  return o.dump();
}

std::string serverOptionsMarkdown() {
  const ServerConfig defaults;
  std::ostringstream os;
  os << "| key | type | default | description |\n|---|---|---|---|\n";
  for (const Option& o : options()) {
    os << "| `server." << o.name << "` | " << typeLabel(o.type) << " | `" << o.value(defaults).dump() << "` | "
       << o.description << " |\n";
  }
  return os.str();
}

}  // namespace tiercache::server
