// Ingest: parse one or more LLVM IR (.ll) or bitcode (.bc) files, from disk
// or memory, and link them into one unit module.
#pragma once

#include <kiln/result.hpp>

#include <memory>
#include <string>
#include <string_view>
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

/// Whether `bytes` are LLVM bitcode (raw, or in the wrapper Apple's tools
/// write), which LLVM's bitcode reader would read.
bool is_bitcode(std::string_view bytes);

/// The checks ingest makes of an input before LLVM reads it: what kind of
/// file it is (source, PTX, a binary: named, with how to make IR of it) and,
/// for bitcode, that no block or type count claims more than the bytes
/// hold. Cheap, and in this process: run before a worker reads the bitcode.
Status check_input(const std::string& name, std::string_view bytes);

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
