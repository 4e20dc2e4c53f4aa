// Unit tests for AMD target selection (src/runtime/hip/hip_select.h), the
// twin of test_cuda_select.cpp: the runtime's code-object rules, the device's
// arch read from each ROCm's property struct as a canonical target spec, and
// the device queries without a device.
#include "runtime/hip/hip_select.h"

#include "codegen/llvm_target.h"

#include <doctest/doctest.h>

#include <cstring>
#include <string>
#include <vector>

using namespace kiln;
using namespace kiln::runtime;

TEST_CASE("AMD arch specs parse into processor and feature settings") {
  auto a = core::parse_amd_arch("gfx942:xnack-:sramecc+");
  REQUIRE(a);
  CHECK(a->processor == "gfx942");
  REQUIRE(a->features.size() == 2);
  CHECK(a->features[0] == std::pair<std::string, char>{"xnack", '-'});
  CHECK(a->features[1] == std::pair<std::string, char>{"sramecc", '+'});
  auto b = core::parse_amd_arch("gfx1100");
  REQUIRE(b);
  CHECK(b->processor == "gfx1100");
  CHECK(b->features.empty());
  CHECK(bool(core::parse_amd_arch("gfx942:sramecc+:xnack-"))); // a gcnArchName's order
  CHECK_FALSE(bool(core::parse_amd_arch("sm_90")));
  CHECK_FALSE(bool(core::parse_amd_arch("gfx")));
  CHECK_FALSE(bool(core::parse_amd_arch("host")));
  CHECK_FALSE(bool(core::parse_amd_arch("gfx942:xnack")));
  CHECK_FALSE(bool(core::parse_amd_arch("gfx942:")));
}

namespace {

// Byte images of the property struct as each runtime fills it. Offsets of
// gcnArchName (char[256]) and sizes from ROCm's hip/hip_runtime_api.h:
// ROCm 5.2's hipDeviceProp_t (offsetof 396, sizeof 792) and ROCm 6's and
// 7's hipDeviceProp_tR0600 (offsetof 1160, sizeof 1472); both begin with
// char name[256].
constexpr size_t kR0000Arch = 396, kR0000Size = 792;
constexpr size_t kR0600Arch = 1160, kR0600Size = 1472;

std::vector<char> props_image(size_t size, size_t arch_at, const std::string& arch,
                              const std::string& name = "AMD Instinct MI210") {
  std::vector<char> props(size, '\0');
  std::memcpy(props.data(), name.c_str(), name.size() + 1);
  std::memcpy(&props[arch_at], arch.c_str(), arch.size() + 1);
  return props;
}

std::vector<char> r0000_image(const std::string& arch) {
  return props_image(kR0000Size, kR0000Arch, arch);
}
std::vector<char> r0600_image(const std::string& arch) {
  return props_image(kR0600Size, kR0600Arch, arch, "AMD Instinct MI300X");
}

// The error's message, for a check's log (which doctest also forms when
// the check passes).
template <class T> std::string why(const Result<T>& r) { return r ? "" : r.error().message; }

// An image as it lies in the zero-filled buffer the runtime is handed.
std::vector<char> filled(const std::vector<char>& image) {
  std::vector<char> buffer(16384, '\0');
  std::memcpy(buffer.data(), image.data(), image.size());
  return buffer;
}

// A runtime's entry points as plain functions over one image, for the
// device-opening path without a GPU.
struct FakeRuntime {
  static inline std::vector<char> image;
  static inline int version = 0;
  static inline int devices = 1;
  static inline int props_calls = 0;
  static int init(unsigned) { return 0; }
  static int count(int* n) {
    *n = devices;
    return 0;
  }
  static int props(void* out, int device) {
    ++props_calls;
    if (device != 0)
      return 101; // hipErrorInvalidDevice
    std::memcpy(out, image.data(), image.size());
    return 0;
  }
  static int wrong_call(void*, int) {
    ++props_calls;
    return 1;
  }
  static int runtime_version(int* v) {
    *v = version;
    return 0;
  }
};

// The table a runtime of `library` would give: ROCm 5 exports only
// hipGetDeviceProperties; ROCm 6 and 7 also hipGetDevicePropertiesR0600.
HipSymbols fake_table(const std::string& library, bool has_r0600) {
  HipSymbols hip;
  hip.library = library;
  hip.hipInit = FakeRuntime::init;
  hip.hipGetDeviceCount = FakeRuntime::count;
  hip.hipRuntimeGetVersion = FakeRuntime::runtime_version;
  if (has_r0600) {
    hip.hipGetDevicePropertiesR0600 = FakeRuntime::props;
    hip.hipGetDeviceProperties = FakeRuntime::wrong_call; // the ROCm 5 struct: not read
  } else {
    hip.hipGetDeviceProperties = FakeRuntime::props;
  }
  REQUIRE(choose_hip_properties_call(hip));
  return hip;
}

} // namespace

