// Compiling one job: finish, optimize and emit its module for a target.
// Every error names the job's entry and target.
#include "codegen/compile.h"

#include "codegen/device_libs.h"
#include "codegen/ptxas.h"
#include "codegen/llvm_target.h"
#include "ir/diagnostics.h"
#include "link/lld/object_stream.h"
#include "link/nvjitlink.h"

#include <llvm/Analysis/CGSCCPassManager.h>
#include <llvm/Analysis/LoopAnalysisManager.h>
#include <llvm/Bitcode/BitcodeReader.h>
#include <llvm/Bitcode/BitcodeWriter.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/PassManager.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Passes/OptimizationLevel.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/Error.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/Transforms/Utils/ModuleUtils.h>

#include <map>
#include <unordered_set>

namespace kiln::codegen {

namespace {

// The finishing steps: give the entry its deferred symbol and export it,
// keep every other function private to the job, and turn the unit's mutable
// globals into one shared object per image (weak, hidden definitions in
// each job that uses them, merged by the linker; protected on AMD).
Status finish(llvm::Module& m, const JobInput& job, const TargetDesc& target) {
  llvm::Function* entry = m.getFunction(job.entry);
  if (!entry || entry->isDeclaration())
    return make_error(Code::internal, "job module lacks its entry '" + job.entry + "'");
  for (const auto& [placeholder, symbol] : job.renames) {
    llvm::Function* f = m.getFunction(placeholder);
    if (!f)
      continue;
    if (symbol == job.symbol) { // the job defers to itself
      f->replaceAllUsesWith(entry);
      f->eraseFromParent();
      continue;
    }
    // A kernel child keeps its source name, which a function of this job
    // may have too (the same kernel, also reached directly): that one stays
    // private to the job under another name.
    if (llvm::Function* clash = m.getFunction(symbol); clash && clash != f) {
      if (clash->isDeclaration()) {
        f->replaceAllUsesWith(clash);
        f->eraseFromParent();
        continue;
      }
      clash->setName(symbol + ".local");
    }
    f->setName(symbol);
  }
  for (llvm::Function& f : m) {
    if (f.isDeclaration())
      continue;
    f.setComdat(nullptr);
    if (&f == entry) {
      f.setLinkage(llvm::GlobalValue::ExternalLinkage);
      f.setVisibility(llvm::GlobalValue::DefaultVisibility);
      f.setDLLStorageClass(llvm::GlobalValue::DefaultStorageClass);
    } else {
      f.setLinkage(llvm::GlobalValue::InternalLinkage);
      f.setVisibility(llvm::GlobalValue::DefaultVisibility);
    }
  }
  entry->setName(job.symbol);
  // Kernels: marked by the "kiln-kernel" attribute (target-neutral units) or
  // by a kernel convention, perhaps another target's (a unit written for
  // NVIDIA compiled for AMD). Each target gets its own kernel convention;
  // the host has none. A foreign convention would abort the backend.
  for (llvm::Function& f : m) {
    bool kernel = f.getCallingConv() == llvm::CallingConv::PTX_Kernel ||
                  f.getCallingConv() == llvm::CallingConv::AMDGPU_KERNEL ||
                  (&f == entry && f.hasFnAttribute("kiln-kernel"));
    if (!kernel)
      continue;
    f.setCallingConv(target.kind == TargetKind::nvptx    ? llvm::CallingConv::PTX_Kernel
                     : target.kind == TargetKind::amdgpu ? llvm::CallingConv::AMDGPU_KERNEL
                                                         : llvm::CallingConv::C);
  }
  // An AMD image is a shared object: a default-visibility symbol could be
  // preempted, so calls to another job's function would need the GOT
  // (PC-relative ones do not link). Kernels are protected, as clang makes
  // them (hipModuleGetFunction finds them); other jobs' entries are hidden.
  if (target.kind == TargetKind::amdgpu)
    entry->setVisibility(entry->getCallingConv() == llvm::CallingConv::AMDGPU_KERNEL
                             ? llvm::GlobalValue::ProtectedVisibility
                             : llvm::GlobalValue::HiddenVisibility);
  for (llvm::GlobalVariable& gv : m.globals()) {
    if (gv.isDeclaration())
      continue;
    // Immutable local data (string literals, tables) may be duplicated.
    if (gv.hasLocalLinkage() && gv.isConstant())
      continue;
    if (gv.getName().starts_with("llvm."))
      continue;
    gv.setComdat(nullptr);
    gv.setLinkage(llvm::GlobalValue::WeakODRLinkage);
    // On AMD, hipModuleGetGlobal finds a __device__ variable by name in the
    // code object's dynamic symbols: protected, not hidden.
    gv.setVisibility(target.kind == TargetKind::amdgpu ? llvm::GlobalValue::ProtectedVisibility
                                                       : llvm::GlobalValue::HiddenVisibility);
  }
  return Status::ok();
}

void optimize(llvm::Module& m, llvm::TargetMachine& tm, int level) {
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::PassBuilder pb(&tm);
  pb.registerModuleAnalyses(mam);
  pb.registerCGSCCAnalyses(cgam);
  pb.registerFunctionAnalyses(fam);
  pb.registerLoopAnalyses(lam);
  pb.crossRegisterProxies(lam, fam, cgam, mam);
  llvm::OptimizationLevel ol = level <= 0   ? llvm::OptimizationLevel::O0
                               : level == 1 ? llvm::OptimizationLevel::O1
                               : level == 2 ? llvm::OptimizationLevel::O2
                                            : llvm::OptimizationLevel::O3;
  llvm::ModulePassManager mpm = level <= 0 ? pb.buildO0DefaultPipeline(ol)
                                           : pb.buildPerModuleDefaultPipeline(ol);
  // Function passes skip optnone functions, but interprocedural ones would
  // still change a private optnone function's convention, return range and
  // arguments. Held as used while the pipeline runs, they stay as written.
  std::vector<llvm::GlobalValue*> optnone;
  for (llvm::Function& f : m)
    if (!f.isDeclaration() && f.hasOptNone() && f.hasLocalLinkage())
      optnone.push_back(&f);
  llvm::appendToCompilerUsed(m, optnone);
  mpm.run(m, mam);
  if (!optnone.empty()) {
    std::unordered_set<const llvm::Constant*> held;
    for (llvm::Function& f : m)
      if (f.hasOptNone())
        held.insert(&f);
    llvm::removeFromUsedLists(m, [&](llvm::Constant* c) { return held.count(c) != 0; });
  }
}

} // namespace

std::vector<std::string> artifact_formats(const TargetDesc& target) {
  switch (target.kind) {
  case TargetKind::host:
    return {"obj"};
  case TargetKind::nvptx:
    // Relocatable cubin where ptxas assembles per job; PTX always (alone
    // where nvJitLink assembles it at the image link).
    if (ptx_assembler() == PtxAssembler::none || ptx_assembler() == PtxAssembler::link)
      return {"ptx"};
    return {"ptx", "cubin"};
  case TargetKind::amdgpu:
    // AMDGPU objects cannot size registers and stack across calls into
    // another object, so jobs keep finished bitcode, linked at IR level.
    return {"bc"};
  }
  return {};
}

namespace {

// A thread's backend for one target and optimization level: the target
// machine (which optimization uses too) and the codegen pipeline with its
// output stream, built on the first emit (AMD jobs keep bitcode and emit
// nothing). They are kept for the process: building them per job cost as
// much as compiling a small job (the subtarget's register tables, thousands
// of registers on AMD, the pipeline's passes, the register allocator's
// tables sized by register units), and one pipeline runs module after
// module as llc runs it over the functions of one module. Each job's
// file depends only on its module (tests/unit/codegen/test_compile.cpp
// compares against new ones). NVIDIA's backend numbers call sequences per
// target machine, so the PTX of a job would depend on the jobs before it:
// there each job gets its own.
struct Backend {
  std::unique_ptr<llvm::TargetMachine> machine;
  std::unique_ptr<link::ObjectStream> out;
  std::unique_ptr<llvm::legacy::PassManager> passes;
};

bool keeps_backend(const TargetDesc& target) { return target.kind != TargetKind::nvptx; }

std::map<std::string, Backend>& backends() {
  thread_local std::map<std::string, Backend> kept;
  return kept;
}

std::string backend_key(const TargetDesc& target, const CodegenOptions& options) {
  return target.triple + '\n' + target.cpu + '\n' + target.features + '\n' +
         std::to_string(options.opt_level);
}

// The backend for a job: the thread's kept one, else `own` made anew.
Result<Backend*> backend_for(const TargetDesc& target, const CodegenOptions& options,
                             Backend& own) {
  Backend& b = keeps_backend(target) ? backends()[backend_key(target, options)] : own;
  if (!b.machine) {
    KILN_TRY_ASSIGN(auto tm, create_target_machine(target, options));
    b.machine = std::move(tm);
  }
  return &b;
}

// After a job failed, its backend is rebuilt for the next: nothing of a
// failed module's state reaches another job.
void drop_backend(const TargetDesc& target, const CodegenOptions& options) {
  if (keeps_backend(target))
    backends().erase(backend_key(target, options));
}

// The module's file of `type` (one type per target: objects for the host,
// assembly for NVIDIA), through the backend's kept pipeline.
Result<std::string> emit(llvm::Module& m, Backend& b, llvm::CodeGenFileType type,
                         const std::string& where) {
  if (!b.passes) {
    auto out = std::make_unique<link::ObjectStream>();
    auto passes = std::make_unique<llvm::legacy::PassManager>();
    if (b.machine->addPassesToEmitFile(*passes, *out, nullptr, type))
      return make_error(Code::unavailable, where + ": the backend cannot emit this file type");
    b.out = std::move(out);
    b.passes = std::move(passes);
  }
  b.passes->run(m);
  return b.out->take();
}

Result<std::vector<CompiledArtifact>> compile_in(const JobInput& job, const TargetDesc& target,
                                                 const CodegenOptions& options,
                                                 std::vector<std::string>* warnings) {
  std::string where = "job '" + job.entry + "' (" + target.spec + ")";
  llvm::LLVMContext ctx;
  std::string diagnostics;
  ir::collect_diagnostics(ctx, &diagnostics, warnings);
  auto parsed = llvm::parseBitcodeFile(llvm::MemoryBufferRef(job.bitcode, "kiln-job"), ctx);
  if (!parsed)
    return make_error(Code::internal,
                      where + ": cannot read its module: " + llvm::toString(parsed.takeError()));
  std::unique_ptr<llvm::Module> m = std::move(*parsed);
  // Where nvJitLink assembles at the image link, its first link's set-up
  // runs beside this compile instead of after it.
  if (target.kind == TargetKind::nvptx && ptx_assembler() == PtxAssembler::link)
    link::nvjitlink_warm_up(target.cpu, ptx_isa_of(target));
  if (Status s = link_device_libs(*m, target); !s)
    return s.error().context(where);
  KILN_TRY(finish(*m, job, target));

  Backend own;
  auto backend = backend_for(target, options, own);
  if (!backend)
    return backend.error().context(where);
  Backend& b = **backend;
  optimize(*m, *b.machine, options.opt_level);

  std::string verify;
  llvm::raw_string_ostream vos(verify);
  if (llvm::verifyModule(*m, &vos))
    return make_error(Code::internal, where + ": invalid module after finishing: " + vos.str());

  std::vector<CompiledArtifact> out;
  switch (target.kind) {
  case TargetKind::host: {
    KILN_TRY_ASSIGN(auto obj, emit(*m, b, llvm::CodeGenFileType::ObjectFile, where));
    out.push_back({"obj", std::move(obj)});
    break;
  }
  case TargetKind::nvptx: {
    KILN_TRY_ASSIGN(auto ptx, emit(*m, b, llvm::CodeGenFileType::AssemblyFile, where));
    if (ptx_assembler() == PtxAssembler::program || ptx_assembler() == PtxAssembler::library) {
      KILN_TRY_ASSIGN(auto cubin, assemble_ptx(ptx, target.cpu, where));
      out.push_back({"cubin", std::move(cubin)});
    }
    out.push_back({"ptx", std::move(ptx)});
    break;
  }
  case TargetKind::amdgpu: {
    std::string bc;
    llvm::raw_string_ostream os(bc);
    llvm::WriteBitcodeToFile(*m, os);
    os.flush();
    out.push_back({"bc", std::move(bc)});
    break;
  }
  }
  if (!diagnostics.empty()) {
    drop_backend(target, options);
    while (diagnostics.back() == '\n')
      diagnostics.pop_back();
    return make_error(Code::invalid_argument, where + ": code generation failed: " + diagnostics);
  }
  return out;
}

} // namespace

Result<std::vector<CompiledArtifact>> compile_job(const JobInput& job, const TargetDesc& target,
                                                  const CodegenOptions& options,
                                                  std::vector<std::string>* warnings) {
  auto out = compile_in(job, target, options, warnings);
  if (!out)
    return out.error().with_entry(job.entry).with_target(target.spec);
  return out;
}

} // namespace kiln::codegen
