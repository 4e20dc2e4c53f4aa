// Targets: what code is produced for. Parsed from a short spec ("host");
// the resolved triple, CPU and features are part of every job key, so code
// for one CPU is never reused for another.
#pragma once

#include <kiln/result.hpp>

#include <memory>
#include <string>

namespace llvm {
class TargetMachine;
}

namespace kiln::codegen {

enum class TargetKind { host, nvptx, amdgpu };

struct TargetDesc {
  std::string spec; ///< canonical spec as stored in the cache: "host"
  TargetKind kind = TargetKind::host;
  std::string triple;
  std::string cpu;
  std::string features; ///< sorted, comma-separated "+a,-b"

  template <class Archive> void serialize(Archive& ar) {
    ar(spec, static_cast<int>(kind), triple, cpu, features);
  }
};

/// The accepted spec forms, for error messages.
const char* accepted_target_specs();

/// Parses and resolves a spec. Unknown specs are invalid_argument, naming
/// the accepted forms.
Result<TargetDesc> resolve_target(const std::string& spec);

/// Options that change a job's code.
struct CodegenOptions {
  int opt_level = 2; ///< 0..3
  bool debug = false;

  std::string canonical() const { return "-O" + std::to_string(opt_level) + (debug ? " -g" : ""); }
  template <class Archive> void serialize(Archive& ar) { ar(opt_level, debug); }
};

/// A TargetMachine for a resolved target (position-independent code).
Result<std::unique_ptr<llvm::TargetMachine>> create_target_machine(const TargetDesc& target,
                                                                   const CodegenOptions& options);

/// The data layout string for a target.
Result<std::string> target_data_layout(const TargetDesc& target);

/// The toolchain part of every job key: Kiln's artifact format version and
/// the LLVM version that produced the code.
std::string toolchain_fingerprint(const TargetDesc& target);

} // namespace kiln::codegen
