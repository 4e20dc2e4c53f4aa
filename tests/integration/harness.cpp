// Implementation of the integration-test harness (see harness.hpp).
#include "harness.hpp"

#include <doctest/doctest.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <sstream>
#include <stdexcept>

#ifndef KILN_PRECOMPILE
#error "KILN_PRECOMPILE must be defined (path of kiln-precompile)"
#endif
#ifndef KILN_INSPECT
#error "KILN_INSPECT must be defined (path of kiln-inspect)"
#endif
#ifndef KILN_TEST_DATA
#error "KILN_TEST_DATA must be defined (path of tests/data)"
#endif
#ifndef KILN_LLVM_AS
#define KILN_LLVM_AS ""
#endif

namespace kiln_it {

namespace {

// Generous: a full precompile of a fixture takes well under a second, but a
// loaded CI machine (or a sanitizer build) can be slow. Hangs still end.
constexpr unsigned kChildTimeoutSeconds = 300;

fs::path temp_root() {
  const char* tmp = std::getenv("TMPDIR");
  return (tmp && *tmp) ? fs::path(tmp) : fs::path("/tmp");
}

// A temp file opened for writing; its path is unlinked on destruction.
struct CaptureFile {
  std::string path;
  int fd = -1;
  CaptureFile() {
    std::string pattern = (temp_root() / "kiln-it-capture-XXXXXX").string();
    fd = ::mkstemp(pattern.data());
    if (fd < 0)
      throw std::runtime_error("mkstemp failed: " + std::string(std::strerror(errno)));
    path = pattern;
  }
  ~CaptureFile() {
    if (fd >= 0)
      ::close(fd);
    ::unlink(path.c_str());
  }
  CaptureFile(const CaptureFile&) = delete;
  CaptureFile& operator=(const CaptureFile&) = delete;
};

fs::path bin(const char* name, const char* built) {
  if (const char* dir = std::getenv("KILN_TEST_BIN_DIR"); dir && *dir)
    return fs::path(dir) / name;
  return fs::path(built);
}

std::string indent(const std::string& text) {
  if (text.empty())
    return "  (empty)\n";
  std::string out;
  bool line_start = true;
  for (char c : text) {
    if (line_start)
      out += "  ";
    out += c;
    line_start = c == '\n';
  }
  if (!line_start)
    out += '\n';
  return out;
}

} // namespace

std::string describe(const RunResult& r) {
  std::ostringstream s;
  s << "exit " << r.exit_code << "\nstdout:\n" << indent(r.out) << "stderr:\n" << indent(r.err);
  return s.str();
}

RunResult run(const std::vector<std::string>& argv, const fs::path& cwd) {
  REQUIRE(!argv.empty());
  CaptureFile out, err;
  std::vector<char*> cargv;
  for (const std::string& a : argv)
    cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);
  const std::string dir = cwd.string();

  pid_t pid = ::fork();
  REQUIRE_MESSAGE(pid >= 0, "fork failed: " << std::strerror(errno));
  if (pid == 0) {
    // Child: only async-signal-safe calls until exec.
    int in = ::open("/dev/null", O_RDONLY);
    if (in < 0 || ::dup2(in, 0) < 0 || ::dup2(out.fd, 1) < 0 || ::dup2(err.fd, 2) < 0)
      ::_exit(125);
    if (!dir.empty() && ::chdir(dir.c_str()) != 0)
      ::_exit(126);
    ::alarm(kChildTimeoutSeconds); // survives exec: SIGALRM kills a hung CLI
    ::execv(cargv[0], cargv.data());
    ::_exit(127);
  }

  int status = 0;
  struct rusage usage{};
  while (::wait4(pid, &status, 0, &usage) < 0) {
    REQUIRE_MESSAGE(errno == EINTR, "waitpid failed: " << std::strerror(errno));
  }
  RunResult r;
  r.max_rss_kib = usage.ru_maxrss;
  if (WIFEXITED(status))
    r.exit_code = WEXITSTATUS(status);
  else if (WIFSIGNALED(status))
    r.exit_code = 128 + WTERMSIG(status);
  r.out = slurp(out.path);
  r.err = slurp(err.path);
  if (r.exit_code == 127 && r.err.empty())
    r.err = "(harness) could not execute " + argv[0];
  if (r.exit_code == 128 + SIGALRM)
    r.err += "\n(harness) killed after " + std::to_string(kChildTimeoutSeconds) + " s";
  return r;
}

