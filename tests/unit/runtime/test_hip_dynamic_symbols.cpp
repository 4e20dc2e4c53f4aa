// Unit tests for the HIP runtime's symbol table
// (src/runtime/hip/hip_dynamic_symbols.h), the twin of
// test_cuda_dynamic_symbols.cpp: which library is opened, which property
// call is used, and the table of this machine's runtime if it has one.
#include "runtime/hip/hip_dynamic_symbols.h"

#include "support/fault.h"

#include <doctest/doctest.h>

#include <dlfcn.h>

#include <string>
#include <vector>

using namespace kiln;
using namespace kiln::runtime;

namespace {

// Never called: only their addresses are compared (distinct bodies, so the
// linker cannot fold them into one).
int fill_r0600(void*, int) { return 600; }
int fill_r0000(void*, int) { return 0; }

} // namespace

TEST_CASE("an injected dlopen:hip failure makes the HIP table unavailable, saying so") {
  fault::set_plan("dlopen:hip");
  auto hip = load_hip_symbols();
  fault::set_plan("");
  REQUIRE_FALSE(hip);
  CHECK(hip.error().code == Code::unavailable);
  CHECK(hip.error().message.find("injected fault at dlopen:hip") != std::string::npos);
}

TEST_CASE("the HIP table has every required entry point or is unavailable with the reason") {
  const Result<HipSymbols>& hip = hip_symbols();
  CHECK(&hip == &hip_symbols()); // loaded once
  if (!hip) {
    CHECK(hip.error().code == Code::unavailable);
    CHECK(hip.error().message.find("HIP runtime") != std::string::npos);
    return;
  }
#define KILN_HIP(name, params) CHECK_MESSAGE(bool(hip->name), #name);
#define KILN_HIP_OPTIONAL(name, params)
#define KILN_HIP_TEXT(name, params)
#include "runtime/hip/hip_symbols.def"
#undef KILN_HIP_TEXT
#undef KILN_HIP_OPTIONAL
#undef KILN_HIP
  CHECK(hip->library.rfind("libamdhip64.so", 0) == 0);
  CHECK(bool(hip->get_device_properties));
}

TEST_CASE("the HIP runtime's sonames are tried newest ABI first, the development link last") {
  std::vector<std::string> names(hip_library_names().begin(), hip_library_names().end());
  CHECK(names == std::vector<std::string>{"libamdhip64.so.7", "libamdhip64.so.6",
                                          "libamdhip64.so.5", "libamdhip64.so"});
}

TEST_CASE("a library the process already loaded is opened before one that would be loaded") {
  // libanl.so.1 ships with glibc and nothing here links it; libc.so.6 is
  // always loaded.
  const char* unloaded = "libanl.so.1";
  if (dlopen(unloaded, RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD)) {
    MESSAGE("skipped: ", unloaded, " is already loaded");
    return;
  }
  std::string opened;
  const char* prefer_loaded[] = {"libkiln-no-such-runtime.so.1", unloaded, "libc.so.6"};
  CHECK(open_hip_library(prefer_loaded, opened));
  CHECK(opened == "libc.so.6");
  CHECK_FALSE(dlopen(unloaded, RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD)); // left unloaded

  // With none loaded, the first that loads.
  const char* none_loaded[] = {"libkiln-no-such-runtime.so.1", unloaded};
  opened.clear();
  void* lib = open_hip_library(none_loaded, opened);
  if (!lib) {
    MESSAGE("skipped: ", unloaded, " is not installed");
    return;
  }
  CHECK(opened == unloaded);

  const char* absent[] = {"libkiln-no-such-runtime.so.1", "libkiln-no-such-runtime.so"};
  opened.clear();
  CHECK_FALSE(open_hip_library(absent, opened));
  CHECK(opened.empty());
}

TEST_CASE("the property call is R0600 where the runtime exports it, else ROCm 5's") {
  HipSymbols rocm6; // ROCm 6 and 7 export both names
  rocm6.library = "libamdhip64.so.6";
  rocm6.hipGetDevicePropertiesR0600 = fill_r0600;
  rocm6.hipGetDeviceProperties = fill_r0000;
  REQUIRE(choose_hip_properties_call(rocm6));
  CHECK((rocm6.get_device_properties == &fill_r0600));
  CHECK(rocm6.props_layout == HipPropsLayout::r0600);

  HipSymbols rocm5; // ROCm 5 exports only the plain name
  rocm5.library = "libamdhip64.so.5";
  rocm5.hipGetDeviceProperties = fill_r0000;
  REQUIRE(choose_hip_properties_call(rocm5));
  CHECK((rocm5.get_device_properties == &fill_r0000));
  CHECK(rocm5.props_layout == HipPropsLayout::r0000);

  HipSymbols neither;
  neither.library = "libamdhip64.so";
  Status s = choose_hip_properties_call(neither);
  REQUIRE_FALSE(s);
  CHECK(s.error().code == Code::unavailable);
  CHECK(s.error().message == "the HIP runtime libamdhip64.so has neither "
                             "hipGetDevicePropertiesR0600 nor hipGetDeviceProperties");
  CHECK((neither.get_device_properties == nullptr));
}
