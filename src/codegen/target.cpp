#include "codegen/target.h"

#include <llvm/Config/llvm-config.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/Target/TargetOptions.h>
#include <llvm/ADT/StringMap.h>
#include <llvm/TargetParser/Host.h>
#include <llvm/TargetParser/Triple.h>

#include <algorithm>
#include <mutex>
#include <vector>

namespace kiln::codegen {

namespace {

// Bumped whenever what Kiln stores for a job changes meaning.
constexpr int kArtifactFormat = 1;

void init_llvm_targets() {
  static std::once_flag once;
  std::call_once(once, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
  });
}

std::string host_features() {
  std::vector<std::string> feats;
  for (const auto& kv : llvm::sys::getHostCPUFeatures())
    feats.push_back((kv.second ? "+" : "-") + kv.getKey().str());
  // StringMap order depends on insertion history; the key must not.
  std::sort(feats.begin(), feats.end());
  std::string out;
  for (const std::string& f : feats)
    out += (out.empty() ? "" : ",") + f;
  return out;
}

} // namespace

const char* accepted_target_specs() { return "host (this machine's CPU)"; }

Result<TargetDesc> resolve_target(const std::string& spec) {
  if (spec == "host") {
    static const TargetDesc host = [] {
      TargetDesc t;
      t.spec = "host";
      t.kind = TargetKind::host;
      t.triple = llvm::Triple::normalize(llvm::sys::getProcessTriple());
      t.cpu = llvm::sys::getHostCPUName().str();
      t.features = host_features();
      return t;
    }();
    return host;
  }
  if (spec.rfind("sm_", 0) == 0 || spec.rfind("gfx", 0) == 0)
    return make_error(Code::unavailable, "target '" + spec +
                                             "' is a GPU target, which this build does not "
                                             "compile yet; accepted: " +
                                             accepted_target_specs());
  return make_error(Code::invalid_argument,
                    "unknown target '" + spec + "'; accepted: " + accepted_target_specs());
}

Result<std::unique_ptr<llvm::TargetMachine>> create_target_machine(const TargetDesc& target,
                                                                   const CodegenOptions& options) {
  init_llvm_targets();
  llvm::Triple triple(target.triple);
  std::string err;
  const llvm::Target* t = llvm::TargetRegistry::lookupTarget(triple, err);
  if (!t)
    return make_error(Code::unavailable,
                      "no LLVM backend for target " + target.spec + " (" + target.triple + "): " + err);
  llvm::TargetOptions to;
  llvm::CodeGenOptLevel level = llvm::CodeGenOptLevel::Default;
  switch (options.opt_level) {
  case 0: level = llvm::CodeGenOptLevel::None; break;
  case 1: level = llvm::CodeGenOptLevel::Less; break;
  case 2: level = llvm::CodeGenOptLevel::Default; break;
  default: level = llvm::CodeGenOptLevel::Aggressive; break;
  }
  std::unique_ptr<llvm::TargetMachine> tm(t->createTargetMachine(
      triple, target.cpu, target.features, to, llvm::Reloc::PIC_, std::nullopt, level));
  if (!tm)
    return make_error(Code::internal, "cannot create a target machine for " + target.spec);
  return tm;
}

Result<std::string> target_data_layout(const TargetDesc& target) {
  static std::mutex mu;
  std::lock_guard lock(mu);
  auto tm = create_target_machine(target, CodegenOptions{});
  if (!tm)
    return tm.error();
  return (*tm)->createDataLayout().getStringRepresentation();
}

std::string toolchain_fingerprint(const TargetDesc&) {
  return "kiln-artifacts " + std::to_string(kArtifactFormat) + "; llvm " LLVM_VERSION_STRING;
}

} // namespace kiln::codegen