TEST_CASE("the property layouts place gcnArchName where ROCm's headers do") {
  CHECK(hip_props_format(HipPropsLayout::r0000).gcn_arch_name == kR0000Arch);
  CHECK(hip_props_format(HipPropsLayout::r0000).size == kR0000Size);
  CHECK(std::string(hip_props_format(HipPropsLayout::r0000).call) == "hipGetDeviceProperties");
  CHECK(hip_props_format(HipPropsLayout::r0600).gcn_arch_name == kR0600Arch);
  CHECK(hip_props_format(HipPropsLayout::r0600).size == kR0600Size);
  CHECK(std::string(hip_props_format(HipPropsLayout::r0600).call) ==
        "hipGetDevicePropertiesR0600");
}

TEST_CASE("HIP runtime versions read as major.minor.patch") {
  CHECK(hip_runtime_text(50221153, "libamdhip64.so.5") == "HIP runtime 5.2.21153 (libamdhip64.so.5)");
  CHECK(hip_runtime_text(60241134, "libamdhip64.so.6") == "HIP runtime 6.2.41134 (libamdhip64.so.6)");
  CHECK(hip_runtime_text(70025221, "libamdhip64.so.7") == "HIP runtime 7.0.25221 (libamdhip64.so.7)");
  CHECK(hip_runtime_text(0, "libamdhip64.so") == "HIP runtime of unknown version (libamdhip64.so)");
}

TEST_CASE("gcnArchName is read at its offset in the ROCm 5 and ROCm 6 layouts") {
  const std::string rocm5 = "HIP runtime 5.2.21153 (libamdhip64.so.5)";
  const std::string rocm6 = "HIP runtime 6.2.41134 (libamdhip64.so.6)";
  for (const char* name : {"gfx90a:sramecc+:xnack-", "gfx942:xnack-:sramecc+", "gfx1100",
                           "gfx908:sramecc-:xnack+"}) {
    auto five = read_gcn_arch(filled(r0000_image(name)), HipPropsLayout::r0000, rocm5);
    REQUIRE_MESSAGE(five, why(five));
    CHECK(*five == name);
    auto six = read_gcn_arch(filled(r0600_image(name)), HipPropsLayout::r0600, rocm6);
    REQUIRE_MESSAGE(six, why(six));
    CHECK(*six == name);
  }
  // Read with the other layout's offset, each image holds no name there:
  // zeros in one, the middle of ROCm 5's struct in the other.
  auto five_as_six = read_gcn_arch(filled(r0000_image("gfx90a")), HipPropsLayout::r0600, rocm6);
  REQUIRE_FALSE(five_as_six);
  CHECK(five_as_six.error().code == Code::unavailable);
  CHECK(five_as_six.error().message == rocm6 +
                                           ": the gcnArchName hipGetDevicePropertiesR0600 filled in "
                                           "at byte 1160 is \"\", not an AMD architecture name; "
                                           "this runtime's struct layout is unknown");
  // Byte 396 of R0600 is `int integrated`: 1 on an APU.
  std::vector<char> six = r0600_image("gfx1151");
  std::memcpy(&six[kR0000Arch], "\x01\x00\x00\x00", 4);
  auto six_as_five = read_gcn_arch(filled(six), HipPropsLayout::r0000, rocm5);
  REQUIRE_FALSE(six_as_five);
  CHECK(six_as_five.error().message.find(rocm5 + ": the gcnArchName hipGetDeviceProperties "
                                                 "filled in at byte 396 is \"?\"") == 0);
}

