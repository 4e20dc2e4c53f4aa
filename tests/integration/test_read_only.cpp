// Read-only caches: a cache another user owns, one opened with
// KILN_READ_ONLY=1 or --read-only, or one on a read-only mount still serves
// loads and kiln-inspect's read commands, and nothing in its directory
// changes; writes fail with a clear "read-only" error and exit 1.
#include "harness.hpp"
#include "inspect_helpers.hpp"

#include <doctest/doctest.h>

#include <chrono>
#include <sys/stat.h>
#include <unistd.h>

using namespace kiln_it;

namespace {

/// Every file of the cache's directory: name -> (bytes, mtime in ns).
std::map<std::string, std::pair<std::string, int64_t>> files_of(const fs::path& dir) {
  std::map<std::string, std::pair<std::string, int64_t>> out;
  for (const auto& e : fs::directory_iterator(dir)) {
    struct stat st {};
    REQUIRE(::stat(e.path().c_str(), &st) == 0);
    out[e.path().filename().string()] = {slurp(e.path()),
                                         int64_t(st.st_mtim.tv_sec) * 1000000000 +
                                             st.st_mtim.tv_nsec};
  }
  return out;
}

/// Drops what a read-only reader may add beside a WAL cache from `after`
/// (and the index from `before`): SQLite's shared-memory index and an empty
/// WAL, which it creates where it can in order to read with shared locks,
/// and so see every commit a writer makes. Any WAL it made must be empty.
void drop_reader_side_files(std::map<std::string, std::pair<std::string, int64_t>>& before,
                            std::map<std::string, std::pair<std::string, int64_t>>& after) {
  before.erase("kiln.db-shm");
  after.erase("kiln.db-shm");
  if (!before.count("kiln.db-wal") && after.count("kiln.db-wal")) {
    CHECK(after["kiln.db-wal"].first.empty());
    after.erase("kiln.db-wal");
  }
}

/// The load probe and kiln-inspect with the libraries beside them, copied
/// into a world-readable directory: the build tree may sit where another
/// user cannot reach it (a root-only home, a 0700 temporary directory).
class StagedTools {
public:
  StagedTools() {
    char tmpl[] = "/tmp/kiln-ro-tools-XXXXXX";
    REQUIRE(::mkdtemp(tmpl) != nullptr);
    root_ = tmpl;
    fs::create_directories(root_ / "bin");
    fs::create_directories(root_ / "lib");
    for (const fs::path& bin : {fs::path(KILN_LOAD_PROBE), inspect_bin()}) {
      fs::copy_file(bin, root_ / "bin" / bin.filename(), fs::copy_options::overwrite_existing);
      // libkiln and libkiln-link live in ../lib of the build or install tree.
      for (const auto& e : fs::directory_iterator(bin.parent_path().parent_path() / "lib"))
        if (fs::path to = root_ / "lib" / e.path().filename();
            e.path().filename().string().rfind("libkiln", 0) == 0 && !e.is_directory() &&
            !fs::is_symlink(to) && !fs::exists(to)) { // both binaries may share one lib/
          if (e.is_symlink())
            fs::create_symlink(fs::read_symlink(e.path()), to);
          else
            fs::copy_file(e.path(), to);
        }
    }
    for (const auto& e : fs::recursive_directory_iterator(root_))
      if (!e.is_symlink())
        fs::permissions(e.path(), fs::perms(0755));
    fs::permissions(root_, fs::perms(0755));
  }
  ~StagedTools() {
    std::error_code ec;
    fs::remove_all(root_, ec);
  }
  std::string probe() const { return (root_ / "bin" / fs::path(KILN_LOAD_PROBE).filename()).string(); }
  std::string inspect() const { return (root_ / "bin" / inspect_bin().filename()).string(); }
  std::string lib() const { return (root_ / "lib").string(); }

private:
  fs::path root_;
};

/// Runs argv as uid/gid 65534 with no groups, finding Kiln's libraries in
/// `tools`' staged copy.
RunResult as_nobody(const StagedTools& tools, std::vector<std::string> argv) {
  argv.insert(argv.begin(), {"/usr/bin/setpriv", "--reuid=65534", "--regid=65534",
                             "--clear-groups", "/usr/bin/env", "LD_LIBRARY_PATH=" + tools.lib()});
  return run(argv);
}

/// Why the other-user tests cannot run here, or "" when they can.
std::string cannot_switch_user() {
  if (::geteuid() != 0)
    return "not running as root (CI runs as root)";
  if (!fs::exists("/usr/bin/setpriv"))
    return "setpriv is not installed";
  return "";
}

/// Makes the cache root-owned, 0644 in a 0755 directory, side files included.
void share_read_only(const Cache& cache) {
  fs::permissions(cache.dir(), fs::perms(0755));
  for (const auto& e : fs::directory_iterator(cache.dir()))
    fs::permissions(e.path(), fs::perms(0644));
}

RunResult probe(const std::string& db, const std::string& name, const std::string& arg,
                const std::vector<std::string>& env = {}) {
  std::vector<std::string> argv{"/usr/bin/env"};
  argv.insert(argv.end(), env.begin(), env.end());
  argv.insert(argv.end(), {KILN_LOAD_PROBE, db, name, arg});
  return run(argv);
}

} // namespace

