// The Redis backend (storage/remote/redis.h): URL parsing and the hiredis
// connection.
#include "storage/remote/redis.h"

#include "support/compress.h"
#include "support/dynlib.h"

#include <hiredis/hiredis.h>

#include <cerrno>
#include <mutex>
#include <optional>
#include <sys/time.h>

namespace kiln::storage::remote {

namespace {

Error bad_url(const std::string& why) {
  // The URL itself is never echoed: it may carry a password.
  return make_error(Code::invalid_argument, "remote cache URL: " + why);
}

Result<int64_t> parse_number(const std::string& s, const std::string& what, int64_t lo,
                             int64_t hi) {
  if (s.empty() || s.size() > 12 || s.find_first_not_of("0123456789") != std::string::npos)
    return bad_url(what + " must be a number, not '" + s + "'");
  int64_t v = std::stoll(s);
  if (v < lo || v > hi)
    return bad_url(what + " must be in " + std::to_string(lo) + ".." + std::to_string(hi));
  return v;
}

Result<std::string> percent_decode(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '%') {
      out += s[i];
      continue;
    }
    auto hex = [](char c) {
      return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
                                          : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                                                 : -1;
    };
    if (i + 2 >= s.size() || hex(s[i + 1]) < 0 || hex(s[i + 2]) < 0)
      return bad_url("bad percent escape in the credentials");
    out += char(hex(s[i + 1]) * 16 + hex(s[i + 2]));
    i += 2;
  }
  return out;
}

// hiredis, opened at the first connection (support/dynlib.h): the header
// gives the types, the library is the one the build was configured with.
struct Hiredis {
  decltype(&::redisConnectWithTimeout) connect = nullptr;
  decltype(&::redisSetTimeout) set_timeout = nullptr;
  decltype(&::redisCommand) command = nullptr;
  decltype(&::redisAppendCommand) append_command = nullptr;
  decltype(&::redisGetReply) get_reply = nullptr;
  decltype(&::freeReplyObject) free_reply = nullptr;
  decltype(&::redisFree) free = nullptr;
};

Hiredis api;

Status load_hiredis() {
  static std::once_flag once;
  static std::optional<Error> failed;
  std::call_once(once, [] {
    auto lib = open_library(KILN_HIREDIS_SONAME, "the Redis tier");
    if (!lib) {
      failed = lib.error();
      return;
    }
    void* h = *lib;
    if (!bind_symbol(h, "redisConnectWithTimeout", api.connect) ||
        !bind_symbol(h, "redisSetTimeout", api.set_timeout) ||
        !bind_symbol(h, "redisCommand", api.command) ||
        !bind_symbol(h, "redisAppendCommand", api.append_command) ||
        !bind_symbol(h, "redisGetReply", api.get_reply) ||
        !bind_symbol(h, "freeReplyObject", api.free_reply) ||
        !bind_symbol(h, "redisFree", api.free))
      failed = make_error(Code::unavailable, std::string(KILN_HIREDIS_SONAME) +
                                                 " lacks a function the Redis tier calls");
  });
  if (failed)
    return *failed;
  return Status::ok();
}

struct Reply {
  redisReply* r = nullptr;
  explicit Reply(void* p) : r(static_cast<redisReply*>(p)) {}
  ~Reply() {
    if (r)
      api.free_reply(r);
  }
  Reply(const Reply&) = delete;
  Reply& operator=(const Reply&) = delete;
};

// The server's error text, never ours: it does not contain the password.
std::string server_text(const redisReply* r) { return std::string(r->str, r->len); }

} // namespace

std::string RedisConfig::where() const {
  return "redis://" + host + ":" + std::to_string(port) + "/" + std::to_string(db);
}

