// How Kiln writes strings it did not make (entry and symbol names, targets,
// paths, unit file names, messages), header-only: as valid JSON that keeps
// every byte (the tools' --json and kiln/admin.h), and as terminal text
// that cannot move the cursor, recolour or retitle the terminal. LLVM names are bytes, not UTF-8, and a
// cache is hostile input, so either may hold any byte.
//
// JSON: a string that is valid UTF-8 is written as it is. One that is not is
// written with each invalid byte replaced by U+FFFD, and the object holding
// it gains a sibling "<field>_hex" with the exact bytes in lowercase hex. An
// array of strings with an invalid element gains a parallel "<field>_hex"
// array (the hex of every element, valid ones too, so indices line up).
// Object keys made of data (stats' "targets") are only replaced, not kept.
//
// Text: C0 controls, DEL, C1 controls (U+0080..U+009F) and every byte that is
// not valid UTF-8 are written as \xNN, and a backslash as \\, so that the
// text shows each byte unambiguously; printable UTF-8 is kept as it is.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

namespace kiln::text {

/// The JSON string scheme in one paragraph (the tools' --help).
inline constexpr const char* kJsonHelp =
    "JSON: a string that is not valid UTF-8 (LLVM names are bytes) has each invalid byte "
    "replaced by U+FFFD and its exact bytes, in lowercase hex, in a sibling \"<field>_hex\" "
    "(for an array of strings, a parallel array). Text output writes control bytes and invalid "
    "UTF-8 as \\xNN and a backslash as \\\\.";

/// Length of the valid UTF-8 sequence starting at s[i] (1..4), or 0 if the
/// byte there does not start one (a stray continuation byte, an overlong
/// form, a surrogate, a code point past U+10FFFF, a truncated sequence).
/// *cp receives the code point of a valid sequence.
inline size_t utf8_sequence(std::string_view s, size_t i, uint32_t* cp) {
  auto byte = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  unsigned char b = byte(i);
  if (b < 0x80) {
    *cp = b;
    return 1;
  }
  size_t n;
  uint32_t c, lo = 0x80, hi = 0xbf; // allowed range of the second byte
  if (b >= 0xc2 && b <= 0xdf) {
    n = 2;
    c = b & 0x1f;
  } else if (b >= 0xe0 && b <= 0xef) {
    n = 3;
    c = b & 0x0f;
    if (b == 0xe0)
      lo = 0xa0; // overlong
    else if (b == 0xed)
      hi = 0x9f; // surrogates
  } else if (b >= 0xf0 && b <= 0xf4) {
    n = 4;
    c = b & 0x07;
    if (b == 0xf0)
      lo = 0x90; // overlong
    else if (b == 0xf4)
      hi = 0x8f; // past U+10FFFF
  } else {
    return 0;
  }
  if (i + n > s.size())
    return 0;
  for (size_t k = 1; k < n; ++k) {
    unsigned char t = byte(i + k);
    if (t < (k == 1 ? lo : 0x80) || t > (k == 1 ? hi : 0xbf))
      return 0;
    c = (c << 6) | (t & 0x3f);
  }
  *cp = c;
  return n;
}

/// Whether `s` is valid UTF-8 throughout.
inline bool valid_utf8(std::string_view s) {
  uint32_t cp;
  for (size_t i = 0; i < s.size();) {
    size_t n = utf8_sequence(s, i, &cp);
    if (!n)
      return false;
    i += n;
  }
  return true;
}

/// `s` with each byte that is not part of a valid UTF-8 sequence replaced by
/// U+FFFD: always valid UTF-8, equal to `s` when `s` already was.
inline std::string utf8_replaced(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  uint32_t cp;
  for (size_t i = 0; i < s.size();) {
    size_t n = utf8_sequence(s, i, &cp);
    if (n) {
      out.append(s, i, n);
      i += n;
    } else {
      out += "\xef\xbf\xbd";
      ++i;
    }
  }
  return out;
}

/// The bytes of `s` in lowercase hex, two digits each.
inline std::string hex_bytes(std::string_view s) {
  static const char digits[] = "0123456789abcdef";
  std::string out;
  out.reserve(2 * s.size());
  for (unsigned char c : s) {
    out += digits[c >> 4];
    out += digits[c & 15];
  }
  return out;
}

namespace detail {

/// Makes `j` valid for JSON output in place: strings as the banner says.
template <class Json> void make_lossless(Json& j) {
  if (j.is_string()) {
    const std::string& s = j.template get_ref<const std::string&>();
    if (!valid_utf8(s))
      j = utf8_replaced(s);
    return;
  }
  if (j.is_array()) {
    for (Json& e : j)
      make_lossless(e);
    return;
  }
  if (!j.is_object())
    return;
  // Rebuilt in order, so that each "<field>_hex" follows its field.
  Json out = Json::object();
  for (auto it = j.begin(); it != j.end(); ++it) {
    std::string key = valid_utf8(it.key()) ? it.key() : utf8_replaced(it.key());
    Json& value = it.value();
    Json hex;
    if (value.is_string()) {
      const std::string& s = value.template get_ref<const std::string&>();
      if (!valid_utf8(s))
        hex = hex_bytes(s);
    } else if (value.is_array()) {
      bool any_invalid = false, all_strings = true;
      for (const Json& e : value) {
        all_strings = all_strings && e.is_string();
        any_invalid = any_invalid || (e.is_string() &&
                                      !valid_utf8(e.template get_ref<const std::string&>()));
      }
      if (any_invalid && all_strings) {
        hex = Json::array();
        for (const Json& e : value)
          hex.push_back(hex_bytes(e.template get_ref<const std::string&>()));
      }
    }
    make_lossless(value);
    out[key] = std::move(value);
    if (!hex.is_null())
      out[key + "_hex"] = std::move(hex);
  }
  j = std::move(out);
}

} // namespace detail

/// `j` (an nlohmann::json or ordered_json) as one line of JSON, every string
/// written as the banner says. Never
/// throws on string contents: the lossless pass above makes every string
/// valid, and invalid UTF-8 that still reached dump() would be replaced.
template <class Json> std::string json_text(Json j) {
  detail::make_lossless(j);
  return j.dump(-1, ' ', false, Json::error_handler_t::replace);
}

namespace detail {

inline void escape_byte(std::string& out, unsigned char c) {
  static const char digits[] = "0123456789abcdef";
  out += "\\x";
  out += digits[c >> 4];
  out += digits[c & 15];
}

inline std::string printable(std::string_view s, bool keep_lines) {
  std::string out;
  out.reserve(s.size());
  uint32_t cp;
  for (size_t i = 0; i < s.size();) {
    size_t n = utf8_sequence(s, i, &cp);
    if (!n) {
      escape_byte(out, static_cast<unsigned char>(s[i]));
      ++i;
      continue;
    }
    if (keep_lines && cp == '\n') {
      // A message's further lines (a vendor's log) are indented, so that no
      // line of it can pass for a line of the tool's own.
      out += "\n  ";
    } else if (keep_lines && cp == '\t') {
      out += '\t';
    } else if (cp == '\\') {
      out += "\\\\";
    } else if (cp < 0x20 || (cp >= 0x7f && cp <= 0x9f)) {
      for (size_t k = 0; k < n; ++k)
        escape_byte(out, static_cast<unsigned char>(s[i + k]));
    } else {
      out.append(s, i, n);
    }
    i += n;
  }
  return out;
}

} // namespace detail

/// `s` for a terminal: control bytes, invalid UTF-8 and backslashes escaped
/// (\xNN, \\), printable UTF-8 as it is. For names, targets, paths: anything
/// printed inside a line of the tools' own layout.
inline std::string shown(std::string_view s) { return detail::printable(s, false); }

/// A message for a terminal: escaped as shown() does, but for its line
/// breaks (kept, the lines after the first indented by two spaces) and tabs,
/// since a toolchain's log or a diagnostic spans lines.
inline std::string shown_message(std::string_view s) {
  while (!s.empty() && s.back() == '\n')
    s.remove_suffix(1);
  return detail::printable(s, true);
}

/// `s` inside a double-quoted Graphviz DOT string: shown(), then its
/// backslashes and quotes escaped, so that a label reads as shown() does.
inline std::string dot_quoted(std::string_view s) {
  std::string out;
  for (char c : shown(s)) {
    if (c == '\\' || c == '"')
      out += '\\';
    out += c;
  }
  return out;
}

} // namespace kiln::text
