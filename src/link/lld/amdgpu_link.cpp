// AMDGPU images: the closure's finished bitcode is linked at IR level into
// one module, compiled once for the device, and lld makes the HSACO. Linking
// objects instead would leave calls across jobs unable to size registers,
// scratch and LDS; one module lets the backend see the whole call graph.
#include "link/link_abi.h"
#include "link/lld/object_stream.h"

#include "support/files.h"

#include <lld/Common/Driver.h>
#include <llvm/Bitcode/BitcodeReader.h>
#include <llvm/Bitcode/BitcodeWriter.h>
#include <llvm/IR/DiagnosticInfo.h>
#include <llvm/IR/DiagnosticPrinter.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/Module.h>
#include <llvm/Linker/Linker.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Support/Error.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/TargetParser/Triple.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

namespace kiln::link_detail {
std::mutex& lld_mutex();
char* dup_string(const std::string& s);
} // namespace kiln::link_detail

LLD_HAS_DRIVER(elf)

using kiln::link_detail::dup_string;

namespace {

// Collects the IR linker's and the backend's errors: without a handler LLVM
// prints them and exits the process.
struct CollectDiagnostics : llvm::DiagnosticHandler {
  std::string* sink;
  explicit CollectDiagnostics(std::string* s) : sink(s) {}
  bool handleDiagnostics(const llvm::DiagnosticInfo& di) override {
    if (di.getSeverity() == llvm::DS_Error) {
      llvm::raw_string_ostream os(*sink);
      llvm::DiagnosticPrinterRawOStream dp(os);
      di.print(dp);
      os << "\n";
    }
    return true;
  }
};

// One code generator per thread and (cpu, features), kept for the process:
// the target machine (creating one builds the subtarget's register tables,
// thousands of AMDGPU registers with their alias lists sorted) and the
// codegen pass pipeline with its output stream. Building the pipeline and
// its first run on a module cost more than compiling a small kernel: the
// register allocator sizes its tables by register units, and AMDGPU has
// thousands, allocated and faulted in anew by every new pipeline. A
// pipeline is used by one thread, one module after another, as llc runs it
// over the functions of one module; each module's object depends only on
// that module (tests/unit/link/test_amdgpu_link.cpp checks it against new
// pipelines, after a failed module too).
struct CodeGenerator {
  std::unique_ptr<llvm::TargetMachine> machine;
  kiln::link::ObjectStream out;
  llvm::legacy::PassManager passes;
};

std::map<std::string, std::unique_ptr<CodeGenerator>>& code_generators() {
  thread_local std::map<std::string, std::unique_ptr<CodeGenerator>> generators;
  return generators;
}

// The thread's code generator for (cpu, features), built on first use;
// nullptr with `error` set if the target machine or its pipeline cannot be.
CodeGenerator* code_generator(const llvm::Target* t, const llvm::Triple& triple,
                              const std::string& cpu, const std::string& features,
                              std::string& error) {
  std::unique_ptr<CodeGenerator>& g = code_generators()[cpu + '\n' + features];
  if (g)
    return g.get();
  auto fresh = std::make_unique<CodeGenerator>();
  fresh->machine.reset(t->createTargetMachine(triple, cpu, features, llvm::TargetOptions(),
                                              std::nullopt, std::nullopt,
                                              llvm::CodeGenOptLevel::Default));
  if (!fresh->machine) {
    error = "cannot create a target machine";
    return nullptr;
  }
  if (fresh->machine->addPassesToEmitFile(fresh->passes, fresh->out, nullptr,
                                          llvm::CodeGenFileType::ObjectFile)) {
    error = "the backend cannot emit an object";
    return nullptr;
  }
  g = std::move(fresh);
  return g.get();
}

// Drops the thread's code generator for (cpu, features): after a module
// failed, nothing of its state is carried to the next.
void drop_code_generator(const std::string& cpu, const std::string& features) {
  code_generators().erase(cpu + '\n' + features);
}

// A closure's module with many kernels is split for code generation, as
// LTO's partitions are (the AMDGPU backend's own splitter keeps each
// kernel's call graph in its part, so no call crosses two objects), and the
// parts are compiled in parallel and linked by lld. The number of parts
// follows from the module alone, never from the threads, so an image has
// the same bytes at any -j.
constexpr unsigned kKernelsPerPart = 16;
constexpr unsigned kMaxParts = 8;

unsigned parts_for(const llvm::Module& m) {
  unsigned kernels = 0;
  for (const llvm::Function& f : m)
    if (!f.isDeclaration() && f.getCallingConv() == llvm::CallingConv::AMDGPU_KERNEL)
      ++kernels;
  return std::clamp(kernels / kKernelsPerPart, 1u, kMaxParts);
}

// The object of `m`, whose context reports its errors into `diagnostics`,
// from this thread's code generator; empty with `error` set if it fails.
std::string emit_object(const llvm::Target* t, const llvm::Triple& triple, const std::string& cpu,
                        const std::string& features, llvm::Module& m,
                        const std::string& diagnostics, std::string& error) {
  CodeGenerator* gen = code_generator(t, triple, cpu, features, error);
  if (!gen)
    return {};
  m.setDataLayout(gen->machine->createDataLayout());
  gen->passes.run(m);
  std::string object = gen->out.take();
  if (!diagnostics.empty()) {
    drop_code_generator(cpu, features);
    error = "code generation failed: " + diagnostics;
    return {};
  }
  return object;
}

// The object of one part, given as bitcode: each thread compiles in its own
// context.
std::string emit_part(const llvm::Target* t, const llvm::Triple& triple, const std::string& cpu,
                      const std::string& features, const std::string& bitcode,
                      std::string& error) {
  llvm::LLVMContext ctx;
  std::string diagnostics;
  ctx.setDiagnosticHandler(std::make_unique<CollectDiagnostics>(&diagnostics));
  auto m = llvm::parseBitcodeFile(llvm::MemoryBufferRef(bitcode, "part"), ctx);
  if (!m) {
    error = "cannot read a part of the module: " + llvm::toString(m.takeError());
    return {};
  }
  return emit_object(t, triple, cpu, features, **m, diagnostics, error);
}

// The closure's bitcode linked into one module of `ctx`, whose handler
// collects errors into `diagnostics`; nullptr with `error` set if a job's
// bitcode cannot be read or linked.
std::unique_ptr<llvm::Module> link_bitcode(const kiln_link_input* bitcode, size_t count,
                                           llvm::LLVMContext& ctx, const std::string& diagnostics,
                                           std::string& error) {
  std::unique_ptr<llvm::Module> linked;
  for (size_t i = 0; i < count; ++i) {
    auto m = llvm::parseBitcodeFile(
        llvm::MemoryBufferRef(llvm::StringRef(bitcode[i].data, bitcode[i].size),
                              bitcode[i].name ? bitcode[i].name : "job"),
        ctx);
    if (!m) {
      error = std::string("cannot read bitcode of ") + (bitcode[i].name ? bitcode[i].name : "?") +
              ": " + llvm::toString(m.takeError());
      return nullptr;
    }
    if (!linked) {
      linked = std::move(*m);
    } else if (llvm::Linker::linkModules(*linked, std::move(*m))) {
      error = std::string("IR link failed at ") + (bitcode[i].name ? bitcode[i].name : "?") +
              ": " + diagnostics;
      return nullptr;
    }
  }
  return linked;
}

// The parts of `m` as bitcode (parts_for), by the backend's own splitter;
// none when one part is enough.
std::vector<std::string> split_into_parts(llvm::TargetMachine& machine, llvm::Module& m) {
  std::vector<std::string> parts;
  if (unsigned n = parts_for(m); n > 1)
    machine.splitModule(m, n, [&](std::unique_ptr<llvm::Module> part) {
      std::string bc;
      llvm::raw_string_ostream os(bc);
      llvm::WriteBitcodeToFile(*part, os);
      os.flush();
      parts.push_back(std::move(bc));
    });
  return parts;
}

// The objects of `parts`, compiled on up to `threads` threads; `error` set,
// naming the first part that failed, if any did.
std::vector<std::string> emit_parts(const llvm::Target* t, const llvm::Triple& triple,
                                    const std::string& cpu, const std::string& features,
                                    const std::vector<std::string>& parts, unsigned threads,
                                    std::string& error) {
  // Each part on the next free thread, this one included; which thread
  // compiles a part does not change its object.
  std::vector<std::string> objects(parts.size());
  std::vector<std::string> errors(parts.size());
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i; (i = next++) < parts.size();)
      objects[i] = emit_part(t, triple, cpu, features, parts[i], errors[i]);
  };
  std::vector<std::thread> helpers;
  for (size_t w = 1; w < std::min<size_t>(threads, parts.size()); ++w) {
    try {
      helpers.emplace_back(work);
    } catch (const std::system_error&) {
      break; // no more threads: the others take its parts
    }
  }
  work();
  for (std::thread& h : helpers)
    h.join();
  for (size_t i = 0; i < parts.size(); ++i)
    if (!errors[i].empty()) {
      error = errors[i] + " (part " + std::to_string(i + 1) + " of " +
              std::to_string(parts.size()) + ")";
      break;
    }
  return objects;
}