Result<RedisConfig> parse_redis_url(const std::string& url) {
  RedisConfig c;
  if (url.rfind("rediss://", 0) == 0)
    return bad_url("rediss:// (TLS) is not supported by this build: its hiredis has no TLS; use "
                   "redis:// over a trusted network or a TLS tunnel");
  if (url.rfind("redis://", 0) != 0)
    return bad_url("must start with redis://");
  std::string rest = url.substr(8);
  std::string query;
  if (size_t q = rest.find('?'); q != std::string::npos) {
    query = rest.substr(q + 1);
    rest.resize(q);
  }
  std::string path;
  if (size_t s = rest.find('/'); s != std::string::npos) {
    path = rest.substr(s + 1);
    rest.resize(s);
  }
  if (size_t at = rest.rfind('@'); at != std::string::npos) {
    std::string cred = rest.substr(0, at);
    rest = rest.substr(at + 1);
    std::string user, pass;
    if (size_t colon = cred.find(':'); colon != std::string::npos) {
      user = cred.substr(0, colon);
      pass = cred.substr(colon + 1);
    } else {
      pass = cred; // redis://password@host, as redis-cli -u accepts
    }
    KILN_TRY_ASSIGN(auto u, percent_decode(user));
    KILN_TRY_ASSIGN(auto p, percent_decode(pass));
    c.user = std::move(u);
    c.password = std::move(p);
  }
  if (!rest.empty() && rest[0] == '[') { // [ipv6]:port
    size_t close = rest.find(']');
    if (close == std::string::npos)
      return bad_url("unterminated [ in the host");
    c.host = rest.substr(1, close - 1);
    rest = rest.substr(close + 1);
    if (!rest.empty() && rest[0] != ':')
      return bad_url("junk after the host's ]");
    if (!rest.empty()) {
      auto port = parse_number(rest.substr(1), "the port", 1, 65535);
      if (!port)
        return port.error();
      c.port = int(*port);
    }
  } else if (size_t colon = rest.rfind(':'); colon != std::string::npos) {
    c.host = rest.substr(0, colon);
    auto port = parse_number(rest.substr(colon + 1), "the port", 1, 65535);
    if (!port)
      return port.error();
    c.port = int(*port);
  } else {
    c.host = rest;
  }
  if (c.host.empty())
    return bad_url("no host");
  if (!path.empty()) {
    auto db = parse_number(path, "the database number", 0, 1 << 20);
    if (!db)
      return db.error();
    c.db = int(*db);
  }
  while (!query.empty()) {
    size_t amp = query.find('&');
    std::string opt = query.substr(0, amp);
    query = amp == std::string::npos ? "" : query.substr(amp + 1);
    size_t eq = opt.find('=');
    std::string k = opt.substr(0, eq), v = eq == std::string::npos ? "" : opt.substr(eq + 1);
    if (k == "prefix") {
      if (v.empty() || v.find_first_of(" \t\r\n") != std::string::npos)
        return bad_url("prefix must be a non-empty word");
      c.options.prefix = v;
    } else if (k == "ttl") {
      KILN_TRY_ASSIGN(auto t, parse_number(v, "ttl", 0, int64_t(1) << 40));
      c.options.ttl = std::chrono::seconds(t);
    } else if (k == "timeout_ms") {
      KILN_TRY_ASSIGN(auto t, parse_number(v, "timeout_ms", 1, 600000));
      c.timeout_ms = int(t);
    } else if (k == "read_only") {
      if (v != "0" && v != "1" && !v.empty())
        return bad_url("read_only must be 0 or 1");
      c.options.read_only = v != "0";
    } else if (!k.empty()) {
      return bad_url("unknown option '" + k + "' (known: prefix, ttl, timeout_ms, read_only)");
    }
  }
  return c;
}

RedisBackend::RedisBackend(RedisConfig config) : config_(std::move(config)) {}

RedisBackend::~RedisBackend() {
  if (ctx_)
    api.free(ctx_);
}

