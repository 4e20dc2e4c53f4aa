// The cache file: one SQLite database holding jobs, their artifacts and open
// deferred symbols, closures, linked images and names. Content-addressed rows
// are written once (a concurrent duplicate insert is ignored); every blob is
// zstd-compressed and carries an XXH3-64 checksum that is checked on read.
// One transaction per job: a failed or interrupted write leaves nothing.
#pragma once

#include "support/hash.h"

#include <kiln/result.hpp>

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

struct sqlite3;
struct sqlite3_stmt;

namespace kiln::cache {

class Bound;

/// Schema version this binary writes; older caches are migrated at open,
/// newer ones are refused.
int schema_version();

struct JobRecord {
  Hash128 key;
  std::string entry;
  std::string symbol;
  std::string target;
  std::string triple;
  std::string cpu;
  std::string features;
  std::string options;
  Hash128 module_hash;
  std::string toolchain;
  double compile_ms = 0;
  int64_t created_at = 0;
};

struct Artifact {
  std::string format;
  std::string bytes; ///< raw (uncompressed)
};

struct ArtifactInfo {
  std::string format;
  int64_t raw_size = 0;
  int64_t stored_size = 0;
};

struct JobRef {
  std::string symbol;
  std::string entry;
};

struct ClosureMember {
  std::string symbol;
  Hash128 job;
  std::string entry; ///< filled on read
};

struct ClosureRecord {
  Hash128 key;
  Hash128 root_job;
  std::string target;
  std::vector<ClosureMember> members; ///< sorted by symbol
};

struct NameRecord {
  std::string name;
  std::string target;
  Hash128 closure;
};

struct ImageKey {
  Hash128 closure;
  std::string arch;
  std::string linker;
};

/// One connection to a cache file. Thread-safe: every call takes the
/// store's lock. Several processes may open the same file at once.
class Store {
public:
  /// Opens or creates the cache at `path` (parent directories are created
  /// 0700, a new file 0600) and migrates it to the current schema.
  /// A file that is not a Kiln cache, or a newer schema, is refused
  /// unmodified.
  static Result<std::unique_ptr<Store>> open(const std::string& path);
  ~Store();
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  const std::string& path() const { return path_; }

  /// True if the job row and every listed artifact format are present.
  Result<bool> has_job(const Hash128& key, const std::vector<std::string>& formats);
  /// Stores a job, its artifacts and open refs in one transaction. A job
  /// already present (same key ⇒ same content) is left as it is.
  Status put_job(const JobRecord& job, const std::vector<Artifact>& artifacts,
                 const std::vector<JobRef>& refs);
  Result<JobRecord> get_job(const Hash128& key);
  Result<std::vector<JobRecord>> list_jobs();
  Result<std::vector<JobRef>> job_refs(const Hash128& key);
  Result<std::vector<ArtifactInfo>> artifact_infos(const Hash128& key);
  /// The raw bytes of an artifact; checksum mismatch or undecodable blob is
  /// `corrupt`, absence is `not_found`.
  Result<std::string> get_artifact(const Hash128& job, const std::string& format);

  /// Records a closure (idempotent) and, in the same transaction, points
  /// each (name, target) at it.
  Status put_closure(const ClosureRecord& closure, const std::vector<NameRecord>& names);
  Result<ClosureRecord> get_closure(const Hash128& key);
  /// The closure a root name currently names for `target`.
  Result<Hash128> resolve_name(const std::string& name, const std::string& target);
  /// Every target a name is precompiled for.
  Result<std::vector<NameRecord>> names_for(const std::string& name);
  Result<std::vector<NameRecord>> list_names();

  Status put_image(const ImageKey& key, const std::string& format, const std::string& bytes);
  /// The raw bytes of an image: not_found if absent, corrupt if damaged.
  Result<std::string> get_image(const ImageKey& key);
  /// The newest image of a closure for `arch`, whatever linker made it: the
  /// warm path, which must not load a linker just to learn its version.
  Result<std::string> get_image_any_linker(const Hash128& closure, const std::string& arch);

private:
  Store() = default;
  Status exec(const char* sql);
  Result<sqlite3_stmt*> prepare(const char* sql);
  Error db_error(const std::string& what) const;
  Status migrate();
  Result<std::string> step_blob(Bound& b, const std::string& what);

  std::string path_;
  sqlite3* db_ = nullptr;
  std::mutex mu_;
  std::vector<std::pair<const char*, sqlite3_stmt*>> stmts_;
};

} // namespace kiln::cache
