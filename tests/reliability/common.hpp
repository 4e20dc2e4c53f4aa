// Shared pieces of the reliability suite: scale (short for CI, --long for
// the figures), child processes that can be killed at any moment, direct
// SQLite access to damage a cache on purpose, and checks that a cache is
// whole (verify clean, every root loadable).
#pragma once

#include "harness.hpp"

#include <sqlite3.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <vector>

namespace kiln_rel {

using namespace kiln_it;

/// True when KILN_RELIABILITY_LONG is set (tests/reliability/run-long).
bool long_mode();
/// `short_n` in the default (CI) mode, `long_n` in the long mode.
int scaled(int short_n, int long_n);
/// A generator seeded from $KILN_RELIABILITY_SEED, else from the clock; the
/// seed is printed so a failure can be replayed.
std::mt19937_64& rng();
uint64_t seed();
/// Appends a line to $KILN_RELIABILITY_REPORT (if set) and prints it: the
/// figures the long mode reports.
void figure(const std::string& line);

/// A child process started without waiting for it.
class Child {
public:
  /// argv[0] is a path. `env` entries NAME=VALUE are added to (or replace
  /// those of) this process's environment; NAME= with an empty value unsets.
  Child(const std::vector<std::string>& argv, const std::vector<std::string>& env = {},
        const fs::path& cwd = {});
  ~Child();
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;
  /// Waits and collects; exit_code is 128 + signal if it was killed.
  RunResult wait();
  void kill9();
  /// True once the child has ended (does not block).
  bool poll();
  pid_t pid() const { return pid_; }

private:
  pid_t pid_ = -1;
  std::string out_, err_;
  bool waited_ = false;
  bool ended_ = false;
  int status_ = 0;
  RunResult result_;
};

/// Runs to completion with extra environment.
RunResult run_env(const std::vector<std::string>& argv, const std::vector<std::string>& env,
                  const fs::path& cwd = {});

fs::path load_probe_bin();

/// kiln-inspect --cache DB verify --json, parsed (REQUIREs valid JSON).
json verify(const fs::path& db);
/// REQUIREs verify to exit 0 with no problems.
void require_verify_clean(const fs::path& db, const std::string& when);

/// Every (name -> expected result of f(5)) a fixture set defines.
struct Root {
  std::string name;
  int expect; ///< f(5)
};
const std::vector<Root>& fixture_roots();
/// Fixture files whose roots are listed above.
const std::vector<std::string>& fixture_files();

/// Loads `name` in a separate process (load_probe) and returns what it did.
RunResult probe(const fs::path& db, const std::string& name, int arg = 5,
                const std::vector<std::string>& env = {});
/// REQUIREs every fixture root to load and compute its expected value.
void require_all_roots_load(const fs::path& db, const std::string& when);

/// A minimal SQLite handle for tests that damage or inspect a cache.
class Db {
public:
  explicit Db(const fs::path& path);
  ~Db();
  Db(const Db&) = delete;
  Db& operator=(const Db&) = delete;
  void exec(const std::string& sql);
  /// Every row of a query as strings (blobs as raw bytes).
  std::vector<std::vector<std::string>> rows(const std::string& sql,
                                             const std::vector<std::string>& params = {});
  /// Binds one blob and up to two text parameters.
  void update_blob(const std::string& sql, const std::string& blob,
                   const std::vector<std::string>& params);
  sqlite3* get() { return db_; }

private:
  sqlite3* db_ = nullptr;
};

/// Copies a closed cache file (no -wal, -shm) to `to`.
void copy_cache(const fs::path& from, const fs::path& to);

/// A cache with every fixture precompiled (images linked), built once per
/// process and copied for each trial.
const fs::path& template_cache();

/// Milliseconds since `t0`.
double ms_since(std::chrono::steady_clock::time_point t0);

} // namespace kiln_rel
