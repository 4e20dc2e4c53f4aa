// Target resolution: specs to triples, CPUs and features, and the target
// machines that compile for them. Errors name the target spec.
#include "codegen/llvm_target.h"

#include "codegen/ptxas.h"

#include <llvm/Config/llvm-config.h>
#include <llvm/MC/MCSubtargetInfo.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/Target/TargetOptions.h>
#include <llvm/ADT/StringMap.h>
#include <llvm/TargetParser/Host.h>
#include <llvm/TargetParser/TargetParser.h>
#include <llvm/TargetParser/Triple.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <vector>

namespace kiln::codegen {

namespace {

// Bumped whenever what Kiln stores for a job changes meaning.
constexpr int kArtifactFormat = 2; // 2: GPU kernels keep their source names

void init_llvm_targets() {
  static std::once_flag once;
  std::call_once(once, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    // Host objects with inline assembly need the host's assembler.
    llvm::InitializeNativeTargetAsmParser();
    LLVMInitializeNVPTXTargetInfo();
    LLVMInitializeNVPTXTarget();
    LLVMInitializeNVPTXTargetMC();
    LLVMInitializeNVPTXAsmPrinter();
    LLVMInitializeAMDGPUTargetInfo();
    LLVMInitializeAMDGPUTarget();
    LLVMInitializeAMDGPUTargetMC();
    LLVMInitializeAMDGPUAsmPrinter();
    LLVMInitializeAMDGPUAsmParser();
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

const char* accepted_target_specs() {
  static const std::string text =
      "host (this machine's CPU); host:CPU with an LLVM CPU name for this machine's "
      "architecture (portable host code: host:x86-64-v2, host:x86-64-v3, host:x86-64-v4, "
      "host:haswell, host:neoverse-v1, ...); " +
      core::nvidia_target_list() +
      " (NVIDIA); gfxNNN[:xnack+|:xnack-][:sramecc+|:sramecc-], e.g. gfx90a, gfx942:xnack-, "
      "gfx1100 (AMD)";
  return text.c_str();
}

namespace {

Result<TargetDesc> resolve_amdgpu(const std::string& spec) {
  auto bad = [&](const std::string& why) {
    return make_error(Code::invalid_argument, "unknown target '" + spec + "' (" + why +
                                                  "); accepted: " + accepted_target_specs())
        .with_target(spec);
  };
  // The form is core's (core::parse_amd_arch); which GPUs and features
  // exist is LLVM's and the compiler's.
  auto arch = core::parse_amd_arch(spec);
  std::string cpu = spec.substr(0, spec.find(':'));
  if (llvm::AMDGPU::parseArchAMDGCN(cpu) == llvm::AMDGPU::GK_NONE)
    return bad("no AMD GPU named " + cpu);
  if (!arch)
    return bad(arch.error().message);
  std::map<std::string, char> feats;
  for (const auto& [name, sign] : arch->features) {
    if (name != "xnack" && name != "sramecc")
      return bad("feature '" + name + "' is not xnack or sramecc");
    if (feats.count(name))
      return bad("feature '" + name + "' given twice");
    feats[name] = sign;
  }
  TargetDesc t;
  t.kind = TargetKind::amdgpu;
  t.triple = "amdgcn-amd-amdhsa";
  t.cpu = cpu;
  t.spec = arch->spec();
  for (const auto& [name, sign] : feats) // sorted by name, as the spec is
    t.features += (t.features.empty() ? "" : ",") + std::string(1, sign) + name;
  return t;
}

// "host:CPU": this machine's triple and a named CPU with that CPU's own
// features (not this machine's), so the code runs on any CPU that has them.
// Only the ISA features the CPU implies count, closed over what each feature
// implies; tuning does not change where code runs.
Result<TargetDesc> resolve_portable_host(const std::string& spec) {
  init_llvm_targets();
  std::string cpu = spec.substr(5);
  llvm::Triple triple(llvm::Triple::normalize(llvm::sys::getProcessTriple()));
  std::string err;
  const llvm::Target* target = llvm::TargetRegistry::lookupTarget(triple, err);
  if (!target)
    return make_error(Code::unavailable, "no LLVM backend for this machine (" + triple.str() +
                                             "): " + err)
        .with_target(spec);
  // Created for no CPU: an unknown name is reported here, not on stderr.
  std::unique_ptr<llvm::MCSubtargetInfo> sti(target->createMCSubtargetInfo(triple, "", ""));
  const llvm::SubtargetSubTypeKV* proc = nullptr;
  if (sti)
    for (const llvm::SubtargetSubTypeKV& p : sti->getAllProcessorDescriptions())
      if (cpu == p.Key)
        proc = &p;
  if (cpu.empty() || !proc)
    return make_error(Code::invalid_argument, "unknown target '" + spec + "' (no " +
                                                  triple.getArchName().str() + " CPU named '" +
                                                  cpu + "'); accepted: " + accepted_target_specs())
        .with_target(spec);
  llvm::FeatureBitset bits = proc->Implies.getAsBitset();
  for (bool grew = true; grew;) {
    grew = false;
    for (const llvm::SubtargetFeatureKV& f : sti->getAllProcessorFeatures())
      if (bits.test(f.Value)) {
        llvm::FeatureBitset with = bits | f.Implies.getAsBitset();
        if (with != bits) {
          bits = with;
          grew = true;
        }
      }
  }
  std::vector<std::string> feats;
  for (const llvm::SubtargetFeatureKV& f : sti->getAllProcessorFeatures())
    if (bits.test(f.Value))
      feats.push_back("+" + std::string(f.Key));
  std::sort(feats.begin(), feats.end());
  TargetDesc t;
  t.spec = spec;
  t.kind = TargetKind::host;
  t.triple = triple.str();
  t.cpu = cpu;
  for (const std::string& f : feats)
    t.features += (t.features.empty() ? "" : ",") + f;
  return t;
}

} // namespace

Result<TargetDesc> resolve_target(const std::string& spec) {
  if (spec.rfind("host:", 0) == 0)
    return resolve_portable_host(spec);
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
  if (spec.rfind("sm_", 0) == 0) {
    // The PTX ISA each target is compiled for: core/target.cpp's table.
    for (const core::NvTarget& a : core::nvidia_targets())
      if (spec == a.spec) {
        TargetDesc t;
        t.spec = spec;
        t.kind = TargetKind::nvptx;
        t.triple = "nvptx64-nvidia-cuda";
        t.cpu = spec;
        t.features = "+ptx" + std::to_string(a.ptx_isa);
        return t;
      }
    return make_error(Code::invalid_argument, "unknown target '" + spec +
                                                  "' (no such NVIDIA architecture); accepted: " +
                                                  accepted_target_specs())
        .with_target(spec);
  }
  if (spec.rfind("gfx", 0) == 0)
    return resolve_amdgpu(spec);
  return make_error(Code::invalid_argument,
                    "unknown target '" + spec + "'; accepted: " + accepted_target_specs())
      .with_target(spec);
}

int ptx_isa_of(const TargetDesc& target) {
  size_t at = target.features.find("+ptx");
  return at == std::string::npos ? 0 : std::atoi(target.features.c_str() + at + 4);
}

namespace {

// The newest PTX ISA each ptxas release reads (NVIDIA's PTX ISA release
// notes); a release newer than the table is trusted as far as LLVM goes.
// nvJitLink carries the ptxas of its own toolkit release.
int ptxas_isa(const std::string& version) {
  // "ptxas V13.0.88", "nvJitLink 13.0 at the image link"
  int major = 0, minor = 0;
  if (std::sscanf(version.c_str(), "ptxas V%d.%d", &major, &minor) != 2 &&
      std::sscanf(version.c_str(), "nvJitLink %d.%d", &major, &minor) != 2)
    return 0;
  struct Release {
    int major, minor, isa;
  };
  constexpr Release kReleases[] = {
      {11, 8, 78}, {12, 0, 80}, {12, 1, 81}, {12, 2, 82}, {12, 3, 83}, {12, 4, 84},
      {12, 5, 85}, {12, 6, 85}, {12, 8, 87}, {12, 9, 88}, {13, 0, 90},
  };
  int isa = 0;
  for (const Release& r : kReleases) {
    if (major < r.major || (major == r.major && minor < r.minor))
      return isa ? isa : r.isa;
    isa = r.isa;
  }
  return major == 13 && minor == 0 ? 90 : 1000; // newer than the table
}

int llvm_newest_ptx_isa() {
  init_llvm_targets();
  std::string err;
  llvm::Triple triple("nvptx64-nvidia-cuda");
  const llvm::Target* t = llvm::TargetRegistry::lookupTarget(triple, err);
  if (!t)
    return 0;
  std::unique_ptr<llvm::MCSubtargetInfo> sti(t->createMCSubtargetInfo(triple, "sm_52", ""));
  int newest = 0;
  if (sti)
    for (const llvm::SubtargetFeatureKV& f : sti->getAllProcessorFeatures()) {
      llvm::StringRef key(f.Key);
      unsigned n = 0;
      if (key.consume_front("ptx") && !key.getAsInteger(10, n))
        newest = std::max(newest, int(n));
    }
  return newest;
}

} // namespace

int newest_ptx_isa() {
  static const int newest = [] {
    int isa = llvm_newest_ptx_isa();
    if (!ptxas_version().empty())
      if (int p = ptxas_isa(ptxas_version()); p > 0)
        isa = std::min(isa, p);
    return isa;
  }();
  return newest;
}

Result<TargetDesc> job_target(const TargetDesc& target, int ir_isa, const std::string& entry) {
  if (target.kind != TargetKind::nvptx)
    return target;
  int isa = std::max(ptx_isa_of(target), ir_isa);
  int newest = newest_ptx_isa();
  auto dotted = [](int v) { return std::to_string(v / 10) + "." + std::to_string(v % 10); };
  if (isa > newest) {
    std::string tools = "LLVM " LLVM_VERSION_STRING;
    if (!ptxas_version().empty())
      tools += " and " + ptxas_version();
    return make_error(Code::invalid_argument,
                      "kernel '" + entry + "' needs PTX ISA " + dotted(isa) +
                          (isa == ir_isa ? " (its IR asks for +ptx" + std::to_string(ir_isa) + ")"
                                         : " (the minimum for " + target.spec + ")") +
                          ", but the newest this toolchain offers is " + dotted(newest) + " (" +
                          tools + ")")
        .with_entry(entry)
        .with_target(target.spec);
  }
  TargetDesc t = target;
  t.features = "+ptx" + std::to_string(isa);
  return t;
}

Result<std::unique_ptr<llvm::TargetMachine>> create_target_machine(const TargetDesc& target,
                                                                   const CodegenOptions& options) {
  init_llvm_targets();
  llvm::Triple triple(target.triple);
  std::string err;
  const llvm::Target* t = llvm::TargetRegistry::lookupTarget(triple, err);
  if (!t)
    return make_error(Code::unavailable, "no LLVM backend for target " + target.spec + " (" +
                                             target.triple + "): " + err)
        .with_target(target.spec);
  llvm::TargetOptions to;
  llvm::CodeGenOptLevel level = llvm::CodeGenOptLevel::Default;
  switch (options.opt_level) {
  case 0: level = llvm::CodeGenOptLevel::None; break;
  case 1: level = llvm::CodeGenOptLevel::Less; break;
  case 2: level = llvm::CodeGenOptLevel::Default; break;
  default: level = llvm::CodeGenOptLevel::Aggressive; break;
  }
  // Host objects go into a shared object: position independent. GPU code
  // objects take the backends' defaults.
  std::optional<llvm::Reloc::Model> rm;
  if (target.kind == TargetKind::host)
    rm = llvm::Reloc::PIC_;
  std::unique_ptr<llvm::TargetMachine> tm(t->createTargetMachine(
      triple, target.cpu, target.features, to, rm, std::nullopt, level));
  if (!tm)
    return make_error(Code::internal, "cannot create a target machine for " + target.spec)
        .with_target(target.spec);
  return tm;
}

Result<std::string> target_data_layout(const TargetDesc& target) {
  static std::mutex mu;
  std::lock_guard lock(mu);
  KILN_TRY_ASSIGN(auto tm, create_target_machine(target, CodegenOptions{}));
  return tm->createDataLayout().getStringRepresentation();
}

std::string toolchain_fingerprint(const TargetDesc& target) {
  std::string fp =
      "kiln-artifacts " + std::to_string(kArtifactFormat) + "; llvm " LLVM_VERSION_STRING;
  // NVIDIA jobs store a cubin assembled by ptxas, or PTX that nvJitLink
  // assembles at the image link: what assembles caps the PTX ISA a job is
  // written in (job_target) and shapes the cubin.
  if (target.kind == TargetKind::nvptx)
    fp += "; " + (ptxas_version().empty() ? std::string("no ptxas") : ptxas_version());
  return fp;
}

} // namespace kiln::codegen
