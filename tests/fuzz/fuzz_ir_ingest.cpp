// Fuzz target: IR ingest. Arbitrary bytes as a unit's input (textual IR or
// bitcode, chosen by the bytes' own magic, as ingest does): parse, link,
// verify, list the exports. Must return an error, never crash or hang.
//
// Bitcode that passes ingest's own checks is read first by LLVM's bitcode
// reader in a child, as the driver has a worker read it
// (codegen::check_bitcode_isolated): the reader crashes on some hostile
// streams, or does not finish reading them, and those the driver refuses
// before this process reads them. What is fuzzed here is Kiln's side: its
// checks, and ingest on bitcode that the reader survives.
#include "ir/unit.h"

#include <llvm/Bitcode/BitcodeReader.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/Support/Error.h>

#include <csignal>
#include <cstddef>
#include <cstdint>
#include <string>
#include <sys/wait.h>
#include <unistd.h>

namespace {

// Whether LLVM's reader survives the bytes, read in a child within 6 s
// (under a third of libFuzzer's -timeout): the driver gives its reader a
// limit too, and refuses an input it does not finish reading.
bool reader_survives(const std::string& bytes) {
  pid_t pid = ::fork();
  if (pid < 0)
    return false;
  if (pid == 0) {
    ::signal(SIGALRM, SIG_DFL); // libFuzzer's handler, inherited, would let it run on
    ::alarm(6);
    llvm::LLVMContext ctx;
    auto m = llvm::parseBitcodeFile(llvm::MemoryBufferRef(bytes, "fuzz.bc"), ctx);
    if (!m)
      llvm::consumeError(m.takeError());
    ::_exit(0);
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
  }
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  llvm::LLVMContext ctx;
  kiln::ir::Input in;
  in.name = "fuzz.ll";
  in.bytes.assign(reinterpret_cast<const char*>(data), size);
  in.in_memory = true;
  if (kiln::ir::is_bitcode(in.bytes) && kiln::ir::check_input(in.name, in.bytes) &&
      !reader_survives(in.bytes))
    return 0; // the driver refuses it: check_bitcode_isolated
  auto unit = kiln::ir::ingest(ctx, {in});
  if (unit) {
    (void)kiln::ir::exported_functions(**unit, false);
    (void)kiln::ir::exported_functions(**unit, true);
  } else if (unit.error().message.empty()) {
    __builtin_trap(); // every error must say what was wrong
  }
  return 0;
}
