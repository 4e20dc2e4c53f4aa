#include "runtime/image_link.h"

#include "link/link_abi.h"
#include "link/nvjitlink.h"
#include "remote/tier.h"
#include "runtime/loader.h"
#include "support/elf.h"

#include <set>

namespace kiln::runtime {

DeviceKind device_kind(const std::string& target) {
  if (target.rfind("sm_", 0) == 0)
    return DeviceKind::nvidia;
  if (target.rfind("gfx", 0) == 0)
    return DeviceKind::amd;
  return DeviceKind::host;
}

std::string image_arch(const std::string& target) {
  return device_kind(target) == DeviceKind::host ? std::string(host_arch()) : target;
}

Result<std::string> linker_fingerprint(const std::string& target) {
  switch (device_kind(target)) {
  case DeviceKind::host:
    return std::string(host_linker_fingerprint());
  case DeviceKind::nvidia:
    return link::nvjitlink_fingerprint();
  case DeviceKind::amd:
    return std::string(host_linker_fingerprint()) + " amdgpu-irlink";
  }
  return make_error(Code::internal, "unknown device kind");
}

Status check_image(const std::string& bytes, const cache::ClosureRecord& closure) {
  std::string what = "image of closure " + closure.key.hex() + " (" + closure.target + ")";
  auto elf = read_elf(bytes);
  if (!elf)
    return elf.error().context(what);
  DeviceKind kind = device_kind(closure.target);
  uint16_t want = kind == DeviceKind::nvidia ? kElfMachineCuda
                  : kind == DeviceKind::amd  ? kElfMachineAmdgpu
#if defined(__aarch64__)
                                             : kElfMachineAArch64;
#else
                                             : kElfMachineX86_64;
#endif
  if (elf->machine != want)
    return make_error(Code::corrupt, what + " is for ELF machine " + std::to_string(elf->machine) +
                                         ", expected " + std::to_string(want));
  std::set<std::string> defined;
  for (const ElfSymbol& s : elf->symbols) {
    if (s.defined)
      defined.insert(s.name);
    else if (kind != DeviceKind::host && s.function)
      return make_error(Code::corrupt, what + " leaves function " + s.name + " undefined");
  }
  for (const cache::ClosureMember& m : closure.members)
    if (!defined.count(m.symbol))
      return make_error(Code::corrupt, what + " lacks " + m.symbol + " (entry " + m.entry +
                                           ", job " + m.job.hex() + ")");
  return Status::ok();
}

Result<std::string> link_closure(cache::Store& store, const cache::ClosureRecord& closure) {
  std::string what = "linking closure " + closure.key.hex() + " (" + closure.target + ")";
  std::vector<std::string> blobs, names;
  DeviceKind kind = device_kind(closure.target);
  std::vector<link::NvInput> nv;
  for (const cache::ClosureMember& m : closure.members) {
    names.push_back(m.job.hex());
    if (kind == DeviceKind::nvidia) {
      // A relocatable cubin links without compiling; PTX only where no
      // ptxas made one.
      auto cubin = store.get_artifact(m.job, "cubin");
      if (cubin) {
        nv.push_back({m.job.hex(), cubin.take(), false});
        continue;
      }
      if (cubin.error().code != Code::not_found)
        return cubin.error().context(what);
      auto ptx = store.get_artifact(m.job, "ptx");
      if (!ptx)
        return ptx.error().context(what);
      nv.push_back({m.job.hex(), ptx.take(), true});
      continue;
    }
    auto blob = store.get_artifact(m.job, kind == DeviceKind::amd ? "bc" : "obj");
    if (!blob)
      return blob.error().context(what + ", entry " + m.entry);
    blobs.push_back(blob.take());
  }

  Result<std::string> image = make_error(Code::internal, "no linker");
  if (kind == DeviceKind::nvidia) {
    image = link::nvjitlink_cubin(nv, closure.target);
  } else if (kind == DeviceKind::host) {
    image = link_host_image(blobs, names);
  } else {
    auto root = store.get_job(closure.root_job);
    if (!root)
      return root.error().context(what);
    image = link_amdgpu_image(blobs, names, root->cpu, root->features);
  }
  if (!image)
    return image.error().context(what);
  KILN_TRY(check_image(*image, closure));
  return image;
}

Result<std::string> fetch_or_link_image(cache::Store& store, const cache::ClosureRecord& closure,
                                        bool* linked, remote::Tier* remote) {
  std::string arch = image_arch(closure.target);
  auto bytes = store.get_image_any_linker(closure.key, arch);
  if (bytes) {
    // Same key, same content: a stored image that fails its checks is
    // damaged, and is relinked like a missing one.
    if (check_image(*bytes, closure))
      return bytes;
  } else if (bytes.error().code != Code::not_found && bytes.error().code != Code::corrupt) {
    return bytes.error();
  }
  // Another machine's image, checked like a stored one: no linker needed.
  if (remote)
    if (auto fetched = remote->fetch_image(store, closure, arch))
      return std::move(*fetched);
  auto fp = linker_fingerprint(closure.target);
  if (!fp)
    return fp.error();
  cache::ImageKey key{closure.key, arch, *fp};
  if (linked)
    *linked = true;
  auto image = link_closure(store, closure);
  if (!image)
    return image.error();
  const char* format = device_kind(closure.target) == DeviceKind::host     ? "so"
                       : device_kind(closure.target) == DeviceKind::nvidia ? "cubin"
                                                                           : "hsaco";
  // A store failure (read-only cache, disk full) costs the next process a
  // relink; it does not fail this load.
  (void)store.put_image(key, format, *image);
  if (remote)
    remote->publish_image({key, format, *image});
  return image;
}

Result<std::string> fetch_or_jit_image(cache::Store& store, const cache::ClosureRecord& closure,
                                       bool* linked) {
  auto arch = cuda_device_arch();
  if (!arch)
    return arch.error();
  auto bytes = store.get_image_any_linker(closure.key, *arch);
  if (bytes && check_image(*bytes, closure))
    return bytes;
  if (!bytes && bytes.error().code != Code::not_found && bytes.error().code != Code::corrupt)
    return bytes.error();
  if (linked)
    *linked = true;
  std::vector<std::string> ptx, names;
  for (const cache::ClosureMember& m : closure.members) {
    auto p = store.get_artifact(m.job, "ptx");
    if (!p)
      return p.error().context("JIT of closure " + closure.key.hex() + " for " + *arch);
    ptx.push_back(p.take());
    names.push_back(m.job.hex());
  }
  auto image = cuda_jit_link(ptx, names);
  if (!image)
    return image.error().context("JIT of closure " + closure.key.hex() + " for " + *arch);
  KILN_TRY(check_image(*image, closure));
  if (auto fp = cuda_jit_fingerprint(); fp)
    (void)store.put_image({closure.key, *arch, *fp}, "cubin", *image);
  return image;
}

} // namespace kiln::runtime
