// The cache file's half of the published host images (storage/published/published.h):
// what is published, read under the write lock, and the load log taken in.
#include "storage/published/published.h"

#include "storage/local/statement.h"
#include "storage/local/store.h"

#include "core/check.h"
#include "core/keys.h"
#include "core/target.h"

#include <map>
#include <memory>
#include <optional>
#include <sys/stat.h>

namespace kiln::storage {

namespace {

/// The host roots' names, then the host kernel libraries' (each with
/// whether it is a library); and how many targets each name has of each
/// kind, to tell a load with no target whether the file holds them all.
struct HostNames {
  std::vector<std::pair<NameRecord, bool>> names;
  std::map<std::pair<bool, std::string>, size_t> targets;
};

Result<HostNames> list_host_names(Database& db) {
  HostNames out;
  for (bool library : {false, true}) {
    auto s = library ? db.prepare("SELECT name, target, closure_key FROM libraries "
                                  "ORDER BY name, target")
                     : db.prepare("SELECT name, target, closure_key FROM names "
                                  "ORDER BY name, target");
    if (!s)
      return s.error();
    Bound b(*s);
    int rc;
    while ((rc = b.step()) == SQLITE_ROW) {
      ++out.targets[{library, b.col_text(0)}];
      if (core::is_host_spec(b.col_text(1)))
        if (auto key = b.col_key_opt(2))
          out.names.push_back({NameRecord{b.col_text(0), b.col_text(1), *key}, library});
    }
    if (rc != SQLITE_DONE)
      return db.db_error(library ? "cannot list libraries" : "cannot list names");
  }
  return out;
}

/// What was read for the roots so far, each read once: roots of one
/// closure share what was read for it (by closure and image arch); closures
/// of one member set share its list, and closures one image serves (a
/// deferred cycle's roots, a library's) the image. A 1,000-root cycle read
/// its image and its 1,000 members a thousand times.
struct PublishReads {
  struct Image {
    std::shared_ptr<const std::string> bytes;
    core::ImageCheck check;
  };
  std::map<std::pair<Hash128, std::string>, std::optional<PublishInput>> seen;
  std::map<int64_t, std::optional<Image>> images; // by row
  std::map<Hash128, std::shared_ptr<const std::vector<ClosureMember>>> lists; // by member set
  std::shared_ptr<const std::vector<ClosureMember>> lone; // a closure without a set's

  /// The list of `set` (a lone root's without one), null until read.
  std::shared_ptr<const std::vector<ClosureMember>>& members(const std::optional<Hash128>& set) {
    return set ? lists[*set] : lone;
  }
};

/// A closure's part of the file: the closure, its members, its root job's
/// CPU and its image (`image_of`'s).
PublishInput publish_input(ClosureRecord closure,
                           std::shared_ptr<const std::vector<ClosureMember>> members,
                           const JobRecord& root, const Hash128& image_of,
                           std::shared_ptr<const std::string> image) {
  PublishInput in;
  in.root.closure = std::move(closure);
  in.members = std::move(members);
  in.root.root.key = root.key;
  in.root.root.target = root.target;
  in.root.root.cpu = root.cpu;
  in.root.root.features = root.features;
  in.root.image_of = image_of;
  in.image = std::move(image);
  return in;
}

/// Marks the roots whose name has every target of its kind here.
void mark_all_targets(std::vector<PublishInput>& roots,
                      std::map<std::pair<bool, std::string>, size_t>& targets) {
  std::map<std::pair<bool, std::string>, size_t> published;
  for (const PublishInput& in : roots)
    ++published[{in.root.library, in.root.name.name}];
  for (PublishInput& in : roots) {
    std::pair<bool, std::string> name{in.root.library, in.root.name.name};
    in.root.all_targets = published[name] == targets[name];
  }
}

} // namespace

Status Store::publish_images() {
  if (read_only())
    return Status::ok();
  (void)absorb_load_log();
  std::lock_guard lock(mu_);
  // The write lock, so that no commit lands between this read and the
  // rename: a commit after it removes the file again. Nothing is written to
  // the cache file, and the transaction ends in a rollback, so that the
  // commit hook leaves the new file in place.
  KILN_TRY(exec("BEGIN IMMEDIATE"));
  auto body = [&]() -> Status {
    struct stat st;
    if (::lstat(path().c_str(), &st) != 0)
      return make_error(Code::unavailable, "cannot stat cache '" + path() + "'");
    KILN_TRY_ASSIGN(HostNames host, list_host_names(*db_));
    std::vector<PublishInput> roots;
    PublishReads reads;
    for (const auto& [n, library] : host.names) {
      // A key-form name is never read as a name (core::check_name), nor as
      // a library's.
      if (is_hash128_hex(n.name))
        continue;
      std::string arch = core::image_arch(n.target);
      auto [it, fresh] = reads.seen.try_emplace({n.closure, arch});
      if (fresh) {
        ClosureRecord closure;
        auto set = read_closure_head(n.closure, closure);
        if (!set || closure.target != n.target)
          continue;
        std::shared_ptr<const std::vector<ClosureMember>>& members = reads.members(*set);
        if (!*set || !members) {
          auto read = std::make_shared<std::vector<ClosureMember>>();
          if (!read_member_rows(*set, closure, *read))
            continue;
          members = std::move(read);
        }
        auto root = read_job_row(closure.root_job);
        auto row = find_best_image(n.closure, arch);
        if (!root || !row)
          continue;
        // The CPU a load checks is the one the job's key names (a damaged
        // row's is not published; the load through the file refuses it).
        if (auto key = core::job_key_of(*root); !key || !(*key == root->key))
          continue;
        auto [image, first] = reads.images.try_emplace(row->rowid);
        if (first)
          if (auto bytes = read_image_row(row->rowid, "image of closure " + row->owner.hex())) {
            auto shared = std::make_shared<const std::string>(bytes.take());
            image->second.emplace(PublishReads::Image{shared, core::ImageCheck(*shared)});
          }
        // What a load would not take as it is (it links anew) is not
        // published: the load goes to the cache file.
        if (!image->second || !image->second->check.check(closure, *members))
          continue;
        it->second = publish_input(std::move(closure), members, *root, row->owner,
                                   image->second->bytes);
      }
      if (!it->second)
        continue;
      PublishInput in = *it->second;
      in.root.name = n;
      in.root.library = library;
      roots.push_back(std::move(in));
    }
    mark_all_targets(roots, host.targets);
    return write_published(path(), st, std::move(roots));
  };
  Status s = body();
  (void)exec("ROLLBACK");
  return s;
}

Status Store::absorb_load_log() {
  if (read_only() || !FileStamp::at(load_log_path(path())).present)
    return Status::ok();
  std::vector<LoadNote> notes = take_load_log(path());
  if (notes.empty())
    return Status::ok();
  Counters counts;
  std::map<int64_t, std::vector<Hash128>> by_time;
  for (const LoadNote& n : notes) {
    counts.loads += n.loads;
    counts.image_hits += n.image_hits;
    by_time[n.when].push_back(n.closure);
  }
  // Oldest first: a closure used twice ends with its later time.
  for (auto& [when, closures] : by_time)
    KILN_TRY(record_usage(closures, when, {}));
  return record_usage({}, 0, counts);
}

} // namespace kiln::storage
