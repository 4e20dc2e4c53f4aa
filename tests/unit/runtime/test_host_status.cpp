// Unit tests for the host backend's error text (src/runtime/host/host_status.h).
#include "runtime/host/host_status.h"

#include <doctest/doctest.h>

#include <dlfcn.h>

#include <cerrno>

using namespace kiln::runtime;

TEST_CASE("dlerror text is passed on, and its absence named") {
  CHECK(host_status_text("libnope.so: cannot open shared object file") ==
        "libnope.so: cannot open shared object file");
  CHECK(host_status_text(nullptr) == "unknown");
}

TEST_CASE("the dynamic loader's last error is read once") {
  (void)dlerror(); // start clean
  CHECK(dlopen("libkiln-no-such-library.so", RTLD_NOW) == nullptr);
  std::string first = host_dl_error();
  CHECK(first.find("libkiln-no-such-library.so") != std::string::npos);
  CHECK(host_dl_error() == "unknown");
}

TEST_CASE("errno values read as the C library's words") {
  CHECK(host_errno_text(ENOENT) == "No such file or directory");
  CHECK_FALSE(host_errno_text(123456).empty());
}
