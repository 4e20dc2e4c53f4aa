// Must-hit mode (kiln-precompile --must-hit, $KILN_MUST_HIT=1): a request the
// cache answers passes, by the request memo or by a plan whose jobs are all
// cached; one that would compile anything fails with exit 1 before
// compiling, naming the first missing job and the key component in which it
// differs from the nearest cached job (the input's module hash, the
// options), or that no job of that entry is cached at all.
#include "harness.hpp"

#include <doctest/doctest.h>

#include <cstdlib>
#include <fstream>
#include <optional>
#include <string>

using namespace kiln_it;

namespace {

// Sets an environment variable for one scope (children inherit it).
class ScopedEnv {
public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name))
      old_ = old;
    ::setenv(name, value, 1);
  }
  ~ScopedEnv() {
    if (old_)
      ::setenv(name_, old_->c_str(), 1);
    else
      ::unsetenv(name_);
  }

private:
  const char* name_;
  std::optional<std::string> old_;
};

// nested.ll with nest_a adding 101 instead of 100: nest_a's input changes,
// nest_b's and nest_c's do not.
fs::path changed_nested(const Cache& cache) {
  std::string ir = slurp(data("nested.ll"));
  size_t at = ir.find("add i32 %x, 100");
  REQUIRE(at != std::string::npos);
  ir.replace(at, 15, "add i32 %x, 101");
  fs::path out = cache.dir() / "nested_changed.ll";
  std::ofstream(out) << ir;
  return out;
}

const std::string kRefusal = "kiln-precompile: error: must-hit: job 'nest_a' for target host (key ";

} // namespace

TEST_SUITE("integration.must_hit") {

TEST_CASE("must-hit: a cached unit passes, from the memo and from a fully cached plan") {
  Cache cache;
  json first = precompile_ok(cache, {"--entry", "nest_a", data("nested.ll")});
  CHECK(statuses(first) == std::set<std::string>{"compiled"});

  json again = precompile_ok(cache, {"--must-hit", "--entry", "nest_a", data("nested.ll")});
  CHECK(again["memo"] == true);
  CHECK(statuses(again) == std::set<std::string>{"cached"});

  // Another request (root nest_b) over jobs that are all cached: no memo,
  // the driver plans, finds nothing to compile, and passes.
  json planned = precompile_ok(cache, {"--must-hit", "--entry", "nest_b", data("nested.ll")});
  CHECK(planned["memo"] == false);
  CHECK(statuses(planned) == std::set<std::string>{"cached"});
}

TEST_CASE("must-hit: a changed input fails before compiling, naming the module hash") {
  Cache cache;
  json first = precompile_ok(cache, {"--entry", "nest_a", data("nested.ll")});
  const std::string cached_key = key(first, "nest_a");
  fs::path changed = changed_nested(cache);

  RunResult r = precompile(cache, {"--must-hit", "--entry", "nest_a", changed.string()});
  INFO(describe(r));
  CHECK(r.exit_code == 1);
  CHECK(r.err.rfind(kRefusal, 0) == 0);
  CHECK(r.err.find(") is not cached and would be compiled; the nearest cached job " + cached_key +
                   " (target host) differs in the input (module hash): module_hash ") !=
        std::string::npos);
  CHECK(r.err.find(" wanted, ") != std::string::npos);
  CHECK(r.err.find("opt_level") == std::string::npos);

  // Nothing was compiled: without must-hit the job is still to compile.
  json after = precompile_ok(cache, {"--entry", "nest_a", changed.string()});
  CHECK(job(after, "nest_a")["status"] == "compiled");
  CHECK(job(after, "nest_b")["status"] == "cached");
}

TEST_CASE("must-hit: another option names the options; $KILN_MUST_HIT=1 is the flag") {
  Cache cache;
  precompile_ok(cache, {"--entry", "nest_a", data("nested.ll")});
  ScopedEnv must("KILN_MUST_HIT", "1");
  RunResult r = precompile(cache, {"-O", "3", "--entry", "nest_a", data("nested.ll")});
  INFO(describe(r));
  CHECK(r.exit_code == 1);
  CHECK(r.err.rfind(kRefusal, 0) == 0);
  CHECK(r.err.find(" (target host) differs in options: opt_level 3 wanted, 2 cached\n") !=
        std::string::npos);

  ScopedEnv off("KILN_MUST_HIT", "0");
  json o3 = precompile_ok(cache, {"-O", "3", "--entry", "nest_a", data("nested.ll")});
  CHECK(job(o3, "nest_a")["status"] == "compiled");
}

TEST_CASE("must-hit: an empty cache names no cached job") {
  Cache cache;
  RunResult r = precompile(cache, {"--must-hit", "--entry", "nest_a", data("nested.ll")});
  INFO(describe(r));
  CHECK(r.exit_code == 1);
  CHECK(r.err.rfind(kRefusal, 0) == 0);
  CHECK(r.err.find(") is not cached and would be compiled; no cached job for entry 'nest_a' on "
                   "any target\n") != std::string::npos);
  // With --json, the refusal is also a JSON error object on stdout.
  RunResult j = precompile(cache, {"--must-hit", "--json", "--entry", "nest_a", data("nested.ll")});
  CHECK(j.exit_code == 1);
  json e = json::parse(j.out);
  CHECK(e["error"]["code"] == "not_found");
  CHECK(e["exit_status"] == 1);
}

} // TEST_SUITE