// The HSACO lld links from `objects`; nullopt with `error` set if it fails.
std::optional<std::string> link_hsaco(const std::vector<std::string>& objects,
                                      std::string& error) {
  auto dir = kiln::TempDir::create("kiln-hsaco");
  if (!dir) {
    error = dir.error().message;
    return std::nullopt;
  }
  std::string output = dir->path() + "/image.hsaco";
  std::vector<std::string> inputs;
  for (size_t i = 0; i < objects.size(); ++i) {
    inputs.push_back(dir->path() + "/part" + std::to_string(i) + ".o");
    if (kiln::Status s = kiln::write_scratch_file(inputs.back(), objects[i]); !s) {
      error = s.error().message;
      return std::nullopt;
    }
  }
  // A few objects: lld's thread pool would only hand them from thread to
  // thread.
  std::vector<const char*> args = {"ld.lld",          "-shared",     "--no-undefined",
                                   "--build-id=none", "--threads=1", "-o",
                                   output.c_str()};
  for (const std::string& in : inputs)
    args.push_back(in.c_str());
  std::string diag;
  llvm::raw_string_ostream diag_os(diag);
  int rc;
  {
    std::lock_guard lock(kiln::link_detail::lld_mutex());
    rc = lld::lldMain(args, diag_os, diag_os, {{lld::Gnu, &lld::elf::link}}).retCode;
  }
  diag_os.flush();
  if (rc != 0) {
    error = "lld failed: " + diag;
    return std::nullopt;
  }
  auto bytes = kiln::read_file(output);
  if (!bytes) {
    error = bytes.error().message;
    return std::nullopt;
  }
  return bytes.take();
}

} // namespace