TEST_SUITE("integration.read_only") {

TEST_CASE("another user's cache loads read-only, relinks in memory, and is left unchanged") {
  if (std::string why = cannot_switch_user(); !why.empty()) {
    MESSAGE("skipped: " << why);
    return;
  }
  StagedTools tools;
  for (bool link : {true, false}) {
    CAPTURE(link);
    Cache cache;
    precompile_ok(cache, link ? std::vector<std::string>{data("nested.ll")}
                              : std::vector<std::string>{"--no-link", data("nested.ll")});
    share_read_only(cache);
    RunResult reach = as_nobody(tools, {"/usr/bin/test", "-r", cache.db().string()});
    if (reach.exit_code != 0) {
      MESSAGE("skipped: the temporary directory is not reachable by another user");
      return;
    }
    const auto before = files_of(cache.dir());
    for (int i = 0; i < 2; ++i) {
      RunResult r = as_nobody(tools, {tools.probe(), cache.db().string(), "nest_a", "5"});
      REQUIRE_MESSAGE(r.exit_code == 0, describe(r));
      CHECK(r.out.find("result=345") == 0);
      // Without a stored image every process links again: nothing is stored.
      CHECK(r.out.find(link ? "linker=0" : "linker=1") != std::string::npos);
    }
    for (const char* cmd : {"ls", "stats", "verify"}) {
      RunResult r = as_nobody(tools, {tools.inspect(), "--cache", cache.db().string(), cmd});
      CHECK_MESSAGE(r.exit_code == 0, cmd << ": " << describe(r));
    }
    RunResult gc =
        as_nobody(tools, {tools.inspect(), "--cache", cache.db().string(), "gc", "--max-size", "1"});
    CHECK(gc.exit_code == 1);
    CHECK(gc.err.find("read-only") != std::string::npos);
    CHECK(files_of(cache.dir()) == before);
  }
}

TEST_CASE("KILN_READ_ONLY=1 writes nothing, even as the owner: the file is unchanged and any "
          "WAL SQLite makes to read it is empty") {
  Cache cache;
  precompile_ok(cache, {"--no-link", data("nested.ll")});
  // With the WAL's side files present (read through them) and without them
  // (the database file alone).
  for (bool side_files : {true, false}) {
    CAPTURE(side_files);
    // A quiet cache is one file; a writable handle held open gives it the
    // WAL's side files.
    kiln_cache* holder = nullptr;
    if (side_files)
      REQUIRE(kiln_cache_open(cache.db().c_str(), &holder) == KILN_OK);
    CHECK(fs::exists(cache.db().string() + "-wal") == side_files);
    auto before = files_of(cache.dir());
    RunResult r = probe(cache.db().string(), "nest_a", "5", {"KILN_READ_ONLY=1"});
    REQUIRE_MESSAGE(r.exit_code == 0, describe(r));
    CHECK(r.out.find("result=345") == 0);
    auto after = files_of(cache.dir());
    drop_reader_side_files(before, after);
    CHECK(after == before);
    kiln_cache_close(holder);
  }
  // Writable again, the image is linked and stored as before.
  RunResult r = probe(cache.db().string(), "nest_a", "5");
  REQUIRE_MESSAGE(r.exit_code == 0, describe(r));
  RunResult warm = probe(cache.db().string(), "nest_a", "5");
  CHECK(warm.out.find("linker=0") != std::string::npos);
}

TEST_CASE("the C API's read-only flag: loads twice from one handle, writes nothing") {
  Cache cache;
  precompile_ok(cache, {"--no-link", data("nested.ll")});
  const auto before = files_of(cache.dir());
  kiln_cache* c = nullptr;
  REQUIRE(kiln_cache_open_flags(cache.db().c_str(), KILN_CACHE_READ_ONLY, &c) == KILN_OK);
  CHECK(kiln_cache_read_only(c) == 1);
  for (int i = 0; i < 2; ++i) {
    kiln_image* img = nullptr;
    REQUIRE_MESSAGE(kiln_image_load(c, "nest_a", "host", &img) == KILN_OK, kiln_last_error());
    void* fn = nullptr;
    REQUIRE(kiln_image_lookup(img, "nest_a", &fn) == KILN_OK);
    int (*f)(int) = nullptr;
    std::memcpy(&f, &fn, sizeof f);
    CHECK(f(5) == 345);
    kiln_image_release(img);
  }
  kiln_cache_close(c);
  auto after = files_of(cache.dir());
  auto unchanged = before;
  drop_reader_side_files(unchanged, after);
  CHECK(after == unchanged);

  CHECK(kiln_cache_open_flags(cache.db().c_str(), 1u << 7, &c) == KILN_INVALID_ARGUMENT);
  TempDir empty;
  const fs::path none = empty.path() / "none.db";
  CHECK(kiln_cache_open_flags(none.c_str(), KILN_CACHE_READ_ONLY, &c) == KILN_NOT_FOUND);
  CHECK(!fs::exists(none));
}

TEST_CASE("--read-only: inspect reads, refuses writes (exit 1); precompile needs all stored") {
  Cache cache;
  json j = precompile_ok(cache, {data("nested.ll")});
  const std::string job = key(j, "nest_a");
  auto before = files_of(cache.dir());
  for (std::vector<std::string> cmd :
       {std::vector<std::string>{"ls"}, {"stats"}, {"verify"}, {"show", "nest_a"},
        {"graph", "nest_a"}, {"explain", job, job}, {"dump", job, "--format", "object"}}) {
    cmd.insert(cmd.begin(), "--read-only");
    RunResult r = inspect(cache, cmd);
    CHECK_MESSAGE(r.exit_code == 0, cmd[1] << ": " << describe(r));
  }
  TempDir scratch;
  for (std::vector<std::string> cmd :
       {std::vector<std::string>{"gc", "--max-size", "1"}, {"config", "max_size", "1M"},
        {"import", (scratch.path() / "b.kiln").string()}, {"stats", "--zero"}}) {
    cmd.insert(cmd.begin(), "--read-only");
    RunResult r = inspect(cache, cmd);
    CHECK_MESSAGE(r.exit_code == 1, cmd[1] << ": " << describe(r));
    CHECK_MESSAGE(r.err.find("read-only") != std::string::npos, describe(r));
  }
  RunResult env_gc =
      run({"/usr/bin/env", "KILN_READ_ONLY=1", inspect_bin().string(), "--cache",
           cache.db().string(), "gc", "--max-size", "1"});
  CHECK(env_gc.exit_code == 1);

  RunResult same = precompile(cache, {"--read-only", data("nested.ll")});
  CHECK_MESSAGE(same.exit_code == 0, describe(same));
  RunResult fresh = precompile(cache, {"--read-only", data("diamond.ll")});
  CHECK(fresh.exit_code == 1);
  CHECK(fresh.err.find("read-only") != std::string::npos);
  auto after = files_of(cache.dir());
  drop_reader_side_files(before, after);
  CHECK(after == before);
}

TEST_CASE("a read-only bind mount serves loads") {
  Cache cache;
  precompile_ok(cache, {data("nested.ll")});
  TempDir mnt;
  const auto before = files_of(cache.dir());
  std::string script = "mount --bind -o ro '" + cache.dir().string() + "' '" +
                       mnt.path().string() + "' || exit 77; exec '" KILN_LOAD_PROBE "' '" +
                       (mnt.path() / "kiln.db").string() + "' nest_a 5";
  RunResult r = run({"/usr/bin/unshare", "-rm", "/bin/sh", "-c", script});
  if (r.exit_code == 77 || (r.exit_code != 0 && r.out.empty() && r.err.find("load_probe") ==
                                                                       std::string::npos)) {
    MESSAGE("skipped: cannot make a read-only bind mount here: " << describe(r));
    return;
  }
  REQUIRE_MESSAGE(r.exit_code == 0, describe(r));
  CHECK(r.out.find("result=345") == 0);
  CHECK(files_of(cache.dir()) == before);
}

TEST_CASE("the cost of a read-only load against a writable one") {
  Cache cache;
  precompile_ok(cache, {data("nested.ll")});
  auto time_loads = [&](unsigned flags) {
    constexpr int kLoads = 50;
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < kLoads; ++i) {
      kiln_cache* c = nullptr;
      REQUIRE(kiln_cache_open_flags(cache.db().c_str(), flags, &c) == KILN_OK);
      kiln_image* img = nullptr;
      REQUIRE_MESSAGE(kiln_image_load(c, "nest_a", "host", &img) == KILN_OK, kiln_last_error());
      kiln_image_release(img);
      kiln_cache_close(c);
    }
    return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0)
               .count() /
           kLoads;
  };
  time_loads(0); // warm the page cache
  double writable = time_loads(0);
  double read_only = time_loads(KILN_CACHE_READ_ONLY);
  MESSAGE("open + load + close: writable " << writable << " us, read-only " << read_only
                                           << " us");
  CHECK(read_only > 0);
}

} // TEST_SUITE
