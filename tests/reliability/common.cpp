// Implementation of the reliability suite's shared pieces (see common.hpp).
#include "common.hpp"

#include <doctest/doctest.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <mutex>

extern char** environ;

#ifndef KILN_REL_LOAD_PROBE
#error "KILN_REL_LOAD_PROBE must be defined (path of the load probe)"
#endif

namespace kiln_rel {

bool long_mode() {
  const char* v = std::getenv("KILN_RELIABILITY_LONG");
  return v && *v && std::string(v) != "0";
}

int scaled(int short_n, int long_n) { return long_mode() ? long_n : short_n; }

uint64_t seed() {
  static uint64_t s = [] {
    if (const char* v = std::getenv("KILN_RELIABILITY_SEED"); v && *v)
      return uint64_t(std::strtoull(v, nullptr, 10));
    uint64_t t = uint64_t(std::chrono::steady_clock::now().time_since_epoch().count());
    return t ^ (uint64_t(::getpid()) << 32);
  }();
  return s;
}

std::mt19937_64& rng() {
  static std::mt19937_64 g = [] {
    std::printf("reliability: seed %llu (KILN_RELIABILITY_SEED replays it)\n",
                static_cast<unsigned long long>(seed()));
    return std::mt19937_64(seed());
  }();
  return g;
}

void figure(const std::string& line) {
  std::printf("FIGURE %s\n", line.c_str());
  std::fflush(stdout);
  if (const char* p = std::getenv("KILN_RELIABILITY_REPORT"); p && *p) {
    std::ofstream f(p, std::ios::app);
    f << line << "\n";
  }
}

namespace {

std::string temp_file() {
  const char* tmp = std::getenv("TMPDIR");
  std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/kiln-rel-XXXXXX";
  int fd = ::mkstemp(pattern.data());
  REQUIRE_MESSAGE(fd >= 0, "mkstemp: " << std::strerror(errno));
  ::close(fd);
  return pattern;
}

std::string read_all(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

} // namespace

Child::Child(const std::vector<std::string>& argv, const std::vector<std::string>& env,
             const fs::path& cwd) {
  REQUIRE(!argv.empty());
  out_ = temp_file();
  err_ = temp_file();
  // Everything the child needs is prepared before fork: after it, only
  // async-signal-safe calls.
  std::vector<std::string> envs;
  for (char** e = environ; *e; ++e) {
    std::string kv = *e;
    std::string name = kv.substr(0, kv.find('='));
    bool replaced = false;
    for (const std::string& o : env)
      if (o.substr(0, o.find('=')) == name)
        replaced = true;
    if (!replaced)
      envs.push_back(kv);
  }
  for (const std::string& o : env)
    if (o.find('=') + 1 < o.size())
      envs.push_back(o);
  std::vector<char*> cargv, cenv;
  for (const std::string& a : argv)
    cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);
  for (const std::string& e : envs)
    cenv.push_back(const_cast<char*>(e.c_str()));
  cenv.push_back(nullptr);
  std::string dir = cwd.string();
  int out = ::open(out_.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC);
  int err = ::open(err_.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC);
  REQUIRE(out >= 0);
  REQUIRE(err >= 0);
  pid_ = ::fork();
  REQUIRE_MESSAGE(pid_ >= 0, "fork: " << std::strerror(errno));
  if (pid_ == 0) {
    int in = ::open("/dev/null", O_RDONLY);
    if (in < 0 || ::dup2(in, 0) < 0 || ::dup2(out, 1) < 0 || ::dup2(err, 2) < 0)
      ::_exit(125);
    if (!dir.empty() && ::chdir(dir.c_str()) != 0)
      ::_exit(126);
    ::alarm(600); // a hung child ends the test instead of the run
    ::execve(cargv[0], cargv.data(), cenv.data());
    ::_exit(127);
  }
  ::close(out);
  ::close(err);
}

Child::~Child() {
  if (pid_ > 0 && !waited_) {
    ::kill(pid_, SIGKILL);
    int st;
    ::waitpid(pid_, &st, 0);
  }
  ::unlink(out_.c_str());
  ::unlink(err_.c_str());
}

void Child::kill9() {
  if (pid_ > 0 && !waited_)
    ::kill(pid_, SIGKILL);
}

bool Child::poll() {
  if (ended_ || waited_)
    return true;
  pid_t r = ::waitpid(pid_, &status_, WNOHANG);
  if (r == pid_)
    ended_ = true;
  return ended_;
}

RunResult Child::wait() {
  if (waited_)
    return result_;
  int status = status_;
  if (!ended_)
    while (::waitpid(pid_, &status, 0) < 0)
      REQUIRE_MESSAGE(errno == EINTR, "waitpid: " << std::strerror(errno));
  waited_ = true;
  result_.exit_code = WIFEXITED(status) ? WEXITSTATUS(status)
                      : WIFSIGNALED(status) ? 128 + WTERMSIG(status)
                                            : -1;
  result_.out = read_all(out_);
  result_.err = read_all(err_);
  return result_;
}

RunResult run_env(const std::vector<std::string>& argv, const std::vector<std::string>& env,
                  const fs::path& cwd) {
  Child c(argv, env, cwd);
  return c.wait();
}

fs::path load_probe_bin() { return fs::path(KILN_REL_LOAD_PROBE); }

json verify(const fs::path& db) {
  RunResult r = run({inspect_bin().string(), "--cache", db.string(), "verify", "--json"});
  INFO(describe(r));
  REQUIRE_MESSAGE(r.exit_code < 128, "kiln-inspect verify crashed");
  json j = json::parse(r.out, nullptr, false);
  REQUIRE_MESSAGE(!j.is_discarded(), "verify --json printed no JSON");
  REQUIRE(j.contains("ok"));
  REQUIRE(j.contains("problems"));
  CHECK((r.exit_code == 0) == j["ok"].get<bool>());
  return j;
}

void require_verify_clean(const fs::path& db, const std::string& when) {
  json j = verify(db);
  INFO(when);
  INFO(j.dump(2));
  REQUIRE(j["ok"].get<bool>());
  REQUIRE(j["problems"].empty());
}

const std::vector<std::string>& fixture_files() {
  static const std::vector<std::string> files = {"diamond.ll", "chain8.ll",        "cycle.ll",
                                                 "nested.ll",  "self_recursive.ll", "helper.ll"};
  return files;
}

RunResult probe(const fs::path& db, const std::string& name, int arg,
                const std::vector<std::string>& env) {
  return run_env({load_probe_bin().string(), db.string(), name, std::to_string(arg)}, env);
}

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

namespace {

struct Template {
  Cache cache;
  std::vector<Root> roots;
};

Template& the_template() {
  static Template t; // its temp directory goes at exit
  static bool ready = false;
  if (!ready) {
    for (const std::string& f : fixture_files()) {
      json j = precompile_ok(t.cache, {kiln_it::data(f)});
      for (const json& r : j["roots"]) {
        std::string name = r["name"].get<std::string>();
        RunResult p = probe(t.cache.db(), name);
        INFO(describe(p));
        REQUIRE(p.exit_code == 0);
        int v = 0;
        REQUIRE(std::sscanf(p.out.c_str(), "result=%d", &v) == 1);
        t.roots.push_back({name, v});
      }
    }
    ready = true;
  }
  return t;
}

} // namespace

const fs::path& template_cache() {
  static fs::path p;
  p = the_template().cache.db();
  return p;
}

const std::vector<Root>& fixture_roots() { return the_template().roots; }

void require_all_roots_load(const fs::path& db, const std::string& when) {
  for (const Root& r : fixture_roots()) {
    RunResult p = probe(db, r.name);
    INFO(when << ": loading " << r.name);
    INFO(describe(p));
    REQUIRE(p.exit_code == 0);
    int v = 0;
    REQUIRE(std::sscanf(p.out.c_str(), "result=%d", &v) == 1);
    REQUIRE(v == r.expect);
  }
}

Db::Db(const fs::path& path) {
  REQUIRE(sqlite3_open_v2(path.c_str(), &db_, SQLITE_OPEN_READWRITE, nullptr) == SQLITE_OK);
  sqlite3_busy_timeout(db_, 30000);
}

Db::~Db() { sqlite3_close_v2(db_); }

void Db::exec(const std::string& sql) {
  char* msg = nullptr;
  int rc = sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &msg);
  std::string m = msg ? msg : "";
  sqlite3_free(msg);
  INFO(sql << ": " << m);
  REQUIRE(rc == SQLITE_OK);
}

