// LLVM's errors as text, not as an exit: an LLVMContext without a diagnostic
// handler prints an error diagnostic (a symbol defined twice at IR link, bad
// inline assembly in the backend) and ends the process, which for a JIT
// front end or a Python process is the user's whole session. Every context
// Kiln creates to link or compile gets this handler, and the caller turns
// what it collected into an Error.
#pragma once

#include <memory>
#include <string>
#include <vector>

namespace llvm {
class LLVMContext;
}

namespace kiln::ir {

/// Installs a handler on `ctx` that appends each error diagnostic, one per
/// line, to `*sink` (which must outlive the context's use) and lets
/// warnings and remarks pass silently.
void collect_diagnostics(llvm::LLVMContext& ctx, std::string* sink);

/// The same, and each warning (a loop that could not be unrolled as asked,
/// a stack frame over its limit) appended to `*warnings`, one per entry.
void collect_diagnostics(llvm::LLVMContext& ctx, std::string* sink,
                         std::vector<std::string>* warnings);

} // namespace kiln::ir
