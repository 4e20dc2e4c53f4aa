// Unit tests for request memo keys (src/memo/memo.cpp, src/core/keys.cpp):
// what a memo key covers and when a request is not memoised.
#include "memo/memo.h"

#include "core/host_cpu.h"

#include <doctest/doctest.h>

#include <cstdio>

#include <sys/stat.h>

using namespace kiln;

namespace {

CompileRequest request(const std::string& bytes) {
  CompileRequest r;
  r.inputs = {SourceInput::memory("a.ll", bytes)};
  r.entries = {"f"};
  r.remote = "off";
  return r;
}

} // namespace

TEST_CASE("a memo key is the same for the same request and changes with each part") {
  auto base = memo::memo_key(request("define i32 @f() { ret i32 0 }"));
  REQUIRE(base);
  CHECK(*memo::memo_key(request("define i32 @f() { ret i32 0 }")) == *base);
  // The input's name is not part of it; its bytes are.
  CompileRequest renamed = request("define i32 @f() { ret i32 0 }");
  renamed.inputs[0].name = "b.ll";
  CHECK(*memo::memo_key(renamed) == *base);
  CHECK(*memo::memo_key(request("define i32 @f() { ret i32 1 }")) != *base);

  CompileRequest entries = request("define i32 @f() { ret i32 0 }");
  entries.entries = {"g"};
  CHECK(*memo::memo_key(entries) != *base);
  CompileRequest opt = request("define i32 @f() { ret i32 0 }");
  opt.opt_level = 3;
  CHECK(*memo::memo_key(opt) != *base);
  CompileRequest debug = request("define i32 @f() { ret i32 0 }");
  debug.debug = true;
  CHECK(*memo::memo_key(debug) != *base);
  CompileRequest target = request("define i32 @f() { ret i32 0 }");
  target.targets = {"sm_90"};
  CHECK(*memo::memo_key(target) != *base);
}

TEST_CASE("sharded runs and unreadable inputs are not memoised") {
  CompileRequest sharded = request("x");
  sharded.shard_count = 2;
  CHECK_FALSE(memo::memo_key(sharded));
  CompileRequest missing;
  missing.inputs = {SourceInput::file("/nonexistent/kiln/input.ll")};
  missing.remote = "off";
  CHECK_FALSE(memo::memo_key(missing));
}

TEST_CASE("file stamp: size and mtime, or missing") {
  CHECK(memo::file_stamp("/nonexistent/kiln/file") == "missing");
  struct stat st {};
  REQUIRE(::stat("/proc/self/exe", &st) == 0);
  CHECK(memo::file_stamp("/proc/self/exe") ==
        std::to_string(st.st_size) + " " +
            std::to_string(int64_t(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec));
}

TEST_CASE("the host CPU identity is stable within a process and not empty") {
  std::string a = memo::host_cpu_identity();
  CHECK_FALSE(a.empty());
  CHECK(a == memo::host_cpu_identity());
}

TEST_CASE("the memo's CPU identity comes from the one CPU reader, and covers every cpuid "
          "leaf the feature table reads") {
  // One reader: a feature the table learns reaches the memo key too.
  CHECK(memo::host_cpu_identity() == core::this_host_cpu().identity);
#if defined(__x86_64__)
  const std::string& id = core::this_host_cpu().identity;
  CHECK(id.rfind("x86 ", 0) == 0);
  CHECK(id.find(" xcr0:") != std::string::npos);
  for (const core::X86FeatureBit& f : core::x86_feature_bits()) {
    if (f.reg < 0)
      continue;
    char leaf[40];
    std::snprintf(leaf, sizeof leaf, " %x.%x:", f.leaf, f.subleaf);
    INFO(f.name << " in cpuid " << leaf);
    CHECK(id.find(leaf) != std::string::npos);
  }
  // Among them the leaves the old memo identity left out: 7.1's EDX and
  // 0x80000021 (PREFETCHI on Zen 5), 0xd.1 (the XSAVE variants).
  CHECK(id.find(" 80000021.0:") != std::string::npos);
  CHECK(id.find(" d.1:") != std::string::npos);
#endif
}
