// Running one test case of this binary again in a child process with extra
// environment. Tool paths and libraries loaded on first use are read from the
// environment once per process, so each setting needs a fresh process.
#pragma once

#include "support/process.h"

#include <doctest/doctest.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <unistd.h>

namespace kiln::test {

/// The variable that tells a test case which part it plays in a child.
inline constexpr const char* kChildRole = "KILN_UNIT_CHILD";

/// What a child prints once its part has run: a filter that matched no test
/// case exits 0 too, and must not pass for a child that ran.
inline constexpr const char* kChildRan = "kiln-unit-child-ran";

/// The role this process was started with by run_child, or "".
inline std::string child_role() {
  const char* r = std::getenv(kChildRole);
  return r ? r : "";
}

/// Called by a child's part of a test case once it runs.
inline void child_ran() {
  std::printf("%s\n", kChildRan);
  std::fflush(stdout);
}

/// Runs test case `test_case` (a name without commas or wildcards) of this
/// binary with `role` and `env` ("NAME=value") added to its environment.
inline ProcessResult run_child(const std::string& test_case, const std::string& role,
                               const std::vector<std::string>& env = {}) {
  char self[4096];
  ssize_t n = ::readlink("/proc/self/exe", self, sizeof self - 1);
  REQUIRE(n > 0);
  std::vector<std::string> argv{"/usr/bin/env", std::string(kChildRole) + "=" + role};
  argv.insert(argv.end(), env.begin(), env.end());
  argv.push_back(std::string(self, size_t(n)));
  argv.push_back("--test-case=" + test_case);
  argv.push_back("--no-version");
  auto r = run_process(argv);
  REQUIRE(r);
  return r.take();
}

/// Checks that a child ran its part and passed.
inline void check_child(const ProcessResult& r) {
  INFO(r.output);
  CHECK(r.exit_code == 0);
  CHECK(r.output.find(kChildRan) != std::string::npos);
}

} // namespace kiln::test
