// Internal to the cache layer: a cached prepared statement with its
// bindings, reset on scope exit, and small helpers shared by the sources
// that implement Store (store.cpp, usage.cpp, gc.cpp, verify.cpp, ...).
#pragma once

/// SQL true for a name column of key form (32 hex digits): such a name is
/// never consulted, since a lookup of that form is a closure key, and
/// nothing writes one now (verify reports one, gc drops it).
#define KILN_KEY_FORM(column) \
  "length(" column ") = 32 AND " column " NOT GLOB '*[^0-9a-fA-F]*'"

/// SQL for a key column as its 32 lowercase hex digits (keys are stored as
/// their 16 bytes), for reports that name a row.
#define KILN_HEX(column) "lower(hex(" column "))"

/// SQL for a symbol column as its text (Bound::symbol stores a deferred
/// symbol as the 16 bytes of its digits), for reports that name one.
#define KILN_SYMBOL_TEXT(column)                                                                  \
  "(CASE WHEN typeof(" column ") = 'blob' AND length(" column ") = 16 THEN '__kiln_deferred_' " \
  "|| lower(hex(" column ")) ELSE " column " END)"

/// SQL true for an image row (of the images table) that serves closure
/// `key`: its own, or one stored for any closure with the same member set.
/// The roots of one deferred cycle share their members, and one image of
/// them serves every root. Order by KILN_OWN_IMAGE_FIRST(key) to prefer its own.
#define KILN_IMAGE_SERVES(key) \
  "(closure_key = " key " OR closure_key IN (SELECT s.key FROM closures c JOIN closures s ON " \
  "s.member_set = c.member_set WHERE c.key = " key "))"
#define KILN_OWN_IMAGE_FIRST(key) "closure_key = " key " DESC"
/// The arch and the linker of the images row named `row`, which names them
/// by its link (schema/0013_baseline.sql). To select images by them:
/// `link IN (SELECT id FROM image_links WHERE arch = ? AND linker = ?)`.
#define KILN_ARCH_OF(row) "(SELECT arch FROM image_links WHERE id = " row ".link)"
#define KILN_LINKER_OF(row) "(SELECT linker FROM image_links WHERE id = " row ".link)"

#include "core/keys.h"
#include "support/hash.h"

#include "storage/local/sqlite_api.h"

#include <cstdint>
#include <ctime>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kiln::storage {

/// A key as stored: its 16 bytes, big-endian (so byte order is hex order).
inline std::string key_bytes(const Hash128& h) {
  std::string out(16, '\0');
  for (int i = 0; i < 8; ++i) {
    out[size_t(7 - i)] = char((h.hi >> (8 * i)) & 0xff);
    out[size_t(15 - i)] = char((h.lo >> (8 * i)) & 0xff);
  }
  return out;
}

/// A stored key read back; nullopt unless it is 16 bytes.
inline std::optional<Hash128> key_from_bytes(const void* p, size_t n) {
  if (!p || n != 16)
    return std::nullopt;
  const auto* b = static_cast<const unsigned char*>(p);
  Hash128 h;
  for (int i = 0; i < 8; ++i) {
    h.hi = (h.hi << 8) | b[i];
    h.lo = (h.lo << 8) | b[8 + i];
  }
  return h;
}

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
  /// A key column's value (key_bytes).
  Bound& key(int i, const Hash128& h) {
    std::string bytes = key_bytes(h);
    sqlite3_bind_blob(s_, i, bytes.data(), 16, SQLITE_TRANSIENT);
    return *this;
  }
  /// A symbol column's value (schema 10): a deferred symbol as the 16 bytes
  /// of its digits (core::pack_deferred_symbol), any other as text. The
  /// same symbol is always stored the same way, so columns compare alike.
  Bound& symbol(int i, const std::string& v) {
    std::string packed = core::pack_deferred_symbol(v);
    if (packed.empty())
      return text(i, v);
    return blob(i, packed);
  }
  Bound& i64(int i, int64_t v) {
    sqlite3_bind_int64(s_, i, v);
    return *this;
  }
  Bound& real(int i, double v) {
    sqlite3_bind_double(s_, i, v);
    return *this;
  }
  /// A row id that may be absent (a dictionary, a unit), NULL for 0.
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
  /// A symbol column (Bound::symbol): a 16-byte blob is a deferred
  /// symbol's digits, anything else its text.
  std::string col_symbol(int i) const {
    if (sqlite3_column_type(s_, i) == SQLITE_BLOB && sqlite3_column_bytes(s_, i) == 16)
      return core::unpack_deferred_symbol(
          std::string_view(static_cast<const char*>(sqlite3_column_blob(s_, i)), 16));
    return col_text(i);
  }
  bool is_null(int i) const { return sqlite3_column_type(s_, i) == SQLITE_NULL; }
  /// A key column: nullopt unless it holds 16 bytes (a damaged row).
  std::optional<Hash128> col_key_opt(int i) const {
    const void* p = sqlite3_column_blob(s_, i);
    return key_from_bytes(p, size_t(sqlite3_column_bytes(s_, i)));
  }
  /// A key column; a damaged one reads as the zero key, which names nothing.
  Hash128 col_key(int i) const { return col_key_opt(i).value_or(Hash128{}); }
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

/// Stored checksum: XXH3-64 of the raw bytes, as SQLite's signed integer.
inline int64_t checksum_of(const std::string& raw) { return int64_t(hash64(raw)); }

inline int64_t now_seconds() { return int64_t(std::time(nullptr)); }

} // namespace kiln::storage