std::vector<std::vector<std::string>> Db::rows(const std::string& sql,
                                               const std::vector<std::string>& params) {
  sqlite3_stmt* s = nullptr;
  INFO(sql << ": " << sqlite3_errmsg(db_));
  REQUIRE(sqlite3_prepare_v2(db_, sql.c_str(), -1, &s, nullptr) == SQLITE_OK);
  for (size_t i = 0; i < params.size(); ++i)
    sqlite3_bind_text(s, int(i + 1), params[i].c_str(), -1, SQLITE_TRANSIENT);
  std::vector<std::vector<std::string>> out;
  int rc;
  while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
    std::vector<std::string> row;
    for (int c = 0; c < sqlite3_column_count(s); ++c) {
      const void* p = sqlite3_column_blob(s, c);
      row.emplace_back(p ? std::string(static_cast<const char*>(p), size_t(sqlite3_column_bytes(s, c)))
                         : std::string());
    }
    out.push_back(std::move(row));
  }
  sqlite3_finalize(s);
  REQUIRE(rc == SQLITE_DONE);
  return out;
}

void Db::update_blob(const std::string& sql, const std::string& blob,
                     const std::vector<std::string>& params) {
  sqlite3_stmt* s = nullptr;
  REQUIRE(sqlite3_prepare_v2(db_, sql.c_str(), -1, &s, nullptr) == SQLITE_OK);
  sqlite3_bind_blob(s, 1, blob.data(), int(blob.size()), SQLITE_TRANSIENT);
  for (size_t i = 0; i < params.size(); ++i)
    sqlite3_bind_text(s, int(i + 2), params[i].c_str(), -1, SQLITE_TRANSIENT);
  int rc = sqlite3_step(s);
  sqlite3_finalize(s);
  REQUIRE(rc == SQLITE_DONE);
  REQUIRE(sqlite3_changes(db_) == 1);
}

// A closed cache is its file plus, in WAL mode, its write-ahead log: the
// log persists between processes, and a loader's last writes may still be
// in it (a loading process does not checkpoint at close).
void copy_cache(const fs::path& from, const fs::path& to) {
  fs::create_directories(to.parent_path());
  fs::copy_file(from, to, fs::copy_options::overwrite_existing);
  fs::remove(to.string() + "-wal");
  fs::remove(to.string() + "-shm");
  if (fs::exists(from.string() + "-wal"))
    fs::copy_file(from.string() + "-wal", to.string() + "-wal",
                  fs::copy_options::overwrite_existing);
}

} // namespace kiln_rel
