// Bad input: every usage or input error exits 2 with a message a user can
// act on (stderr), and leaves an existing cache exactly as it was: the same
// `kiln-inspect ls --json` and the same bytes on disk.
#include "harness.hpp"

#include <doctest/doctest.h>

#include <fstream>
#include <regex>

using namespace kiln_it;

namespace {

struct BadInput {
  std::string what;
  std::vector<std::string> args;     // after --cache/--json
  std::vector<std::string> mentions; // substrings stderr must contain
};

constexpr std::size_t kWhole = 0;
constexpr std::size_t kHalf = std::size_t(-1);

// Writes the first `bytes` bytes (kWhole: all, kHalf: half) of a valid bitcode
// file for nested.ll to `out`. Returns false if llvm-as is unavailable.
bool write_bitcode(const fs::path& dir, const fs::path& out, std::size_t bytes) {
  const fs::path as = llvm_as();
  if (as.empty())
    return false;
  const fs::path full = dir / "full-for-truncation.bc";
  if (!fs::exists(full)) {
    RunResult r = run({as.string(), data("nested.ll"), "-o", full.string()});
    INFO(describe(r));
    REQUIRE(r.exit_code == 0);
  }
  std::string content = slurp(full);
  REQUIRE(content.size() > 64);
  if (bytes != kWhole)
    content.resize(bytes < content.size() ? bytes : content.size() / 2);
  std::ofstream(out, std::ios::binary) << content;
  return true;
}

std::vector<BadInput> bad_inputs(const TempDir& scratch) {
  std::vector<BadInput> v{
      {"syntax error", {data("bad_syntax.ll")}, {"bad_syntax.ll"}},
      {"kiln_deferred on a global variable", {data("bad_deferred_global.ll")}, {"bdg_parent"}},
      {"kiln_deferred on a declared-only function", {data("bad_deferred_decl.ll")}, {"bdd_parent"}},
      {"missing entry", {"--entry", "nosuch", data("nested.ll")}, {"nosuch"}},
      {"one good and one missing entry",
       {"--entry", "nest_a", "--entry", "nosuch", data("nested.ll")},
       {"nosuch"}},
      {"unknown target", {"--target", "nosuchtarget", data("nested.ll")}, {"nosuchtarget"}},
      {"one good and one unknown target",
       {"--target", "host", "--target", "nosuchtarget", data("nested.ll")},
       {"nosuchtarget"}},
      {"good file followed by a file with a syntax error",
       {data("nested.ll"), data("bad_syntax.ll")},
       {"bad_syntax.ll"}},
      {"missing input file",
       {(scratch.path() / "does-not-exist.ll").string()},
       {"does-not-exist.ll"}},
      {"no input file", {}, {}},
      {"unknown option", {"--no-such-option", data("nested.ll")}, {"--no-such-option"}},
  };
  const fs::path half = scratch.path() / "truncated-half.bc";
  const fs::path header = scratch.path() / "truncated-header.bc";
  if (write_bitcode(scratch.path(), half, kHalf) && write_bitcode(scratch.path(), header, 8)) {
    v.push_back({"bitcode truncated to half its size", {half.string()}, {"truncated-half.bc"}});
    v.push_back({"bitcode truncated to 8 bytes", {header.string()}, {"truncated-header.bc"}});
  } else {
    MESSAGE("truncated-bitcode inputs skipped: llvm-as not found (KILN_LLVM_AS)");
  }
  return v;
}

// Every regular file under `dir`, relative path -> bytes.
std::map<std::string, std::string> snapshot(const fs::path& dir) {
  std::map<std::string, std::string> files;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.is_regular_file())
      files[fs::relative(e.path(), dir).string()] = slurp(e.path());
  return files;
}

std::string ls_json(const Cache& cache) {
  RunResult r = inspect(cache, {"ls", "--json"});
  INFO(describe(r));
  REQUIRE(r.exit_code == 0);
  json parsed;
  REQUIRE_NOTHROW(parsed = json::parse(r.out));
  return r.out;
}

void check_rejected(const RunResult& r, const BadInput& bad) {
  INFO("case: " << bad.what);
  INFO(describe(r));
  CHECK(r.exit_code == 2);
  CHECK(!r.err.empty());
  for (const std::string& m : bad.mentions)
    CHECK_MESSAGE(r.err.find(m) != std::string::npos, "stderr should mention " << m);
}

