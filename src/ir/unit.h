// Ingest: parse one or more LLVM IR (.ll) or bitcode (.bc) files, from disk
// or memory, and link them into one unit module.
#pragma once

#include <kiln/result.hpp>

#include <memory>
#include <string>
#include <vector>

namespace llvm {
class LLVMContext;
class Module;
} // namespace llvm

namespace kiln::ir {

/// One input: a file path, or bytes with a name used in messages.
struct Input {
  std::string name;
  std::string bytes; ///< empty: read `name` from disk
  bool in_memory = false;
};

/// The name of the deferred-reference marker function in IR.
inline constexpr const char* kDeferredMarker = "kiln_deferred";

/// Parses, links and verifies the inputs. Errors name the file and, for
/// textual IR, the line and column.
Result<std::unique_ptr<llvm::Module>> ingest(llvm::LLVMContext& ctx,
                                             const std::vector<Input>& inputs);

/// The functions a unit exports: every externally visible defined function
/// (the default roots for the host), in unit order. With `kernels_only`,
/// just the kernels (the default roots for GPU targets): functions with the
/// ptx_kernel or amdgpu_kernel convention or the "kiln-kernel" attribute.
std::vector<std::string> exported_functions(const llvm::Module& unit, bool kernels_only = false);

} // namespace kiln::ir
