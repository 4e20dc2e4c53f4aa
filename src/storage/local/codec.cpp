// The blob codec (storage/local/codec.h) and the store's compaction: zstd
// dictionaries trained on the cache's own blobs, and plain blobs
// recompressed with them.
#include "storage/local/codec.h"

#include "storage/local/database.h"
#include "storage/local/statement.h"
#include "storage/local/store.h"

#include "support/compress.h"

#include "support/zstd_api.h"

#include <algorithm>
#include <cstdlib>

namespace kiln::storage {

namespace {

// --- dictionaries --------------------------------------------------------------

// The level of every stored blob (zstd_compress's).
constexpr int kLevel = 9;
// Training reads at most this many plain blobs of a kind, each at most
// kMaxSampleSize, kMaxSampleBytes in all: zstd wants about a hundred times
// the dictionary's size in samples, and training time grows with them.
constexpr int kMaxSamples = 2000;
constexpr int64_t kMaxSampleSize = 128 << 10;
constexpr size_t kMaxSampleBytes = 2 << 20;
constexpr size_t kMaxDictionarySize = 16 << 10;
constexpr size_t kMinDictionarySize = 1 << 10;
// compact() recompresses at most this many raw bytes per call, so that a
// close stays short when a big cache gains its first dictionary.
constexpr int64_t kCompactBytes = 32 << 20;
constexpr int kCompactBlobs = 8192;

using CompressContext = std::unique_ptr<ZSTD_CCtx, size_t (*)(ZSTD_CCtx*)>;

CompressContext compress_context() { return {ZSTD_createCCtx(), ZSTD_freeCCtx}; }

// One frame compressed with a dictionary; empty if zstd fails.
std::string compress_with(ZSTD_CCtx* cctx, const ZSTD_CDict* cdict, std::string_view raw) {
  if (!cctx)
    return {};
  std::string out(ZSTD_compressBound(raw.size()), '\0');
  size_t n = ZSTD_compress_usingCDict(cctx, out.data(), out.size(), raw.data(), raw.size(), cdict);
  out.resize(ZSTD_isError(n) ? 0 : n);
  return out;
}

// Blobs to train on: concatenated, with each one's size.
struct Samples {
  std::string bytes;
  std::vector<size_t> sizes;
  int64_t stored = 0; // their stored (plain zstd) size
};

// A dictionary of at most `capacity` bytes trained on `s`; empty if zstd
// cannot make one.
std::string train(const Samples& s, size_t capacity) {
  std::string dict(capacity, '\0');
  size_t n = ZDICT_trainFromBuffer(dict.data(), dict.size(), s.bytes.data(), s.sizes.data(),
                                   unsigned(s.sizes.size()));
  if (ZDICT_isError(n))
    return {};
  dict.resize(n);
  return dict;
}

// What `dict` makes of the samples: their compressed size plus its own.
int64_t cost_with(const std::string& dict, const Samples& s) {
  ZSTD_CDict* c = ZSTD_createCDict(dict.data(), dict.size(), kLevel);
  if (!c)
    return INT64_MAX;
  int64_t total = int64_t(dict.size());
  size_t at = 0;
  CompressContext cctx = compress_context();
  for (size_t n : s.sizes) {
    std::string out = compress_with(cctx.get(), c, std::string_view(s.bytes).substr(at, n));
    total += out.empty() ? int64_t(n) : int64_t(out.size());
    at += n;
  }
  ZSTD_freeCDict(c);
  return total;
}

} // namespace

std::string kind_name(bool image, const std::string& format) {
  return (image ? "image " : "artifact ") + format;
}

// Every read refuses a blob over max_decoded_size() (a decompression bomb is
// indistinguishable from it), so a write refuses one too: the error names the
// setting now, instead of the stored bytes reading as damaged later.
Status check_storable(const std::string& what, size_t size) {
  if (size <= max_decoded_size())
    return Status::ok();
  return make_error(Code::invalid_argument,
                    what + " is " + std::to_string(size) + " bytes, over the " +
                        std::to_string(max_decoded_size()) +
                        "-byte maximum a cache value may decode to; raise KILN_MAX_DECODED_SIZE "
                        "(for every process that reads this cache) to store it");
}

// A zstd dictionary as one connection uses it, digested for decompression
// and, once its kind's newest, for compression.
struct Dictionary {
  int64_t id = 0;
  std::string kind;
  std::string data;
  ZSTD_DDict* ddict = nullptr;
  mutable ZSTD_CDict* cdict = nullptr; ///< made under the store's lock, then only read
  Dictionary() = default;
  Dictionary(const Dictionary&) = delete;
  Dictionary& operator=(const Dictionary&) = delete;
  ~Dictionary() {
    ZSTD_freeDDict(ddict);
    ZSTD_freeCDict(cdict);
  }
};

Result<std::string> BlobCodec::unpack(const std::string& data, int64_t raw_size, int64_t checksum,
                                  int64_t dict, const std::string& what) {
  if (raw_size < 0)
    return make_error(Code::corrupt, what + " has a negative size");
  Result<std::string> raw = make_error(Code::internal, "unread");
  if (dict == 0) {
    raw = zstd_decompress(data, size_t(raw_size));
  } else {
    auto d = dictionary(dict);
    if (!d)
      return d.error().context(what);
    raw = zstd_decompress_dict((*d)->ddict, data, size_t(raw_size));
  }
  if (!raw)
    return raw.error().context(what);
  if (checksum_of(*raw) != checksum)
    return make_error(Code::corrupt, what + " fails its checksum");
  return raw;
}

Result<std::shared_ptr<const Dictionary>> BlobCodec::dictionary(int64_t id) {
  if (auto it = dictionaries_.find(id); it != dictionaries_.end())
    return it->second;
  std::string what = "dictionary " + std::to_string(id);
  KILN_TRY_ASSIGN(auto s,
                  db_->prepare("SELECT kind, checksum, data FROM dictionaries WHERE id = ?1"));
  Bound b(s);
  b.i64(1, id);
  int rc = b.step();
  if (rc == SQLITE_DONE)
    return make_error(Code::corrupt,
                      what + ", which it needs, is not in cache '" + db_->path() + "'");
  if (rc != SQLITE_ROW)
    return db_->db_error("cannot read " + what);
  auto d = std::make_shared<Dictionary>();
  d->id = id;
  d->kind = b.col_text(0);
  d->data = b.col_blob(2);
  if (checksum_of(d->data) != b.col_i64(1))
    return make_error(Code::corrupt, what + " (" + d->kind + ") fails its checksum");
  d->ddict = ZSTD_createDDict(d->data.data(), d->data.size());
  if (!d->ddict)
    return make_error(Code::corrupt, what + " (" + d->kind + ") is not a zstd dictionary");
  dictionaries_[id] = d;
  return std::shared_ptr<const Dictionary>(d);
}

Result<std::shared_ptr<const Dictionary>> BlobCodec::dictionary_for(const std::string& kind) {
  if (auto it = newest_dictionary_.find(kind); it != newest_dictionary_.end())
    return it->second;
  // Not cached while a kind has none: another process may train one.
  KILN_TRY_ASSIGN(auto s, db_->prepare("SELECT max(id) FROM dictionaries WHERE kind = ?1"));
  int64_t id = 0;
  {
    Bound b(s);
    b.text(1, kind);
    if (b.step() != SQLITE_ROW)
      return db_->db_error("cannot look up the dictionary for " + kind);
    id = b.col_dict(0);
  }
  if (id == 0)
    return std::shared_ptr<const Dictionary>();
  KILN_TRY_ASSIGN(auto d, dictionary(id));
  if (!d->cdict) {
    d->cdict = ZSTD_createCDict(d->data.data(), d->data.size(), kLevel);
    if (!d->cdict)
      return make_error(Code::internal, "cannot prepare dictionary " + std::to_string(id));
  }
  newest_dictionary_[kind] = d;
  return d;
}

std::shared_ptr<const Dictionary> BlobCodec::writing_dictionary(const std::string& kind) {
  auto d = dictionary_for(kind);
  return d ? d.take() : nullptr;
}

Packed BlobCodec::pack_with(const Dictionary* dict, const std::string& raw) {
  if (dict && dict->cdict) {
    std::string out = compress_with(compress_context().get(), dict->cdict, raw);
    if (!out.empty())
      return {std::move(out), dict->id};
  }
  return {zstd_compress(raw, kLevel), 0};
}

bool BlobCodec::may_train(const std::string& kind) const {
  if (train_every_kind_)
    return true;
  auto it = stored_.find(kind);
  return it != stored_.end() && it->second >= kMinDictionarySamples;
}

void BlobCodec::forget() {
  dictionaries_.clear();
  newest_dictionary_.clear();
}

// --- compaction: dictionaries trained on the cache's own blobs ---------------

Status Store::compact() {
  if (read_only())
    return Status::ok();
  std::lock_guard lock(mu_);
  // Each kind with plain blobs, in a fixed order so that the same blobs
  // always give the same dictionaries.
  std::vector<std::tuple<bool, std::string, int64_t>> kinds;
  for (bool image : {false, true}) {
    KILN_TRY_ASSIGN(auto s, image ? prepare("SELECT format, count(*) FROM images WHERE dict_id IS "
                                            "NULL GROUP BY format ORDER BY format")
                                  : prepare("SELECT format, count(*) FROM artifacts WHERE dict_id "
                                            "IS NULL GROUP BY format ORDER BY format"));
    Bound b(s);
    int rc;
    while ((rc = b.step()) == SQLITE_ROW)
      kinds.emplace_back(image, b.col_text(0), b.col_i64(1));
    if (rc != SQLITE_DONE)
      return db_error("cannot count plain blobs");
  }
  int64_t budget = kCompactBytes;
  for (const auto& [image, format, plain] : kinds)
    KILN_TRY(compact_kind(image, format, plain, budget));
  // Free pages go back to the file system when the smaller blobs freed
  // some, or when they are a thirty-second of the file (index pages that
  // updates split, memos recorded again): moving a few dozen pages costs a
  // closing writer little. Fewer stay for the next writer to reuse.
  KILN_TRY_ASSIGN(auto free_pages, count("PRAGMA freelist_count"));
  KILN_TRY_ASSIGN(auto pages, count("PRAGMA page_count"));
  if (free_pages > 0 && (budget < kCompactBytes || free_pages * 32 > pages))
    KILN_TRY(exec("PRAGMA incremental_vacuum"));
  return Status::ok();
}

namespace {

/// Whether a dictionary for `kind` was tried and did not pay for itself
/// since its plain blobs were a quarter of `plain`: it is tried again only
/// when they have grown fourfold.
Result<bool> tried_lately(Database& db, const std::string& kind, int64_t plain) {
  KILN_TRY_ASSIGN(auto attempt, db.prepare("SELECT value FROM meta WHERE key = ?1"));
  Bound b(attempt);
  b.text(1, "dictionary attempt: " + kind);
  return b.step() == SQLITE_ROW && plain < 4 * std::atoll(b.col_text(0).c_str());
}

/// A plain blob's row, its data recompressed with a dictionary.
struct Recompressed {
  int64_t rowid, raw_size, checksum;
  std::string data, key;
  int64_t link = 0, created_at = 0;
};

/// `format`'s plain blobs, recompressed with `dict` until `budget` bytes
/// are spent: the raw bytes, checksum and rowid stay; a damaged blob is
/// left as it is, for verify to report (so is an image whose link row is
/// lost: inserted again, it would fail its foreign key, and with it every
/// compaction).
Result<std::vector<Recompressed>> recompress_plain(Database& db, bool image,
                                                   const std::string& format,
                                                   const Dictionary& dict, int64_t& budget) {
  KILN_TRY_ASSIGN(auto sel,
                  image ? db.prepare("SELECT rowid, raw_size, checksum, data, closure_key, link, "
                                     "created_at FROM images WHERE format = ?1 AND "
                                     "dict_id IS NULL AND link IN (SELECT id FROM image_links) "
                                     "ORDER BY rowid LIMIT ?2")
                        : db.prepare("SELECT rowid, raw_size, checksum, data, job_key FROM "
                                     "artifacts WHERE format = ?1 AND dict_id IS NULL ORDER BY "
                                     "rowid LIMIT ?2"));
  std::vector<Recompressed> rows;
  CompressContext cctx = compress_context();
  Bound b(sel);
  b.text(1, format).i64(2, kCompactBlobs);
  while (budget > 0 && b.step() == SQLITE_ROW) {
    Recompressed r{b.col_i64(0), b.col_i64(1), b.col_i64(2), b.col_blob(3), b.col_blob(4), {}, {}};
    if (image) {
      r.link = b.col_i64(5);
      r.created_at = b.col_i64(6);
    }
    budget -= std::max<int64_t>(r.raw_size, 1);
    if (r.raw_size < 0)
      continue;
    auto raw = zstd_decompress(r.data, size_t(r.raw_size));
    if (!raw || checksum_of(*raw) != r.checksum)
      continue;
    std::string packed = compress_with(cctx.get(), dict.cdict, *raw);
    if (packed.empty())
      continue;
    r.data = std::move(packed);
    rows.push_back(std::move(r));
  }
  return rows;
}

/// The rows of `rows` deleted and inserted again with their recompressed
/// data and `dict_id`, rather than updated in place: a row that shrinks
/// keeps its page, and these shrink to a fraction.
Status replace_rows(Database& db, bool image, const std::string& format, const std::string& kind,
                    int64_t dict_id, const std::vector<Recompressed>& rows) {
  KILN_TRY_ASSIGN(auto del, image ? db.prepare("DELETE FROM images WHERE rowid = ?1")
                                  : db.prepare("DELETE FROM artifacts WHERE rowid = ?1"));
  for (const Recompressed& r : rows) {
    Bound b(del);
    b.i64(1, r.rowid);
    if (b.step() != SQLITE_DONE)
      return db.db_error("cannot recompress a blob of " + kind);
  }
  KILN_TRY_ASSIGN(auto ins,
                  image ? db.prepare("INSERT INTO images(rowid, closure_key, link, format, "
                                     "raw_size, checksum, data, created_at, dict_id) VALUES (?1, "
                                     "?2, ?3, ?5, ?6, ?7, ?8, ?9, ?10)")
                        : db.prepare("INSERT INTO artifacts(rowid, job_key, format, raw_size, "
                                     "checksum, data, dict_id) VALUES (?1, ?2, ?5, ?6, ?7, ?8, "
                                     "?10)"));
  for (const Recompressed& r : rows) {
    Bound b(ins);
    b.i64(1, r.rowid).blob(2, r.key).text(5, format).i64(6, r.raw_size).i64(7, r.checksum);
    b.blob(8, r.data).i64(10, dict_id);
    if (image)
      b.i64(3, r.link).i64(9, r.created_at);
    if (b.step() != SQLITE_DONE)
      return db.db_error("cannot recompress a blob of " + kind);
  }
  return Status::ok();
}

} // namespace

Status Store::compact_kind(bool image, const std::string& format, int64_t plain,
                           int64_t& budget) {
  std::string kind = kind_name(image, format);
  auto newest = codec_.dictionary_for(kind);
  if (!newest)
    return Status::ok(); // a damaged dictionary: verify reports it; nothing to do here
  std::shared_ptr<const Dictionary> dict = newest.take();
  if (!dict) {
    if (plain < kMinDictionarySamples)
      return Status::ok();
    // Training takes tens of milliseconds: a connection that stored a few
    // blobs (a small file's precompile) leaves it to one that stored many,
    // or to gc, rather than pay it on its request's clock.
    if (!codec_.may_train(kind))
      return Status::ok();
    KILN_TRY_ASSIGN(bool tried, tried_lately(*db_, kind, plain));
    if (tried)
      return Status::ok();
    KILN_TRY_ASSIGN(dict, train_dictionary(image, format, plain));
    if (!dict)
      return Status::ok();
  }
  if (budget <= 0)
    return Status::ok();
  // Plain blobs recompressed with the dictionary, in one transaction.
  return transaction([&]() -> Status {
    KILN_TRY_ASSIGN(auto rows, recompress_plain(*db_, image, format, *dict, budget));
    return replace_rows(*db_, image, format, kind, dict->id, rows);
  });
}

Result<std::shared_ptr<const Dictionary>> Store::train_dictionary(bool image,
                                                                  const std::string& format,
                                                                  int64_t plain) {
  std::string kind = kind_name(image, format);
  // Samples in key order, so that every cache holding the same blobs trains
  // the same dictionary.
  Samples samples;
  KILN_TRY(read_transaction([&]() -> Status {
    KILN_TRY_ASSIGN(auto s, image ? prepare("SELECT raw_size, checksum, data FROM images WHERE "
                                            "format = ?1 AND dict_id IS NULL AND raw_size <= ?2 "
                                            "ORDER BY closure_key, " KILN_ARCH_OF("images")
                                            ", " KILN_LINKER_OF("images") " LIMIT ?3")
                                  : prepare("SELECT raw_size, checksum, data FROM artifacts WHERE "
                                            "format = ?1 AND dict_id IS NULL AND raw_size <= ?2 "
                                            "ORDER BY job_key LIMIT ?3"));
    Bound b(s);
    b.text(1, format).i64(2, kMaxSampleSize).i64(3, kMaxSamples);
    while (samples.bytes.size() < kMaxSampleBytes && b.step() == SQLITE_ROW) {
      std::string data = b.col_blob(2);
      auto raw = unpack(data, b.col_i64(0), b.col_i64(1), 0, kind);
      if (!raw)
        continue; // damaged: not a sample
      samples.bytes += *raw;
      samples.sizes.push_back(raw->size());
      samples.stored += int64_t(data.size());
    }
    return Status::ok();
  }));
  // The candidates: about an eighth of the samples (zstd's advice is a
  // hundredth; small caches do better with more), and smaller ones, which
  // win when the blobs are few. The one that stores the samples in the
  // fewest bytes, itself included, is kept if it saves a tenth.
  std::string best;
  int64_t best_cost = INT64_MAX;
  if (samples.sizes.size() >= size_t(kMinDictionarySamples)) {
    size_t cap = kMaxDictionarySize;
    while (cap > kMinDictionarySize && cap > samples.bytes.size() / 8)
      cap /= 2;
    for (size_t c : {cap, cap / 2, cap / 4}) {
      if (c < kMinDictionarySize)
        break;
      std::string dict = train(samples, c);
      if (dict.empty())
        continue;
      int64_t cost = cost_with(dict, samples);
      if (cost < best_cost) {
        best = std::move(dict);
        best_cost = cost;
      }
    }
  }
  bool worth = !best.empty() && best_cost <= samples.stored - samples.stored / 10;
  KILN_TRY(transaction([&]() -> Status {
    if (!worth) {
      KILN_TRY_ASSIGN(auto s, prepare("INSERT OR REPLACE INTO meta(key, value) VALUES (?1, ?2)"));
      Bound b(s);
      b.text(1, "dictionary attempt: " + kind).text(2, std::to_string(plain));
      if (b.step() != SQLITE_DONE)
        return db_error("cannot record a dictionary attempt");
      return Status::ok();
    }
    // Another process may have trained one meanwhile: the first one stays.
    KILN_TRY_ASSIGN(auto have, prepare("SELECT max(id) FROM dictionaries WHERE kind = ?1"));
    {
      Bound b(have);
      b.text(1, kind);
      if (b.step() == SQLITE_ROW && b.col_dict(0) != 0)
        return Status::ok();
    }
    KILN_TRY_ASSIGN(auto ins, prepare("INSERT INTO dictionaries(kind, samples, checksum, data, "
                                      "created_at) VALUES (?1, ?2, ?3, ?4, ?5)"));
    Bound b(ins);
    b.text(1, kind).i64(2, int64_t(samples.sizes.size())).i64(3, checksum_of(best));
    b.blob(4, best).i64(5, now_seconds());
    if (b.step() != SQLITE_DONE)
      return db_error("cannot store a dictionary for " + kind);
    return Status::ok();
  }));
  if (!worth)
    return std::shared_ptr<const Dictionary>();
  return codec_.dictionary_for(kind);
}

} // namespace kiln::storage