BadInput find(const std::vector<BadInput>& all, std::string_view what) {
  for (const BadInput& b : all)
    if (b.what == what)
      return b;
  FAIL("no bad input named " << what);
  return {};
}

} // namespace

TEST_SUITE_BEGIN("integration.errors");

TEST_CASE("every bad input exits 2 and says what is wrong") {
  TempDir scratch;
  for (const BadInput& bad : bad_inputs(scratch)) {
    Cache cache;
    check_rejected(precompile(cache, bad.args), bad);
    // A cache that did not exist still does not.
    INFO("case: " << bad.what);
    CHECK(!fs::exists(cache.db()));
  }
}

TEST_CASE("a syntax error names the file and the line") {
  Cache cache;
  TempDir scratch;
  const BadInput bad = find(bad_inputs(scratch), "syntax error");
  RunResult r = precompile(cache, bad.args);
  check_rejected(r, bad);
  INFO(describe(r));
  // The malformed operand is on line 13 of bad_syntax.ll.
  CHECK(std::regex_search(r.err, std::regex("(^|[^0-9])13([^0-9]|$)")));
}

TEST_CASE("truncated bitcode is an input error, whole bitcode is accepted") {
  TempDir scratch;
  const fs::path whole = scratch.path() / "whole.bc";
  const fs::path cut = scratch.path() / "cut.bc";
  if (!write_bitcode(scratch.path(), whole, kWhole) || !write_bitcode(scratch.path(), cut, kHalf)) {
    MESSAGE("skipped: llvm-as not found (KILN_LLVM_AS)");
    return;
  }
  {
    Cache cache;
    json j = precompile_ok(cache, {"--entry", "nest_a", whole.string()});
    CHECK(j["jobs"].size() == 3);
  }
  Cache cache;
  check_rejected(precompile(cache, {"--entry", "nest_a", cut.string()}),
                 {"truncated bitcode", {}, {"cut.bc"}});
}

TEST_CASE("bitcode that LLVM's reader does not finish reading within its limit is an input "
          "error, and the cache is untouched") {
  // A stream that sends the reader round in circles never ends a precompile:
  // the worker reading it is killed at the limit (KILN_BITCODE_READ_TIMEOUT
  // shortens it here, so that well-formed bitcode of 10,000 functions stands
  // for such a stream).
  const fs::path as = llvm_as();
  if (as.empty()) {
    MESSAGE("skipped: llvm-as not found (KILN_LLVM_AS)");
    return;
  }
  TempDir scratch;
  const fs::path ll = scratch.path() / "many.ll", bc = scratch.path() / "many.bc";
  {
    std::ofstream f(ll);
    for (int i = 0; i < 10000; ++i)
      f << "define i32 @many_" << i << "(i32 %x) {\n  %y = mul i32 %x, " << i
        << "\n  %z = add i32 %y, 7\n  ret i32 %z\n}\n";
  }
  RunResult assembled = run({as.string(), ll.string(), "-o", bc.string()});
  INFO(describe(assembled));
  REQUIRE(assembled.exit_code == 0);
  Cache cache;
  precompile_ok(cache, {"--entry", "dia_root", data("diamond.ll")});
  const std::string before = ls_json(cache);
  RunResult r = run({"/usr/bin/env", "KILN_BITCODE_READ_TIMEOUT=0.001", precompile_bin().string(),
                     "--cache", cache.db().string(), "--json", "--entry", "many_1",
                     bc.string()});
  INFO(describe(r));
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("LLVM's bitcode reader did not finish within 0.001 s") != std::string::npos);
  CHECK(r.err.find("many.bc") != std::string::npos);
  CHECK(ls_json(cache) == before);
  // Within the default limit, the same file precompiles.
  json j = precompile_ok(cache, {"--entry", "many_1", bc.string()});
  CHECK(j["jobs"].size() == 1);
}

