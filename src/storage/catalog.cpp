// What a cache holds, as the read commands show it: listings, one job or
// root, a root's deferred graph, an artifact by format, and key differences.
#include "storage/catalog.h"

#include <fnmatch.h>

#include <map>
#include <set>

namespace kiln::storage {

Result<Listing> list_cache(Records& store, const ListFilter& filter) {
  KILN_TRY_ASSIGN(auto jobs, store.jobs().list_jobs());
  auto names = store.names().list_names();
  if (!names)
    return names.error();
  const std::string& target = filter.target;
  const std::string& glob = filter.name_glob;
  std::erase_if(*names, [&](const NameRecord& n) {
    return !(target.empty() || n.target == target) ||
           !(glob.empty() || ::fnmatch(glob.c_str(), n.name.c_str(), 0) == 0);
  });
  std::set<std::string> in_named;
  if (!glob.empty())
    for (const NameRecord& n : *names)
      if (auto c = store.closures().get_closure(n.closure))
        for (const ClosureMember& m : c->members)
          in_named.insert(m.job.hex());
  std::erase_if(jobs, [&](const JobRecord& j) {
    return (!target.empty() && j.target != target) ||
           (!glob.empty() && !in_named.count(j.key.hex()));
  });
  Listing out;
  out.names = names.take();
  for (JobRecord& j : jobs) {
    auto arts = store.jobs().artifact_infos(j.key);
    auto refs = store.jobs().job_refs(j.key);
    out.jobs.push_back({std::move(j), std::move(arts), std::move(refs)});
  }
  return out;
}

Result<JobDetail> job_detail(Records& store, const JobRecord& job) {
  auto arts = store.jobs().artifact_infos(job.key);
  auto refs = store.jobs().job_refs(job.key);
  if (!arts)
    return arts.error();
  if (!refs)
    return refs.error();
  return JobDetail{job, arts.take(), refs.take()};
}

Result<std::variant<JobDetail, RootDetail>> find_entry(Records& store, const std::string& what,
                                                       const std::string& target) {
  using Found = std::variant<JobDetail, RootDetail>;
  // A key-form string is a job or closure key, never a name; any other
  // string is a name only.
  if (is_hash128_hex(what)) {
    Hash128 key = *parse_hash128(what);
    auto job = store.jobs().get_job(key);
    if (job) {
      KILN_TRY_ASSIGN(auto detail, job_detail(store, *job));
      return Found(std::move(detail));
    }
    if (job.error().code != Code::not_found)
      return job.error();
    auto closure = store.closures().get_closure(key);
    if (closure)
      return Found(RootDetail{"", closure->target, closure.take(), ""});
    if (closure.error().code != Code::not_found)
      return closure.error();
    return make_error(Code::not_found,
                      "no job or closure '" + what + "' in cache '" + store.path() + "'");
  }
  KILN_TRY_ASSIGN(auto names, store.names().names_for(what));
  for (const NameRecord &n : names)
    if (target.empty() || n.target == target) {
      KILN_TRY_ASSIGN(auto closure, store.closures().get_closure(n.closure));
      auto unit = store.names().name_unit(n.name, n.target);
      return Found(RootDetail{n.name, n.target, std::move(closure), unit ? unit.take() : ""});
    }
  return make_error(Code::not_found,
                    "no root named '" + what + "' in cache '" + store.path() + "'");
}

Result<Hash128> resolve_closure(Records& store, const std::string& what, const std::string& target) {
  // A closure key names itself and is never read as a name (as the loader).
  if (is_hash128_hex(what))
    return parse_hash128(what);
  KILN_TRY_ASSIGN(auto names, store.names().names_for(what));
  for (const NameRecord &n : names)
    if (target.empty() || n.target == target)
      return n.closure;
  return make_error(Code::not_found,
                    "no root named '" + what + "'" +
                        (target.empty() ? std::string() : " for target " + target) +
                        " in cache '" + store.path() + "'");
}

Result<ClosureGraph> closure_graph(Records& store, const std::string& what,
                                   const std::string& target) {
  KILN_TRY_ASSIGN(auto key, resolve_closure(store, what, target));
  KILN_TRY_ASSIGN(auto closure, store.closures().get_closure(key));
  ClosureGraph g{std::move(closure), {}};
  std::map<std::string, const ClosureMember *> by_symbol;
  for (const ClosureMember &m : g.closure.members)
    by_symbol[m.symbol] = &m;
  for (const ClosureMember& m : g.closure.members) {
    KILN_TRY_ASSIGN(auto refs, store.jobs().job_refs(m.job));
    for (const JobRef &r : refs)
      if (auto it = by_symbol.find(r.symbol); it != by_symbol.end())
        g.edges.push_back({m.job, it->second->job, r.symbol});
  }
  return g;
}

Result<std::string> dump_artifact(Records& store, const std::string& job_key,
                                  const std::string& format) {
  KILN_TRY_ASSIGN(auto key, parse_hash128(job_key));
  KILN_TRY_ASSIGN(auto job, store.jobs().get_job(key));
  std::vector<std::string> formats;
  if (format == "ptx")
    formats = {"ptx"};
  else if (format == "bitcode")
    formats = {"bc"};
  else if (format == "object")
    formats = {"obj", "cubin"};
  else
    return make_error(Code::invalid_argument,
                      "unknown format '" + format + "'; use ptx, bitcode or object");
  for (const std::string& f : formats) {
    auto bytes = store.jobs().get_artifact(key, f);
    if (bytes)
      return bytes;
    if (bytes.error().code != Code::not_found)
      return bytes.error();
  }
  return make_error(Code::not_found,
                    "job " + job_key + " (" + job.target + ") has no " + format + " artifact");
}

Result<std::vector<core::KeyDifference>> explain_keys(Records& store, const Hash128& a,
                                                      const Hash128& b) {
  KILN_TRY_ASSIGN(auto ja, store.jobs().get_job(a));
  KILN_TRY_ASSIGN(auto jb, store.jobs().get_job(b));
  return core::compare_keys(ja, jb);
}

} // namespace kiln::storage
