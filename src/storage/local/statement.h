// Internal to the cache layer: a cached prepared statement with its
// bindings, reset on scope exit, and small helpers shared by the sources
// that implement Store (store.cpp, usage.cpp, gc.cpp, verify.cpp, ...).
#pragma once

/// SQL true for a name column of key form (32 hex digits): such a name is
/// never consulted, since a lookup of that form is a closure key, and
/// nothing writes one now (verify reports one, gc drops it).
#define KILN_KEY_FORM(column) \
  "length(" column ") = 32 AND " column " NOT GLOB '*[^0-9a-fA-F]*'"

/// SQL true for an image row (of the images table) that serves closure
/// `key`: its own, or one stored for any closure with the same member set.
/// The roots of one deferred cycle share their members, and one image of
/// them serves every root. Order by KILN_OWN_IMAGE_FIRST(key) to prefer its own.
#define KILN_IMAGE_SERVES(key) \
  "closure_key IN (SELECT s.key FROM closures c JOIN closures s ON s.member_set = " \
  "c.member_set WHERE c.key = " key ")"
#define KILN_OWN_IMAGE_FIRST(key) "closure_key = " key " DESC"

#include "support/hash.h"

#include <sqlite3.h>

#include <cstdint>
#include <ctime>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kiln::storage {

// Resets and clears a cached statement when it goes out of scope.
class Bound {
public:
  explicit Bound(sqlite3_stmt* s) : s_(s) {}
  ~Bound() {
    sqlite3_reset(s_);
    sqlite3_clear_bindings(s_);
  }
  Bound& text(int i, const std::string& v) {
    sqlite3_bind_text(s_, i, v.data(), int(v.size()), SQLITE_TRANSIENT);
    return *this;
  }
  Bound& blob(int i, const std::string& v) {
    sqlite3_bind_blob(s_, i, v.data(), int(v.size()), SQLITE_TRANSIENT);
    return *this;
  }
  Bound& i64(int i, int64_t v) {
    sqlite3_bind_int64(s_, i, v);
    return *this;
  }
  Bound& real(int i, double v) {
    sqlite3_bind_double(s_, i, v);
    return *this;
  }
  /// A dictionary id, NULL for 0 (no dictionary).
  Bound& dict(int i, int64_t id) {
    if (id)
      sqlite3_bind_int64(s_, i, id);
    else
      sqlite3_bind_null(s_, i);
    return *this;
  }
  int step() { return sqlite3_step(s_); }
  std::string col_text(int i) const {
    const unsigned char* p = sqlite3_column_text(s_, i);
    return p ? std::string(reinterpret_cast<const char*>(p), size_t(sqlite3_column_bytes(s_, i)))
             : std::string();
  }
  std::string col_blob(int i) const {
    const void* p = sqlite3_column_blob(s_, i);
    return p ? std::string(static_cast<const char*>(p), size_t(sqlite3_column_bytes(s_, i)))
             : std::string();
  }
  int64_t col_i64(int i) const { return sqlite3_column_int64(s_, i); }
  /// A dictionary id column: 0 for NULL.
  int64_t col_dict(int i) const {
    return sqlite3_column_type(s_, i) == SQLITE_NULL ? 0 : sqlite3_column_int64(s_, i);
  }
  double col_real(int i) const { return sqlite3_column_double(s_, i); }

private:
  sqlite3_stmt* s_;
};

/// A blob as stored: zstd data and the dictionary it needs (0: none).
struct Packed {
  std::string data;
  int64_t dict = 0;
};

inline Hash128 key_of(const std::string& hex) {
  auto h = parse_hash128(hex);
  return h ? *h : Hash128{};
}

/// Stored checksum: XXH3-64 of the raw bytes, as SQLite's signed integer.
inline int64_t checksum_of(const std::string& raw) { return int64_t(hash64(raw)); }

inline int64_t now_seconds() { return int64_t(std::time(nullptr)); }

// --- multi-valued columns ------------------------------------------------
// A list stored in one column (a library's roots, a memo's roots and
// dependencies) is a sequence of netstrings, "<byte length>:<bytes>,", in a
// BLOB: every name LLVM accepts (tab, newline, NUL) reads back as written,
// where text joined on a separator would split it. Netstrings rather than
// binary lengths so that a migration can write them in SQL and the sqlite3
// shell shows them.

/// The fields as one column value.
inline std::string pack_fields(const std::vector<std::string>& fields) {
  std::string out;
  for (const std::string& f : fields) {
    out += std::to_string(f.size());
    out += ':';
    out += f;
    out += ',';
  }
  return out;
}

/// The fields of a column value; nullopt if it is not a whole sequence of
/// netstrings (the cache is read as hostile input: every length is checked
/// against what is left).
inline std::optional<std::vector<std::string>> unpack_fields(std::string_view in) {
  std::vector<std::string> out;
  while (!in.empty()) {
    size_t n = 0, digits = 0;
    while (digits < in.size() && in[digits] >= '0' && in[digits] <= '9') {
      if (digits == 10)
        return std::nullopt; // no field is 10 GB: a damaged length
      n = n * 10 + size_t(in[digits] - '0');
      ++digits;
    }
    if (digits == 0 || digits >= in.size() || in[digits] != ':')
      return std::nullopt;
    in.remove_prefix(digits + 1);
    if (n >= in.size() || in[n] != ',')
      return std::nullopt;
    out.emplace_back(in.substr(0, n));
    in.remove_prefix(n + 1);
  }
  return out;
}

} // namespace kiln::storage
