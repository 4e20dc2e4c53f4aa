// The remote tier: a Redis server shared by many machines, behind the local
// SQLite cache. A local miss asks Redis; what is compiled or linked here is
// published there. Every value is a small bundle (magic, version, checksum,
// zstd) holding one job, closure, image or name, verified like an import
// before it reaches the local cache. Content-addressed entries never change,
// so no locking is needed; names (mutable) are published separately.
//
// Fail open: the first failed call (connection refused, timeout, error
// reply) disables the tier for the rest of the process, with one notice on
// stderr. Nothing here ever fails a precompile or a load. Credentials appear
// in no message.
#pragma once

#include "storage/local/store.h"

#include <kiln/result.hpp>

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

struct redisContext;

namespace kiln::storage::remote {

struct Config {
  std::string host;
  int port = 6379;
  int db = 0;
  std::string user;     ///< Redis 6 ACL user; empty: the default user
  std::string password; ///< empty: no AUTH
  std::string prefix = "kiln";
  bool read_only = false; ///< fetch, never publish
  int64_t ttl_s = 0;      ///< expiry of published values; 0: none
  int timeout_ms = 1000;  ///< connect and per-command timeout

  /// "redis://host:port/db": for messages, without credentials.
  std::string where() const;
};

/// Parses redis://[user:password@]host[:port][/db][?option&...], options
/// being prefix=NAME, ttl=SECONDS, timeout_ms=MS and read_only=1.
/// rediss:// is refused: this build's hiredis has no TLS. Errors are
/// `invalid_argument` and never echo the credentials.
Result<Config> parse_url(const std::string& url);

class Tier {
public:
  explicit Tier(Config config);
  ~Tier();
  Tier(const Tier&) = delete;
  Tier& operator=(const Tier&) = delete;

  /// The tier for `url`, else for $KILN_REMOTE; nullptr when neither is set
  /// (or the value is "off"). `read_only` forces read-only mode, as does
  /// $KILN_REMOTE_READ_ONLY=1.
  static Result<std::unique_ptr<Tier>> configured(const std::string& url, bool read_only = false);

  const Config& config() const { return config_; }
  bool read_only() const { return config_.read_only; }

  // --- fetch: into the local store; false on a miss, a rejected value or a
  // disabled tier. Thread-safe. -------------------------------------------
  /// The job with its artifacts and refs; `formats` must all be present.
  bool fetch_job(storage::Store& store, const Hash128& key, const std::vector<std::string>& formats);
  /// The closure and every member job the store lacks.
  bool fetch_closure(storage::Store& store, const Hash128& key);
  /// The closure a name points at (fetched as above) and the name itself.
  std::optional<Hash128> fetch_name(storage::Store& store, const std::string& name,
                                    const std::string& target);
  /// An image of `closure` (members' entries filled, as get_closure gives
  /// it) for `arch`, checked like a stored image, then stored.
  std::optional<std::string> fetch_image(storage::Store& store, const core::ClosureRecord& closure,
                                         const std::string& arch);

  // --- publish: no-ops in read-only mode or once disabled. ----------------
  /// Reads the job back from the store and publishes it.
  void publish_job(storage::Store& store, const Hash128& key);
  void publish_closure(const core::ClosureRecord& closure);
  void publish_name(const core::NameRecord& name);
  void publish_image(const core::ImageRecord& image);

  /// The counters since the last call (remote_* fields only).
  storage::Counters take_counters();

  /// The Redis key of an entry: <prefix>:v<bundle version>:<kind>:<id>.
  std::string key_of(const std::string& kind, const std::string& id) const;
  static std::string name_id(const std::string& name, const std::string& target);

private:
  /// GET; nullopt on a miss or error. Call with mu_ held.
  std::optional<std::string> get(const std::string& key);
  /// SET (with EX when a TTL is configured). Call with mu_ held.
  void set(const std::string& key, const std::string& value);
  bool connect();
  void fail(const std::string& why);
  void reject(const std::string& what, const std::string& why);
  bool fetch_closure_locked(storage::Store& store, const Hash128& key,
                            const std::vector<core::NameRecord>& names);
  bool fetch_job_locked(storage::Store& store, const Hash128& key,
                        const std::vector<std::string>& formats);

  Config config_;
  std::mutex mu_;
  redisContext* ctx_ = nullptr;
  bool disabled_ = false;
  storage::Counters counters_;
};

} // namespace kiln::storage::remote
