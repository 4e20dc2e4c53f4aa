// An output stream for a code generator that is kept and run module after
// module: the bytes of one module's file are taken whole, and the stream
// starts the next one empty. The ELF writer patches its headers at offsets
// from the start of the stream, so two files cannot share one.
#pragma once

#include <llvm/Support/raw_ostream.h>

#include <cstring>
#include <string>

namespace kiln::link {

class ObjectStream : public llvm::raw_pwrite_stream {
public:
  ObjectStream() { SetUnbuffered(); }

  /// The bytes written since the last take(); the stream is empty after.
  std::string take() {
    flush();
    std::string bytes;
    bytes.swap(data_);
    return bytes;
  }

private:
  void write_impl(const char* p, size_t n) override { data_.append(p, n); }
  void pwrite_impl(const char* p, size_t n, uint64_t offset) override {
    std::memcpy(data_.data() + offset, p, n);
  }
  uint64_t current_pos() const override { return data_.size(); }

  std::string data_;
};

} // namespace kiln::link
