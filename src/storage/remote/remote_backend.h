// A remote backend: somewhere shared by many machines that holds byte
// strings by key, and nothing more. What the values mean, how they are
// checked, what is fetched when, and what happens when the backend fails all
// belong to storage::Storage (storage/storage.h), written once for every
// backend. Today the only backend is Redis (storage/remote/redis.h).
#pragma once

#include <kiln/result.hpp>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kiln::storage::remote {

/// Moves bytes by key. Calls come one at a time (Storage serialises them).
/// Every error is `unavailable`, with a message fit for a notice: it names
/// the failed step and never a credential.
class Backend {
public:
  virtual ~Backend() = default;

  /// The value under `key`; nullopt when there is none.
  virtual Result<std::optional<std::string>> get(const std::string& key) = 0;
  /// Stores `value` under `key`, replacing any; it expires after `ttl` when
  /// that is positive, else never.
  virtual Status put(const std::string& key, std::string_view value,
                     std::chrono::seconds ttl = std::chrono::seconds(0)) = 0;
  /// Removes `key`; removing an absent key succeeds.
  virtual Status remove(const std::string& key) = 0;

  // Leases, for single-flight across machines (storage/single_flight.h): a
  // key held by one holder until it is released or its term runs out. A
  // backend without them says so (`unavailable`), and single-flight stays
  // within the machine.
  /// Whether this backend has leases (the calls below).
  virtual bool has_leases() const { return false; }
  /// Takes the lease `key` for `holder` for `term`, unless another holds it:
  /// true if taken (or already `holder`'s, its term renewed).
  virtual Result<bool> take_lease(const std::string& key, const std::string& holder,
                                  std::chrono::milliseconds term);
  /// Extends `holder`'s lease on each of `keys` to `term` from now; false
  /// for a key it no longer holds (it lapsed, or another took it).
  virtual Result<std::vector<bool>> renew_leases(const std::vector<std::string>& keys,
                                                 const std::string& holder,
                                                 std::chrono::milliseconds term);
  /// Drops `holder`'s lease on `key`; another's is left alone.
  virtual Status release_lease(const std::string& key, const std::string& holder);

  /// Where the backend is, for messages ("redis://host:port/db"): never
  /// credentials.
  virtual std::string describe() const = 0;
};

/// How Storage uses a backend: settings the URL carries that are not the
/// transport's.
struct Options {
  std::string prefix = "kiln"; ///< first part of every key
  bool read_only = false;      ///< fetch, never publish
  std::chrono::seconds ttl{0}; ///< expiry of published values; 0: none
};

/// A configured remote: its backend (null: none) and how to use it.
struct Remote {
  std::unique_ptr<Backend> backend;
  Options options;
};

/// The remote for `url`, else for $KILN_REMOTE; no backend when neither is
/// set (or the value is "off"). `read_only` forces read-only mode, as does
/// $KILN_REMOTE_READ_ONLY=1. Nothing is contacted here: a bad URL is an
/// `invalid_argument` error, a down server only fails the first call.
Result<Remote> configured(const std::string& url, bool read_only = false);

} // namespace kiln::storage::remote
