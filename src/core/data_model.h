// Kiln's data model, as every layer sees it: a job and its artifacts and
// open deferred references, a closure and its members, a name, an image, and
// a bundle of them (what export, import and the remote tier move). Plain
// data: where they are stored is storage's business, how they are checked
// core/check.h's.
#pragma once

#include "support/hash.h"

#include <cstdint>
#include <string>
#include <vector>

namespace kiln::core {

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

/// A kernel library: the roots of one precompile request for one target,
/// loaded as one image. Its closure is the union of the roots' closures.
struct LibraryRecord {
  std::string name;
  std::string target;
  Hash128 closure;
  std::vector<std::string> roots; ///< the root names, sorted
};

struct ImageKey {
  Hash128 closure;
  std::string arch;
  std::string linker;
};

struct ImageRecord {
  ImageKey key;
  std::string format;
  std::string bytes; ///< raw
};

/// Everything of some closures, as moved by export and import.
struct BundleData {
  struct Job {
    JobRecord record;
    std::vector<Artifact> artifacts;
    std::vector<JobRef> refs;
  };
  std::vector<Job> jobs;
  std::vector<ClosureRecord> closures;
  std::vector<ImageRecord> images;
  std::vector<NameRecord> names;
};

} // namespace kiln::core
