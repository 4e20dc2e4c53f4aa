// The LZ77 codec (support/lz.h). A sequence is a token (high four bits:
// literal count, low four: match length - 4; 15 means more in the bytes
// that follow, each 255 adding on until one is less), the literals, a
// little-endian two-byte offset back from the current position (1..65535,
// into the output so far or the dictionary before it) and the match
// length's extra bytes. The last sequence has literals only, and every
// match ends at least 5 bytes before the end, as in LZ4's block format.
#include "support/lz.h"

#include <cstdint>
#include <algorithm>
#include <climits>
#include <cstring>
#include <vector>

namespace kiln {

namespace {

constexpr size_t kMinMatch = 4;
constexpr size_t kMaxOffset = 65535;
constexpr size_t kLastLiterals = 5; ///< a match never covers the last bytes
constexpr int kHashBits = 14;
constexpr int kChainDepth = 32; ///< earlier positions of one hash tried per position
/// A match this long ends the search: inputs much like the dictionary
/// (images of one kind) have a long match at nearly every candidate, and
/// trying every one cost more than all the rest of the packing.
constexpr size_t kNiceMatch = 256;

uint32_t read32(const char* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

uint32_t hash4(uint32_t v) { return (v * 2654435761u) >> (32 - kHashBits); }

void put_length(std::string& out, size_t n) {
  while (n >= 255) {
    out.push_back(char(255));
    n -= 255;
  }
  out.push_back(char(n));
}

Error bad(const std::string& why) { return make_error(Code::corrupt, "packed bytes: " + why); }

} // namespace

LzPacker::LzPacker(std::string_view dict)
    : dict_head_(size_t(1) << kHashBits, -1), head_(size_t(1) << kHashBits, -1) {
  // Only the dictionary's last 64 KiB are within reach of the input.
  if (dict.size() > kMaxOffset)
    dict = dict.substr(dict.size() - kMaxOffset);
  buf_.assign(dict);
  start_ = dict.size();
  dict_prev_.assign(start_, -1);
  for (size_t i = 0; i + kMinMatch <= start_; ++i) {
    uint32_t h = hash4(read32(buf_.data() + i));
    dict_prev_[i] = dict_head_[h];
    dict_head_[h] = int32_t(i);
  }
}

std::string LzPacker::pack(std::string_view raw) {
  // One buffer: the dictionary, then the input; positions below `start`
  // are the dictionary's. The input's hash chains lie over the
  // dictionary's: a hash's chain is the input's positions with it, newest
  // first, then the dictionary's, as one table over both would have them.
  const size_t start = start_;
  if (raw.size() > size_t(INT32_MAX) - start) { // beyond the chains' positions: literals
    std::string out(1, char(15 << 4));
    put_length(out, raw.size() - 15);
    out.append(raw);
    return out;
  }
  buf_.resize(start);
  buf_.append(raw);
  const size_t end = buf_.size();
  const char* buf = buf_.data();
  prev_.assign(end - start, -1);
  auto first = [&](uint32_t h) { return head_[h] >= 0 ? head_[h] : dict_head_[h]; };
  auto next = [&](int64_t p) {
    return size_t(p) < start ? dict_prev_[size_t(p)] : prev_[size_t(p) - start];
  };
  auto insert = [&](size_t i) {
    uint32_t h = hash4(read32(buf + i));
    prev_[i - start] = first(h);
    if (head_[h] < 0)
      touched_.push_back(h);
    head_[h] = int32_t(i);
  };

  std::string out;
  out.reserve(raw.size() / 2 + 16);
  size_t anchor = start, pos = start;
  // Matches start only where kMinMatch + kLastLiterals bytes remain.
  const size_t match_limit =
      end >= kLastLiterals + kMinMatch ? end - kLastLiterals - kMinMatch + 1 : 0;
  while (pos < match_limit) {
    // The longest match among the last kChainDepth positions of this hash
    // within reach; the nearest wins a tie.
    const size_t max_len = end - kLastLiterals - pos;
    size_t len = 0, best = 0;
    int64_t cand = first(hash4(read32(buf + pos)));
    for (int depth = 0; cand >= 0 && depth < kChainDepth && pos - size_t(cand) <= kMaxOffset;
         ++depth, cand = next(cand)) {
      size_t n = 0;
      while (n < max_len && buf[size_t(cand) + n] == buf[pos + n])
        ++n;
      if (n > len) {
        len = n;
        best = size_t(cand);
        if (len >= kNiceMatch)
          break;
      }
    }
    insert(pos);
    if (len < kMinMatch) {
      ++pos;
      continue;
    }
    size_t lit = pos - anchor, ml = len - kMinMatch;
    out.push_back(char((lit >= 15 ? 15 : lit) << 4 | (ml >= 15 ? 15 : ml)));
    if (lit >= 15)
      put_length(out, lit - 15);
    out.append(buf + anchor, lit);
    size_t off = pos - best;
    out.push_back(char(off & 0xff));
    out.push_back(char(off >> 8));
    if (ml >= 15)
      put_length(out, ml - 15);
    // The positions a short match covers are found by later matches too;
    // of a long one (an input much like the dictionary), only its last few.
    for (size_t i = len <= kNiceMatch ? pos + 1 : pos + len - 4; i < pos + len && i < match_limit;
         ++i)
      insert(i);
    pos += len;
    anchor = pos;
  }
  size_t lit = end - anchor;
  out.push_back(char((lit >= 15 ? 15 : lit) << 4));
  if (lit >= 15)
    put_length(out, lit - 15);
  out.append(buf + anchor, lit);
  // The next input starts from the dictionary's chains alone.
  for (uint32_t h : touched_)
    head_[h] = -1;
  touched_.clear();
  buf_.resize(start);
  return out;
}

std::string lz_pack(std::string_view raw, std::string_view dict) {
  return LzPacker(dict).pack(raw);
}

Result<std::string> lz_unpack(std::string_view packed, size_t raw_size, std::string_view dict) {
  if (dict.size() > kMaxOffset)
    dict = dict.substr(dict.size() - kMaxOffset);
  // Each packed byte yields at most 255 + ... bytes of a match; a claim no
  // input of this size could reach is refused before anything is reserved.
  if (raw_size / 256 > packed.size() + 1)
    return bad("claims " + std::to_string(raw_size) + " bytes from " +
               std::to_string(packed.size()));
  // The output alone is written; a match reaching back past its start
  // reads the dictionary's end, as if it came just before.
  std::string out;
  out.reserve(raw_size);
  size_t in = 0;
  auto length = [&](size_t n, bool& ok) {
    if (n != 15)
      return n;
    for (;;) {
      if (in >= packed.size()) {
        ok = false;
        return n;
      }
      uint8_t b = uint8_t(packed[in++]);
      n += b;
      if (n > raw_size) { // no run is longer than the whole output
        ok = false;
        return n;
      }
      if (b != 255)
        return n;
    }
  };
  for (;;) {
    if (in >= packed.size())
      return bad("ends inside a sequence");
    uint8_t token = uint8_t(packed[in++]);
    bool ok = true;
    size_t lit = length(token >> 4, ok);
    if (!ok || lit > packed.size() - in || lit > raw_size - out.size())
      return bad("literals run past the end");
    out.append(packed.data() + in, lit);
    in += lit;
    if (in == packed.size())
      break; // the last sequence: literals only
    if (packed.size() - in < 2)
      return bad("ends inside an offset");
    size_t off = uint8_t(packed[in]) | size_t(uint8_t(packed[in + 1])) << 8;
    in += 2;
    size_t ml = length(token & 15, ok) + kMinMatch;
    if (!ok || off == 0 || off > dict.size() + out.size() || ml > raw_size - out.size())
      return bad("a match reaches outside the bytes so far");
    if (off > out.size()) {
      // From the dictionary, and on into the output if it reaches there.
      size_t from = dict.size() - (off - out.size());
      size_t n = std::min(ml, dict.size() - from);
      out.append(dict.data() + from, n);
      ml -= n;
      // The rest from the output's first byte on: as far back as what is
      // written now, byte by byte (it may reach what it writes).
      off = out.size();
      for (size_t i = 0; i < ml; ++i)
        out.push_back(out[out.size() - off]);
      continue;
    }
    // A match that overlaps what it writes (a run) is copied byte by
    // byte; any other at once.
    size_t from = out.size() - off;
    if (off >= ml) {
      size_t at = out.size();
      out.resize(at + ml);
      std::memcpy(out.data() + at, out.data() + from, ml);
    } else {
      for (size_t i = 0; i < ml; ++i)
        out.push_back(out[from + i]);
    }
  }
  if (out.size() != raw_size)
    return bad("unpacks to " + std::to_string(out.size()) + " bytes, not " +
               std::to_string(raw_size));
  return out;
}

} // namespace kiln