fs::path precompile_bin() { return bin("kiln-precompile", KILN_PRECOMPILE); }
fs::path inspect_bin() { return bin("kiln-inspect", KILN_INSPECT); }

std::string data(std::string_view name) {
  fs::path p = fs::absolute(fs::path(KILN_TEST_DATA) / name).lexically_normal();
  REQUIRE_MESSAGE(fs::exists(p), "missing fixture " << p.string());
  return p.string();
}

fs::path llvm_as() {
  fs::path p(KILN_LLVM_AS);
  if (p.empty() || !fs::exists(p))
    return {};
  return p;
}

TempDir::TempDir() {
  std::string pattern = (temp_root() / "kiln-it-XXXXXX").string();
  if (!::mkdtemp(pattern.data()))
    throw std::runtime_error("mkdtemp failed: " + std::string(std::strerror(errno)));
  path_ = pattern;
}

TempDir::~TempDir() {
  std::error_code ec;
  fs::remove_all(path_, ec);
}

RunResult precompile(const Cache& cache, const std::vector<std::string>& args,
                     const fs::path& cwd) {
  std::vector<std::string> argv{precompile_bin().string(), "--cache", cache.db().string(),
                                "--json"};
  argv.insert(argv.end(), args.begin(), args.end());
  return run(argv, cwd);
}

RunResult inspect(const Cache& cache, const std::vector<std::string>& args) {
  std::vector<std::string> argv{inspect_bin().string(), "--cache", cache.db().string()};
  argv.insert(argv.end(), args.begin(), args.end());
  return run(argv);
}

