// Ingest: parse each input, link them into one unit and verify it. Errors
// carry the input and, for textual IR, the line and column; an input that is
// not IR at all is named for what it is (ir/diagnose).
#include "ir/unit.h"

#include "ir/diagnose.h"
#include "ir/diagnostics.h"

#include <llvm/Bitcode/BitcodeReader.h>
#include <llvm/Bitcode/LLVMBitCodes.h>
#include <llvm/Bitstream/BitstreamReader.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/Verifier.h>
#include <llvm/IRReader/IRReader.h>
#include <llvm/Linker/Linker.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/SourceMgr.h>
#include <llvm/Support/raw_ostream.h>

namespace kiln::ir {

namespace {

// LLVM's bitcode reader trusts what a stream claims: it sizes its type table
// from the table's first record before reading a type, and it takes each
// block's length word as given, so 2 KB of hostile bitcode can ask for
// petabytes (std::bad_alloc) or make its value table grow without bound
// (a block claiming 10 GB: 16 GiB of memory, then an abort). Before the
// reader runs, every block is walked: its claimed length must end within
// the block around it, and a type count must fit in the bytes (every type
// takes a record of at least one bit). Other malformations are left to the
// reader, which reports them.
Status check_bitcode_counts(const std::string& name, llvm::StringRef bytes) {
  const unsigned char* begin = bytes.bytes_begin();
  const unsigned char* end = bytes.bytes_end();
  if (llvm::isBitcodeWrapper(begin, end) && llvm::SkipBitcodeWrapperHeader(begin, end, true))
    return Status::ok();
  if (!llvm::isRawBitcode(begin, end))
    return Status::ok();
  const uint64_t bits = uint64_t(end - begin) * 8;
  llvm::BitstreamCursor cursor(llvm::ArrayRef<uint8_t>(begin, end));
  llvm::BitstreamBlockInfo info;
  cursor.setBlockInfo(&info);
  if (llvm::Error e = cursor.JumpToBit(32)) { // past the magic
    llvm::consumeError(std::move(e));
    return Status::ok();
  }
  std::vector<unsigned> blocks; // the blocks the cursor is in
  std::vector<uint64_t> ends;   // the bit each of them claims to end at
  llvm::SmallVector<uint64_t, 8> record;
  while (!cursor.AtEndOfStream()) {
    llvm::Expected<llvm::BitstreamEntry> entry = cursor.advance();
    if (!entry) {
      llvm::consumeError(entry.takeError());
      return Status::ok();
    }
    switch (entry->Kind) {
    case llvm::BitstreamEntry::Error:
      return Status::ok();
    case llvm::BitstreamEntry::EndBlock:
      if (blocks.empty())
        return Status::ok();
      blocks.pop_back();
      ends.pop_back();
      break;
    case llvm::BitstreamEntry::SubBlock: {
      llvm::Error e = llvm::Error::success();
      if (entry->ID == llvm::bitc::BLOCKINFO_BLOCK_ID) {
        auto read = cursor.ReadBlockInfoBlock();
        if (!read) {
          e = read.takeError();
        } else if (*read) {
          info = std::move(**read);
          break;
        } else {
          return Status::ok();
        }
      } else {
        unsigned words = 0;
        e = cursor.EnterSubBlock(entry->ID, &words);
        if (!e) {
          // The length word follows the block's header: it counts 32-bit
          // words from the current position.
          uint64_t block_end = cursor.GetCurrentBitNo() + uint64_t(words) * 32;
          uint64_t outer_end = ends.empty() ? bits : ends.back();
          if (block_end > outer_end)
            return make_error(Code::invalid_argument,
                              "'" + name + "' is malformed bitcode: block " +
                                  std::to_string(entry->ID) + " at byte " +
                                  std::to_string(cursor.GetCurrentBitNo() / 8) + " claims " +
                                  std::to_string(uint64_t(words) * 4) + " bytes, past the " +
                                  std::to_string((outer_end - cursor.GetCurrentBitNo()) / 8) +
                                  " bytes left " +
                                  (ends.empty() ? "in the input" : "in the block around it"))
                .at(name);
          blocks.push_back(entry->ID);
          ends.push_back(block_end);
        }
      }
      if (e) {
        llvm::consumeError(std::move(e));
        return Status::ok();
      }
      break;
    }
    case llvm::BitstreamEntry::Record: {
      record.clear();
      bool types = !blocks.empty() && blocks.back() == llvm::bitc::TYPE_BLOCK_ID_NEW;
      llvm::Expected<unsigned> code = types ? cursor.readRecord(entry->ID, record)
                                            : cursor.skipRecord(entry->ID);
      if (!code) {
        llvm::consumeError(code.takeError());
        return Status::ok();
      }
      if (types && *code == llvm::bitc::TYPE_CODE_NUMENTRY && !record.empty() &&
          record[0] > bits)
        return make_error(Code::invalid_argument,
                          "'" + name + "' is malformed bitcode: its type table claims " +
                              std::to_string(record[0]) + " types in " +
                              std::to_string(bytes.size()) + " bytes")
            .at(name);
      break;
    }
    }
  }
  return Status::ok();
}

Result<std::unique_ptr<llvm::Module>> parse_one(llvm::LLVMContext& ctx, const Input& in) {
  std::unique_ptr<llvm::MemoryBuffer> buf;
  if (in.in_memory) {
    buf = llvm::MemoryBuffer::getMemBufferCopy(in.bytes, in.name);
  } else {
    auto b =
        llvm::MemoryBuffer::getFile(in.name, /*IsText=*/false, /*RequiresNullTerminator=*/true);
    if (!b)
      return make_error(Code::invalid_argument,
                        "cannot read '" + in.name + "': " + b.getError().message())
          .at(in.name);
    buf = std::move(*b);
  }
  // Source, PTX or a binary: say what it is and how to make IR of it, not
  // what the IR parser thinks of it.
  KILN_TRY(check_input(in.name, std::string_view(buf->getBufferStart(), buf->getBufferSize())));
  llvm::SMDiagnostic diag;
  std::unique_ptr<llvm::Module> m = llvm::parseIR(buf->getMemBufferRef(), diag, ctx);
  if (!m) {
    std::string msg;
    llvm::raw_string_ostream os(msg);
    // file:line:col: error: message, plus the offending line for textual IR.
    diag.print(nullptr, os, /*ShowColors=*/false);
    os.flush();
    while (!msg.empty() && msg.back() == '\n')
      msg.pop_back();
    if (msg.find(in.name) == std::string::npos)
      msg = in.name + ": " + msg;
    // The diagnostic's column is 0-based; bitcode errors have no position (-1).
    unsigned line = diag.getLineNo() > 0 ? unsigned(diag.getLineNo()) : 0;
    unsigned column = line && diag.getColumnNo() >= 0 ? unsigned(diag.getColumnNo()) + 1 : 0;
    return make_error(Code::invalid_argument, msg).at(in.name, line, column);
  }
  return m;
}

} // namespace

Status check_input(const std::string& name, std::string_view bytes) {
  KILN_TRY(check_input_kind(name, bytes));
  return check_bitcode_counts(name, llvm::StringRef(bytes.data(), bytes.size()));
}

bool is_bitcode(std::string_view bytes) {
  auto* begin = reinterpret_cast<const unsigned char*>(bytes.data());
  auto* end = begin + bytes.size();
  return llvm::isBitcode(begin, end);
}

Result<std::unique_ptr<llvm::Module>> ingest(llvm::LLVMContext& ctx,
                                             const std::vector<Input>& inputs) {
  if (inputs.empty())
    return make_error(Code::invalid_argument, "no input files");
  std::string link_errors;
  collect_diagnostics(ctx, &link_errors);

  std::unique_ptr<llvm::Module> unit;
  for (const Input& in : inputs) {
    KILN_TRY_ASSIGN(auto m, parse_one(ctx, in));
    if (!unit) {
      unit = std::move(m);
      continue;
    }
    if (llvm::Linker::linkModules(*unit, std::move(m)))
      return make_error(Code::invalid_argument,
                        "cannot link '" + in.name + "' into the unit: " + link_errors)
          .at(in.name);
  }
  std::string verify;
  llvm::raw_string_ostream vos(verify);
  if (llvm::verifyModule(*unit, &vos)) {
    vos.flush();
    return make_error(Code::invalid_argument, "invalid IR in '" + inputs.front().name +
                                                  (inputs.size() > 1 ? "' and others" : "'") +
                                                  ": " + verify)
        .at(inputs.front().name);
  }
  // Jobs share mutable globals by name at link time (see finish), so an
  // unnamed one gets a name now, from its position in the unit.
  unsigned anon = 0;
  for (llvm::GlobalVariable& gv : unit->globals())
    if (!gv.hasName() && !gv.isConstant())
      gv.setName("__kiln_anon_global_" + std::to_string(anon++));
  unit->setSourceFileName("");
  unit->setModuleIdentifier("kiln-unit");
  return unit;
}

std::vector<std::string> exported_functions(const llvm::Module& unit, bool kernels_only) {
  std::vector<std::string> out;
  for (const llvm::Function& f : unit.functions()) {
    if (f.isDeclaration() || f.hasLocalLinkage() || f.isIntrinsic() ||
        f.getName() == kDeferredMarker)
      continue;
    bool kernel = f.getCallingConv() == llvm::CallingConv::PTX_Kernel ||
                  f.getCallingConv() == llvm::CallingConv::AMDGPU_KERNEL ||
                  f.hasFnAttribute("kiln-kernel");
    if (!kernels_only || kernel)
      out.push_back(f.getName().str());
  }
  return out;
}

} // namespace kiln::ir
