#include "ir/diagnostics.h"

#include <llvm/IR/DiagnosticHandler.h>
#include <llvm/IR/DiagnosticInfo.h>
#include <llvm/IR/DiagnosticPrinter.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/Support/raw_ostream.h>

#include <algorithm>

namespace kiln::ir {

namespace {

struct CollectDiagnostics : llvm::DiagnosticHandler {
  std::string* sink;
  std::vector<std::string>* warnings;
  CollectDiagnostics(std::string* s, std::vector<std::string>* w) : sink(s), warnings(w) {}
  bool handleDiagnostics(const llvm::DiagnosticInfo& di) override {
    if (di.getSeverity() == llvm::DS_Error) {
      llvm::raw_string_ostream os(*sink);
      llvm::DiagnosticPrinterRawOStream dp(os);
      di.print(dp);
      os << "\n";
    } else if (di.getSeverity() == llvm::DS_Warning && warnings) {
      std::string text;
      llvm::raw_string_ostream os(text);
      llvm::DiagnosticPrinterRawOStream dp(os);
      di.print(dp);
      os.flush();
      // Without debug info LLVM has no place to give; a pass may repeat itself.
      const std::string nowhere = "<unknown>:0:0: ";
      if (text.rfind(nowhere, 0) == 0)
        text.erase(0, nowhere.size());
      if (std::find(warnings->begin(), warnings->end(), text) == warnings->end())
        warnings->push_back(std::move(text));
    }
    return true;
  }
};

} // namespace

void collect_diagnostics(llvm::LLVMContext& ctx, std::string* sink) {
  ctx.setDiagnosticHandler(std::make_unique<CollectDiagnostics>(sink, nullptr));
}

void collect_diagnostics(llvm::LLVMContext& ctx, std::string* sink,
                         std::vector<std::string>* warnings) {
  ctx.setDiagnosticHandler(std::make_unique<CollectDiagnostics>(sink, warnings));
}

} // namespace kiln::ir
