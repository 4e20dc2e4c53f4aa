// Integrity checks of what a cache holds or a bundle brings: images against
// their closures, closures against their keys, bundles as a whole.
#include "core/check.h"

#include "core/keys.h"
#include "core/target.h"
#include "support/elf.h"
#include "support/hash.h"

#include <algorithm>
#include <iterator>
#include <map>
#include <set>
#include <string_view>

namespace kiln::core {

namespace {

// Derived from the CUDA toolkit at configure time, or the committed list
// where the build found none (cmake/KilnCudaDriverSymbols.cmake).
// The names are held in the table, not pointed to: a table of pointers is
// relocated, so written to, in every process that loads libkiln.
constexpr char kCudaDriverSymbols[][64] = {
#include "kiln_cuda_driver_symbols.inc"
};
constexpr bool by_name(std::string_view a, std::string_view b) { return a < b; }
static_assert(std::is_sorted(std::begin(kCudaDriverSymbols), std::end(kCudaDriverSymbols),
                             by_name),
              "the driver's functions are searched, so sorted");

} // namespace

bool supplied_at_load(TargetKind kind, const std::string& symbol) {
  if (kind != TargetKind::nvptx)
    return false;
  // The driver's system calls are all named __cuda_syscall_*, and nvlink
  // leaves any such name to it (the toolkit's own headers call ones that
  // libcudadevrt does not, e.g. libcu++'s __cuda_syscall_aligned_malloc).
  if (symbol.rfind("__cuda_syscall_", 0) == 0)
    return true;
  return std::binary_search(std::begin(kCudaDriverSymbols), std::end(kCudaDriverSymbols),
                            std::string_view(symbol), by_name);
}

ImageCheck::ImageCheck(const std::string& bytes) {
  auto elf = read_elf(bytes);
  if (!elf) {
    error_ = elf.error();
    return;
  }
  machine_ = elf->machine;
  for (ElfSymbol& s : elf->symbols) {
    if (s.defined)
      defined_.insert(std::move(s.name));
    else if (s.function)
      undefined_functions_.push_back(std::move(s.name));
  }
}

Status ImageCheck::check(const ClosureRecord& closure,
                         const std::vector<ClosureMember>& members) const {
  std::string what = "image of closure " + closure.key.hex() + " (" + closure.target + ")";
  if (error_)
    return error_->context(what).with_target(closure.target);
  TargetKind kind = target_kind(closure.target);
  uint16_t want = kind == TargetKind::nvptx    ? kElfMachineCuda
                  : kind == TargetKind::amdgpu ? kElfMachineAmdgpu
#if defined(__aarch64__)
                                               : kElfMachineAArch64;
#else
                                               : kElfMachineX86_64;
#endif
  if (machine_ != want)
    return make_error(Code::corrupt, what + " is for ELF machine " + std::to_string(machine_) +
                                         ", expected " + std::to_string(want))
        .with_target(closure.target);
  if (kind != TargetKind::host)
    for (const std::string& f : undefined_functions_)
      if (!supplied_at_load(kind, f))
        return make_error(Code::corrupt, what + " leaves function " + f +
                                             " undefined (no job, device library or driver "
                                             "defines it)")
            .with_target(closure.target);
  for (const ClosureMember& m : members)
    if (!defined_.count(m.symbol))
      return make_error(Code::corrupt, what + " lacks " + m.symbol + " (entry " + m.entry +
                                           ", job " + m.job.hex() + ")")
          .with_entry(m.entry)
          .with_target(closure.target)
          .with_job(m.job.hex());
  return Status::ok();
}

Status check_image(const std::string& bytes, const ClosureRecord& closure) {
  return ImageCheck(bytes).check(closure);
}

Status check_closure_key(const ClosureRecord& c) {
  ClosureMap members;
  bool has_root = false;
  for (const ClosureMember& m : c.members) {
    members.emplace_back(m.symbol, m.job);
    has_root |= m.job == c.root_job;
  }
  if (!has_root)
    return make_error(Code::corrupt, "closure " + c.key.hex() + " does not contain its root job");
  if (closure_key(c.root_job, members) != c.key)
    return make_error(Code::corrupt, "closure " + c.key.hex() + " does not match its key");
  return Status::ok();
}

Status check_bundle(const BundleData& data) {
  auto bad = [](const std::string& what) { return make_error(Code::corrupt, "bundle: " + what); };
  // A check's own error, as a bundle error: corrupt, and keeping its fields.
  auto bad_part = [](Error e) {
    e.code = Code::corrupt;
    return std::move(e).context("bundle");
  };
  std::map<std::string, const BundleData::Job*> jobs;
  for (const BundleData::Job& j : data.jobs) {
    std::string hex = j.record.key.hex();
    auto key = job_key_of(j.record);
    if (!key)
      return bad_part(key.error());
    if (*key != j.record.key)
      return bad("job " + hex + " (" + j.record.entry + ") does not match its key")
          .with_entry(j.record.entry)
          .with_target(j.record.target)
          .with_job(hex);
    auto derived = components_of(j.record.module_hash.hex(), j.record.entry, j.record.target,
                                 j.record.triple, j.record.cpu, j.record.features,
                                 j.record.options, j.record.toolchain);
    if (!is_job_symbol(derived->identity, j.record.symbol))
      return bad("job " + hex + " names the wrong deferred symbol").with_job(hex);
    if (j.artifacts.empty())
      return bad("job " + hex + " has no artifacts").with_job(hex);
    jobs[hex] = &j;
  }
  std::set<std::string> closures;
  for (const ClosureRecord& c : data.closures) {
    std::string hex = c.key.hex();
    std::set<std::string> symbols;
    for (const ClosureMember& m : c.members) {
      auto it = jobs.find(m.job.hex());
      if (it == jobs.end())
        return bad("closure " + hex + " needs job " + m.job.hex() + ", which it lacks")
            .with_job(m.job.hex());
      if (it->second->record.symbol != m.symbol)
        return bad("closure " + hex + " maps " + m.symbol + " to a job defining another symbol");
      symbols.insert(m.symbol);
    }
    if (Status s = check_closure_key(c); !s)
      return bad_part(s.error());
    for (const ClosureMember& m : c.members)
      for (const JobRef& r : jobs[m.job.hex()]->refs)
        if (!symbols.count(r.symbol))
          return bad("closure " + hex + " leaves " + r.symbol + " unresolved");
    closures.insert(hex);
  }
  std::map<std::string, const ClosureRecord*> by_key;
  for (const ClosureRecord& c : data.closures)
    by_key[c.key.hex()] = &c;
  for (const ImageRecord& i : data.images) {
    auto it = by_key.find(i.key.closure.hex());
    if (it == by_key.end())
      return bad("an image belongs to closure " + i.key.closure.hex() + ", which it lacks");
    ClosureRecord with_entries = *it->second;
    if (Status s = check_image(i.bytes, with_entries); !s)
      return bad_part(s.error());
  }
  for (const NameRecord& n : data.names) {
    if (!closures.count(n.closure.hex()))
      return bad("name " + n.name + " points at closure " + n.closure.hex() + ", which it lacks");
    if (Status s = check_name(n.name, "root"); !s)
      return bad_part(s.error());
  }
  return Status::ok();
}

Status check_name(const std::string& name, const char* kind) {
  // A key-form string is looked up as a closure key and never as a name: a
  // name of that form could not be loaded by name, and would otherwise be a
  // way to stand in for the closure whose key it spells.
  if (!is_hash128_hex(name))
    return Status::ok();
  return make_error(Code::invalid_argument,
                    std::string(kind) + " name '" + name +
                        "' has the form of a closure key (32 hex digits), which lookups "
                        "answer by key only");
}

} // namespace kiln::core
