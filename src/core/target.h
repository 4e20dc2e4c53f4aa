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
/// "gfx*" is AMD, anything else the host.
TargetKind target_kind(std::string_view spec);

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

/// The image key's arch column for a target: the host's machine, or the GPU
/// target spec itself.
std::string image_arch(std::string_view spec);

/// The format an image for this kind of target is stored as: "so", "cubin"
/// or "hsaco".
const char* image_format(TargetKind kind);

} // namespace kiln::core
