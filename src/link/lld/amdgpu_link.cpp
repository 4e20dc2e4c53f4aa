// AMDGPU images: the closure's finished bitcode is linked at IR level into
// one module, compiled once for the device, and lld makes the HSACO. Linking
// objects instead would leave calls across jobs unable to size registers,
// scratch and LDS; one module lets the backend see the whole call graph.
#include "link/link_abi.h"

#include "support/files.h"

#include <lld/Common/Driver.h>
#include <llvm/Bitcode/BitcodeReader.h>
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

#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>

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

// One target machine per thread and (cpu, features), kept for the process:
// creating one builds the subtarget's register tables (thousands of AMDGPU
// registers, their alias lists sorted), which cost as much as compiling a
// small kernel. A machine is used by one thread at a time, one module after
// another, as llc would; its output does not depend on what it compiled before.
llvm::TargetMachine* target_machine(const llvm::Target* t, const llvm::Triple& triple,
                                    const std::string& cpu, const std::string& features) {
  thread_local std::map<std::string, std::unique_ptr<llvm::TargetMachine>> machines;
  std::unique_ptr<llvm::TargetMachine>& tm = machines[cpu + '\n' + features];
  if (!tm)
    tm.reset(t->createTargetMachine(triple, cpu, features, llvm::TargetOptions(), std::nullopt,
                                    std::nullopt, llvm::CodeGenOptLevel::Default));
  return tm.get();
}

} // namespace

extern "C" int kiln_link_amdgpu(const kiln_link_input* bitcode, size_t count, const char* cpu,
                                const char* features, char** out, size_t* out_size, char** error) {
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
  std::unique_ptr<llvm::Module> linked;
  for (size_t i = 0; i < count; ++i) {
    auto m = llvm::parseBitcodeFile(
        llvm::MemoryBufferRef(llvm::StringRef(bitcode[i].data, bitcode[i].size),
                              bitcode[i].name ? bitcode[i].name : "job"),
        ctx);
    if (!m)
      return fail(std::string("cannot read bitcode of ") + (bitcode[i].name ? bitcode[i].name : "?") +
                  ": " + llvm::toString(m.takeError()));
    if (!linked) {
      linked = std::move(*m);
    } else if (llvm::Linker::linkModules(*linked, std::move(*m))) {
      return fail(std::string("IR link failed at ") + (bitcode[i].name ? bitcode[i].name : "?") +
                  ": " + diagnostics);
    }
  }

  llvm::Triple triple("amdgcn-amd-amdhsa");
  std::string err;
  const llvm::Target* t = llvm::TargetRegistry::lookupTarget(triple, err);
  if (!t)
    return fail("no AMDGPU backend: " + err);
  llvm::TargetMachine* tm = target_machine(t, triple, cpu, features ? features : "");
  if (!tm)
    return fail("cannot create a target machine");
  linked->setDataLayout(tm->createDataLayout());

  llvm::SmallVector<char, 0> obj;
  {
    llvm::raw_svector_ostream os(obj);
    llvm::legacy::PassManager pm;
    if (tm->addPassesToEmitFile(pm, os, nullptr, llvm::CodeGenFileType::ObjectFile))
      return fail("the backend cannot emit an object");
    pm.run(*linked);
  }
  if (!diagnostics.empty())
    return fail("code generation failed: " + diagnostics);

  auto dir = kiln::TempDir::create("kiln-hsaco");
  if (!dir)
    return fail(dir.error().message);
  std::string in = dir->path() + "/closure.o", output = dir->path() + "/image.hsaco";
  if (kiln::Status s = kiln::write_scratch_file(in, std::string_view(obj.data(), obj.size())); !s)
    return fail(s.error().message);
  std::vector<const char*> args = {"ld.lld", "-shared", "--no-undefined", "--build-id=none",
                                   "-o", output.c_str(), in.c_str()};
  std::string diag;
  llvm::raw_string_ostream diag_os(diag);
  int rc;
  {
    std::lock_guard lock(kiln::link_detail::lld_mutex());
    rc = lld::lldMain(args, diag_os, diag_os, {{lld::Gnu, &lld::elf::link}}).retCode;
  }
  diag_os.flush();
  if (rc != 0)
    return fail("lld failed: " + diag);
  auto bytes = kiln::read_file(output);
  if (!bytes)
    return fail(bytes.error().message);
  *out = static_cast<char*>(std::malloc(bytes->size() ? bytes->size() : 1));
  std::memcpy(*out, bytes->data(), bytes->size());
  *out_size = bytes->size();
  return 0;
}
