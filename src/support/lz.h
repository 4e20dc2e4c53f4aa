// A small LZ77 codec (the LZ4 block format's sequences: a token, literals,
// a two-byte offset, no entropy coding) for bytes read on the path of a
// process that only loads host code, where zstd is not mapped: the
// published host images (storage/published.h). An optional dictionary
// (another image: ELF headers, dynamic sections and symbol tables repeat)
// is a prefix that matches may reach into.
//
// Decoding trusts nothing: every length and offset is checked against the
// input, the dictionary and the declared size, which bounds what is
// allocated; malformed input is `corrupt`, never a read or write out of
// bounds.
#pragma once

#include <kiln/result.hpp>

#include <string>
#include <string_view>

namespace kiln {

/// `raw` packed, matches reaching up to 64 KiB back into `raw` and the end
/// of `dict`. Deterministic.
std::string lz_pack(std::string_view raw, std::string_view dict = {});

/// What lz_pack gave, unpacked with the same `dict` to exactly `raw_size`
/// bytes; `corrupt` otherwise.
Result<std::string> lz_unpack(std::string_view packed, size_t raw_size,
                              std::string_view dict = {});

} // namespace kiln
