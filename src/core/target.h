// Targets as Kiln's own concepts, without LLVM: the one target-kind type, the
// resolved description every job key holds, the codegen options, and what a
// canonical spec string says by itself ("host", "sm_90", "gfx942:xnack-").
// Resolving a spec against LLVM (the host CPU's features, the PTX ISA) is
// codegen's job; everything that only reads a stored spec lives here.
#pragma once

#include <string>
#include <string_view>

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

/// An AMD arch name as a canonical spec: the processor, then each ":name±"
/// feature sorted by name, the order the compiler stores specs in. HIP's
/// gcnArchName "gfx90a:xnack-:sramecc+" becomes "gfx90a:sramecc+:xnack-";
/// a canonical spec comes back unchanged.
std::string canonical_amd_spec(std::string_view gcn_arch_name);

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
