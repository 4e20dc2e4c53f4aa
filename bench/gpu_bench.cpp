// kiln-bench-gpu: on a machine with an NVIDIA GPU, the three ways to get a
// kernel into a module, side by side: Kiln's cached cubin image
// (kiln_image_load → cuModuleLoadData), the driver JIT of the job's PTX with
// the driver's own cache disabled, and compiling from IR. Without libcuda or
// a device it prints {"skipped": "<reason>"} and exits 0.
//
//   kiln-bench-gpu --ir FILE --entry NAME --work DIR
#include "storage/local/store.h"
#include "timing.hpp"

#include <kiln/compiler.hpp>
#include <kiln/kiln.h>

#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace {

using kiln_bench::Clock;
using kiln_bench::median;
using kiln_bench::ms_since;

int skipped(const std::string& why) {
  std::string s;
  for (char c : why)
    s += (c == '"' || c == '\\') ? '\'' : c;
  std::printf("{\"skipped\": \"%s\"}\n", s.c_str());
  return 0;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

} // namespace

int main(int argc, char** argv) {
  std::string ir, entry, work;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string k = argv[i];
    (k == "--ir" ? ir : k == "--entry" ? entry : k == "--work" ? work : ir) = argv[i + 1];
  }
  if (ir.empty() || entry.empty() || work.empty()) {
    std::fprintf(stderr, "usage: kiln-bench-gpu --ir FILE --entry NAME --work DIR\n");
    return 2;
  }
  // The driver's JIT cache would turn the JIT figure into a cache hit.
  setenv("CUDA_CACHE_DISABLE", "1", 1);

  void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!h)
    return skipped("no CUDA driver (libcuda.so.1 cannot be loaded)");
  auto sym = [&](const char* n) { return dlsym(h, n); };
  auto cuInit = reinterpret_cast<int (*)(unsigned)>(sym("cuInit"));
  auto cuDeviceGetCount = reinterpret_cast<int (*)(int*)>(sym("cuDeviceGetCount"));
  auto cuDeviceGet = reinterpret_cast<int (*)(int*, int)>(sym("cuDeviceGet"));
  auto cuDeviceGetAttribute = reinterpret_cast<int (*)(int*, int, int)>(sym("cuDeviceGetAttribute"));
  auto cuDevicePrimaryCtxRetain = reinterpret_cast<int (*)(void**, int)>(sym("cuDevicePrimaryCtxRetain"));
  auto cuCtxSetCurrent = reinterpret_cast<int (*)(void*)>(sym("cuCtxSetCurrent"));
  auto cuModuleLoadData = reinterpret_cast<int (*)(void**, const void*)>(sym("cuModuleLoadData"));
  auto cuModuleUnload = reinterpret_cast<int (*)(void*)>(sym("cuModuleUnload"));
  if (!cuInit || !cuDeviceGetCount || !cuDeviceGet || !cuDeviceGetAttribute ||
      !cuDevicePrimaryCtxRetain || !cuCtxSetCurrent || !cuModuleLoadData || !cuModuleUnload)
    return skipped("the CUDA driver lacks a needed entry point");
  int count = 0, dev = 0, major = 0, minor = 0;
  if (cuInit(0) != 0 || cuDeviceGetCount(&count) != 0 || count == 0)
    return skipped("no CUDA device");
  void* ctx = nullptr;
  if (cuDeviceGet(&dev, 0) != 0 || cuDeviceGetAttribute(&major, 75, dev) != 0 ||
      cuDeviceGetAttribute(&minor, 76, dev) != 0 || cuDevicePrimaryCtxRetain(&ctx, dev) != 0 ||
      cuCtxSetCurrent(ctx) != 0)
    return skipped("cannot make a context on device 0");
  std::string spec = "sm_" + std::to_string(major) + std::to_string(minor);

  std::filesystem::create_directories(work);
  std::string db = work + "/gpu.db";
  kiln::CompileRequest req;
  req.inputs.push_back(kiln::SourceInput::memory(ir, read_file(ir)));
  req.entries = {entry};
  req.targets = {spec};
  std::vector<double> compile;
  std::string key;
  for (int r = 0; r < 3; ++r) {
    for (const char* s : {"", "-wal", "-shm"})
      std::filesystem::remove(db + s);
    auto t0 = Clock::now();
    auto plan = kiln::Plan::create(req);
    if (!plan)
      return skipped("planning for " + spec + ": " + plan.error().message);
    auto rep = plan->run(db);
    compile.push_back(ms_since(t0));
    if (!rep || !rep->ok() || rep->roots.empty() || !rep->roots[0].image)
      return skipped("precompiling for " + spec + " made no cubin image: " +
                     (rep ? (rep->roots.empty() ? std::string("no root")
                                                : rep->roots[0].error + rep->roots[0].note)
                          : rep.error().message));
    key = rep->jobs[0].key;
  }

  kiln_cache* cache = nullptr;
  if (kiln_cache_open(db.c_str(), &cache) != KILN_OK)
    return skipped(kiln_last_error());
  std::vector<double> load;
  for (int i = 0; i < 21; ++i) {
    kiln_image* img = nullptr;
    auto t0 = Clock::now();
    if (kiln_image_load(cache, entry.c_str(), spec.c_str(), &img) != KILN_OK)
      return skipped(std::string("kiln_image_load: ") + kiln_last_error());
    load.push_back(ms_since(t0));
    kiln_image_release(img);
  }
  kiln_cache_close(cache);

  auto store = kiln::storage::Store::open(db);
  auto k = kiln::parse_hash128(key);
  auto ptx = store && k
                 ? (*store)->jobs().get_artifact(*k, "ptx")
                 : kiln::Result<std::string>(kiln::make_error(kiln::Code::internal, "no store"));
  if (!ptx)
    return skipped("no PTX artifact: " + ptx.error().message);
  std::string text = *ptx; // the driver wants NUL-terminated PTX
  std::vector<double> jit;
  for (int i = 0; i < 5; ++i) {
    void* mod = nullptr;
    auto t0 = Clock::now();
    int rc = cuModuleLoadData(&mod, text.c_str());
    jit.push_back(ms_since(t0));
    if (rc != 0)
      return skipped("driver JIT of the PTX failed: CUDA error " + std::to_string(rc));
    cuModuleUnload(mod);
  }
  std::printf("{\"target\": \"%s\", \"cubin_load_ms\": %.4f, \"ptx_jit_ms\": %.4f, "
              "\"compile_ms\": %.3f}\n",
              spec.c_str(), median(load), median(jit), median(compile));
  return 0;
}
