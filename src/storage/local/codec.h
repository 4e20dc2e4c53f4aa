// The cache's blob codec: every stored blob (an artifact, an image) is zstd
// at one level, compressed with the dictionary its kind ("artifact obj",
// "image cubin") was trained on where it has one, and carries the XXH3-64
// checksum of its raw bytes. Reading one decompresses it within the size it
// claims and checks it; a dictionary is read and checked once per
// connection. Dictionaries are trained by the store's compaction
// (Store::compact, codec.cpp), from the cache's own blobs, never on a small
// request's clock: at the close of a connection that itself stored
// kMinDictionarySamples blobs of the kind (a large precompile, an import),
// or in maintenance (gc).
#pragma once

#include "storage/local/statement.h"

#include <kiln/result.hpp>

#include <cstdint>
#include <map>
#include <memory>
#include <string>

namespace kiln::storage {

class Database;
struct Dictionary;

/// Plain blobs a kind needs before a dictionary is trained for it: fewer
/// give a dictionary that does not pay for itself.
inline constexpr int kMinDictionarySamples = 32;

/// The kind of a blob, as dictionaries are kept: "artifact <format>" or
/// "image <format>".
std::string kind_name(bool image, const std::string& format);

/// A blob over max_decoded_size() is refused when written, naming `what`
/// and the setting, since every read would refuse it.
Status check_storable(const std::string& what, size_t size);

/// One connection's codec. Not thread-safe: the store's lock covers it.
class BlobCodec {
public:
  explicit BlobCodec(Database& db) : db_(&db) {}
  /// The dictionary `id`, read and checked once per connection.
  Result<std::shared_ptr<const Dictionary>> dictionary(int64_t id);
  /// The newest dictionary of `kind`, ready to compress with; null if the
  /// kind has none.
  Result<std::shared_ptr<const Dictionary>> dictionary_for(const std::string& kind);
  /// dictionary_for(kind) for a write: null (plain zstd) if the kind has
  /// none, or if its dictionary cannot be read (verify reports that).
  std::shared_ptr<const Dictionary> writing_dictionary(const std::string& kind);
  /// `raw` compressed for storing, with `dict` if not null. Needs no lock.
  static Packed pack_with(const Dictionary* dict, const std::string& raw);
  /// A stored blob's raw bytes: decompressed (with dictionary `dict`, 0 for
  /// none) and checked against its size and checksum; `what` names it.
  Result<std::string> unpack(const std::string& data, int64_t raw_size, int64_t checksum,
                             int64_t dict, const std::string& what);
  /// Forgets the dictionaries read (the connection was reopened).
  void forget();
  /// Counts `n` blobs of `kind` stored by this connection.
  void count_stored(const std::string& kind, int64_t n = 1) { stored_[kind] += n; }
  /// Whether this connection may train `kind`'s dictionary: it stored
  /// kMinDictionarySamples blobs of the kind itself, so that training is a
  /// small part of its work, or it is maintenance (train_every_kind).
  bool may_train(const std::string& kind) const;
  /// Marks this connection as maintenance (gc): it trains every kind due.
  void train_every_kind() { train_every_kind_ = true; }

private:
  Database* db_;
  std::map<int64_t, std::shared_ptr<const Dictionary>> dictionaries_;
  std::map<std::string, std::shared_ptr<const Dictionary>> newest_dictionary_;
  std::map<std::string, int64_t> stored_;
  bool train_every_kind_ = false;
};

} // namespace kiln::storage