bool is_hex32(const json& v) {
  if (!v.is_string())
    return false;
  const std::string& s = v.get_ref<const std::string&>();
  return s.size() == 32 && std::all_of(s.begin(), s.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

json precompile_ok(const Cache& cache, const std::vector<std::string>& args, const fs::path& cwd) {
  RunResult r = precompile(cache, args, cwd);
  INFO(describe(r));
  REQUIRE(r.exit_code == 0);
  json j;
  // parse() rejects trailing text, so this also checks "exactly one object".
  REQUIRE_NOTHROW(j = json::parse(r.out));
  REQUIRE(j.is_object());
  REQUIRE(j.contains("jobs"));
  REQUIRE(j.contains("roots"));
  REQUIRE(j["jobs"].is_array());
  REQUIRE(j["roots"].is_array());

  std::set<std::string> job_keys;
  for (const json& jb : j["jobs"]) {
    INFO("job: " << jb.dump());
    REQUIRE(jb.is_object());
    CHECK(is_hex32(jb["key"]));
    REQUIRE(jb["entry"].is_string());
    CHECK(!jb["entry"].get<std::string>().empty());
    REQUIRE(jb["target"].is_string());
    CHECK(!jb["target"].get<std::string>().empty());
    REQUIRE(jb["status"].is_string());
    const std::string st = jb["status"].get<std::string>();
    CHECK((st == "compiled" || st == "cached"));
    REQUIRE(jb["refs"].is_array());
    for (const json& ref : jb["refs"]) {
      REQUIRE(ref.is_object());
      REQUIRE(ref["symbol"].is_string());
      CHECK(!ref["symbol"].get<std::string>().empty());
      CHECK(is_hex32(ref["key"]));
    }
    if (jb["key"].is_string())
      CHECK_MESSAGE(job_keys.insert(jb["key"].get<std::string>()).second,
                    "job key listed twice in \"jobs\"");
  }
  // Every deferred reference resolves to a job of this run.
  for (const json& jb : j["jobs"])
    for (const json& ref : jb["refs"]) {
      INFO("job " << jb["entry"] << " ref " << ref.dump());
      CHECK(job_keys.count(ref["key"].get<std::string>()) == 1);
    }
  for (const json& rt : j["roots"]) {
    INFO("root: " << rt.dump());
    REQUIRE(rt.is_object());
    REQUIRE(rt["name"].is_string());
    REQUIRE(rt["target"].is_string());
    CHECK(is_hex32(rt["closure"]));
  }
  return j;
}

const json& job(const json& j, std::string_view entry) {
  const json* found = nullptr;
  int count = 0;
  for (const json& jb : j.at("jobs"))
    if (jb.at("entry").get<std::string>() == entry) {
      found = &jb;
      ++count;
    }
  INFO("looking for job with entry " << entry << " in " << j.dump());
  REQUIRE(count == 1);
  return *found;
}

std::string key(const json& j, std::string_view entry) {
  return job(j, entry).at("key").get<std::string>();
}

const json& root(const json& j, std::string_view name) {
  const json* found = nullptr;
  int count = 0;
  for (const json& rt : j.at("roots"))
    if (rt.at("name").get<std::string>() == name) {
      found = &rt;
      ++count;
    }
  INFO("looking for root " << name << " in " << j.dump());
  REQUIRE(count == 1);
  return *found;
}

std::string closure(const json& j, std::string_view name) {
  return root(j, name).at("closure").get<std::string>();
}

std::map<std::string, std::string> refs(const json& jb) {
  std::map<std::string, std::string> out;
  for (const json& ref : jb.at("refs"))
    out[ref.at("symbol").get<std::string>()] = ref.at("key").get<std::string>();
  return out;
}

std::vector<std::string> ref_keys(const json& jb) {
  std::vector<std::string> out;
  for (const json& ref : jb.at("refs"))
    out.push_back(ref.at("key").get<std::string>());
  std::sort(out.begin(), out.end());
  return out;
}

std::set<std::string> entries(const json& j) {
  std::set<std::string> out;
  for (const json& jb : j.at("jobs"))
    out.insert(jb.at("entry").get<std::string>());
  return out;
}

std::set<std::string> keys(const json& j) {
  std::set<std::string> out;
  for (const json& jb : j.at("jobs"))
    out.insert(jb.at("key").get<std::string>());
  return out;
}

std::set<std::string> root_names(const json& j) {
  std::set<std::string> out;
  for (const json& rt : j.at("roots"))
    out.insert(rt.at("name").get<std::string>());
  return out;
}

std::set<std::string> statuses(const json& j) {
  std::set<std::string> out;
  for (const json& jb : j.at("jobs"))
    out.insert(jb.at("status").get<std::string>());
  return out;
}

json normalized(const json& j) {
  json jobs = json::array();
  for (const json& jb : j.at("jobs")) {
    json refs_sorted = jb.at("refs");
    std::sort(refs_sorted.begin(), refs_sorted.end(),
              [](const json& a, const json& b) { return a.dump() < b.dump(); });
    jobs.push_back({{"key", jb.at("key")},
                    {"entry", jb.at("entry")},
                    {"target", jb.at("target")},
                    {"refs", refs_sorted}});
  }
  std::sort(jobs.begin(), jobs.end(),
            [](const json& a, const json& b) { return a.dump() < b.dump(); });
  json roots = j.at("roots");
  std::sort(roots.begin(), roots.end(),
            [](const json& a, const json& b) { return a.dump() < b.dump(); });
  return {{"jobs", jobs}, {"roots", roots}};
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  REQUIRE_MESSAGE(in.good(), "cannot read " << p.string());
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

Image::Image(const Cache& cache, const std::string& name) {
  kiln_status st = kiln_cache_open(cache.db().c_str(), &cache_);
  REQUIRE_MESSAGE(st == KILN_OK, "kiln_cache_open(" << cache.db().string()
                                                    << "): " << kiln_status_name(st) << ": "
                                                    << kiln_last_error());
  st = kiln_image_load(cache_, name.c_str(), "host", &image_);
  if (st != KILN_OK) {
    std::string why = kiln_last_error();
    kiln_cache_close(cache_);
    cache_ = nullptr;
    image_ = nullptr;
    FAIL("kiln_image_load(" << name << ", host): " << kiln_status_name(st) << ": " << why);
  }
  REQUIRE(image_ != nullptr);
}

Image::~Image() {
  if (image_)
    kiln_image_release(image_);
  if (cache_)
    kiln_cache_close(cache_);
}

void* Image::lookup(const char* entry) const {
  void* address = nullptr;
  kiln_status st = kiln_image_lookup(image_, entry, &address);
  REQUIRE_MESSAGE(st == KILN_OK, "kiln_image_lookup(" << entry << "): " << kiln_status_name(st)
                                                      << ": " << kiln_last_error());
  REQUIRE(address != nullptr);
  return address;
}

} // namespace kiln_it