TEST_CASE("a gcnArchName that is not terminated or not an arch name is refused") {
  const std::string rt = "HIP runtime 6.2.41134 (libamdhip64.so.6)";
  std::vector<char> full = filled(r0600_image(""));
  std::memset(&full[kR0600Arch], 'x', 256); // no NUL within the field
  auto unterminated = read_gcn_arch(full, HipPropsLayout::r0600, rt);
  REQUIRE_FALSE(unterminated);
  CHECK(unterminated.error().message.find("is not NUL-terminated") != std::string::npos);
  CHECK(unterminated.error().message.find(rt) == 0);
  for (const char* bad : {"gfx", "gfxabc", "sm_90", "gfx942:xnack", "gfx942:", "gfx942 ",
                          "gfx\x01\x02", "AMD Instinct MI300X"}) {
    auto r = read_gcn_arch(filled(r0600_image(bad)), HipPropsLayout::r0600, rt);
    CHECK_MESSAGE(!r, bad);
    if (!r)
      CHECK(r.error().message.find("not an AMD architecture name") != std::string::npos);
  }
  // A buffer smaller than the struct is Kiln's own error, not the runtime's.
  std::vector<char> short_buffer(kR0600Arch + 100, '\0');
  auto cut = read_gcn_arch(short_buffer, HipPropsLayout::r0600, rt);
  REQUIRE_FALSE(cut);
  CHECK(cut.error().code == Code::internal);
}

TEST_CASE("a ROCm 5 runtime's device is read through hipGetDeviceProperties") {
  HipSymbols hip = fake_table("libamdhip64.so.5", false);
  FakeRuntime::image = r0000_image("gfx90a:xnack-:sramecc+");
  FakeRuntime::version = 50221153;
  FakeRuntime::devices = 1;
  FakeRuntime::props_calls = 0;
  auto d = open_hip_device(hip);
  REQUIRE_MESSAGE(d, why(d));
  CHECK(FakeRuntime::props_calls == 1);
  CHECK(d->runtime_version == 50221153);
  CHECK(d->gcn_arch_name == "gfx90a:xnack-:sramecc+");
  CHECK(d->arch() == "gfx90a:sramecc+:xnack-"); // canonical: what the compiler stores
  CHECK(d->hip == &hip);
}

TEST_CASE("a ROCm 6 or 7 runtime's device is read through hipGetDevicePropertiesR0600") {
  for (const char* library : {"libamdhip64.so.6", "libamdhip64.so.7"}) {
    HipSymbols hip = fake_table(library, true);
    FakeRuntime::image = r0600_image("gfx942:sramecc+:xnack-");
    FakeRuntime::version = library[15] == '6' ? 60241134 : 70025221;
    FakeRuntime::props_calls = 0;
    auto d = open_hip_device(hip);
    REQUIRE_MESSAGE(d, why(d));
    CHECK(FakeRuntime::props_calls == 1); // the R0600 call alone
    CHECK(d->gcn_arch_name == "gfx942:sramecc+:xnack-");
    CHECK(d->arch() == "gfx942:sramecc+:xnack-");
  }
}

TEST_CASE("a device the runtime cannot describe is unavailable, naming the runtime") {
  HipSymbols hip = fake_table("libamdhip64.so.6", true);
  FakeRuntime::version = 60241134;
  // A struct laid out as ROCm 5's where R0600's was asked for.
  FakeRuntime::image = r0000_image("gfx90a:sramecc+:xnack-");
  FakeRuntime::devices = 1;
  auto mislaid = open_hip_device(hip);
  REQUIRE_FALSE(mislaid);
  CHECK(mislaid.error().code == Code::unavailable);
  CHECK(mislaid.error().message.find("HIP runtime 6.2.41134 (libamdhip64.so.6): the gcnArchName "
                                     "hipGetDevicePropertiesR0600 filled in at byte 1160") == 0);
  // No device.
  FakeRuntime::devices = 0;
  auto none = open_hip_device(hip);
  FakeRuntime::devices = 1;
  REQUIRE_FALSE(none);
  CHECK(none.error().message == "no AMD GPU visible to the HIP runtime 6.2.41134 (libamdhip64.so.6)");
  // A table whose property call was never chosen.
  HipSymbols unchosen = hip;
  unchosen.get_device_properties = nullptr;
  auto internal = open_hip_device(unchosen);
  REQUIRE_FALSE(internal);
  CHECK(internal.error().code == Code::internal);
}

