// A small LZ77 codec (the LZ4 block format's sequences: a token, literals,
// a two-byte offset, no entropy coding) for bytes read on the path of a
// process that only loads host code, where zstd is not mapped: the
// published host images (storage/published/published.h). An optional dictionary
// (another image: ELF headers, dynamic sections and symbol tables repeat)
// is a prefix that matches may reach into.
//
// Decoding trusts nothing: every length and offset is checked against the
// input, the dictionary and the declared size, which bounds what is
// allocated; malformed input is `corrupt`, never a read or write out of
// bounds.
#pragma once

#include <kiln/result.hpp>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace kiln {

/// `raw` packed, matches reaching up to 64 KiB back into `raw` and the end
/// of `dict`. Deterministic.
std::string lz_pack(std::string_view raw, std::string_view dict = {});

/// lz_pack of many inputs with one dictionary, which is read once: each
/// pack() then costs in proportion to its input alone (lz_pack reads the
/// dictionary again for every input), and gives exactly what lz_pack gives.
/// Not for use by two threads at once.
class LzPacker {
public:
  explicit LzPacker(std::string_view dict);
  std::string pack(std::string_view raw);

private:
  std::string buf_;              ///< the dictionary, then the input being packed
  size_t start_ = 0;             ///< where the input starts in buf_
  std::vector<int32_t> dict_head_, dict_prev_; ///< the dictionary's hash chains
  std::vector<int32_t> head_, prev_;           ///< the input's, over the dictionary's
  std::vector<uint32_t> touched_;              ///< head_ entries to clear after a pack
};

/// What lz_pack gave, unpacked with the same `dict` to exactly `raw_size`
/// bytes; `corrupt` otherwise.
Result<std::string> lz_unpack(std::string_view packed, size_t raw_size,
                              std::string_view dict = {});

} // namespace kiln
