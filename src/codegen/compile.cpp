#include "codegen/compile.h"

#include <llvm/Analysis/CGSCCPassManager.h>
#include <llvm/Analysis/LoopAnalysisManager.h>
#include <llvm/Bitcode/BitcodeReader.h>
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

namespace kiln::codegen {

namespace {

// The finishing steps: give the entry its deferred symbol and export it,
// keep every other function private to the job, and turn the unit's mutable
// globals into one shared object per image (weak, hidden definitions in
// each job that uses them, merged by the linker).
Status finish(llvm::Module& m, const JobInput& job) {
  llvm::Function* entry = m.getFunction(job.entry);
  if (!entry || entry->isDeclaration())
    return make_error(Code::internal, "job module lacks its entry '" + job.entry + "'");
  // A job that defers to itself holds a declaration of its own symbol.
  if (llvm::Function* self = m.getFunction(job.symbol); self && self != entry) {
    self->replaceAllUsesWith(entry);
    self->eraseFromParent();
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
    gv.setVisibility(llvm::GlobalValue::HiddenVisibility);
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
  mpm.run(m, mam);
}

} // namespace

std::vector<std::string> artifact_formats(const TargetDesc&) { return {"obj"}; }

Result<std::vector<CompiledArtifact>> compile_job(const JobInput& job, const TargetDesc& target,
                                                  const CodegenOptions& options) {
  std::string where = "job '" + job.entry + "' (" + target.spec + ")";
  llvm::LLVMContext ctx;
  auto parsed = llvm::parseBitcodeFile(
      llvm::MemoryBufferRef(job.bitcode, "kiln-job"), ctx);
  if (!parsed)
    return make_error(Code::internal,
                      where + ": cannot read its module: " + llvm::toString(parsed.takeError()));
  std::unique_ptr<llvm::Module> m = std::move(*parsed);
  KILN_TRY(finish(*m, job));

  auto tm = create_target_machine(target, options);
  if (!tm)
    return tm.error().context(where);
  optimize(*m, **tm, options.opt_level);

  std::string verify;
  llvm::raw_string_ostream vos(verify);
  if (llvm::verifyModule(*m, &vos))
    return make_error(Code::internal, where + ": invalid module after finishing: " + vos.str());

  llvm::SmallVector<char, 0> obj;
  llvm::raw_svector_ostream os(obj);
  llvm::legacy::PassManager pm;
  if ((*tm)->addPassesToEmitFile(pm, os, nullptr, llvm::CodeGenFileType::ObjectFile))
    return make_error(Code::unavailable, where + ": the backend cannot emit object code");
  pm.run(*m);
  return std::vector<CompiledArtifact>{{"obj", std::string(obj.data(), obj.size())}};
}

} // namespace kiln::codegen
