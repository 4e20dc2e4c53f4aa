// Fuzz target: bundle import. The first byte picks what the rest is:
//   even: a whole bundle file, decoded as `kiln-inspect import` decodes it;
//   odd:  a bundle's decoded payload, wrapped in a valid envelope (magic,
//         version, size, checksum, zstd) so that the fuzzer reaches the
//         cereal decoding and the validation behind the checksum.
// Decoding and validation must return errors, never crash, hang or
// allocate without bound.
#include "storage/bundle.h"
#include "core/check.h"
#include "support/compress.h"
#include "support/hash.h"

#include <cstddef>
#include <cstdint>
#include <string>

namespace {

void put_le(std::string& out, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i)
    out.push_back(char((v >> (8 * i)) & 0xff));
}

std::string envelope(const std::string& payload) {
  std::string packed = kiln::zstd_compress(payload, 1);
  kiln::Hash128 h = kiln::hash128(packed);
  std::string out = "KILNBNDL";
  put_le(out, kiln::storage::kBundleVersion, 4);
  put_le(out, payload.size(), 8);
  put_le(out, h.hi, 8);
  put_le(out, h.lo, 8);
  return out + packed;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0)
    return 0;
  std::string rest(reinterpret_cast<const char*>(data) + 1, size - 1);
  std::string file = (data[0] & 1) ? envelope(rest) : rest;
  auto bundle = kiln::storage::decode_bundle(file);
  if (!bundle)
    return 0;
  (void)kiln::core::check_bundle(*bundle);
  return 0;
}
