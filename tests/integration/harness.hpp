// Test harness for the black-box integration tests: runs the real Kiln CLIs
// as child processes, gives each test a throwaway cache, parses and checks
// their --json output, and loads precompiled images through the C API.
#pragma once

#include <kiln/kiln.h>

#include <nlohmann/json.hpp>

#include <cstring>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace kiln_it {

namespace fs = std::filesystem;
using nlohmann::json;

/// What a finished child process left behind.
struct RunResult {
  int exit_code = -1; ///< exit status, or 128 + signal number if it was killed
  std::string out;    ///< everything it wrote to stdout
  std::string err;    ///< everything it wrote to stderr
  long max_rss_kib = 0; ///< its peak resident memory (run() only; 0 if unknown)
};

/// "exit N", stdout and stderr in one string, for failure messages.
std::string describe(const RunResult& r);

/// Runs argv (argv[0] is a path, no PATH lookup) with stdin from /dev/null,
/// in `cwd` if not empty. A child still running after a few minutes is
/// killed (SIGALRM), so a hanging CLI fails the test instead of the run.
RunResult run(const std::vector<std::string>& argv, const fs::path& cwd = {});

/// kiln-precompile / kiln-inspect: from $KILN_TEST_BIN_DIR if set, else the
/// build tree's (compile definitions KILN_PRECOMPILE / KILN_INSPECT).
fs::path precompile_bin();
fs::path inspect_bin();
/// Absolute path of a fixture in tests/data.
std::string data(std::string_view name);
/// llvm-as used to make bitcode inputs; empty if not configured/installed.
fs::path llvm_as();

/// A fresh directory under $TMPDIR (or /tmp), removed with its contents.
class TempDir {
public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const fs::path& path() const { return path_; }

private:
  fs::path path_;
};

/// A throwaway cache: the SQLite file kiln.db inside its own TempDir.
class Cache {
public:
  const fs::path& dir() const { return dir_.path(); }
  fs::path db() const { return dir_.path() / "kiln.db"; }

private:
  TempDir dir_;
};

/// kiln-precompile --cache <cache> --json <args...>
RunResult precompile(const Cache& cache, const std::vector<std::string>& args,
                     const fs::path& cwd = {});
/// kiln-inspect --cache <cache> <args...>
RunResult inspect(const Cache& cache, const std::vector<std::string>& args);

/// Runs precompile, REQUIREs exit 0 and a well-formed --json object (fields,
/// types, 32-hex keys, statuses, every ref's key naming a listed job, no
/// duplicate job keys) and returns it.
json precompile_ok(const Cache& cache, const std::vector<std::string>& args,
                   const fs::path& cwd = {});

/// The one job of `j["jobs"]` with this entry (REQUIREs exactly one).
const json& job(const json& j, std::string_view entry);
std::string key(const json& j, std::string_view entry);
/// The one root of `j["roots"]` with this name (REQUIREs exactly one).
const json& root(const json& j, std::string_view name);
std::string closure(const json& j, std::string_view name);

/// A job's "refs" as symbol -> key, and just the keys (sorted, may repeat).
std::map<std::string, std::string> refs(const json& job);
std::vector<std::string> ref_keys(const json& job);

std::set<std::string> entries(const json& j); ///< of "jobs"
std::set<std::string> keys(const json& j);    ///< of "jobs"
std::set<std::string> root_names(const json& j);
std::set<std::string> statuses(const json& j); ///< of "jobs"

/// The precompile JSON without statuses, with jobs, refs and roots sorted:
/// what must be equal between two runs that compute the same jobs.
json normalized(const json& j);

bool is_hex32(const json& v);

/// Reads a whole file (binary); REQUIREs that it can.
std::string slurp(const fs::path& p);

/// One image loaded in-process through the C API (kiln_cache_open +
/// kiln_image_load(..., "host", ...)); released on destruction.
class Image {
public:
  /// REQUIREs that the cache opens and `name` (root name or closure key)
  /// loads; the failure message carries kiln_last_error().
  Image(const Cache& cache, const std::string& name);
  ~Image();
  Image(const Image&) = delete;
  Image& operator=(const Image&) = delete;

  /// Address of `entry` (REQUIREs KILN_OK), as function pointer type Fn.
  template <class Fn> Fn fn(const char* entry) const {
    void* address = lookup(entry);
    Fn f;
    static_assert(sizeof f == sizeof address);
    std::memcpy(&f, &address, sizeof f);
    return f;
  }
  void* lookup(const char* entry) const;
  kiln_image* get() const { return image_; }

private:
  kiln_cache* cache_ = nullptr;
  kiln_image* image_ = nullptr;
};

using I32Fn = int (*)(int);
using VoidI32Fn = int (*)();

} // namespace kiln_it
