// The LZ77 codec (support/lz.h). A sequence is a token (high four bits:
// literal count, low four: match length - 4; 15 means more in the bytes
// that follow, each 255 adding on until one is less), the literals, a
// little-endian two-byte offset back from the current position (1..65535,
// into the output so far or the dictionary before it) and the match
// length's extra bytes. The last sequence has literals only, and every
// match ends at least 5 bytes before the end, as in LZ4's block format.
#include "support/lz.h"

#include <cstdint>
#include <cstring>
#include <vector>

namespace kiln {

namespace {

constexpr size_t kMinMatch = 4;
constexpr size_t kMaxOffset = 65535;
constexpr size_t kLastLiterals = 5; ///< a match never covers the last bytes
constexpr int kHashBits = 14;
constexpr int kChainDepth = 32; ///< earlier positions of one hash tried per position

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

std::string lz_pack(std::string_view raw, std::string_view dict) {
  // One buffer: the dictionary's last 64 KiB, then the input; positions
  // below `start` are the dictionary's.
  if (dict.size() > kMaxOffset)
    dict = dict.substr(dict.size() - kMaxOffset);
  std::string buf;
  buf.reserve(dict.size() + raw.size());
  buf.append(dict);
  buf.append(raw);
  const size_t start = dict.size(), end = buf.size();
  // head[h]: the last position with hash h; prev[p]: the one before p.
  std::vector<int64_t> head(size_t(1) << kHashBits, -1);
  std::vector<int64_t> prev(end, -1);
  auto insert = [&](size_t i) {
    uint32_t h = hash4(read32(buf.data() + i));
    prev[i] = head[h];
    head[h] = int64_t(i);
  };
  for (size_t i = 0; i + kMinMatch <= start; ++i)
    insert(i);

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
    int64_t cand = head[hash4(read32(buf.data() + pos))];
    for (int depth = 0; cand >= 0 && depth < kChainDepth && pos - size_t(cand) <= kMaxOffset;
         ++depth, cand = prev[size_t(cand)]) {
      size_t n = 0;
      while (n < max_len && buf[size_t(cand) + n] == buf[pos + n])
        ++n;
      if (n > len) {
        len = n;
        best = size_t(cand);
      }
    }
    insert(pos);
    if (len < kMinMatch) {
      ++pos;
      continue;
    }
    cand = int64_t(best);
    size_t lit = pos - anchor, ml = len - kMinMatch;
    out.push_back(char((lit >= 15 ? 15 : lit) << 4 | (ml >= 15 ? 15 : ml)));
    if (lit >= 15)
      put_length(out, lit - 15);
    out.append(buf, anchor, lit);
    size_t off = pos - size_t(cand);
    out.push_back(char(off & 0xff));
    out.push_back(char(off >> 8));
    if (ml >= 15)
      put_length(out, ml - 15);
    // The positions the match covers are found by later matches too.
    for (size_t i = pos + 1; i < pos + len && i < match_limit; ++i)
      insert(i);
    pos += len;
    anchor = pos;
  }
  size_t lit = end - anchor;
  out.push_back(char((lit >= 15 ? 15 : lit) << 4));
  if (lit >= 15)
    put_length(out, lit - 15);
  out.append(buf, anchor, lit);
  return out;
}

Result<std::string> lz_unpack(std::string_view packed, size_t raw_size, std::string_view dict) {
  if (dict.size() > kMaxOffset)
    dict = dict.substr(dict.size() - kMaxOffset);
  // Each packed byte yields at most 255 + ... bytes of a match; a claim no
  // input of this size could reach is refused before anything is reserved.
  if (raw_size / 256 > packed.size() + 1)
    return bad("claims " + std::to_string(raw_size) + " bytes from " +
               std::to_string(packed.size()));
  std::string out;
  out.reserve(dict.size() + raw_size);
  out.append(dict);
  const size_t limit = dict.size() + raw_size;
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
      if (n > limit) { // no run is longer than the whole output
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
    if (!ok || lit > packed.size() - in || lit > limit - out.size())
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
    if (!ok || off == 0 || off > out.size() || ml > limit - out.size())
      return bad("a match reaches outside the bytes so far");
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
  if (out.size() != limit)
    return bad("unpacks to " + std::to_string(out.size() - dict.size()) + " bytes, not " +
               std::to_string(raw_size));
  return out.substr(dict.size());
}

} // namespace kiln
