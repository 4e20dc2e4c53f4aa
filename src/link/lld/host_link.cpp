// Links a closure's host objects into one shared object with lld, in process.
// Built into libkiln-link, the only place besides the compiler that pulls in
// LLVM: the loader dlopens it only on an image miss.
#include "link/link_abi.h"

#include "support/files.h"

#include <lld/Common/Driver.h>
#include <llvm/Config/llvm-config.h>
#include <llvm/Support/raw_ostream.h>

#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

LLD_HAS_DRIVER(elf)

namespace kiln::link_detail {

char* dup_string(const std::string& s) {
  char* p = static_cast<char*>(std::malloc(s.size() + 1));
  std::memcpy(p, s.c_str(), s.size() + 1);
  return p;
}

// lld keeps global state per link; it may run again afterwards but not
// concurrently, so links in one process take turns.
std::mutex& lld_mutex() {
  static std::mutex mu;
  return mu;
}

} // namespace kiln::link_detail

using kiln::link_detail::dup_string;

namespace {
// Inputs from which a host link uses lld's thread pool (a kernel library).
constexpr size_t kParallelLinkInputs = 64;
} // namespace

extern "C" int kiln_link_host_shared(const kiln_link_input* inputs, size_t count, char** out,
                                     size_t* out_size, char** error) {
  *out = nullptr;
  *out_size = 0;
  *error = nullptr;
  auto fail = [&](const std::string& msg) {
    *error = dup_string(msg);
    return 1;
  };
  if (count == 0)
    return fail("nothing to link");

  // lld reads inputs from files and writes its output through a temp file
  // and rename, so it works in a private directory removed on return.
  auto dir = kiln::TempDir::create("kiln-link");
  if (!dir)
    return fail(dir.error().message);
  std::vector<std::string> paths;
  for (size_t i = 0; i < count; ++i) {
    std::string p = dir->path() + "/" + std::to_string(i) + ".o";
    kiln::Status s = kiln::write_scratch_file(p, std::string_view(inputs[i].data, inputs[i].size));
    if (!s)
      return fail(s.error().message);
    paths.push_back(std::move(p));
  }
  std::string output = dir->path() + "/image.so";
  std::vector<const char*> args = {"ld.lld", "-shared", "-o", output.c_str(),
                                   // No build id, no timestamps: the image is a pure function
                                   // of its inputs, so two links give identical bytes.
                                   "--build-id=none", "--hash-style=gnu",
                                   // References between jobs bind inside the image, never
                                   // to a same-named symbol elsewhere in the process.
                                   "-Bsymbolic", "-z", "noexecstack", "-z", "relro", "-z", "now",
                                   "-soname", "kiln-image", "--no-undefined-version"};
  // lld spreads its work over a thread pool by input; a link of a few
  // objects (a root's closure) has nothing to spread and pays only the
  // hand-offs. The output does not depend on the thread count.
  if (count < kParallelLinkInputs)
    args.push_back("--threads=1");
  for (const std::string& p : paths)
    args.push_back(p.c_str());

  std::string diag;
  llvm::raw_string_ostream diag_os(diag);
  int rc;
  {
    std::lock_guard lock(kiln::link_detail::lld_mutex());
    lld::Result r = lld::lldMain(args, diag_os, diag_os, {{lld::Gnu, &lld::elf::link}});
    rc = r.retCode;
  }
  diag_os.flush();
  if (rc != 0)
    return fail("lld failed to link " + std::to_string(count) + " object(s)" +
                (inputs[0].name ? std::string(" (first: ") + inputs[0].name + ")" : "") + ": " +
                diag);
  auto bytes = kiln::read_file(output);
  if (!bytes)
    return fail(bytes.error().message);
  *out = static_cast<char*>(std::malloc(bytes->size() ? bytes->size() : 1));
  std::memcpy(*out, bytes->data(), bytes->size());
  *out_size = bytes->size();
  return 0;
}

extern "C" const char* kiln_link_fingerprint(void) { return "lld " LLVM_VERSION_STRING; }

extern "C" void kiln_link_free(void* p) { std::free(p); }
