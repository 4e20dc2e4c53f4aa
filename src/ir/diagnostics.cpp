#include "ir/diagnostics.h"

#include <llvm/IR/DiagnosticHandler.h>
#include <llvm/IR/DiagnosticInfo.h>
#include <llvm/IR/DiagnosticPrinter.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/Support/raw_ostream.h>

namespace kiln::ir {

namespace {

struct CollectDiagnostics : llvm::DiagnosticHandler {
  std::string* sink;
  explicit CollectDiagnostics(std::string* s) : sink(s) {}
  bool handleDiagnostics(const llvm::DiagnosticInfo& di) override {
    if (di.getSeverity() == llvm::DS_Error) {
      llvm::raw_string_ostream os(*sink);
      llvm::DiagnosticPrinterRawOStream dp(os);
      di.print(dp);
      os << "\n";
    }
    return true;
  }
};

} // namespace

void collect_diagnostics(llvm::LLVMContext& ctx, std::string* sink) {
  ctx.setDiagnosticHandler(std::make_unique<CollectDiagnostics>(sink));
}

} // namespace kiln::ir
