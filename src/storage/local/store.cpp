// The cache file as one store: the database part (database.h), the blob
// codec (codec.h) and the record groups, each in its own source with its
// SQL: jobs.cpp, closures.cpp, images.cpp, libraries.cpp, request_memos.cpp,
// usage.cpp, gc.cpp, verify.cpp, catalog.cpp, transfer.cpp, and codec.cpp
// for compaction.
#include "storage/local/store.h"

#include "storage/local/codec.h"
#include "storage/local/statement.h"

#include <sqlite3.h>

namespace kiln::storage {

Result<std::unique_ptr<Store>> Store::open(const std::string& path, OpenMode mode) {
  KILN_TRY_ASSIGN(auto db, Database::open(path, mode));
  std::unique_ptr<Store> st(new Store(std::move(db)));
  Store* self = st.get();
  st->db_->on_reconnect([self] { self->codec_.forget(); });
  return st;
}

Store::Store(std::unique_ptr<Database> db) : db_(std::move(db)), codec_(*db_) {}

Store::~Store() {
  // An optimisation: a failure leaves plain blobs, still valid.
  if (!db_->read_only() && db_->wrote() && !db_->deferred())
    (void)compact();
  db_->close_wal();
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

} // namespace kiln::storage
