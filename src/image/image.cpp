#include "image/image.h"

#include "core/check.h"
#include "core/keys.h"
#include "core/target.h"
#include "link/nvjitlink.h"
#include "link/plugin.h"
#include "link/ptxas_program.h"
#include "storage/single_flight.h"
#include "support/elf.h"

#include <cctype>
#include <cstring>
#include <set>

namespace kiln::image {

using core::TargetKind;

Result<std::string> linker_fingerprint(const std::string& target) {
  switch (core::target_kind(target)) {
  case TargetKind::host:
    return std::string(link::lld_fingerprint());
  case TargetKind::nvptx: {
    KILN_TRY_ASSIGN(auto fp, link::nvjitlink_fingerprint());
    // "PTX merged": a closure's PTX is assembled as one module where it can
    // be (link/ptx_merge.h), which gives other bytes than one by one.
    // "parts per 16 kernels": ptxas splits a module of many kernels
    // (link::nv_assembly_parts; nvJitLink 13 and later, which the version
    // above tells apart), which gives other bytes than one part.
    return fp + "; PTX merged; parts per 16 kernels; " + link::cuda_device_runtime_fingerprint();
  }
  case TargetKind::amdgpu:
    // "parts": a module of many kernels is compiled in parts (libkiln-link),
    // which gives other bytes than one code generation.
    return std::string(link::lld_fingerprint()) + " amdgpu-irlink parts";
  }
  return make_error(Code::internal, "unknown target kind");
}

namespace {

// The name after a PTX ".func"/".entry" keyword: past an optional return
// parameter list "(.param .b32 func_retval0)".
std::string ptx_function_name(const std::string& ptx, size_t at) {
  auto skip_space = [&] {
    while (at < ptx.size() && (ptx[at] == ' ' || ptx[at] == '\t' || ptx[at] == '\n'))
      ++at;
  };
  skip_space();
  if (at < ptx.size() && ptx[at] == '(') {
    at = ptx.find(')', at);
    if (at == std::string::npos)
      return {};
    ++at;
    skip_space();
  }
  size_t end = at;
  while (end < ptx.size() && (std::isalnum(static_cast<unsigned char>(ptx[end])) ||
                              ptx[end] == '_' || ptx[end] == '$' || ptx[end] == '.'))
    ++end;
  return ptx.substr(at, end - at);
}

// Functions a job's PTX declares .extern (wanted) and defines visibly.
void ptx_functions(const std::string& ptx, std::set<std::string>& defined,
                   std::set<std::string>& wanted) {
  for (const char* kw : {".extern .func", ".visible .func", ".weak .func", ".visible .entry"}) {
    size_t len = std::strlen(kw);
    for (size_t at = ptx.find(kw); at != std::string::npos; at = ptx.find(kw, at + len)) {
      std::string name = ptx_function_name(ptx, at + len);
      if (name.empty())
        continue;
      if (kw[1] == 'e')
        wanted.insert(name);
      else
        defined.insert(name);
    }
  }
}

// True if the closure's NVIDIA pieces call something none of them defines
// and the driver does not supply: the CUDA device runtime's entry points
// (dynamic parallelism, device-side graph launches), or a mistake that
// nvJitLink then names. PTX names calls into other jobs .extern too, so
// those are matched against the other members' definitions.
bool needs_device_runtime(const std::vector<link::NvInput>& inputs) {
  std::set<std::string> defined, wanted;
  for (const link::NvInput& in : inputs) {
    if (in.ptx) {
      ptx_functions(in.bytes, defined, wanted);
      continue;
    }
    auto elf = read_elf(in.bytes);
    if (!elf)
      continue; // nvJitLink reports it
    for (const ElfSymbol& s : elf->symbols)
      if (s.defined)
        defined.insert(s.name);
      else if (s.function)
        wanted.insert(s.name);
  }
  for (const std::string& w : wanted)
    if (!defined.count(w) && !core::supplied_at_load(TargetKind::nvptx, w))
      return true;
  return false;
}

// The PTX of a lone job that needs no link, or nullptr: PTX (a relocatable
// cubin needs a linker) that calls nothing in the CUDA device runtime (a
// library only a linker adds). Only a lone job: ptxas as a whole program
// takes longer than nvJitLink over a merged module of many kernels (a third
// more on ten), while on one kernel it is the same assembly without
// nvJitLink's loading and set-up.
const std::string* lone_program(const std::vector<link::NvInput>& inputs, bool device_runtime) {
  if (device_runtime || inputs.size() != 1 || !inputs[0].ptx)
    return nullptr;
  return &inputs[0].bytes;
}

// An image and the fingerprint of what made it (its image key's linker).
struct Made {
  std::string bytes;
  std::string linker;
};

Result<Made> link_closure_made(storage::Records& store, const core::ClosureRecord& closure,
                               unsigned threads, const NvLinker* nv_linker);

} // namespace

Result<std::string> link_closure(storage::Records& store, const core::ClosureRecord& closure,
                                 unsigned threads) {
  return link_closure_with(store, closure, threads, nullptr);
}

Result<std::string> link_closure_with(storage::Records& store, const core::ClosureRecord& closure,
                                      unsigned threads, const NvLinker* nv_linker) {
  KILN_TRY_ASSIGN(auto made, link_closure_made(store, closure, threads, nv_linker));
  return std::move(made.bytes);
}

namespace {

Result<Made> link_closure_made(storage::Records& store, const core::ClosureRecord& closure,
                               unsigned threads, const NvLinker* nv_linker) {
  std::string what = "linking closure " + closure.key.hex() + " (" + closure.target + ")";
  std::vector<std::string> blobs, names;
  TargetKind kind = core::target_kind(closure.target);
  std::vector<link::NvInput> nv;
  for (const core::ClosureMember& m : closure.members) {
    names.push_back(m.job.hex());
    if (kind == TargetKind::nvptx) {
      // A relocatable cubin links without compiling; PTX where no ptxas
      // made one (assembly deferred to this link: nvJitLink assembles and
      // links in one call). nvJitLink's log names inputs by these names.
      std::string input = m.entry + " (job " + m.job.hex() + ")";
      auto cubin = store.jobs().get_artifact(m.job, "cubin");
      if (cubin) {
        nv.push_back({input, cubin.take(), false});
        continue;
      }
      if (cubin.error().code != Code::not_found)
        return cubin.error().context(what);
      auto ptx = store.jobs().get_artifact(m.job, "ptx");
      if (!ptx)
        return ptx.error().context(what);
      nv.push_back({input, ptx.take(), true});
      continue;
    }
    auto blob = store.jobs().get_artifact(m.job, kind == TargetKind::amdgpu ? "bc" : "obj");
    if (!blob)
      return blob.error().context(what + ", entry " + m.entry);
    blobs.push_back(blob.take());
  }

  Result<std::string> image = make_error(Code::internal, "no linker");
  if (kind == TargetKind::nvptx) {
    bool runtime = needs_device_runtime(nv);
    // A lone job's module needs no link, it is a whole program: ptxas makes
    // the executable cubin in one process, where nvJitLink would cost its
    // loading and set-up besides the same assembly. Should ptxas refuse it
    // (a variable declared .extern, a PTX ISA newer than the program
    // reads), nvJitLink links the inputs as ever. Only where a precompile
    // links (it passes its NVIDIA linker): an application that loads starts
    // no program.
    if (nv_linker && !link::ptxas_program_path().empty())
      if (const std::string* ptx = lone_program(nv, runtime)) {
        auto cubin = link::ptxas_whole_program(*ptx, closure.target,
                                               link::nv_assembly_parts(nv), nv[0].name);
        auto fp = link::ptxas_program_fingerprint();
        if (cubin && fp && core::check_image(*cubin, closure))
          return Made{cubin.take(), fp.take()};
      }
    image = nv_linker ? (*nv_linker)(nv, closure.target, runtime)
                      : link::nvjitlink_cubin(nv, closure.target, runtime);
  } else if (kind == TargetKind::host) {
    image = link::link_host_image(blobs, names);
  } else {
    auto root = store.jobs().get_job(closure.root_job);
    if (!root)
      return root.error().context(what);
    image = link::link_amdgpu_image(blobs, names, root->cpu, root->features, threads);
  }
  if (!image)
    return image.error().context(what);
  KILN_TRY(core::check_image(*image, closure));
  KILN_TRY_ASSIGN(auto fp, linker_fingerprint(closure.target));
  return Made{image.take(), std::move(fp)};
}

} // namespace

Result<std::string> fetch_or_link(storage::Storage& storage, const core::ClosureRecord& closure,
                                  bool* linked, unsigned threads, const NvLinker* nv) {
  std::string arch = core::image_arch(closure.target);
  // Stored here, else another machine's, checked like a stored one: no
  // linker needed.
  KILN_TRY_ASSIGN(auto have, storage.get_image(closure, arch));
  if (have)
    return std::move(*have);
  // What links this target here: part of the claim, so that processes with
  // other toolchains do not wait on each other.
  KILN_TRY_ASSIGN(auto fp, linker_fingerprint(closure.target));
  auto link = [&]() -> Result<std::string> {
    if (linked)
      *linked = true;
    KILN_TRY_ASSIGN(auto made, link_closure_made(storage.records(), closure, threads, nv));
    // Keyed by what made it: nvJitLink, or ptxas alone (a whole program).
    // A store failure (read-only cache, disk full) costs the next process a
    // relink; it does not fail this load.
    (void)storage.put_image(core::image_key(closure.key, arch, made.linker),
                            core::image_format(core::target_kind(closure.target)), made.bytes);
    return std::move(made.bytes);
  };
  // Single-flight (storage/single_flight.h): the processes that need this
  // image at once (a fleet's precompiles, or its loads of a closure stored
  // unlinked) link it once; the others wait for it and read it.
  const std::vector<Hash128> claim{
      hash128(std::string("kiln image claim") + '\0' + closure.key.hex() + '\0' + arch + '\0' +
              fp)};
  std::optional<Result<std::string>> made;
  std::optional<std::string> found;
  storage::FlightCalls calls;
  calls.ready = [&](size_t) -> Result<bool> {
    KILN_TRY_ASSIGN(auto stored, storage.get_image(closure, arch));
    if (stored)
      found = std::move(*stored);
    return found.has_value();
  };
  calls.work = [&](size_t) { made = link(); };
  calls.theirs = [](size_t, double) {};
  if (Status s = storage::single_flight(storage, claim, calls, storage::flight_options(1)); !s)
    return link(); // no thread for it: linked here, as before
  if (found)
    return std::move(*found);
  if (made)
    return std::move(*made);
  return link();
}

Result<std::string> fetch_or_make(storage::Records& store, const core::ClosureRecord& closure,
                                  const Maker& maker, bool* linked) {
  storage::Storage local(store);
  KILN_TRY_ASSIGN(auto have, local.get_image(closure, maker.arch));
  if (have)
    return std::move(*have);
  if (linked)
    *linked = true;
  KILN_TRY_ASSIGN(auto image, maker.make(closure));
  KILN_TRY(core::check_image(image, closure));
  if (auto fp = maker.fingerprint(); fp)
    (void)store.images().put_image(core::image_key(closure.key, maker.arch, *fp),
                                   core::image_format(core::target_kind(closure.target)), image);
  return image;
}

} // namespace kiln::image
