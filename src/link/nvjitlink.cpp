// nvJitLink, dlopen'd: links a closure's NVIDIA pieces into one cubin. Errors
// name the architecture as their target.
#include "link/nvjitlink.h"
#include "link/ptx_merge.h"
#include "link/ptxas_program.h"
#include "support/fault.h"

#include "support/files.h"
#include "support/hash.h"

#include <dlfcn.h>
#include <sys/stat.h>
#include <link.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <thread>

namespace kiln::link {

namespace {

// nvJitLink's input kinds (nvJitLinkInputType): cubin 1, PTX 2.
constexpr int kInputCubin = 1;
constexpr int kInputPtx = 2;
constexpr int kInputLibrary = 6;

struct Api {
#define KILN_NVJITLINK(name, ret, params) ret(*name) params = nullptr;
#include "link/nvjitlink_symbols.def"
#undef KILN_NVJITLINK
  int (*Version)(unsigned*, unsigned*) = nullptr;
  std::string fingerprint;
  std::string path;     ///< the file loaded, as the dynamic linker found it (made absolute)
  std::string identity; ///< the file's size, modification time and inode: a patch in place
  bool splits = false;  ///< its ptxas takes --split-compile (nvJitLink 13 and later)
  std::string error;
};

const Api& api() {
  static Api a;
  static std::once_flag once;
  std::call_once(once, [] {
    std::vector<std::string> cands;
    if (const char* p = std::getenv("KILN_NVJITLINK")) {
      if (!*p) {
        a.error = "nvJitLink is disabled (KILN_NVJITLINK is empty)";
        return;
      }
      cands.push_back(p);
    }
    for (const char* lib : {"libnvJitLink.so.13", "libnvJitLink.so.12", "libnvJitLink.so"}) {
      if (const char* home = std::getenv("CUDA_HOME"); home && *home)
        cands.push_back(std::string(home) + "/lib64/" + lib);
      cands.push_back(std::string("/usr/local/cuda/lib64/") + lib);
      cands.push_back(lib);
    }
    void* h = nullptr;
    if (fault::hit("dlopen:nvjitlink")) {
      a.error = fault::message("dlopen:nvjitlink");
      return;
    }
    for (const std::string& c : cands)
      if ((h = dlopen(c.c_str(), RTLD_NOW | RTLD_LOCAL)))
        break;
    if (!h) {
      a.error = "nvJitLink is not installed (looked for libnvJitLink.so.13/.12 in $CUDA_HOME/lib64, "
                "/usr/local/cuda/lib64 and the library path)";
      return;
    }
    if (link_map* lm = nullptr; dlinfo(h, RTLD_DI_LINKMAP, &lm) == 0 && lm && lm->l_name) {
      a.path = lm->l_name;
      if (char* real = ::realpath(lm->l_name, nullptr)) {
        a.path = real;
        std::free(real);
      }
      if (struct stat st; ::stat(a.path.c_str(), &st) == 0)
        a.identity = std::to_string(st.st_size) + " bytes, modified " +
                     std::to_string(st.st_mtim.tv_sec) + "." +
                     std::to_string(st.st_mtim.tv_nsec) + ", inode " + std::to_string(st.st_ino);
    }
    a.Version = reinterpret_cast<int (*)(unsigned*, unsigned*)>(dlsym(h, "nvJitLinkVersion"));
    unsigned major = 0, minor = 0;
    if (!a.Version || a.Version(&major, &minor) != 0) {
      a.error = "the nvJitLink library does not report its version";
      return;
    }
    // Entry points carry the API version they were introduced with; try
    // the library's own major first, then older APIs it still exports.
    for (unsigned m = major; m >= 12; --m) {
      std::string suffix = "_" + std::to_string(m) + "_0";
      bool all = true;
#define KILN_NVJITLINK(name, ret, params)                                                          \
  a.name = reinterpret_cast<ret(*) params>(dlsym(h, ("__nvJitLink" #name + suffix).c_str()));      \
  all = all && a.name;
#include "link/nvjitlink_symbols.def"
#undef KILN_NVJITLINK
      if (all) {
        a.fingerprint = "nvJitLink " + std::to_string(major) + "." + std::to_string(minor);
        // ptxas's --split-compile, passed through nvJitLink, works in 13.0
        // (tested); older releases assemble in one part rather than be
        // asked, so that the answer depends on the release alone.
        a.splits = major >= 13;
        return;
      }
    }
    a.error = "the nvJitLink library lacks the entry points Kiln needs";
  });
  return a;
}

// Where the CUDA device runtime is: resolved once per process, before (and
// apart from) reading it, so that a worker can be told the same file.
struct DeviceRuntimePath {
  std::string path; ///< empty: none found
  std::string error;
};

const DeviceRuntimePath& device_runtime_path() {
  static DeviceRuntimePath rt;
  static std::once_flag once;
  std::call_once(once, [] {
    std::vector<std::string> cands;
    if (const char* p = std::getenv("KILN_CUDADEVRT"); p && *p)
      cands.push_back(p);
    if (const char* home = std::getenv("CUDA_HOME"); home && *home)
      cands.push_back(std::string(home) + "/lib64/libcudadevrt.a");
    cands.push_back("/usr/local/cuda/lib64/libcudadevrt.a");
    cands.push_back("/usr/lib/x86_64-linux-gnu/libcudadevrt.a");
    for (const std::string& c : cands)
      if (::access(c.c_str(), R_OK) == 0) {
        rt.path = c;
        return;
      }
    rt.error = "the CUDA device runtime is not installed (looked for libcudadevrt.a in "
               "$KILN_CUDADEVRT, $CUDA_HOME/lib64, /usr/local/cuda/lib64, "
               "/usr/lib/x86_64-linux-gnu)";
  });
  return rt;
}

struct DeviceRuntime {
  std::string bytes;
  std::string fingerprint = "no libcudadevrt";
  std::string error;
};

const DeviceRuntime& device_runtime() {
  static DeviceRuntime rt;
  static std::once_flag once;
  std::call_once(once, [] {
    const DeviceRuntimePath& where = device_runtime_path();
    if (where.path.empty()) {
      rt.error = where.error;
      return;
    }
    auto bytes = read_file(where.path);
    if (!bytes) {
      rt.error = bytes.error().message;
      return;
    }
    rt.fingerprint = "libcudadevrt " + hash128(*bytes).short_hex(16);
    rt.bytes = bytes.take();
  });
  return rt;
}

} // namespace

Status cuda_device_runtime() {
  const DeviceRuntime& rt = device_runtime();
  if (!rt.error.empty())
    return make_error(Code::unavailable, rt.error);
  return Status::ok();
}

std::string cuda_device_runtime_fingerprint() { return device_runtime().fingerprint; }

std::string cuda_device_runtime_path() { return device_runtime_path().path; }

std::string nvjitlink_path() { return api().path; }

std::string nvlink_identity() {
  const Api& a = api();
  return (a.error.empty() ? a.fingerprint + " (" + a.path + ", " + a.identity + ")"
                          : "no nvJitLink: " + a.error) +
         "; " + cuda_device_runtime_fingerprint();
}

Result<std::string> nvjitlink_fingerprint() {
  const Api& a = api();
  if (!a.error.empty())
    return make_error(Code::unavailable, a.error);
  return a.fingerprint;
}

namespace {

// The number of kernel definitions in PTX text: statements that begin, past
// ".visible"/".weak", with ".entry" (a kernel has no declaration form).
size_t count_kernels(const std::string& ptx) {
  size_t n = 0;
  size_t at = 0;
  while (at < ptx.size()) {
    size_t end = ptx.find('\n', at);
    if (end == std::string::npos)
      end = ptx.size();
    size_t i = at;
    auto skip_space = [&] {
      while (i < end && (ptx[i] == ' ' || ptx[i] == '\t' || ptx[i] == '\r'))
        ++i;
    };
    auto word = [&](const char* w) {
      size_t len = std::strlen(w);
      if (end - i >= len && ptx.compare(i, len, w) == 0 &&
          (i + len == end || ptx[i + len] == ' ' || ptx[i + len] == '\t')) {
        i += len;
        skip_space();
        return true;
      }
      return false;
    };
    skip_space();
    while (word(".visible") || word(".weak")) {
    }
    if (word(".entry"))
      ++n;
    at = end + 1;
  }
  return n;
}

// One nvJitLink call over `inputs`, as they are, PTX assembled in `parts`.
Result<std::string> link_inputs(const Api& a, const std::vector<NvInput>& inputs,
                                const std::string& arch, bool with_device_runtime, int parts) {
  std::string arch_opt = "-arch=" + arch;
  // ptxas's own split: the parts are assembled on threads of its own.
  std::string split_opt = "-Xptxas=--split-compile=" + std::to_string(parts);
  const char* opts[] = {arch_opt.c_str(), split_opt.c_str()};
  void* h = nullptr;
  if (a.Create(&h, parts > 1 ? 2 : 1, opts) != 0)
    return make_error(Code::internal, "nvJitLink could not start a link for " + arch)
        .with_target(arch);
  auto log = [&]() {
    size_t n = 0;
    if (a.GetErrorLogSize(h, &n) != 0 || n == 0)
      return std::string();
    std::string s(n, '\0');
    a.GetErrorLog(h, s.data());
    while (!s.empty() && (s.back() == '\0' || s.back() == '\n'))
      s.pop_back();
    return s;
  };
  auto fail = [&](const std::string& what) {
    std::string msg = "nvJitLink (" + arch + ") " + what + ": " + log();
    a.Destroy(&h);
    return make_error(Code::internal, msg).with_target(arch);
  };
  for (const NvInput& in : inputs) {
    int rc;
    if (in.ptx) {
      // nvJitLink reads PTX as a C string: it must be NUL-terminated.
      std::string text = in.bytes + '\0';
      rc = a.AddData(h, kInputPtx, text.data(), text.size(), in.name.c_str());
    } else {
      rc = a.AddData(h, kInputCubin, in.bytes.data(), in.bytes.size(), in.name.c_str());
    }
    // PTX is assembled as it is added: its errors come here, in ptxas's
    // words, naming the input (the job's entry and key).
    if (rc != 0)
      return fail((in.ptx ? "could not assemble the PTX of " : "rejected input ") + in.name);
  }
  // The device runtime where installed; where not, nvJitLink names what
  // stays undefined.
  if (with_device_runtime)
    if (const DeviceRuntime& rt = device_runtime(); rt.error.empty())
      if (a.AddData(h, kInputLibrary, rt.bytes.data(), rt.bytes.size(), "libcudadevrt.a") != 0)
        return fail("rejected libcudadevrt.a");
  if (a.Complete(h) != 0)
    return fail("failed to link " + std::to_string(inputs.size()) + " input(s)");
  size_t size = 0;
  if (a.GetLinkedCubinSize(h, &size) != 0)
    return fail("has no linked cubin");
  std::string cubin(size, '\0');
  if (a.GetLinkedCubin(h, cubin.data()) != 0)
    return fail("could not return the linked cubin");
  a.Destroy(&h);
  return cubin;
}

// nvJitLink's first link in a process costs about twice a later one (its
// assembler sets itself up: 23 ms against 11.5 ms here). nvjitlink_warm_up
// pays that on a thread of its own with an empty module while the caller
// compiles; the first real link waits for it rather than set up a second
// time beside it.
struct WarmUp {
  std::mutex mu;
  std::condition_variable cv;
  bool started = false, done = false;
  std::thread thread;
  // Joined at exit: the thread uses nvJitLink, which outlives it.
  ~WarmUp() {
    if (thread.joinable())
      thread.join();
  }
};

WarmUp& warm_up_state() {
  static WarmUp w;
  return w;
}

void wait_for_warm_up() {
  WarmUp& w = warm_up_state();
  std::unique_lock lock(w.mu);
  w.cv.wait(lock, [&] { return !w.started || w.done; });
}

} // namespace

void nvjitlink_warm_up(const std::string& arch, int ptx_isa) {
  // Where the ptxas program makes the images that need no link (image.cpp),
  // the usual ones, a warm-up would mostly set up a link never made, on a
  // thread that competes with code generation; the rare link still made
  // pays its own set-up.
  if (!ptxas_program_path().empty())
    return;
  const Api& a = api(); // before warm_up_state(), so that it is destroyed after it
  if (!a.error.empty() || ptx_isa <= 0)
    return;
  WarmUp& w = warm_up_state();
  std::lock_guard lock(w.mu);
  if (w.started)
    return;
  w.started = true;
  std::string ptx = ".version " + std::to_string(ptx_isa / 10) + "." +
                    std::to_string(ptx_isa % 10) + "\n.target " + arch +
                    "\n.address_size 64\n";
  w.thread = std::thread([&w, &a, arch, ptx] {
    // An empty module: what it sets up is the point, its result is not.
    (void)link_inputs(a, {NvInput{"warm-up", ptx, true}}, arch, false, 1);
    {
      std::lock_guard done(w.mu);
      w.done = true;
    }
    w.cv.notify_all();
  });
}

int nv_assembly_parts(const std::vector<NvInput>& inputs) {
  constexpr size_t kKernelsPerPart = 16;
  constexpr size_t kMaxParts = 8;
  size_t kernels = 0;
  for (const NvInput& in : inputs)
    if (in.ptx)
      kernels += count_kernels(in.bytes);
  return static_cast<int>(std::clamp<size_t>(kernels / kKernelsPerPart, 1, kMaxParts));
}

Result<std::string> nvjitlink_cubin(const std::vector<NvInput>& inputs, const std::string& arch,
                                    bool with_device_runtime, bool merge) {
  const Api& a = api();
  if (!a.error.empty())
    return make_error(Code::unavailable, a.error);
  wait_for_warm_up();
  if (fault::hit("link:nvjitlink"))
    return make_error(Code::internal, fault::message("link:nvjitlink") + " (linking for " + arch + ")")
        .with_target(arch);
  // Several PTX inputs go in as one module where that is the same program
  // (ptx_merge.h): nvJitLink assembles each input at a fixed cost. If the
  // merged module fails, the inputs are linked one by one, so that an error
  // names the job whose PTX it is in.
  std::vector<const std::string*> ptx;
  for (const NvInput& in : inputs)
    if (in.ptx)
      ptx.push_back(&in.bytes);
  // In parts where this nvJitLink's ptxas splits (13 and later).
  const int parts = a.splits ? nv_assembly_parts(inputs) : 1;
  if (merge && ptx.size() > 1) {
    if (auto merged = merge_ptx(ptx)) {
      // The merged module where the first PTX input was: the other inputs
      // keep their order around it.
      std::vector<NvInput> one;
      for (const NvInput& in : inputs) {
        if (!in.ptx)
          one.push_back(in);
        else if (&in.bytes == ptx.front())
          one.push_back({std::to_string(ptx.size()) + " jobs' PTX, as one module",
                         std::move(*merged), true});
      }
      if (auto cubin = link_inputs(a, one, arch, with_device_runtime, parts))
        return cubin;
    }
  }
  return link_inputs(a, inputs, arch, with_device_runtime, parts);
}

} // namespace kiln::link