TEST_CASE("bad input leaves an existing cache exactly as it was") {
  Cache cache;
  precompile_ok(cache, {"--entry", "dia_root", data("diamond.ll")});
  const std::string ls_before = ls_json(cache);
  const auto files_before = snapshot(cache.dir());
  REQUIRE(files_before.count("kiln.db") == 1);

  TempDir scratch;
  for (const BadInput& bad : bad_inputs(scratch)) {
    check_rejected(precompile(cache, bad.args), bad);
    INFO("after case: " << bad.what);
    const auto files_after = snapshot(cache.dir());
    std::set<std::string> names_before, names_after;
    for (const auto& [name, bytes] : files_before)
      names_before.insert(name);
    for (const auto& [name, bytes] : files_after)
      names_after.insert(name);
    CHECK(names_after == names_before);
    for (const auto& [name, bytes] : files_before) {
      INFO("file " << name);
      CHECK((files_after.count(name) && files_after.at(name) == bytes));
    }
    CHECK(ls_json(cache) == ls_before);
  }

  // And the cache still works: nothing recompiles, the image still loads.
  json j = precompile_ok(cache, {"--entry", "dia_root", data("diamond.ll")});
  CHECK(statuses(j) == std::set<std::string>{"cached"});
  Image image(cache, "dia_root");
  CHECK(image.fn<I32Fn>("dia_root")(5) == 1026);
}

TEST_CASE("an unusable cache or toolchain exits 1; usage and input errors exit 2") {
  TempDir scratch;
  // Not an SQLite database: corrupt, for both tools.
  Cache junk;
  { std::ofstream(junk.db(), std::ios::binary) << std::string(4096, 'x'); }
  RunResult pre = precompile(junk, {data("nested.ll")});
  CHECK_MESSAGE(pre.exit_code == 1, describe(pre));
  CHECK(pre.err.find("not a Kiln cache") != std::string::npos);
  RunResult ls = inspect(junk, {"ls"});
  CHECK_MESSAGE(ls.exit_code == 1, describe(ls));

  Cache cache;
  json j = precompile_ok(cache, {data("nested.ll")});
  // A write to a read-only cache: the cache is unusable for it.
  RunResult ro = inspect(cache, {"--read-only", "gc", "--max-size", "1"});
  CHECK_MESSAGE(ro.exit_code == 1, describe(ro));
  // Not in the cache: 1.
  RunResult missing = inspect(cache, {"show", "no_such_root"});
  CHECK_MESSAGE(missing.exit_code == 1, describe(missing));
  // Usage and input: 2.
  for (std::vector<std::string> args :
       {std::vector<std::string>{"--no-such-flag", "ls"}, {"explain", "zz", "zz"},
        {"gc", "--max-size", "lots"}, {"config", "no_such_setting", "1"}}) {
    RunResult r = inspect(cache, args);
    CHECK_MESSAGE(r.exit_code == 2, args[0] << ": " << describe(r));
  }
  RunResult flag = precompile(cache, {"--shard", "0/0", data("nested.ll")});
  CHECK_MESSAGE(flag.exit_code == 2, describe(flag));
}

TEST_CASE("a kernel that cannot be built fails alone: exit 1, the others stored and named, "
          "the failed root named with its cause in text and JSON") {
  TempDir scratch;
  std::string ir = slurp(data("cuda_graph_conditional_sm90.ll"));
  const std::string call = "@cudaGraphSetConditional(i64 noundef %1, i32 noundef 0)";
  size_t at = ir.find(call);
  REQUIRE(at != std::string::npos);
  ir.replace(at, 24, "@graph_set_conditional");
  ir += "\ndeclare void @graph_set_conditional(i64, i32)\n";
  const fs::path typo = scratch.path() / "typo.ll";
  std::ofstream(typo) << ir;
  Cache cache;
  RunResult r = precompile(cache, {"--target", "sm_90", typo.string()});
  CHECK_MESSAGE(r.exit_code == 1, describe(r));
  json j;
  REQUIRE_NOTHROW(j = json::parse(r.out));
  CHECK(j["exit_status"] == 1);
  CHECK(job(j, "_Z10while_bodyPcy")["status"] == "failed");
  CHECK(job(j, "_Z12if_conditionPKcy")["status"] == "compiled");
  CHECK(job(j, "_Z12clear_branchPKiyy")["status"] == "compiled");
  const json& bad = root(j, "_Z10while_bodyPcy");
  CHECK(bad["error"].get<std::string>().find("'graph_set_conditional'") != std::string::npos);
  CHECK(closure(j, "_Z12if_conditionPKcy").size() == 32);
  // Text: the failed root is named with its cause on stderr; the others are
  // there to load.
  RunResult text = run({precompile_bin().string(), "--cache", cache.db().string(), "--target",
                        "sm_90", typo.string()});
  CHECK_MESSAGE(text.exit_code == 1, describe(text));
  CHECK(text.err.find("root _Z10while_bodyPcy (sm_90)") != std::string::npos);
  CHECK(text.err.find("graph_set_conditional") != std::string::npos);
  RunResult ls = inspect(cache, {"ls"});
  CHECK(ls.out.find("_Z12if_conditionPKcy") != std::string::npos);
  CHECK(ls.out.find("_Z12clear_branchPKiyy") != std::string::npos);
  CHECK(ls.out.find("_Z10while_bodyPcy") == std::string::npos);
  // A library keeps its rule: a failed root fails the library.
  Cache lib;
  RunResult l = precompile(lib, {"--target", "sm_90", "--library", "graphs", typo.string()});
  CHECK_MESSAGE(l.exit_code == 1, describe(l));
  json lj;
  REQUIRE_NOTHROW(lj = json::parse(l.out));
  REQUIRE(lj["libraries"].size() == 1);
  CHECK_FALSE(lj["libraries"][0]["error"].get<std::string>().empty());
}

