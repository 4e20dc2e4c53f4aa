// The images record group: linked images by (closure, arch, linker),
// through the blob codec; the best image a load can take (its own, a member
// set sibling's, a library's); and a read-only connection's images kept in
// memory.
#include "storage/local/codec.h"
#include "storage/local/statement.h"
#include "storage/local/store.h"

namespace kiln::storage {

Result<int64_t> Store::image_link_id(const std::string& arch, const std::string& linker) {
  // A few rows (one per arch and linker): no index needed. The row is added
  // by one statement that first asks whether it is there, so that two
  // writers (two processes relinking after a toolchain update) cannot both
  // add it: the statement runs under the write lock. An id is never one an
  // image row still names (its link row lost to damage), which would give
  // that image this arch and linker; that takes a read of the images' rows,
  // once per new arch or linker.
  KILN_TRY_ASSIGN(auto add, prepare("INSERT INTO image_links(id, arch, linker) SELECT "
                                    "coalesce((SELECT max(m) FROM (SELECT max(id) AS m FROM "
                                    "image_links UNION ALL SELECT max(link) FROM images)), 0) + 1, "
                                    "?1, ?2 WHERE NOT EXISTS (SELECT 1 FROM image_links WHERE "
                                    "arch = ?1 AND linker = ?2)"));
  KILN_TRY_ASSIGN(auto find, prepare("SELECT id FROM image_links WHERE arch = ?1 AND linker = ?2 "
                                     "ORDER BY id LIMIT 1"));
  for (sqlite3_stmt* s : {find, add, find}) {
    Bound b(s);
    b.text(1, arch).text(2, linker);
    int rc = b.step();
    if (rc == SQLITE_ROW)
      return b.col_i64(0);
    if (rc != SQLITE_DONE)
      return db_error("cannot record the image link " + arch + " (" + linker + ")");
  }
  return make_error(Code::internal, "the image link " + arch + " (" + linker + ") was not added");
}

Status Store::insert_image_row(const ImageRecord& image, const Packed& packed) {
  const ImageKey &key = image.key;
  KILN_TRY_ASSIGN(int64_t link, image_link_id(key.arch, key.linker));
  // Replace, not ignore: a stored image that failed its checks is relinked
  // and must be overwritten (same key, so otherwise the same bytes).
  KILN_TRY_ASSIGN(
      auto s, prepare("INSERT OR REPLACE INTO images(closure_key, link, format, raw_size, "
                      "checksum, data, created_at, dict_id) VALUES (?1, ?2, ?4, ?5, ?6, ?7, ?8, "
                      "?9)"));
  Bound b(s);
  b.key(1, key.closure).i64(2, link).text(4, image.format);
  b.i64(5, int64_t(image.bytes.size())).i64(6, checksum_of(image.bytes)).blob(7, packed.data);
  b.i64(8, now_seconds()).dict(9, packed.dict);
  if (b.step() != SQLITE_DONE)
    return db_error("cannot store the image of closure " + key.closure.hex());
  return Status::ok();
}

Status Store::put_image(const ImageKey& key, const std::string& format, const std::string& bytes) {
  if (read_only()) {
    // Kept for this connection's loads: the next process relinks it again.
    std::lock_guard lock(mu_);
    memory_images_.put(key, bytes);
    return Status::ok();
  }
  KILN_TRY(check_storable("the image of closure " + key.closure.hex() + " for " + key.arch,
                          bytes.size()));
  ImageRecord image{key, format, bytes};
  std::shared_ptr<const Dictionary> dict;
  {
    std::lock_guard lock(mu_);
    dict = writing_dictionary(kind_name(true, format));
    codec_.count_stored(kind_name(true, format));
  }
  Packed packed = pack_with(dict.get(), bytes);
  std::lock_guard lock(mu_);
  return insert_image_row(image, packed);
}

Result<std::string> Store::get_image(const ImageKey& key) {
  std::lock_guard lock(mu_);
  if (auto mem = memory_images_.newest(key.closure, key.arch, &key.linker))
    return std::move(*mem);
  KILN_TRY_ASSIGN(auto s,
                  prepare("SELECT raw_size, checksum, data, dict_id FROM images WHERE "
                          KILN_IMAGE_SERVES("?1") " AND link IN (SELECT id FROM image_links "
                          "WHERE arch = ?2 AND linker = ?3) ORDER BY "
                          KILN_OWN_IMAGE_FIRST("?1") " LIMIT 1"));
  Bound b(s);
  b.key(1, key.closure).text(2, key.arch).text(3, key.linker);
  return step_blob(b, "image of closure " + key.closure.hex() + " for " + key.arch);
}

Result<std::string> Store::get_image_any_linker(const Hash128& closure, const std::string& arch) {
  std::lock_guard lock(mu_);
  if (auto mem = memory_images_.newest(closure, arch, nullptr))
    return std::move(*mem);
  // One read transaction: the row chosen is the row read.
  Result<std::string> out = make_error(Code::internal, "unread");
  KILN_TRY(read_transaction([&]() -> Status {
    out = read_best_image(closure, arch);
    return Status::ok();
  }));
  return out;
}

Result<std::string> Store::read_best_image(const Hash128& closure, const std::string& arch,
                                           Hash128* source) {
  KILN_TRY_ASSIGN(ImageRow row, find_best_image(closure, arch));
  if (source)
    *source = row.owner;
  return read_image_row(row.rowid, "image of closure " + closure.hex() + " for " + arch);
}

Result<Store::ImageRow> Store::find_best_image(const Hash128& closure, const std::string& arch) {
  // Candidates first, by index, the choice in code: the one-statement form
  // (an IN list over the member set, ORDER BY ... LIMIT 1) built two
  // temporary b-trees on every load.
  struct Best {
    int64_t rowid = 0, created_at = 0;
    std::string linker;
    Hash128 owner;
    bool found = false;
  } best;
  // Whether a candidate (created, linker) beats the best so far: the
  // newest, then the greatest linker.
  auto better = [&](int64_t created, const std::string& linker) {
    return !best.found || created > best.created_at ||
           (created == best.created_at && linker > best.linker);
  };
  auto scan = [&](Bound& b, const char* what) -> Status {
    for (int rc; (rc = b.step()) != SQLITE_DONE;) {
      if (rc != SQLITE_ROW)
        return db_error(std::string("cannot list ") + what + " of closure " + closure.hex());
      int64_t created = b.col_i64(1);
      std::string linker = b.col_text(2);
      if (better(created, linker))
        best = {b.col_i64(0), created, std::move(linker), b.col_key(3), true};
    }
    return Status::ok();
  };
  {
    KILN_TRY_ASSIGN(auto own, prepare("SELECT i.rowid, i.created_at, " KILN_LINKER_OF("i") ", "
                                      "i.closure_key FROM images i WHERE i.closure_key = ?1 AND "
                                      "i.link IN (SELECT id FROM image_links WHERE arch = ?2)"));
    Bound b(own);
    b.key(1, closure).text(2, arch);
    KILN_TRY(scan(b, "images"));
  }
  if (!best.found) {
    // The image one of its member set's other closures has (a deferred
    // cycle's roots share one). A lone root has no set, and no sibling.
    KILN_TRY_ASSIGN(auto served,
                    prepare("SELECT i.rowid, i.created_at, " KILN_LINKER_OF("i") ", i.closure_key "
                            "FROM closures c JOIN closures s ON s.member_set = c.member_set "
                            "JOIN images i ON i.closure_key = s.key AND i.link IN (SELECT id "
                            "FROM image_links WHERE arch = ?2) "
                            "WHERE c.key = ?1 AND c.member_set IS NOT NULL"));
    Bound b(served);
    b.key(1, closure).text(2, arch);
    KILN_TRY(scan(b, "shared images"));
  }
  if (!best.found)
    KILN_TRY(scan_library_images(closure, arch, [&](int64_t rowid, int64_t created,
                                                    std::string linker, const Hash128& owner) {
      if (better(created, linker))
        best = {rowid, created, std::move(linker), owner, true};
    }));
  if (!best.found)
    return make_error(Code::not_found, "no image of closure " + closure.hex() + " for " + arch +
                                           " in cache '" + path() + "'");
  return ImageRow{best.rowid, best.owner};
}

Result<std::string> Store::read_image_row(int64_t rowid, const std::string& what) {
  KILN_TRY_ASSIGN(auto s, prepare("SELECT raw_size, checksum, data, dict_id FROM images "
                                  "WHERE rowid = ?1"));
  Bound b(s);
  b.i64(1, rowid);
  return step_blob(b, what);
}

Status Store::scan_library_images(
    const Hash128& closure, const std::string& arch,
    const std::function<void(int64_t, int64_t, std::string, const Hash128&)>& found) {
  // The image of a kernel library holding every member of the closure (a
  // library precompile links the library's image, not one per root): the
  // libraries whose member set has the closure's root job under the same
  // symbol, kept only if no member of the closure is missing from it.
  KILN_TRY_ASSIGN(auto head, prepare("SELECT c.root_job, c.member_set, coalesce((SELECT m.symbol "
                                     "FROM member_sets m WHERE m.set_key = c.member_set AND "
                                     "m.job_key = c.root_job), j.symbol) FROM closures c JOIN "
                                     "jobs j ON j.key = c.root_job WHERE c.key = ?1"));
  Hash128 root;
  std::optional<Hash128> set;
  std::string symbol;
  {
    Bound b(head);
    b.key(1, closure);
    int rc = b.step();
    if (rc == SQLITE_DONE)
      return Status::ok();
    if (rc != SQLITE_ROW)
      return db_error("cannot read closure " + closure.hex());
    root = b.col_key(0);
    set = b.col_key_opt(1);
    if (!set && !b.is_null(1))
      return Status::ok(); // a damaged row: verify reports it
    symbol = b.col_symbol(2);
  }
  KILN_TRY_ASSIGN(auto libs,
                  prepare("SELECT i.rowid, i.created_at, " KILN_LINKER_OF("i") ", s.key, "
                          "s.member_set FROM member_sets lm JOIN closures s ON s.member_set = "
                          "lm.set_key AND s.key != ?3 JOIN libraries l ON l.closure_key = s.key "
                          "JOIN images i ON i.closure_key = s.key AND i.link IN (SELECT id FROM "
                          "image_links WHERE arch = ?4) WHERE lm.job_key = ?1 AND "
                          "lm.symbol = ?2"));
  KILN_TRY_ASSIGN(auto missing,
                  prepare("SELECT 1 FROM member_sets a WHERE a.set_key = ?1 AND NOT EXISTS "
                          "(SELECT 1 FROM member_sets b WHERE b.set_key = ?2 AND b.symbol = "
                          "a.symbol AND b.job_key = a.job_key) LIMIT 1"));
  Bound b(libs);
  b.key(1, root).symbol(2, symbol).key(3, closure).text(4, arch);
  for (int rc; (rc = b.step()) != SQLITE_DONE;) {
    if (rc != SQLITE_ROW)
      return db_error("cannot list the libraries holding closure " + closure.hex());
    if (set) { // a lone root's one member is the one matched
      Bound m(missing);
      m.key(1, *set).key(2, b.col_key(4));
      int mrc = m.step();
      if (mrc == SQLITE_ROW)
        continue; // the library lacks one of the closure's members
      if (mrc != SQLITE_DONE)
        return db_error("cannot compare closure " + closure.hex() + " with a library");
    }
    found(b.col_i64(0), b.col_i64(1), b.col_text(2), b.col_key(3));
  }
  return Status::ok();
}

} // namespace kiln::storage
