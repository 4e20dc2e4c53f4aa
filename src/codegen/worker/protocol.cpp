// The worker protocol's messages (codegen/worker/protocol.h): cereal
// payloads of plain wire structs, so the in-memory types stay free of
// serialization concerns.
#include "codegen/worker/protocol.h"

#include <algorithm>

#include "core/error_codec.h"

#include <cereal/archives/binary.hpp>
#include <cereal/types/string.hpp>
#include <cereal/types/utility.hpp>
#include <cereal/types/vector.hpp>

#include <llvm/Config/llvm-config.h>

#include <cerrno>
#include <sstream>
#include <sys/socket.h>
#include <unistd.h>

namespace kiln::codegen::worker {

namespace {

// Bumped whenever a message changes form.
constexpr uint32_t kProtocolVersion = 7; // 2: warnings in responses; 3: the toolchain in requests;
                                          // 4: requests that only read an input's bitcode;
                                          // 5: requests that link an NVIDIA image;
                                          // 6: the linker's identity in those;
                                          // 7: a failure as one Error (core/error_codec.h)
constexpr uint32_t kMagic = 0x4b434757; // "KCGW"

struct WireHello {
  uint32_t magic = 0;
  uint32_t version = 0;
  std::string llvm;
  template <class A> void serialize(A& ar) { ar(magic, version, llvm); }
};

struct WireRequest {
  std::string entry, symbol, bitcode;
  std::vector<std::pair<std::string, std::string>> renames;
  std::string spec;
  int kind = 0;
  std::string triple, cpu, features;
  int opt_level = 2;
  bool debug = false;
  std::vector<std::pair<std::string, std::string>> toolchain;
  int op = 0; // Op
  std::vector<std::pair<std::string, std::string>> nv_inputs; // name, bytes
  std::vector<uint8_t> nv_ptx;                                 // per input: PTX text
  bool device_runtime = false;
  std::string nv_identity;
  template <class A> void serialize(A& ar) {
    ar(entry, symbol, bitcode, renames, spec, kind, triple, cpu, features, opt_level, debug,
       toolchain, op, nv_inputs, nv_ptx, device_runtime, nv_identity);
  }
};

struct WireResponse {
  bool ok = false;
  std::vector<std::pair<std::string, std::string>> artifacts; // format, bytes
  Error error;                                                // core/error_codec.h
  std::vector<std::string> warnings;                          // LLVM's, for the job
  template <class A> void serialize(A& ar) { ar(ok, artifacts, error, warnings); }
};

template <class T> std::string encode(const T& value) {
  std::ostringstream os(std::ios::binary);
  {
    cereal::BinaryOutputArchive ar(os);
    ar(value);
  }
  return std::move(os).str();
}

// Decodes a whole message; false (with `*why`) when it is malformed or has
// bytes left over.
template <class T> bool decode(const std::string& message, T* out, std::string* why) {
  try {
    std::istringstream is(message, std::ios::binary);
    cereal::BinaryInputArchive ar(is);
    ar(*out);
    if (is.tellg() != std::streampos(std::streamoff(message.size()))) {
      *why = "trailing bytes";
      return false;
    }
    return true;
  } catch (const std::exception& e) { // cereal::Exception, or a length no memory can hold
    *why = e.what();
    return false;
  }
}

} // namespace

std::string encode_hello() { return encode(WireHello{kMagic, kProtocolVersion, LLVM_VERSION_STRING}); }

Status check_hello(const std::string& message, const std::string& worker) {
  WireHello h;
  std::string why;
  if (!decode(message, &h, &why) || h.magic != kMagic)
    return make_error(Code::unavailable,
                      "'" + worker + "' is not a Kiln code generation worker (its first message is "
                                     "not a worker's hello)");
  if (h.version != kProtocolVersion || h.llvm != LLVM_VERSION_STRING)
    return make_error(Code::unavailable,
                      "the code generation worker '" + worker + "' is of another build (protocol " +
                          std::to_string(h.version) + ", LLVM " + h.llvm + "; this library: protocol " +
                          std::to_string(kProtocolVersion) + ", LLVM " LLVM_VERSION_STRING ")");
  return Status::ok();
}

std::string encode_request(const JobInput& job, const TargetDesc& target,
                           const CodegenOptions& options, const Toolchain& toolchain) {
  WireRequest r;
  r.entry = job.entry;
  r.symbol = job.symbol;
  r.bitcode = job.bitcode;
  r.renames = job.renames;
  r.spec = target.spec;
  r.kind = int(target.kind);
  r.triple = target.triple;
  r.cpu = target.cpu;
  r.features = target.features;
  r.opt_level = options.opt_level;
  r.debug = options.debug;
  r.toolchain = toolchain;
  return encode(r);
}

std::string encode_read_request(const std::string& name, const std::string& bitcode,
                                const Toolchain& toolchain) {
  WireRequest r;
  r.entry = name;
  r.bitcode = bitcode;
  r.spec = "host";
  r.kind = int(TargetKind::host);
  r.toolchain = toolchain;
  r.op = int(Op::read_bitcode);
  return encode(r);
}

bool toolchain_extends(const Toolchain& base, const Toolchain& next) {
  auto nvidia = [](const std::pair<std::string, std::string>& setting) {
    for (const char* name : {"KILN_PTXAS", "KILN_LIBDEVICE", "KILN_NVJITLINK", "KILN_CUDADEVRT"})
      if (setting.first == name)
        return true;
    return false;
  };
  auto in = [](const Toolchain& t, const std::pair<std::string, std::string>& setting) {
    return std::find(t.begin(), t.end(), setting) != t.end();
  };
  if (base == next)
    return true;
  // NVIDIA's settings, all at once, to a worker that has none of them; the
  // others as they were.
  return std::none_of(base.begin(), base.end(), nvidia) &&
         std::all_of(base.begin(), base.end(), [&](const auto& s) { return in(next, s); }) &&
         std::all_of(next.begin(), next.end(), [&](const auto& s) { return in(base, s) || nvidia(s); });
}

std::string encode_nvlink_request(const std::vector<link::NvInput>& inputs,
                                  const std::string& arch, bool device_runtime,
                                  const Toolchain& toolchain) {
  WireRequest r;
  r.spec = arch;
  r.kind = int(TargetKind::nvptx);
  r.toolchain = toolchain;
  r.op = int(Op::nvlink);
  for (const link::NvInput& in : inputs) {
    r.nv_inputs.emplace_back(in.name, in.bytes);
    r.nv_ptx.push_back(in.ptx ? 1 : 0);
  }
  r.device_runtime = device_runtime;
  r.nv_identity = link::nvlink_identity();
  return encode(r);
}

Result<Request> decode_request(const std::string& message) {
  WireRequest r;
  std::string why;
  if (!decode(message, &r, &why))
    return make_error(Code::internal, "malformed code generation request: " + why);
  if (r.kind < int(TargetKind::host) || r.kind > int(TargetKind::amdgpu))
    return make_error(Code::internal,
                      "malformed code generation request: target kind " + std::to_string(r.kind));
  Request out;
  out.job = {std::move(r.entry), std::move(r.symbol), std::move(r.bitcode), std::move(r.renames)};
  out.target = {std::move(r.spec), TargetKind(r.kind), std::move(r.triple), std::move(r.cpu),
                std::move(r.features)};
  out.options.opt_level = r.opt_level;
  out.options.debug = r.debug;
  out.toolchain = std::move(r.toolchain);
  if (r.op < int(Op::compile) || r.op > int(Op::nvlink) || r.nv_ptx.size() != r.nv_inputs.size())
    return make_error(Code::internal, "malformed code generation request: operation " +
                                          std::to_string(r.op));
  out.op = Op(r.op);
  for (size_t i = 0; i < r.nv_inputs.size(); ++i)
    out.nv_inputs.push_back({std::move(r.nv_inputs[i].first), std::move(r.nv_inputs[i].second),
                             r.nv_ptx[i] != 0});
  out.device_runtime = r.device_runtime;
  out.nv_identity = std::move(r.nv_identity);
  return out;
}

std::string encode_response(const Result<std::vector<CompiledArtifact>>& result,
                            const std::vector<std::string>& warnings) {
  WireResponse w;
  w.ok = bool(result);
  w.warnings = warnings;
  if (result) {
    for (const CompiledArtifact& a : *result)
      w.artifacts.emplace_back(a.format, a.bytes);
  } else {
    w.error = result.error();
  }
  return encode(w);
}

std::optional<Result<std::vector<CompiledArtifact>>>
decode_response(const std::string& message, std::string* why, std::vector<std::string>* warnings) {
  WireResponse w;
  if (!decode(message, &w, why))
    return std::nullopt;
  if (warnings)
    warnings->insert(warnings->end(), w.warnings.begin(), w.warnings.end());
  if (w.ok) {
    std::vector<CompiledArtifact> out;
    for (auto& [format, bytes] : w.artifacts)
      out.push_back({std::move(format), std::move(bytes)});
    return Result<std::vector<CompiledArtifact>>(std::move(out));
  }
  Error e = std::move(w.error);
  if (e.code == Code::ok)
    e.code = Code::internal; // a failure always has a failure's code
  return Result<std::vector<CompiledArtifact>>(std::move(e));
}

std::string frame_header(uint64_t size) {
  std::string h(8, '\0');
  for (int i = 0; i < 8; ++i)
    h[size_t(i)] = char((size >> (8 * i)) & 0xff);
  return h;
}

uint64_t frame_length(const char* p) {
  uint64_t n = 0;
  for (int i = 0; i < 8; ++i)
    n |= uint64_t(uint8_t(p[i])) << (8 * i);
  return n;
}

namespace {

bool read_exactly(int fd, char* p, size_t n) {
  while (n > 0) {
    ssize_t got = ::read(fd, p, n);
    if (got < 0 && errno == EINTR)
      continue;
    if (got <= 0)
      return false;
    p += got;
    n -= size_t(got);
  }
  return true;
}

bool send_all(int fd, const char* p, size_t n) {
  while (n > 0) {
    ssize_t sent = ::send(fd, p, n, MSG_NOSIGNAL);
    if (sent < 0 && errno == EINTR)
      continue;
    if (sent <= 0)
      return false;
    p += sent;
    n -= size_t(sent);
  }
  return true;
}

} // namespace

bool read_message(int fd, std::string* out) {
  char header[8];
  if (!read_exactly(fd, header, sizeof header))
    return false;
  uint64_t n = frame_length(header);
  if (n > kMaxMessage)
    return false;
  out->resize(size_t(n));
  return read_exactly(fd, out->data(), out->size());
}

bool write_message(int fd, const std::string& message) {
  std::string header = frame_header(message.size());
  return send_all(fd, header.data(), header.size()) &&
         send_all(fd, message.data(), message.size());
}

} // namespace kiln::codegen::worker
