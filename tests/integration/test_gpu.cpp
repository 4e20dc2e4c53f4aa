// GPU targets without a GPU: nested, self-recursive and cyclic deferred
// kernels for sm_80, sm_90 and gfx942 compile, link into one image each
// (nvJitLink; IR link + codegen + lld), and the images are what they claim:
// the right ELF machine, every job of the closure defined, no undefined
// function. Loading one without a driver fails cleanly.
#include "harness.hpp"

#include "support/elf.h"

#include <doctest/doctest.h>

#include <kiln/kiln.h>

using namespace kiln_it;

namespace {

const std::vector<std::string> kRoots = {"k_nested", "k_fact", "k_cycle"};

std::string fixture_for(const std::string& target) {
  return data(target.rfind("sm_", 0) == 0 ? "gpu_nvptx.ll" : "gpu_amdgpu.ll");
}

json precompile_gpu(const Cache& cache, const std::string& target) {
  std::vector<std::string> args = {"--target", target};
  for (const std::string& r : kRoots) {
    args.push_back("--entry");
    args.push_back(r);
  }
  args.push_back(fixture_for(target));
  return precompile_ok(cache, args);
}

// The members' deferred symbols, from `kiln-inspect show ROOT --target T --json`.
std::vector<std::string> member_symbols(const Cache& cache, const std::string& root,
                                        const std::string& target) {
  RunResult r = inspect(cache, {"show", root, "--target", target, "--json"});
  REQUIRE_MESSAGE(r.exit_code == 0, describe(r));
  json j = json::parse(r.out);
  std::vector<std::string> out;
  for (const json& m : j.at("members"))
    out.push_back(m.at("symbol").get<std::string>());
  return out;
}

} // namespace

