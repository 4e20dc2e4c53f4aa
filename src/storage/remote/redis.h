// The Redis backend: GET, SET (with EX for a TTL) and DEL over one hiredis
// connection, opened at the first call with AUTH and SELECT as the URL says,
// every command bounded by the configured timeout. A failed call closes the
// connection; the next call opens a new one. Credentials appear in no
// message.
#pragma once

#include "storage/remote/remote_backend.h"

#include <kiln/result.hpp>

#include <string>

struct redisContext;

namespace kiln::storage::remote {

struct RedisConfig {
  std::string host;
  int port = 6379;
  int db = 0;
  std::string user;      ///< Redis 6 ACL user; empty: the default user
  std::string password;  ///< empty: no AUTH
  int timeout_ms = 1000; ///< connect and per-command timeout
  Options options;       ///< the URL's prefix, ttl and read_only, for Storage

  /// "redis://host:port/db": for messages, without credentials.
  std::string where() const;
};

/// Parses redis://[user:password@]host[:port][/db][?option&...], options
/// being prefix=NAME, ttl=SECONDS, timeout_ms=MS and read_only=1.
/// rediss:// is refused: this build's hiredis has no TLS. Errors are
/// `invalid_argument` and never echo the credentials.
Result<RedisConfig> parse_redis_url(const std::string& url);

class RedisBackend final : public Backend {
public:
  explicit RedisBackend(RedisConfig config);
  ~RedisBackend() override;
  RedisBackend(const RedisBackend&) = delete;
  RedisBackend& operator=(const RedisBackend&) = delete;

  Result<std::optional<std::string>> get(const std::string& key) override;
  Status put(const std::string& key, std::string_view value,
             std::chrono::seconds ttl = std::chrono::seconds(0)) override;
  Status remove(const std::string& key) override;
  /// SET NX PX; renewal and release compare the holder in a script, so that
  /// a lease that lapsed and was taken by another is never extended or
  /// dropped by its former holder.
  bool has_leases() const override { return true; }
  Result<bool> take_lease(const std::string& key, const std::string& holder,
                          std::chrono::milliseconds term) override;
  Result<std::vector<bool>> renew_leases(const std::vector<std::string>& keys,
                                         const std::string& holder,
                                         std::chrono::milliseconds term) override;
  Status release_lease(const std::string& key, const std::string& holder) override;
  std::string describe() const override { return config_.where(); }

  const RedisConfig& config() const { return config_; }

private:
  Status connect();
  /// The error for `why`, the connection closed. A read timeout surfaces
  /// as EAGAIN's text: it is said as what it means.
  Error failure(std::string why);

  RedisConfig config_;
  redisContext* ctx_ = nullptr;
};

} // namespace kiln::storage::remote