TEST_CASE("the device's canonical spec resolves and selects the build the compiler stored") {
  for (const char* name : {"gfx942:sramecc+:xnack-", "gfx942:xnack-:sramecc+",
                           "gfx90a:sramecc-:xnack+", "gfx1100"}) {
    std::string spec = core::canonical_amd_spec(name);
    auto resolved = codegen::resolve_target(spec);
    REQUIRE_MESSAGE(resolved, name << " does not resolve");
    CHECK(resolved->spec == spec); // what the cache stores it under
  }
  // gcnArchName's order on the device, the compiler's order in the cache.
  CHECK(select_amd_target({"gfx942", "gfx942:sramecc+:xnack-"},
                          core::canonical_amd_spec("gfx942:xnack-:sramecc+")) ==
        "gfx942:sramecc+:xnack-");
}

TEST_CASE("code objects run on the same processor with every named feature set alike") {
  const std::string mi300 = "gfx942:xnack-:sramecc+";
  CHECK(code_object_runs_on("gfx942", mi300));
  CHECK(code_object_runs_on("gfx942:xnack-", mi300));
  CHECK(code_object_runs_on("gfx942:sramecc+", mi300));
  CHECK(code_object_runs_on("gfx942:xnack-:sramecc+", mi300));
  CHECK(code_object_runs_on("gfx942:sramecc+:xnack-", mi300));
  CHECK_FALSE(code_object_runs_on("gfx942:xnack+", mi300));
  CHECK_FALSE(code_object_runs_on("gfx942:xnack-:sramecc-", mi300));
  CHECK_FALSE(code_object_runs_on("gfx90a", mi300));
  CHECK_FALSE(code_object_runs_on("sm_90", mi300));
  CHECK_FALSE(code_object_runs_on("host", mi300));
  // A device without the feature runs no code that names it.
  CHECK_FALSE(code_object_runs_on("gfx1100:xnack-", "gfx1100"));
  CHECK(code_object_runs_on("gfx1100", "gfx1100"));
}

TEST_CASE("target selection prefers the most specific code object that runs") {
  // MI300X: gfx942 with xnack off and sramecc on.
  const std::string mi300 = "gfx942:xnack-:sramecc+";
  CHECK(select_amd_target({"gfx942", "gfx942:xnack-:sramecc+", "host"}, mi300) ==
        "gfx942:xnack-:sramecc+");
  CHECK(select_amd_target({"gfx942", "gfx942:xnack-", "sm_90"}, mi300) == "gfx942:xnack-");
  CHECK(select_amd_target({"gfx942:xnack+", "gfx942"}, mi300) == "gfx942");
  CHECK(select_amd_target({"gfx90a", "gfx942:xnack+", "sm_90", "host"}, mi300).empty());
  CHECK(select_amd_target({}, mi300).empty());
  // Either feature order on either side matches.
  CHECK(select_amd_target({"gfx942:xnack-:sramecc+"}, "gfx942:sramecc+:xnack-") ==
        "gfx942:xnack-:sramecc+");
}

TEST_CASE("without an AMD device the queries say why and choose nothing") {
  if (hip_device()) {
    MESSAGE("skipped: a HIP device is present");
    auto arch = hip_device_arch();
    REQUIRE(arch);
    CHECK(bool(core::parse_amd_arch(*arch)));
    auto chosen = choose_hip_target({*arch, "host"});
    REQUIRE(chosen);
    CHECK(*chosen == *arch);
    return;
  }
  auto arch = hip_device_arch();
  REQUIRE_FALSE(arch);
  CHECK(arch.error().code == Code::unavailable);
  CHECK(arch.error().message.find("HIP") != std::string::npos);
  auto chosen = choose_hip_target({"gfx942", "gfx942:xnack-", "host"});
  REQUIRE(chosen);
  CHECK(chosen->empty());
}