Error RedisBackend::failure(std::string why) {
  if (ctx_ && ctx_->err == REDIS_ERR_IO && (errno == EAGAIN || errno == EWOULDBLOCK) &&
      why.find("temporarily") != std::string::npos)
    why = why.substr(0, why.find(':')) + ": no answer within " +
          std::to_string(config_.timeout_ms) + " ms";
  if (ctx_) {
    api.free(ctx_);
    ctx_ = nullptr;
  }
  return make_error(Code::unavailable, std::move(why));
}

Status RedisBackend::connect() {
  if (ctx_)
    return Status::ok();
  KILN_TRY(load_hiredis());
  timeval tv{config_.timeout_ms / 1000, (config_.timeout_ms % 1000) * 1000};
  ctx_ = api.connect(config_.host.c_str(), config_.port, tv);
  if (!ctx_)
    return failure("cannot allocate a connection");
  if (ctx_->err)
    return failure(ctx_->errstr);
  if (api.set_timeout(ctx_, tv) != REDIS_OK)
    return failure("cannot set the timeout");
  auto simple = [&](Reply r, const char* what) -> Status {
    if (!r.r)
      return failure(std::string(what) + ": " + ctx_->errstr);
    if (r.r->type == REDIS_REPLY_ERROR)
      return failure(std::string(what) + " refused: " + server_text(r.r));
    return Status::ok();
  };
  if (!config_.password.empty())
    KILN_TRY(config_.user.empty()
                 ? simple(Reply(api.command(ctx_, "AUTH %b", config_.password.data(),
                                             config_.password.size())),
                          "AUTH")
                 : simple(Reply(api.command(ctx_, "AUTH %b %b", config_.user.data(),
                                             config_.user.size(), config_.password.data(),
                                             config_.password.size())),
                          "AUTH"));
  if (config_.db != 0)
    KILN_TRY(simple(Reply(api.command(ctx_, "SELECT %d", config_.db)), "SELECT"));
  return Status::ok();
}

Result<std::optional<std::string>> RedisBackend::get(const std::string& key) {
  KILN_TRY(connect());
  // hiredis reads a whole reply into memory, so a plain GET would take a
  // value of any size. GETRANGE reads at most one byte past the maximum
  // (what a value decoding to max_decoded_size() could take), which tells a
  // value that is too large; EXISTS, in the same round trip, tells a missing
  // key from an empty value.
  const size_t max_value = max_encoded_size();
  if (api.append_command(ctx_, "EXISTS %b", key.data(), key.size()) != REDIS_OK ||
      api.append_command(ctx_, "GETRANGE %b 0 %lld", key.data(), key.size(),
                         static_cast<long long>(max_value)) != REDIS_OK)
    return failure(std::string("GET: ") + ctx_->errstr);
  void* raw = nullptr;
  if (api.get_reply(ctx_, &raw) != REDIS_OK)
    return failure(std::string("GET: ") + ctx_->errstr);
  Reply exists(raw);
  raw = nullptr;
  if (api.get_reply(ctx_, &raw) != REDIS_OK)
    return failure(std::string("GET: ") + ctx_->errstr);
  Reply r(raw);
  for (const Reply* reply : {&exists, &r})
    if (reply->r->type == REDIS_REPLY_ERROR)
      return failure("GET refused: " + server_text(reply->r));
  if (exists.r->type != REDIS_REPLY_INTEGER || r.r->type != REDIS_REPLY_STRING)
    return failure("GET: unexpected reply type");
  if (exists.r->integer == 0)
    return std::optional<std::string>();
  if (r.r->len > max_value)
    return make_error(Code::corrupt, "GET: the value of a key is larger than the " +
                                         std::to_string(max_value) +
                                         "-byte maximum (KILN_MAX_DECODED_SIZE); refused");
  return std::optional<std::string>(std::string(r.r->str, r.r->len));
}

