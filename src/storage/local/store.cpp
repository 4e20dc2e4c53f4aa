// The cache file as one store: the database part (database.h), the blob
// codec (codec.h) and the record groups, each in its own source with its
// SQL: jobs.cpp, closures.cpp, images.cpp, libraries.cpp, request_memos.cpp,
// usage.cpp, gc.cpp, verify.cpp (each Store's half of it), and codec.cpp
// for compaction; the listings and the bundle transaction are here.
#include "storage/local/store.h"

#include "storage/local/codec.h"
#include "storage/local/statement.h"
#include "storage/published/published.h"

namespace kiln::storage {

Result<std::unique_ptr<Store>> Store::open(const std::string& path, OpenMode mode) {
  KILN_TRY_ASSIGN(auto db, Database::open(path, mode));
  std::unique_ptr<Store> st(new Store(std::move(db)));
  Store* self = st.get();
  st->db_->on_reconnect([self] { self->codec_.forget(); });
  return st;
}

Store::Store(std::unique_ptr<Database> db) : db_(std::move(db)), codec_(*db_) {}

Store::~Store() { (void)close(); }

Status Store::close() {
  if (closed_)
    return Status::ok();
  closed_ = true;
  return db_->finish(read_host_root_, [&](const Database::Owed& owed) {
    Status first = Status::ok();
    // An optimisation: a failure leaves plain blobs, still valid.
    if (owed.compact)
      if (Status s = compact(); !s)
        first = s.error().context("compacting cache '" + path() + "'");
    // Also an optimisation: without them, host loads read this file. Owed
    // when a commit of this connection removed them, or a host load found
    // none current (none, or stale: another tool wrote the file since); a
    // connection that only read, or read for GPUs, takes no lock here.
    if (owed.publish)
      if (Status s = publish_images(); !s && first)
        first = s.error().context("publishing the host images of cache '" + path() + "'");
    return first;
  });
}

Error Store::read_only_error(const std::string& what) const { return db_->read_only_error(what); }

Result<DataStamp> Store::data_stamp() {
  std::lock_guard lock(mu_);
  return db_->stamp();
}

void Store::defer_checkpoint() {
  std::lock_guard lock(mu_);
  db_->defer_checkpoint();
}

void Store::end_deferral() {
  std::lock_guard lock(mu_);
  db_->end_deferral();
}

// Steps a bound (raw_size, checksum, data, dict_id) query: the checked raw
// bytes, not_found without a row, corrupt if damaged.
Result<std::string> Store::step_blob(Bound& b, const std::string& what) {
  int rc = b.step();
  if (rc == SQLITE_DONE)
    return make_error(Code::not_found, "no " + what + " in cache '" + path() + "'");
  if (rc != SQLITE_ROW)
    return db_error("cannot read " + what);
  return unpack(b.col_blob(2), b.col_i64(0), b.col_i64(1), b.col_dict(3), what);
}

Result<std::vector<ClosureRecord>> Store::list_closures() {
  std::vector<Hash128> keys;
  {
    std::lock_guard lock(mu_);
    KILN_TRY_ASSIGN(auto s, prepare("SELECT key FROM closures ORDER BY key"));
    Bound b(s);
    // A row whose key is not a key names no closure: verify reports it.
    while (b.step() == SQLITE_ROW)
      if (auto k = b.col_key_opt(0))
        keys.push_back(*k);
  }
  std::vector<ClosureRecord> out;
  for (const Hash128& k : keys) {
    KILN_TRY_ASSIGN(auto c, get_closure(k));
    out.push_back(std::move(c));
  }
  return out;
}

Result<std::vector<ImageRecord>> Store::images_of(const Hash128& closure) {
  std::lock_guard lock(mu_);
  // Its own images, else those of closures sharing its members (one per
  // architecture and linker), each under this closure's key.
  KILN_TRY_ASSIGN(auto s,
                  prepare("SELECT l.arch, l.linker, i.format, i.raw_size, i.checksum, i.data, "
                          "i.dict_id FROM images i JOIN image_links l ON l.id = i.link WHERE "
                          KILN_IMAGE_SERVES("?1") " ORDER BY l.arch, l.linker, "
                          KILN_OWN_IMAGE_FIRST("?1")));
  Bound b(s);
  b.key(1, closure);
  std::vector<ImageRecord> out;
  while (b.step() == SQLITE_ROW) {
    if (!out.empty() && out.back().key.arch == b.col_text(0) &&
        out.back().key.linker == b.col_text(1))
      continue;
    ImageRecord r{{closure, b.col_text(0), b.col_text(1)}, b.col_text(2), {}};
    std::string what = "image of closure " + closure.hex() + " for " + r.key.arch;
    KILN_TRY_ASSIGN(r.bytes,
                    unpack(b.col_blob(5), b.col_i64(3), b.col_i64(4), b.col_dict(6), what));
    out.push_back(std::move(r));
  }
  return out;
}

Status Store::put_bundle(const BundleData& data) {
  // Bundles carry raw bytes: each blob is compressed here with this cache's
  // dictionary for its kind, if it has one.
  std::map<std::string, std::shared_ptr<const Dictionary>> dicts;
  {
    std::lock_guard lock(mu_);
    auto want = [&](const std::string& kind) {
      if (!dicts.count(kind))
        dicts[kind] = writing_dictionary(kind);
      codec_.count_stored(kind);
    };
    for (const BundleData::Job& j : data.jobs)
      for (const Artifact& a : j.artifacts)
        want("artifact " + a.format);
    for (const ImageRecord& i : data.images)
      want("image " + i.format);
  }
  std::vector<std::vector<Packed>> packed_jobs;
  for (const BundleData::Job& j : data.jobs) {
    std::vector<Packed> packed;
    for (const Artifact& a : j.artifacts)
      packed.push_back(pack_with(dicts["artifact " + a.format].get(), a.bytes));
    packed_jobs.push_back(std::move(packed));
  }
  std::vector<Packed> packed_images;
  for (const ImageRecord& i : data.images)
    packed_images.push_back(pack_with(dicts["image " + i.format].get(), i.bytes));
  std::lock_guard lock(mu_);
  int64_t now = now_seconds();
  return transaction([&]() -> Status {
    for (size_t i = 0; i < data.jobs.size(); ++i)
      KILN_TRY(insert_job_rows(data.jobs[i].record, data.jobs[i].artifacts, packed_jobs[i],
                               data.jobs[i].refs));
    std::map<std::string, std::vector<NameRecord>> names;
    for (const NameRecord& n : data.names)
      names[n.closure.hex()].push_back(n);
    for (const ClosureRecord& c : data.closures)
      KILN_TRY(insert_closure_rows(c, names[c.key.hex()], now));
    for (size_t i = 0; i < data.images.size(); ++i)
      KILN_TRY(insert_image_row(data.images[i], packed_images[i]));
    return Status::ok();
  });
}

} // namespace kiln::storage
