#include "codegen/device_libs.h"
#include "codegen/ptxas.h"
#include "core/check.h"

#include "support/files.h"
#include "support/hash.h"

#include <llvm/ADT/SmallVector.h>
#include <llvm/ADT/StringRef.h>
#include <llvm/Bitcode/BitcodeReader.h>
#include <llvm/IR/Constants.h>
#include <llvm/IR/GlobalVariable.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/Linker/Linker.h>
#include <llvm/Support/Error.h>
#include <llvm/Support/MemoryBuffer.h>

#include <cstdlib>
#include <mutex>
#include <unistd.h>

namespace kiln::codegen {

namespace {

// What parsing a library file whole registers in an LLVMContext, in order:
// the metadata kinds, sync scopes and operand bundle tags its functions use.
// A lazy link registers only those of the functions it takes, but bitcode
// written from the context lists all of them: registering the rest first
// leaves the context as a whole parse would, so the job's bytes stay the same.
struct ContextNames {
  std::vector<std::string> kinds, scopes, tags;
};

struct Library {
  explicit Library(std::string n) : name(std::move(n)) {}
  std::string name;                ///< "libdevice", "rocm-device-libs"
  std::vector<std::string> files;  ///< bitcode files, linked in order
  std::vector<std::string> bytes;  ///< their contents
  std::string fingerprint;         ///< hash of all contents
  std::string error;               ///< why it is unavailable
  // Per file, what a whole parse registers (with_context_names).
  mutable std::once_flag names_once;
  mutable std::vector<ContextNames> names;
  mutable std::string names_error;
};

std::string first_existing(const std::vector<std::string>& candidates) {
  for (const std::string& c : candidates)
    if (!c.empty() && ::access(c.c_str(), R_OK) == 0)
      return c;
  return {};
}

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

void load(Library& lib, const std::vector<std::string>& files, const std::string& looked) {
  if (files.empty()) {
    lib.error = lib.name + " is not installed (looked in " + looked + ")";
    return;
  }
  std::string all;
  for (const std::string& f : files) {
    auto b = read_file(f);
    if (!b) {
      lib.error = b.error().message;
      return;
    }
    all += hash128(*b).hex();
    lib.bytes.push_back(b.take());
  }
  lib.files = files;
  lib.fingerprint = lib.name + " " + hash128(all).short_hex(16);
}

// Where the device libraries are: the first candidate that exists.
std::string libdevice_path() {
  std::string cuda = env("CUDA_HOME");
  return first_existing(
      {env("KILN_LIBDEVICE"), cuda.empty() ? "" : cuda + "/nvvm/libdevice/libdevice.10.bc",
       "/usr/local/cuda/nvvm/libdevice/libdevice.10.bc",
       "/usr/lib/nvidia-cuda-toolkit/libdevice/libdevice.10.bc"});
}

std::string rocm_device_libs_dir() {
  for (const std::string& d : {env("KILN_ROCM_DEVICE_LIBS"),
                               std::string("/usr/lib/x86_64-linux-gnu/amdgcn/bitcode"),
                               std::string("/opt/rocm/amdgcn/bitcode")})
    if (!d.empty() && ::access((d + "/ocml.bc").c_str(), R_OK) == 0)
      return d;
  return {};
}

// The ROCm device libraries HIP code calls into: hip.bc (the memory fence
// __syncthreads() uses; ROCm releases that fold it into ockl have none),
// ocml (math), ockl (work-item queries, printf through hostcall, malloc).
// The oclc_* controls are defined by define_oclc_controls instead.
std::vector<std::string> rocm_device_lib_files(const std::string& dir) {
  std::vector<std::string> files;
  if (::access((dir + "/hip.bc").c_str(), R_OK) == 0)
    files.push_back(dir + "/hip.bc");
  files.push_back(dir + "/ocml.bc");
  files.push_back(dir + "/ockl.bc");
  return files;
}

const Library& libdevice() {
  static Library lib("libdevice");
  static std::once_flag once;
  std::call_once(once, [] {
    std::string path = libdevice_path();
    load(lib, path.empty() ? std::vector<std::string>{} : std::vector<std::string>{path},
         "$KILN_LIBDEVICE, $CUDA_HOME/nvvm/libdevice, /usr/local/cuda/nvvm/libdevice");
  });
  return lib;
}

const Library& rocm_device_libs() {
  static Library lib("rocm-device-libs");
  static std::once_flag once;
  std::call_once(once, [] {
    std::string dir = rocm_device_libs_dir();
    load(lib, dir.empty() ? std::vector<std::string>{} : rocm_device_lib_files(dir),
         "$KILN_ROCM_DEVICE_LIBS, /usr/lib/x86_64-linux-gnu/amdgcn/bitcode, /opt/rocm/amdgcn/bitcode "
         "(Debian package rocm-device-libs)");
  });
  return lib;
}

template <class Names>
std::vector<std::string> names_from(const Names& all, size_t skip) {
  std::vector<std::string> out;
  for (size_t i = skip; i < all.size(); ++i)
    out.push_back(all[i].str());
  return out;
}

ContextNames registered_names(const llvm::LLVMContext& ctx, const ContextNames& skip = {}) {
  llvm::SmallVector<llvm::StringRef, 64> kinds, scopes, tags;
  ctx.getMDKindNames(kinds);
  ctx.getSyncScopeNames(scopes);
  ctx.getOperandBundleTags(tags);
  return {names_from(kinds, skip.kinds.size()), names_from(scopes, skip.scopes.size()),
          names_from(tags, skip.tags.size())};
}

// The names a whole parse of each of the library's files registers beyond
// those every context starts with.
const Library& with_context_names(const Library& lib) {
  std::call_once(lib.names_once, [&lib] {
    const ContextNames initial = registered_names(llvm::LLVMContext());
    for (size_t i = 0; i < lib.files.size(); ++i) {
      llvm::LLVMContext ctx;
      auto parsed = llvm::parseBitcodeFile(llvm::MemoryBufferRef(lib.bytes[i], lib.files[i]), ctx);
      if (!parsed) {
        lib.names_error = "cannot read " + lib.files[i] + ": " + llvm::toString(parsed.takeError());
        return;
      }
      lib.names.push_back(registered_names(ctx, initial));
    }
  });
  return lib;
}

void register_names(llvm::LLVMContext& ctx, const ContextNames& names) {
  for (const std::string& k : names.kinds)
    ctx.getMDKindID(k);
  for (const std::string& s : names.scopes)
    ctx.getOrInsertSyncScopeID(s);
  for (const std::string& t : names.tags)
    ctx.getOrInsertBundleTag(t);
}

// True if `kind`'s device library defines `callee`: libdevice's __nv_*;
// the ROCm libraries' __ocml_*, __ockl_*, __oclc_* and hip.bc's fence.
bool device_lib_defines(TargetKind kind, const std::string& callee) {
  auto starts = [&](const char* p) { return callee.rfind(p, 0) == 0; };
  if (kind == TargetKind::nvptx)
    return starts("__nv_");
  if (kind == TargetKind::amdgpu)
    return starts("__ocml_") || starts("__ockl_") || starts("__oclc_") ||
           callee == "__atomic_work_item_fence";
  return false;
}

const Library* library_for(const TargetDesc& target, const std::vector<std::string>& callees) {
  for (const std::string& c : callees)
    if (device_lib_defines(target.kind, c))
      return target.kind == TargetKind::nvptx ? &libdevice() : &rocm_device_libs();
  return nullptr;
}

} // namespace

std::vector<std::string> toolchain_files(const TargetDesc& target) {
  std::vector<std::string> files;
  if (target.kind == TargetKind::nvptx) {
    // The ptxas program, where it assembles; the library is part of Kiln.
    if (ptx_assembler() == PtxAssembler::program)
      files.push_back(ptxas_path());
    if (std::string lib = libdevice_path(); !lib.empty())
      files.push_back(lib);
  } else if (target.kind == TargetKind::amdgpu) {
    if (std::string dir = rocm_device_libs_dir(); !dir.empty())
      for (std::string& f : rocm_device_lib_files(dir))
        files.push_back(std::move(f));
  }
  return files;
}

namespace {

// __oclc_ISA_version for a gfx name: major * 1000 + minor * 100 + stepping,
// the last two characters being minor and stepping (hex: gfx90a is 9.0.10).
int isa_version(const std::string& cpu) {
  std::string digits = cpu.substr(3);
  auto hex = [](char c) { return c >= 'a' ? c - 'a' + 10 : c - '0'; };
  int stepping = hex(digits.back());
  int minor = hex(digits[digits.size() - 2]);
  int major = std::atoi(digits.substr(0, digits.size() - 2).c_str());
  return major * 1000 + minor * 100 + stepping;
}

// The ROCm device libraries read their configuration from these constants,
// which the oclc_*.bc files would otherwise provide one per setting and ISA.
void define_oclc_controls(llvm::Module& m, const TargetDesc& target) {
  int isa = isa_version(target.cpu);
  // The device libraries find implicit kernel arguments (hostcall buffer,
  // heap) where the code object version puts them: the module's own.
  int abi = 500;
  if (auto* v = llvm::mdconst::extract_or_null<llvm::ConstantInt>(
          m.getModuleFlag("amdhsa_code_object_version")))
    abi = int(v->getZExtValue());
  struct Control {
    const char* name;
    int bits;
    int value;
  };
  const Control controls[] = {
      {"__oclc_ISA_version", 32, isa},
      {"__oclc_ABI_version", 32, abi},
      {"__oclc_wavefrontsize64", 8, isa < 10000 ? 1 : 0}, // gfx9: wave64; gfx10+: wave32
      {"__oclc_daz_opt", 8, 0},
      {"__oclc_finite_only_opt", 8, 0},
      {"__oclc_unsafe_math_opt", 8, 0},
      {"__oclc_correctly_rounded_sqrt32", 8, 1},
  };
  for (const Control& c : controls) {
    llvm::GlobalVariable* gv = m.getGlobalVariable(c.name, /*AllowInternal=*/true);
    if (!gv || !gv->isDeclaration())
      continue;
    auto* ty = llvm::IntegerType::get(m.getContext(), unsigned(c.bits));
    gv->setInitializer(llvm::ConstantInt::get(ty, uint64_t(c.value)));
    gv->setConstant(true);
    gv->setLinkage(llvm::GlobalValue::InternalLinkage);
  }
}

} // namespace

Result<std::string> device_libs_fingerprint(const TargetDesc& target,
                                            const std::vector<std::string>& callees) {
  const Library* lib = library_for(target, callees);
  if (!lib)
    return std::string();
  if (!lib->error.empty())
    return make_error(Code::unavailable, lib->error);
  return "; " + lib->fingerprint;
}

Status check_callees(const TargetDesc& target, const std::string& entry,
                     const std::vector<std::string>& callees) {
  auto starts = [](const std::string& s, const char* p) { return s.rfind(p, 0) == 0; };
  for (const std::string& c : callees) {
    bool provided = false;
    std::string hint;
    if (target.kind == TargetKind::host) {
      provided = true;
    } else if (target.kind == TargetKind::nvptx) {
      provided = device_lib_defines(target.kind, c) || c == "__nvvm_reflect" ||
                 starts(c, "cuda") || starts(c, "__cuda") || core::supplied_at_load(target.kind, c);
      hint = "libdevice (__nv_*), the CUDA device runtime (cuda*) or the driver (vprintf, "
             "malloc, free, __assertfail, cudaGraphSetConditional, ...)";
    } else {
      provided = device_lib_defines(target.kind, c);
      hint = "the ROCm device libraries (__ocml_*, __ockl_*)";
    }
    if (provided)
      continue;
    std::string msg = "job '" + entry + "' calls '" + c + "', which neither the unit nor " +
                      hint + " defines, so no " + target.spec + " image could link";
    if (starts(c, "_Zn") || starts(c, "_Zd"))
      msg += " (device operator new/delete: include <new> in the CUDA or HIP source)";
    else
      msg += " (link the IR that defines it into the unit: give Kiln every .ll/.bc file)";
    return make_error(Code::invalid_argument, msg).with_entry(entry).with_target(target.spec);
  }
  return Status::ok();
}

Status link_device_libs(llvm::Module& m, const TargetDesc& target, LibraryLoading loading) {
  std::vector<std::string> callees;
  for (const llvm::Function& f : m)
    if (f.isDeclaration() && !f.isIntrinsic())
      callees.push_back(f.getName().str());
  const Library* lib = library_for(target, callees);
  if (!lib)
    return Status::ok();
  if (!lib->error.empty())
    return make_error(Code::unavailable, lib->error);
  if (loading == LibraryLoading::lazy && !with_context_names(*lib).names_error.empty())
    return make_error(Code::internal, lib->names_error);
  for (size_t i = 0; i < lib->files.size(); ++i) {
    llvm::MemoryBufferRef bytes(lib->bytes[i], lib->files[i]);
    if (loading == LibraryLoading::lazy)
      register_names(m.getContext(), lib->names[i]);
    // Lazily: only the bodies the linker pulls in are read.
    llvm::Expected<std::unique_ptr<llvm::Module>> parsed =
        loading == LibraryLoading::lazy
            ? llvm::getOwningLazyBitcodeModule(llvm::MemoryBuffer::getMemBuffer(bytes, false),
                                               m.getContext())
            : llvm::parseBitcodeFile(bytes, m.getContext());
    if (!parsed)
      return make_error(Code::internal, "cannot read " + lib->files[i] + ": " +
                                            llvm::toString(parsed.takeError()));
    std::unique_ptr<llvm::Module> dep = std::move(*parsed);
    // The libraries name generic triples ("nvptx64-nvidia-gpulibs"); the job's
    // target decides.
    dep->setTargetTriple(m.getTargetTriple());
    dep->setDataLayout(m.getDataLayout());
    if (llvm::Linker::linkModules(m, std::move(dep), llvm::Linker::Flags::LinkOnlyNeeded))
      return make_error(Code::internal, "cannot link " + lib->files[i] + " into the job");
  }
  if (target.kind == TargetKind::amdgpu)
    define_oclc_controls(m, target);
  return Status::ok();
}

} // namespace kiln::codegen