extern "C" int kiln_link_amdgpu_image(const kiln_link_input* bitcode, size_t count,
                                      const char* cpu, const char* features, unsigned threads,
                                      char** out, size_t* out_size, char** error) {
  *out = nullptr;
  *out_size = 0;
  *error = nullptr;
  auto fail = [&](const std::string& msg) {
    *error = dup_string("AMDGPU link for " + std::string(cpu) + ": " + msg);
    return 1;
  };
  static std::once_flag once;
  std::call_once(once, [] {
    LLVMInitializeAMDGPUTargetInfo();
    LLVMInitializeAMDGPUTarget();
    LLVMInitializeAMDGPUTargetMC();
    LLVMInitializeAMDGPUAsmPrinter();
  });
  if (count == 0)
    return fail("nothing to link");

  llvm::LLVMContext ctx;
  std::string diagnostics;
  ctx.setDiagnosticHandler(std::make_unique<CollectDiagnostics>(&diagnostics));
  std::string link_error;
  std::unique_ptr<llvm::Module> linked = link_bitcode(bitcode, count, ctx, diagnostics, link_error);
  if (!linked)
    return fail(link_error);

  llvm::Triple triple("amdgcn-amd-amdhsa");
  std::string err;
  const llvm::Target* t = llvm::TargetRegistry::lookupTarget(triple, err);
  if (!t)
    return fail("no AMDGPU backend: " + err);
  const std::string feature_string = features ? features : "";
  std::string generator_error;
  CodeGenerator* gen = code_generator(t, triple, cpu, feature_string, generator_error);
  if (!gen)
    return fail(generator_error);
  linked->setDataLayout(gen->machine->createDataLayout());
  const std::vector<std::string> parts = split_into_parts(*gen->machine, *linked);
  if (!diagnostics.empty())
    return fail("splitting the module failed: " + diagnostics);

  std::vector<std::string> objects;
  std::string e;
  if (parts.empty())
    objects.push_back(emit_object(t, triple, cpu, feature_string, *linked, diagnostics, e));
  else
    objects = emit_parts(t, triple, cpu, feature_string, parts, threads, e);
  if (!e.empty())
    return fail(e);

  std::optional<std::string> image = link_hsaco(objects, e);
  if (!image)
    return fail(e);
  *out = static_cast<char*>(std::malloc(image->size() ? image->size() : 1));
  std::memcpy(*out, image->data(), image->size());
  *out_size = image->size();
  return 0;
}
