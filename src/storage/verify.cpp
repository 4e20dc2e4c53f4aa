// Verification of a whole cache above its rows: the store's own checks
// (Upkeep::check_rows), then every job's key recomputed from its stored
// components, every closure's key from its members and every image checked
// as a loader would.
#include "storage/verify.h"

#include "storage/records.h"

#include "core/check.h"
#include "core/keys.h"

#include <set>

namespace kiln::storage {

Result<VerifyReport> verify_cache(Records& store) {
  VerifyReport rep;
  // SQLite finding the file itself damaged is a problem verify found, never
  // an error that leaves "corrupt" with nothing listed; other errors (busy,
  // I/O, a file that is not trusted) mean the cache could not be read.
  auto damaged = [&](const Error& e) -> Result<VerifyReport> {
    if (e.code != Code::corrupt)
      return e;
    rep.problems.push_back({"cache", store.path(), e.message});
    return std::move(rep);
  };
  if (Status rows = store.upkeep().check_rows(rep.problems); !rows)
    return damaged(rows.error());
  auto jobs = store.jobs().list_jobs();
  if (!jobs)
    return damaged(jobs.error());
  rep.jobs = jobs->size();
  for (const JobRecord& j : *jobs) {
    auto key = core::job_key_of(j);
    if (!key)
      rep.problems.push_back({"job", j.key.hex(), key.error().message});
    else if (*key != j.key)
      rep.problems.push_back({"job", j.key.hex(), "job " + j.key.hex() + " (" + j.entry +
                                                      ") does not match its stored components"});
  }
  auto closures = store.closures().list_closures();
  if (!closures)
    return damaged(closures.error());
  rep.closures = closures->size();
  // A closure whose rows are already wrong (a member missing, say) would
  // only fail its key for the same reason: one problem is enough.
  std::set<std::string> reported;
  for (const Problem& p : rep.problems)
    if (p.kind == "closure")
      reported.insert(p.key);
  for (const ClosureRecord& c : *closures)
    if (Status s = core::check_closure_key(c); !s && !reported.count(c.key.hex()))
      rep.problems.push_back({"closure", c.key.hex(), s.error().message});
  for (const ClosureRecord& c : *closures) {
    auto images = store.images().images_of(c.key);
    if (!images)
      continue; // a damaged blob, already reported by its checksum
    for (const ImageRecord& i : *images)
      if (Status s = core::check_image(i.bytes, c); !s)
        rep.problems.push_back({"image", c.key.hex(), s.error().message});
  }
  return rep;
}

} // namespace kiln::storage
