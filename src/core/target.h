// Targets as Kiln's own concepts, without LLVM: the one target-kind type, the
// resolved description every job key holds, the codegen options, and what a
// canonical spec string says by itself ("host", "sm_90", "gfx942:xnack-").
// Resolving a spec against LLVM (the host CPU's features, the PTX ISA) is
// codegen's job; everything that only reads a stored spec lives here.
#pragma once

#include <kiln/result.hpp>

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace kiln::core {

/// What kind of code a target is: host CPU objects, NVIDIA (PTX/cubin) or
/// AMD (HSACO). The loader's device backends are chosen by the same value.
enum class TargetKind { host, nvptx, amdgpu };

/// The kind of a canonical spec, by its form alone: "sm_*" is NVIDIA,
/// "gfx*" is AMD, anything else ("host", "host:x86-64-v3") the host.
TargetKind target_kind(std::string_view spec);

/// The CPU of a portable host spec ("x86-64-v3" of "host:x86-64-v3"); empty
/// for plain "host" (this machine's CPU) and for every other spec.
std::string_view host_spec_cpu(std::string_view spec);

/// Whether `spec` is "host" or "host:CPU".
bool is_host_spec(std::string_view spec);

/// An AMD spec or arch name read: "gfx942:xnack-:sramecc+" is processor
/// "gfx942" with features {xnack, '-'}, {sramecc, '+'}, in the order named.
struct AmdArch {
  std::string processor;
  std::vector<std::pair<std::string, char>> features;

  /// The canonical spec: the processor, then each ":name±" sorted by name,
  /// the order the compiler stores specs in.
  std::string spec() const;
};

/// Reads "gfxN...[:name±]...", in any feature order (a HIP gcnArchName reads
/// too). Which processors and features exist is the compiler's to say; this
/// is the form alone: anything else is `invalid_argument` saying why.
Result<AmdArch> parse_amd_arch(std::string_view spec);

/// An AMD arch name as a canonical spec (AmdArch::spec): HIP's gcnArchName
/// "gfx90a:xnack-:sramecc+" becomes "gfx90a:sramecc+:xnack-"; a canonical
/// spec comes back unchanged, and so does a name that does not read.
std::string canonical_amd_spec(std::string_view gcn_arch_name);

/// An NVIDIA architecture as a spec names it: "sm_90a" is {9, 0, 'a'}.
struct NvArch {
  int major = 0;
  int minor = 0;
  char suffix = 0; ///< 0, 'a' (arch-specific) or 'f' (family-specific)
};

/// "sm_90a" → {9, 0, 'a'}; "sm_121" → {12, 1, 0}; any other string:
/// nullopt. Any well-formed sm_NN[N][a|f], whether this release compiles
/// for it or not (a cache or a device may be newer).
std::optional<NvArch> parse_nv_arch(std::string_view spec);

/// An NVIDIA target this release compiles for, and the PTX ISA its code is
/// compiled for: the lowest ISA that has the architecture, so that the PTX
/// assembles with as old a toolkit and driver as possible.
struct NvTarget {
  const char* spec;
  int ptx_isa;
};

/// Every NVIDIA target this release compiles for, oldest first.
std::span<const NvTarget> nvidia_targets();

/// The NVIDIA targets as a user reads them: "sm_75, ..., sm_90, sm_90a,
/// sm_100[a|f], ...".
std::string nvidia_target_list();

/// "host", "nvidia" or "amd": for messages.
const char* target_kind_name(TargetKind kind);

/// A target resolved for code generation. Part of every job key.
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

/// Options that change a job's code.
struct CodegenOptions {
  int opt_level = 2; ///< 0..3
  bool debug = false;

  /// "-O2", "-O0 -g": the form the cache stores.
  std::string canonical() const { return "-O" + std::to_string(opt_level) + (debug ? " -g" : ""); }
  template <class Archive> void serialize(Archive& ar) { ar(opt_level, debug); }
};

/// The image "architecture" of this host: the image key's arch column for
/// host code ("x86_64-linux").
const char* host_arch();

/// The image key's arch column for a target: the host's machine for plain
/// "host" ("x86_64-linux"), the machine and CPU for "host:CPU"
/// ("x86_64-linux:x86-64-v3": images for different CPUs never satisfy each
/// other), or the GPU target spec itself.
std::string image_arch(std::string_view spec);

/// The format an image for this kind of target is stored as: "so", "cubin"
/// or "hsaco".
const char* image_format(TargetKind kind);

} // namespace kiln::core
