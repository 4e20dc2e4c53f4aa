#include "runtime/bundle_check.h"

#include "driver/job_key.h"
#include "runtime/image_link.h"

#include <map>
#include <set>

namespace kiln::runtime {

Result<Hash128> recompute_job_key(const cache::JobRecord& j) {
  auto c = driver::components_of(j.module_hash.hex(), j.entry, j.target, j.triple, j.cpu,
                                 j.features, j.options, j.toolchain);
  if (!c)
    return c.error().context("job " + j.key.hex());
  return driver::job_key(*c);
}

Status validate_bundle(const cache::BundleData& data) {
  auto bad = [](const std::string& what) { return make_error(Code::corrupt, "bundle: " + what); };
  std::map<std::string, const cache::BundleData::Job*> jobs;
  for (const cache::BundleData::Job& j : data.jobs) {
    std::string hex = j.record.key.hex();
    auto key = recompute_job_key(j.record);
    if (!key)
      return bad(key.error().message);
    if (*key != j.record.key)
      return bad("job " + hex + " (" + j.record.entry + ") does not match its key");
    auto derived = driver::components_of(j.record.module_hash.hex(), j.record.entry,
                                         j.record.target, j.record.triple, j.record.cpu,
                                         j.record.features, j.record.options, j.record.toolchain);
    if (driver::deferred_symbol(derived->identity) != j.record.symbol)
      return bad("job " + hex + " names the wrong deferred symbol");
    if (j.artifacts.empty())
      return bad("job " + hex + " has no artifacts");
    jobs[hex] = &j;
  }
  std::set<std::string> closures;
  for (const cache::ClosureRecord& c : data.closures) {
    std::string hex = c.key.hex();
    driver::ClosureMap members;
    bool has_root = false;
    std::set<std::string> symbols;
    for (const cache::ClosureMember& m : c.members) {
      auto it = jobs.find(m.job.hex());
      if (it == jobs.end())
        return bad("closure " + hex + " needs job " + m.job.hex() + ", which it lacks");
      if (it->second->record.symbol != m.symbol)
        return bad("closure " + hex + " maps " + m.symbol + " to a job defining another symbol");
      members.emplace_back(m.symbol, m.job);
      symbols.insert(m.symbol);
      has_root |= m.job == c.root_job;
    }
    if (!has_root)
      return bad("closure " + hex + " does not contain its root job");
    if (driver::closure_key(c.root_job, members) != c.key)
      return bad("closure " + hex + " does not match its key");
    for (const cache::ClosureMember& m : c.members)
      for (const cache::JobRef& r : jobs[m.job.hex()]->refs)
        if (!symbols.count(r.symbol))
          return bad("closure " + hex + " leaves " + r.symbol + " unresolved");
    closures.insert(hex);
  }
  std::map<std::string, const cache::ClosureRecord*> by_key;
  for (const cache::ClosureRecord& c : data.closures)
    by_key[c.key.hex()] = &c;
  for (const cache::ImageRecord& i : data.images) {
    auto it = by_key.find(i.key.closure.hex());
    if (it == by_key.end())
      return bad("an image belongs to closure " + i.key.closure.hex() + ", which it lacks");
    cache::ClosureRecord with_entries = *it->second;
    if (Status s = check_image(i.bytes, with_entries); !s)
      return bad(s.error().message);
  }
  for (const cache::NameRecord& n : data.names)
    if (!closures.count(n.closure.hex()))
      return bad("name " + n.name + " points at closure " + n.closure.hex() + ", which it lacks");
  return Status::ok();
}

} // namespace kiln::runtime
