// Unit tests for running helper programs (src/support/process.cpp): exit
// status, stdout and stderr captured together, stdin empty, death by signal,
// a program that cannot be started, and the $PATH search.
#include "support/process.h"

#include "fixtures/env.hpp"
#include "fixtures/files.hpp"

#include <doctest/doctest.h>

#include <cstdlib>
#include <string>
#include <sys/stat.h>

using namespace kiln;
using namespace kiln::test;

namespace {

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

std::string shell() {
  std::string sh = find_in_path("sh");
  REQUIRE_FALSE(sh.empty());
  return sh;
}

} // namespace

TEST_CASE("run_process: the exit code and stdout and stderr together, in order") {
  auto r = run_process({shell(), "-c", "echo to-out; echo to-err >&2; echo again; exit 3"});
  REQUIRE(r);
  CHECK(r->exit_code == 3);
  CHECK(r->output == "to-out\nto-err\nagain\n");

  auto ok = run_process({shell(), "-c", "printf '%s|%s' \"$0\" \"$1\"", "first arg", "second"});
  REQUIRE(ok);
  CHECK(ok->exit_code == 0);
  // argv goes to the program as given, spaces and all.
  CHECK(ok->output == "first arg|second");
}

TEST_CASE("run_process: stdin is empty, and output larger than a pipe's buffer is all read") {
  auto r = run_process({shell(), "-c", "cat; echo done"});
  REQUIRE(r);
  CHECK(r->exit_code == 0);
  CHECK(r->output == "done\n");

  // 256 KiB: several times a pipe's capacity, so the child blocks unless
  // the parent reads while it waits.
  auto big = run_process({shell(), "-c", "head -c 262144 /dev/zero | tr '\\0' x"});
  REQUIRE(big);
  CHECK(big->exit_code == 0);
  CHECK(big->output.size() == 262144);
  CHECK(big->output.find_first_not_of('x') == std::string::npos);
}

TEST_CASE("run_process: a program killed by a signal exits 128 + the signal") {
  auto r = run_process({shell(), "-c", "echo before; kill -9 $$; echo after"});
  REQUIRE(r);
  CHECK(r->exit_code == 128 + 9);
  CHECK(r->output == "before\n");
}

TEST_CASE("run_process: defaults join the environment only where it does not set them") {
  EnvVar set("KILN_TEST_SET", "from-env");
  EnvVar unset("KILN_TEST_UNSET", nullptr);
  auto r = run_process({shell(), "-c", "printf '%s|%s|%s' \"$KILN_TEST_SET\" \"$KILN_TEST_UNSET\" "
                                       "\"$HOME\""},
                       {"KILN_TEST_SET=default", "KILN_TEST_UNSET=default"});
  REQUIRE(r);
  const char* home = std::getenv("HOME");
  CHECK(r->output == std::string("from-env|default|") + (home ? home : ""));
}

TEST_CASE("run_process: a program that cannot be started is unavailable, naming it") {
  auto r = run_process({"/nonexistent/kiln/ptxas", "--version"});
  REQUIRE_FALSE(r);
  CHECK(r.error().code == Code::unavailable);
  CHECK(contains(r.error().message, "/nonexistent/kiln/ptxas"));
}

TEST_CASE("find_in_path: the first executable of that name in $PATH, else empty") {
  TempDir dir = temp_dir("kiln-process-test");
  std::string first = dir.path() + "/first", second = dir.path() + "/second";
  REQUIRE(make_dirs(first));
  REQUIRE(make_dirs(second));
  // Not executable in the first directory: skipped for the second's.
  REQUIRE(write_file_atomic(first + "/kiln-tool", "#!/bin/sh\necho first\n"));
  REQUIRE(::chmod((first + "/kiln-tool").c_str(), 0600) == 0);
  REQUIRE(write_file_atomic(second + "/kiln-tool", "#!/bin/sh\necho second\n"));
  REQUIRE(::chmod((second + "/kiln-tool").c_str(), 0700) == 0);
  REQUIRE(write_file_atomic(second + "/only-here", "#!/bin/sh\n"));
  REQUIRE(::chmod((second + "/only-here").c_str(), 0700) == 0);
  {
    // Empty entries are skipped, not taken as the current directory.
    EnvVar path("PATH", "::" + first + "::" + second + ":");
    CHECK(find_in_path("kiln-tool") == second + "/kiln-tool");
    CHECK(find_in_path("only-here") == second + "/only-here");
    CHECK(find_in_path("no-such-kiln-tool").empty());

    auto r = run_process({find_in_path("kiln-tool")});
    REQUIRE(r);
    CHECK(r->output == "second\n");
  }
  {
    REQUIRE(::chmod((first + "/kiln-tool").c_str(), 0700) == 0);
    EnvVar path("PATH", first + ":" + second);
    CHECK(find_in_path("kiln-tool") == first + "/kiln-tool");
  }
}