Status RedisBackend::put(const std::string& key, std::string_view value,
                         std::chrono::seconds ttl) {
  KILN_TRY(connect());
  Reply r(ttl.count() > 0
              ? api.command(ctx_, "SET %b %b EX %lld", key.data(), key.size(), value.data(),
                             value.size(), static_cast<long long>(ttl.count()))
              : api.command(ctx_, "SET %b %b", key.data(), key.size(), value.data(),
                             value.size()));
  if (!r.r)
    return failure(std::string("SET: ") + ctx_->errstr);
  if (r.r->type == REDIS_REPLY_ERROR)
    return failure("SET refused: " + server_text(r.r));
  return Status::ok();
}

Status RedisBackend::remove(const std::string& key) {
  KILN_TRY(connect());
  Reply r(api.command(ctx_, "DEL %b", key.data(), key.size()));
  if (!r.r)
    return failure(std::string("DEL: ") + ctx_->errstr);
  if (r.r->type == REDIS_REPLY_ERROR)
    return failure("DEL refused: " + server_text(r.r));
  return Status::ok();
}

namespace {

// A holder's own lease, extended or dropped; another's is left alone.
constexpr const char* kRenewScript =
    "if redis.call('GET', KEYS[1]) == ARGV[1] then "
    "return redis.call('PEXPIRE', KEYS[1], ARGV[2]) else return 0 end";
constexpr const char* kReleaseScript =
    "if redis.call('GET', KEYS[1]) == ARGV[1] then "
    "return redis.call('DEL', KEYS[1]) else return 0 end";

} // namespace

Result<bool> RedisBackend::take_lease(const std::string& key, const std::string& holder,
                                      std::chrono::milliseconds term) {
  KILN_TRY(connect());
  // SET NX: taken only when nobody holds it; a holder asking again has its
  // term renewed instead.
  Reply r(api.command(ctx_, "SET %b %b NX PX %lld", key.data(), key.size(), holder.data(),
                      holder.size(), static_cast<long long>(term.count())));
  if (!r.r)
    return failure(std::string("SET NX: ") + ctx_->errstr);
  if (r.r->type == REDIS_REPLY_ERROR)
    return failure("SET NX refused: " + server_text(r.r));
  if (r.r->type == REDIS_REPLY_STATUS)
    return true;
  KILN_TRY_ASSIGN(auto mine, renew_leases({key}, holder, term));
  return bool(mine.front());
}

Result<std::vector<bool>> RedisBackend::renew_leases(const std::vector<std::string>& keys,
                                                     const std::string& holder,
                                                     std::chrono::milliseconds term) {
  KILN_TRY(connect());
  const std::string ms = std::to_string(term.count());
  for (const std::string& key : keys)
    if (api.append_command(ctx_, "EVAL %s 1 %b %b %b", kRenewScript, key.data(), key.size(),
                           holder.data(), holder.size(), ms.data(), ms.size()) != REDIS_OK)
      return failure(std::string("EVAL: ") + ctx_->errstr);
  std::vector<bool> held;
  for (size_t i = 0; i < keys.size(); ++i) {
    void* raw = nullptr;
    if (api.get_reply(ctx_, &raw) != REDIS_OK)
      return failure(std::string("EVAL: ") + ctx_->errstr);
    Reply r(raw);
    if (r.r->type == REDIS_REPLY_ERROR)
      return failure("EVAL refused: " + server_text(r.r));
    held.push_back(r.r->type == REDIS_REPLY_INTEGER && r.r->integer == 1);
  }
  return held;
}

Status RedisBackend::release_lease(const std::string& key, const std::string& holder) {
  KILN_TRY(connect());
  Reply r(api.command(ctx_, "EVAL %s 1 %b %b", kReleaseScript, key.data(), key.size(),
                      holder.data(), holder.size()));
  if (!r.r)
    return failure(std::string("EVAL: ") + ctx_->errstr);
  if (r.r->type == REDIS_REPLY_ERROR)
    return failure("EVAL refused: " + server_text(r.r));
  return Status::ok();
}

} // namespace kiln::storage::remote