TEST_SUITE("integration.gpu") {

TEST_CASE("sm_80, sm_90 and gfx942 images hold every job of nested, recursive and cyclic closures") {
  for (const std::string target : {"sm_80", "sm_90", "gfx942"}) {
    CAPTURE(target);
    Cache cache;
    json j = precompile_gpu(cache, target);
    // k_nested: 3 jobs; k_fact: 2 (d_fact defers itself); k_cycle: 4.
    CHECK(j.at("jobs").size() == 9);
    for (const std::string& root : kRoots) {
      CAPTURE(root);
      const json& r = kiln_it::root(j, root);
      if (!r.at("image").get<bool>()) {
        // Only nvJitLink can be missing here (the AMD path is LLVM's own).
        REQUIRE(target.rfind("sm_", 0) == 0);
        MESSAGE("skipped: no nvJitLink on this machine, so no cubin image for " << target);
        continue;
      }
      fs::path out = cache.dir() / (root + ".img");
      RunResult w = inspect(cache, {"image", root, "--target", target, "-o", out.string()});
      REQUIRE_MESSAGE(w.exit_code == 0, describe(w));
      std::string bytes = slurp(out);
      auto elf = kiln::read_elf(bytes);
      REQUIRE_MESSAGE(elf, (elf ? std::string() : elf.error().message));
      CHECK(elf->machine == (target == "gfx942" ? kiln::kElfMachineAmdgpu : kiln::kElfMachineCuda));
      std::set<std::string> defined;
      for (const kiln::ElfSymbol& s : elf->symbols) {
        if (s.defined)
          defined.insert(s.name);
        else
          CHECK_MESSAGE(!s.function, "undefined function " << s.name);
      }
      for (const std::string& sym : member_symbols(cache, root, target))
        CHECK_MESSAGE(defined.count(sym), sym << " missing from the image");
    }
  }
}

TEST_CASE("PTX for sm_90 carries .target sm_90, and sm_80 and sm_90 jobs have different keys") {
  Cache cache;
  json j90 = precompile_gpu(cache, "sm_90");
  json j80 = precompile_gpu(cache, "sm_80");
  std::set<std::string> k90 = keys(j90), k80 = keys(j80);
  for (const std::string& k : k90)
    CHECK(k80.count(k) == 0);
  RunResult ptx = inspect(cache, {"dump", key(j90, "k_nested"), "--format", "ptx"});
  REQUIRE_MESSAGE(ptx.exit_code == 0, describe(ptx));
  CHECK(ptx.out.find("\n.target sm_90") != std::string::npos);
  CHECK(ptx.out.find("__kiln_deferred_") != std::string::npos);
  RunResult ptx80 = inspect(cache, {"dump", key(j80, "k_nested"), "--format", "ptx"});
  CHECK(ptx80.out.find("\n.target sm_80") != std::string::npos);
}

TEST_CASE("gfx942 feature suffixes are distinct targets and bad specs list the accepted forms") {
  Cache cache;
  json plain = precompile_gpu(cache, "gfx942");
  json xnack = precompile_gpu(cache, "gfx942:xnack-");
  CHECK(key(plain, "k_nested") != key(xnack, "k_nested"));
  CHECK(root(xnack, "k_nested").at("target") == "gfx942:xnack-");
  for (const std::string bad : {"sm_91", "gfx9999", "gfx942:foo+", "gfx942:xnack", "cuda"}) {
    CAPTURE(bad);
    RunResult r = precompile(cache, {"--target", bad, data("gpu_amdgpu.ll")});
    CHECK(r.exit_code == 2);
    CHECK(r.err.find("accepted:") != std::string::npos);
    CHECK(r.err.find("sm_90a") != std::string::npos);
  }
}

TEST_CASE("a GPU image without a driver fails cleanly, and NULL target falls back to the host") {
  Cache cache;
  json gpu = precompile_gpu(cache, "sm_90");
  precompile_ok(cache, {"--entry", "k_nested", data("gpu_nvptx.ll")}); // host build of the same
  kiln_cache* c = nullptr;
  REQUIRE(kiln_cache_open(cache.db().c_str(), &c) == KILN_OK);
  kiln_image* img = nullptr;
  kiln_status st = kiln_image_load(c, "k_nested", "sm_90", &img);
  if (st == KILN_OK) {
    MESSAGE("skipped: a CUDA driver and device are present; tests/gpu covers real loads");
    kiln_image_release(img);
  } else {
    CHECK(st == KILN_UNAVAILABLE);
    CHECK(std::string(kiln_last_error()).find("CUDA") != std::string::npos);
    // Without a GPU, NULL picks the host build of the same root.
    REQUIRE_MESSAGE(kiln_image_load(c, "k_nested", nullptr, &img) == KILN_OK, kiln_last_error());
    CHECK(std::string(kiln_image_target(img)) == "host");
    kiln_image_release(img);
  }
  st = kiln_image_load(c, "k_nested", "gfx942", &img);
  CHECK(st == KILN_NOT_FOUND); // never precompiled for gfx942
  kiln_cache_close(c);
}

TEST_CASE("device math links libdevice and the ROCm device libraries into the jobs that call them") {
  struct Case {
    std::string target, root, child, library;
  };
  for (const Case& c : {Case{"sm_90", "k_nv", "nv_wave", "libdevice"},
                        Case{"gfx942", "k_amd", "amd_wave", "rocm-device-libs"}}) {
    CAPTURE(c.target);
    Cache cache;
    RunResult r = precompile(cache, {"--target", c.target, "--entry", c.root, data("gpu_math.ll")});
    if (r.exit_code == 1 && r.err.find("is not installed") != std::string::npos) {
      MESSAGE("skipped: " << c.library << " is not installed here: " << r.err);
      continue;
    }
    REQUIRE_MESSAGE(r.exit_code == 0, describe(r));
    json j = json::parse(r.out);
    auto toolchain = [&](const std::string& entry) {
      RunResult show = inspect(cache, {"show", key(j, entry), "--json"});
      REQUIRE_MESSAGE(show.exit_code == 0, describe(show));
      return json::parse(show.out).at("toolchain").get<std::string>();
    };
    // The library's version is in the key of the job that calls it, only.
    CHECK(toolchain(c.child).find(c.library + " ") != std::string::npos);
    CHECK(toolchain(c.root).find(c.library) == std::string::npos);
    if (!root(j, c.root).at("image").get<bool>()) {
      MESSAGE("skipped image check: no linker for " << c.target);
      continue;
    }
    fs::path out = cache.dir() / "math.img";
    RunResult w = inspect(cache, {"image", c.root, "--target", c.target, "-o", out.string()});
    REQUIRE_MESSAGE(w.exit_code == 0, describe(w));
    std::string bytes = slurp(out);
    auto elf = kiln::read_elf(bytes);
    REQUIRE(elf);
    for (const kiln::ElfSymbol& s : elf->symbols)
      CHECK_MESSAGE((s.defined || !s.function), "undefined function " << s.name);
  }
}

TEST_CASE("a CUDA kernel using kiln::deferred from <kiln/device.h> precompiles for sm_90") {
  if (!fs::exists(KILN_CLANG) || !fs::exists("/usr/local/cuda/include/cuda.h")) {
    MESSAGE("skipped: needs clang-22 and the CUDA toolkit's headers to compile CUDA to IR");
    return;
  }
  TempDir dir;
  fs::path bc = dir.path() / "apply.bc";
  RunResult cc = run({KILN_CLANG, "-x", "cuda", "--cuda-device-only", "--cuda-gpu-arch=sm_90",
                      "-O1", "-emit-llvm", "-Wno-unknown-cuda-version", "-I", KILN_INCLUDE, "-c",
                      std::string(KILN_EXAMPLES) + "/cuda/apply.cu", "-o", bc.string()});
  REQUIRE_MESSAGE(cc.exit_code == 0, describe(cc));
  Cache cache;
  json j = precompile_ok(cache, {"--target", "sm_90", bc.string()});
  // apply defers shifted, which defers square: three jobs, one root (the kernel).
  CHECK(j.at("jobs").size() == 3);
  CHECK(root_names(j) == std::set<std::string>{"apply"});
  CHECK(job(j, "apply").at("refs").size() == 1);
  CHECK(job(j, "_Z7shiftedf").at("refs").size() == 1);
  CHECK(job(j, "_Z6squaref").at("refs").empty());
}

} // TEST_SUITE
