// Every key Kiln computes: jobs, deferred symbols, closures, images, memos.
#include "core/keys.h"

#include "support/no_iostream.h"

#include <cereal/archives/portable_binary.hpp>
#include <cereal/types/string.hpp>
#include <cereal/types/utility.hpp>
#include <cereal/types/vector.hpp>

#include <algorithm>
#include <map>
#include <sstream>

namespace kiln::core {

namespace {

template <typename... Ts> Hash128 hash_of(const Ts&... parts) {
  std::ostringstream os;
  {
    cereal::PortableBinaryOutputArchive ar(os);
    ar(parts...);
  }
  return hash128(os.str());
}

} // namespace

std::string deferred_symbol(const JobIdentity& id) {
  // Not the target's features: a job's own features (the PTX ISA its IR
  // asks for) are known only once it is extracted, and its parents name it
  // before that. Within one closure the spec, kind, triple and CPU agree.
  return "__kiln_deferred_" +
         hash_of(std::string("kiln-deferred-symbol"), kKeyFormat, id.entry, id.target.spec,
                 static_cast<int>(id.target.kind), id.target.triple, id.target.cpu, id.options)
             .hex();
}

std::string job_symbol(const JobIdentity& id, bool kernel) {
  if (kernel && id.target.kind != TargetKind::host)
    return id.entry;
  return deferred_symbol(id);
}

namespace {
constexpr std::string_view kDeferredPrefix = "__kiln_deferred_";
constexpr char kHexDigits[] = "0123456789abcdef";
int lower_hex_digit(char c) {
  return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}
} // namespace

std::string pack_deferred_symbol(std::string_view symbol) {
  if (symbol.size() != kDeferredPrefix.size() + 32 ||
      symbol.substr(0, kDeferredPrefix.size()) != kDeferredPrefix)
    return {};
  std::string out(16, '\0');
  for (size_t i = 0; i < 16; ++i) {
    int hi = lower_hex_digit(symbol[kDeferredPrefix.size() + 2 * i]);
    int lo = lower_hex_digit(symbol[kDeferredPrefix.size() + 2 * i + 1]);
    if (hi < 0 || lo < 0)
      return {};
    out[i] = char(hi << 4 | lo);
  }
  return out;
}

std::string unpack_deferred_symbol(std::string_view bytes) {
  std::string s(kDeferredPrefix);
  for (char c : bytes) {
    s.push_back(kHexDigits[uint8_t(c) >> 4]);
    s.push_back(kHexDigits[uint8_t(c) & 15]);
  }
  return s;
}

bool is_job_symbol(const JobIdentity& id, const std::string& symbol) {
  return symbol == deferred_symbol(id) ||
         (id.target.kind != TargetKind::host && !id.entry.empty() && symbol == id.entry);
}

std::string placeholder_symbol(const std::string& entry) {
  return "__kiln_ref_" + hash_of(std::string("kiln-deferred-ref"), kKeyFormat, entry).hex();
}

Hash128 job_key(const KeyComponents& c) {
  return hash_of(std::string("kiln-job"), kKeyFormat, c.module_hash, c.identity.entry,
                 c.identity.target, c.identity.options, c.toolchain);
}

Hash128 closure_key(const Hash128& root, ClosureMap members) {
  std::sort(members.begin(), members.end());
  return hash_of(std::string("kiln-closure"), kKeyFormat, root, members);
}

Hash128 member_set_key(ClosureMap members) {
  std::sort(members.begin(), members.end());
  std::string text = "kiln member set 1\n";
  for (const auto& [symbol, job] : members) {
    text += std::to_string(symbol.size());
    text += ':';
    text += symbol;
    text += job.hex();
  }
  return hash128(text);
}

Hash128 member_set_key(const std::vector<ClosureMember>& members) {
  ClosureMap pairs;
  pairs.reserve(members.size());
  for (const ClosureMember& m : members)
    pairs.emplace_back(m.symbol, m.job);
  return member_set_key(std::move(pairs));
}

Result<ClosureRecord> library_closure(const std::vector<ClosureRecord>& roots) {
  if (roots.empty())
    return make_error(Code::invalid_argument, "a library needs at least one root");
  const ClosureRecord* first = &roots.front();
  for (const ClosureRecord& r : roots) {
    if (r.target != first->target)
      return make_error(Code::invalid_argument, "a library's roots are for one target, not " +
                                                    first->target + " and " + r.target);
    if (r.key < first->key)
      first = &r;
  }
  std::map<std::string, const ClosureMember*> by_symbol;
  for (const ClosureRecord& r : roots)
    for (const ClosureMember& m : r.members) {
      auto [it, fresh] = by_symbol.emplace(m.symbol, &m);
      if (!fresh && !(it->second->job == m.job))
        return make_error(Code::invalid_argument,
                          "two roots bring different code under the symbol '" + m.symbol +
                              "' (entries '" + it->second->entry + "', job " +
                              it->second->job.hex() + ", and '" + m.entry + "', job " +
                              m.job.hex() + "): a library's kernels need distinct names");
    }
  ClosureRecord out;
  out.root_job = first->root_job;
  out.target = first->target;
  ClosureMap members;
  for (const auto& [symbol, m] : by_symbol) {
    out.members.push_back(*m);
    members.emplace_back(symbol, m->job);
  }
  out.key = closure_key(out.root_job, std::move(members));
  return out;
}

Result<KeyComponents> components_of(const std::string& module_hash_hex, const std::string& entry,
                                    const std::string& target, const std::string& triple,
                                    const std::string& cpu, const std::string& features,
                                    const std::string& options, const std::string& toolchain) {
  KeyComponents c;
  auto mh = parse_hash128(module_hash_hex);
  if (!mh)
    return make_error(Code::corrupt, "module hash: " + mh.error().message);
  c.module_hash = *mh;
  c.identity.entry = entry;
  c.identity.target.spec = target;
  c.identity.target.kind = target_kind(target);
  c.identity.target.triple = triple;
  c.identity.target.cpu = cpu;
  c.identity.target.features = features;
  // Options are stored canonically: "-O<0..3>" optionally followed by " -g".
  if (options.size() < 3 || options.compare(0, 2, "-O") != 0 || options[2] < '0' ||
      options[2] > '3' || (options.size() != 3 && options.substr(3) != " -g"))
    return make_error(Code::corrupt, "options '" + options + "' are not Kiln's canonical form");
  c.identity.options.opt_level = options[2] - '0';
  c.identity.options.debug = options.size() > 3;
  c.toolchain = toolchain;
  return c;
}

Result<Hash128> job_key_of(const JobRecord& j) {
  auto c = components_of(j.module_hash.hex(), j.entry, j.target, j.triple, j.cpu, j.features,
                         j.options, j.toolchain);
  if (!c)
    return c.error()
        .context("job " + j.key.hex())
        .with_entry(j.entry)
        .with_target(j.target)
        .with_job(j.key.hex());
  return job_key(*c);
}

Hash128 memo_key(const MemoKeyParts& p) {
  return hash_of(std::string("kiln-memo"), kMemoFormat, p.kiln_version, p.llvm_version, p.inputs,
                 p.entries, p.targets, p.opt_level, p.debug, p.host_cpu, p.toolchain_env);
}

} // namespace kiln::core
