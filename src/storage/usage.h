// How a cache is used: the counters precompiles and loads add to, what it
// holds and how big it is (stats), and its settings, of which the size limit
// is the one that matters (config). Recency, the other half of usage, is
// Upkeep::touch_closures; gc (storage/gc.h) reads both.
#pragma once

#include <kiln/result.hpp>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace kiln::storage {

class Records;

/// Usage counters (stats). Added to, never set, by precompiles and loads.
struct Counters {
  int64_t job_hits = 0;     ///< jobs a precompile found cached
  int64_t job_misses = 0;   ///< jobs a precompile compiled
  int64_t image_hits = 0;   ///< loads served by a stored image
  int64_t image_misses = 0; ///< loads that had to link (or JIT) the image
  int64_t loads = 0;
  int64_t remote_hits = 0;      ///< entries fetched from the remote tier
  int64_t remote_misses = 0;    ///< lookups the remote tier could not serve
  int64_t remote_bytes_in = 0;  ///< bytes fetched from it
  int64_t remote_bytes_out = 0; ///< bytes published to it
  int64_t remote_errors = 0;    ///< failed remote calls (then local only)
  bool empty() const {
    return !(job_hits | job_misses | image_hits | image_misses | loads | remote_hits |
             remote_misses | remote_bytes_in | remote_bytes_out | remote_errors);
  }
};

struct Stats {
  int64_t jobs = 0, closures = 0, images = 0, names = 0;
  int64_t stored_bytes = 0; ///< compressed blob bytes, with the dictionaries they use
  int64_t raw_bytes = 0;    ///< their uncompressed size
  int64_t file_bytes = 0;   ///< the database file's pages
  int64_t live_bytes = 0;   ///< pages in use (file less free pages)
  std::vector<std::pair<std::string, int64_t>> jobs_per_target;
  Counters counters;

  /// Stored bytes over raw bytes; 0 when nothing is stored.
  double compression_ratio() const {
    return raw_bytes ? double(stored_bytes) / double(raw_bytes) : 0.0;
  }
};

/// The default size limit when neither KILN_CACHE_MAX_SIZE nor the cache's
/// max_size setting says otherwise.
inline constexpr int64_t kDefaultMaxSize = int64_t(5) << 30;

/// The size limit in force and what set it.
struct SizeLimit {
  int64_t bytes = kDefaultMaxSize;
  std::string source; ///< "KILN_CACHE_MAX_SIZE", "cache setting" or "default"
};

/// The size limit in force (Upkeep::max_size) and its source.
Result<SizeLimit> size_limit(Records& store);

/// What `stats` reports: the cache's contents and counters, and its limit.
struct StatsReport {
  Stats stats;
  int64_t max_size = 0; ///< the limit in force
};

/// The cache's statistics; `zero_first` resets the usage counters before
/// reading them (the contents stay).
Result<StatsReport> stats_report(Records& store, bool zero_first);

/// A setting's value as stored, from what a user typed ("1M" for max_size
/// is stored as "1048576"; require_signed is 0 or 1). An empty value only checks the name. An unknown
/// name or a malformed value is `invalid_argument`.
Result<std::string> parse_setting(const std::string& name, const std::string& value);

} // namespace kiln::storage
