// Finds and loads libkiln-link (lld, and so LLVM) the first time an image
// must be relinked. A process that only loads cached images never maps it.
#include "link/plugin.h"

#include "link/link_abi.h"
#include "support/fault.h"

#include <dlfcn.h>

#include <mutex>

#ifndef KILN_LINKER_FINGERPRINT
#error "KILN_LINKER_FINGERPRINT must name the lld version libkiln-link is built with"
#endif

namespace kiln::link {

namespace {

struct LinkApi {
  decltype(&kiln_link_host_shared) link_host_shared = nullptr;
  decltype(&kiln_link_amdgpu_image) link_amdgpu = nullptr;
  decltype(&kiln_link_fingerprint) fingerprint = nullptr;
  decltype(&kiln_link_free) free = nullptr;
  std::string error;
};

// The linker library sits beside libkiln (build tree and install tree alike).
std::string sibling_path(const char* file) {
  Dl_info info;
  if (dladdr(reinterpret_cast<void*>(&sibling_path), &info) && info.dli_fname) {
    std::string self = info.dli_fname;
    if (auto slash = self.rfind('/'); slash != std::string::npos)
      return self.substr(0, slash + 1) + file;
  }
  return file;
}

const LinkApi& link_api() {
  static LinkApi api;
  static std::once_flag once;
  std::call_once(once, [] {
    if (const char* forced = std::getenv("KILN_LINK_LIBRARY"); forced && !*forced) {
      api.error = "the linker is disabled (KILN_LINK_LIBRARY is empty)";
      return;
    }
    const char* env = std::getenv("KILN_LINK_LIBRARY");
    std::string path = env ? std::string(env) : sibling_path(KILN_LINK_LIBRARY);
    bool injected = fault::hit("dlopen:kiln-link");
    void* h = injected ? nullptr : dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!h) {
      const char* e = injected ? "injected fault at dlopen:kiln-link" : dlerror();
      api.error = "cannot load the linker library '" + path + "': " + (e ? e : "unknown");
      return;
    }
    api.link_host_shared =
        reinterpret_cast<decltype(api.link_host_shared)>(dlsym(h, "kiln_link_host_shared"));
    api.link_amdgpu =
        reinterpret_cast<decltype(api.link_amdgpu)>(dlsym(h, "kiln_link_amdgpu_image"));
    api.fingerprint = reinterpret_cast<decltype(api.fingerprint)>(dlsym(h, "kiln_link_fingerprint"));
    api.free = reinterpret_cast<decltype(api.free)>(dlsym(h, "kiln_link_free"));
    if (!api.link_host_shared || !api.link_amdgpu || !api.fingerprint || !api.free)
      api.error = "the linker library '" + path + "' lacks Kiln's link entry points";
    else if (std::string(api.fingerprint()) != KILN_LINKER_FINGERPRINT)
      api.error = "the linker library '" + path + "' is " + api.fingerprint() +
                  ", but this loader expects " KILN_LINKER_FINGERPRINT;
  });
  return api;
}

} // namespace

const char* lld_fingerprint() { return KILN_LINKER_FINGERPRINT; }

namespace {

// Marshals inputs across the C boundary, runs one of the library's link
// entry points, and takes ownership of what it returns.
template <typename Call>
Result<std::string> call_linker(const char* fault_point, const std::vector<std::string>& blobs,
                                const std::vector<std::string>& names, Call call) {
  const LinkApi& api = link_api();
  if (!api.error.empty())
    return make_error(Code::unavailable, api.error);
  if (fault::hit(fault_point))
    return make_error(Code::internal, fault::message(fault_point));
  std::vector<kiln_link_input> in;
  for (size_t i = 0; i < blobs.size(); ++i)
    in.push_back({blobs[i].data(), blobs[i].size(), names[i].c_str()});
  char* out = nullptr;
  size_t out_size = 0;
  char* err = nullptr;
  if (call(api, in, &out, &out_size, &err) != 0) {
    std::string msg = err ? err : "link failed";
    api.free(err);
    return make_error(Code::internal, msg);
  }
  std::string bytes(out, out_size);
  api.free(out);
  return bytes;
}

} // namespace

Result<std::string> link_host_image(const std::vector<std::string>& objects,
                                    const std::vector<std::string>& names) {
  return call_linker("link:host", objects, names,
                     [](const LinkApi& api, const std::vector<kiln_link_input>& in, char** out,
                        size_t* size, char** err) {
                       return api.link_host_shared(in.data(), in.size(), out, size, err);
                     });
}

Result<std::string> link_amdgpu_image(const std::vector<std::string>& bitcode,
                                      const std::vector<std::string>& names,
                                      const std::string& cpu, const std::string& features,
                                      unsigned threads) {
  return call_linker("link:amdgpu", bitcode, names,
                     [&](const LinkApi& api, const std::vector<kiln_link_input>& in, char** out,
                         size_t* size, char** err) {
                       return api.link_amdgpu(in.data(), in.size(), cpu.c_str(), features.c_str(),
                                              threads, out, size, err);
                     });
}

} // namespace kiln::link