TEST_SUITE_END();

TEST_CASE("a value over the decoded-size maximum is refused when stored, not read back as damage") {
  // Reads refuse anything over KILN_MAX_DECODED_SIZE (a bomb looks the same),
  // so a write over it must fail at once, naming the setting, and leave the
  // cache as it was.
  Cache cache;
  precompile_ok(cache, {"--entry", "dia_root", data("diamond.ll")});
  const std::string ls_before = ls_json(cache);
  RunResult r = run({"/usr/bin/env", "KILN_MAX_DECODED_SIZE=64", precompile_bin().string(),
                     "--cache", cache.db().string(), data("nested.ll")});
  INFO(describe(r));
  CHECK(r.exit_code == 1); // the jobs failed, as any job that cannot be stored
  CHECK(r.err.find("KILN_MAX_DECODED_SIZE") != std::string::npos);
  CHECK(r.err.find("bytes, over the 64-byte maximum") != std::string::npos);
  CHECK(ls_json(cache) == ls_before);
  // Under the default maximum the same unit stores and its image loads.
  precompile_ok(cache, {data("nested.ll")});
}

TEST_CASE("LLVM ending the process in code generation: kiln-precompile, which compiles in its own "
          "process, exits 3 with LLVM's message; with KILN_CODEGEN_ISOLATION=on it is the job's "
          "error (exit 1)") {
  // sm_80 has no thread-block clusters: instruction selection for this read
  // ends an LLVM process ("LLVM ERROR: Cannot select: intrinsic ...").
  TempDir scratch;
  const fs::path ll = scratch.path() / "cluster.ll";
  std::ofstream(ll) << "declare i32 @llvm.nvvm.read.ptx.sreg.clusterid.x()\n\n"
                       "define ptx_kernel void @cluster_id(ptr %out) {\n"
                       "  %v = call i32 @llvm.nvvm.read.ptx.sreg.clusterid.x()\n"
                       "  store i32 %v, ptr %out\n"
                       "  ret void\n"
                       "}\n";
  Cache cache;
  RunResult r = precompile(cache, {"--target", "sm_80", ll.string()});
  INFO(describe(r));
  if (r.err.find("nvJitLink is not installed") != std::string::npos) {
    MESSAGE("skipped: no nvJitLink");
    return;
  }
  CHECK(r.exit_code == 3);
  CHECK(r.err.find("Cannot select") != std::string::npos);
  CHECK(r.err.find("the compiler crashed this process (SIGABRT)") != std::string::npos);
  CHECK(r.err.find("KILN_CODEGEN_ISOLATION=on") != std::string::npos);
  json j = json::parse(r.out);
  CHECK(j["exit_status"] == 3);
  CHECK(j["error"]["code"] == "internal");

  Cache other;
  RunResult iso = run({"/usr/bin/env", "KILN_CODEGEN_ISOLATION=on", precompile_bin().string(),
                       "--cache", other.db().string(), "--json", "--target", "sm_80",
                       ll.string()});
  INFO(describe(iso));
  CHECK(iso.exit_code == 1);
  CHECK(iso.err.find("Cannot select") != std::string::npos);
  CHECK(iso.err.find("crashed this process") == std::string::npos);
}
