// Bundles: closures with their jobs, images and names as one checksummed,
// compressed, optionally signed file (encode, decode), decoded as hostile
// input.
#include "storage/bundle.h"

#include "storage/local/statement.h"
#include "support/compress.h"
#include "support/no_iostream.h"

#include <cereal/archives/portable_binary.hpp>
#include <cereal/types/string.hpp>
#include <cereal/types/utility.hpp>
#include <cereal/types/vector.hpp>

#include <cstring>
#include <set>
#include <sstream>

// Decoding treats every length prefix as hostile: cereal's own loads for
// strings and vectors allocate whatever a prefix claims before reading a
// byte, so a few bytes could ask for gigabytes. These, preferred by
// overload resolution for the bundle's input archive, refuse a length
// longer than the bytes left in the payload (read from the stream's
// position), and grow vectors only as their elements actually decode. The
// payload itself is capped before it is decompressed.
namespace kiln::storage {
namespace {
// Reads a payload in place: std::istringstream would copy it first.
class ViewBuf : public std::streambuf {
public:
  explicit ViewBuf(std::string_view s) {
    char* p = const_cast<char*>(s.data()); // only ever read
    setg(p, p, p + s.size());
  }

protected:
  pos_type seekoff(off_type off, std::ios_base::seekdir dir,
                   std::ios_base::openmode which) override {
    if (!(which & std::ios_base::in))
      return pos_type(off_type(-1));
    off_type base = dir == std::ios_base::beg   ? 0
                    : dir == std::ios_base::cur ? off_type(gptr() - eback())
                                                : off_type(egptr() - eback());
    if (off < -base || off > off_type(egptr() - eback()) - base)
      return pos_type(off_type(-1));
    setg(eback(), eback() + base + off, egptr());
    return pos_type(base + off);
  }
  pos_type seekpos(pos_type pos, std::ios_base::openmode which) override {
    return seekoff(off_type(pos), std::ios_base::beg, which);
  }
};

// The payload being decoded on this thread, and its size.
thread_local std::istream* g_decoding = nullptr;
thread_local uint64_t g_decoding_size = 0;

// A length prefix of `n` bytes or elements (each at least one byte).
void claim(uint64_t n) {
  if (!g_decoding)
    return;
  std::streamoff at = g_decoding->tellg();
  uint64_t left = at < 0 || uint64_t(at) > g_decoding_size ? 0 : g_decoding_size - uint64_t(at);
  if (n > left)
    throw cereal::Exception("a length of " + std::to_string(n) + " exceeds the " +
                            std::to_string(left) + " bytes left");
}
} // namespace
} // namespace kiln::storage

namespace cereal {

inline void load(PortableBinaryInputArchive& ar, std::string& s) {
  size_type n = 0;
  ar(make_size_tag(n));
  kiln::storage::claim(n);
  s.resize(size_t(n));
  ar(binary_data(s.data(), size_t(n)));
}

template <class T> void load(PortableBinaryInputArchive& ar, std::vector<T>& v) {
  size_type n = 0;
  ar(make_size_tag(n));
  kiln::storage::claim(n); // every element takes at least one byte
  v.clear();
  for (size_type i = 0; i < n; ++i)
    ar(v.emplace_back());
}

} // namespace cereal

// cereal finds these by argument-dependent lookup: beside the records.
namespace kiln::core {

template <class A> void serialize(A& ar, JobRecord& j) {
  ar(j.key, j.entry, j.symbol, j.target, j.triple, j.cpu, j.features, j.options, j.module_hash,
     j.toolchain, j.compile_ms, j.created_at);
}
template <class A> void serialize(A& ar, Artifact& a) { ar(a.format, a.bytes); }
template <class A> void serialize(A& ar, JobRef& r) { ar(r.symbol, r.entry); }
template <class A> void serialize(A& ar, ClosureMember& m) { ar(m.symbol, m.job, m.entry); }
template <class A> void serialize(A& ar, ClosureRecord& c) {
  ar(c.key, c.root_job, c.target, c.members);
}
template <class A> void serialize(A& ar, ImageKey& k) { ar(k.closure, k.arch, k.linker); }
template <class A> void serialize(A& ar, ImageRecord& i) { ar(i.key, i.format, i.bytes); }
template <class A> void serialize(A& ar, NameRecord& n) { ar(n.name, n.target, n.closure); }
template <class A> void serialize(A& ar, BundleData::Job& j) { ar(j.record, j.artifacts, j.refs); }
template <class A> void serialize(A &ar, BundleData &b) {
  ar(b.jobs, b.closures, b.images, b.names);
}

} // namespace kiln::core

namespace kiln::storage {


namespace {

constexpr char kMagic[8] = {'K', 'I', 'L', 'N', 'B', 'N', 'D', 'L'};
constexpr size_t kHeader = 8 + 4 + 8 + 16;

void put_le(std::string& out, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i)
    out.push_back(char((v >> (8 * i)) & 0xff));
}

uint64_t get_le(std::string_view in, size_t off, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i)
    v |= uint64_t(uint8_t(in[off + size_t(i)])) << (8 * i);
  return v;
}

} // namespace

Result<BundleData> collect_bundle(Records& store, const std::vector<Hash128>& closures) {
  BundleData data;
  std::set<std::string> seen_jobs;
  KILN_TRY_ASSIGN(auto names, store.names().list_names());
  for (const Hash128 &key : closures) {
    KILN_TRY_ASSIGN(auto c, store.closures().get_closure(key));
    for (const ClosureMember &m : c.members) {
      if (!seen_jobs.insert(m.job.hex()).second)
        continue;
      BundleData::Job job;
      KILN_TRY_ASSIGN(auto rec, store.jobs().get_job(m.job));
      job.record = std::move(rec);
      KILN_TRY_ASSIGN(auto infos, store.jobs().artifact_infos(m.job));
      for (const ArtifactInfo &info : infos) {
        KILN_TRY_ASSIGN(auto bytes, store.jobs().get_artifact(m.job, info.format));
        job.artifacts.push_back({info.format, std::move(bytes)});
      }
      auto refs = store.jobs().job_refs(m.job);
      if (!refs)
        return refs.error();
      job.refs = refs.take();
      data.jobs.push_back(std::move(job));
    }
    KILN_TRY_ASSIGN(auto images, store.images().images_of(key));
    for (ImageRecord &i : images)
      data.images.push_back(std::move(i));
    // A key-form name row (an older cache's) is not believed, nor carried.
    for (const NameRecord &n : names)
      if (n.closure == key && !is_hash128_hex(n.name))
        data.names.push_back(n);
    data.closures.push_back(std::move(c));
  }
  return data;
}

std::string encode_bundle(const BundleData& data, const SigningKey* key) {
  std::ostringstream os;
  {
    cereal::PortableBinaryOutputArchive ar(os);
    ar(const_cast<BundleData&>(data));
  }
  std::string payload = os.str();
  std::string packed = zstd_compress(payload, 19);
  Hash128 h = hash128(packed);
  std::string out(kMagic, sizeof kMagic);
  put_le(out, key ? kSignedBundleVersion : kBundleVersion, 4);
  put_le(out, payload.size(), 8);
  put_le(out, h.hi, 8);
  put_le(out, h.lo, 8);
  out += packed;
  if (key)
    out += key->mac(out); // over everything before it, version included
  return out;
}

Result<BundleData> decode_bundle(std::string_view bytes, const Signing& signing) {
  if (bytes.size() > max_encoded_size())
    return make_error(Code::corrupt, "bundle is " + std::to_string(bytes.size()) +
                                         " bytes, over the " + std::to_string(max_encoded_size()) +
                                         "-byte maximum for its payload's maximum of " +
                                         std::to_string(max_decoded_size()) +
                                         " decoded bytes (KILN_MAX_DECODED_SIZE)");
  if (bytes.size() < kHeader || std::memcmp(bytes.data(), kMagic, sizeof kMagic) != 0)
    return make_error(Code::corrupt, "not a Kiln bundle (no KILNBNDL header)");
  uint32_t version = uint32_t(get_le(bytes, 8, 4));
  if (version > kSignedBundleVersion)
    return make_error(Code::invalid_argument,
                      "bundle version " + std::to_string(version) + " is newer than this Kiln's " +
                          std::to_string(kSignedBundleVersion));
  if (version == 0)
    return make_error(Code::corrupt, "bundle version 0 is not valid");
  // The signature is checked before anything else is decoded: input the
  // policy refuses gets no further.
  std::string_view content = bytes;
  std::optional<std::string_view> mac;
  if (version == kSignedBundleVersion) {
    if (bytes.size() < kHeader + kMacBytes)
      return make_error(Code::corrupt, "signed bundle is too short for its signature");
    content = bytes.substr(0, bytes.size() - kMacBytes);
    mac = bytes.substr(bytes.size() - kMacBytes);
  }
  if (Status s = signing.check(content, mac); !s)
    return s.error().context("bundle refused");
  uint64_t raw_size = get_le(bytes, 12, 8);
  Hash128 want{get_le(bytes, 20, 8), get_le(bytes, 28, 8)};
  std::string_view packed = content.substr(kHeader);
  if (hash128(packed) != want)
    return make_error(Code::corrupt, "bundle fails its checksum (damaged or truncated)");
  // The payload is decoded whole, so its declared size is held to the
  // maximum before anything is allocated; zstd_decompress then holds the
  // frame to that size and grows its output only as bytes arrive.
  if (raw_size > max_decoded_size())
    return make_error(Code::corrupt, "bundle payload claims " + std::to_string(raw_size) +
                                         " decoded bytes, over the " +
                                         std::to_string(max_decoded_size()) +
                                         "-byte maximum (KILN_MAX_DECODED_SIZE)");
  auto payload = zstd_decompress(packed, size_t(raw_size));
  if (!payload)
    return payload.error().context("bundle");
  BundleData data;
  try {
    ViewBuf buf(*payload);
    std::istream is(&buf);
    struct Decoding {
      Decoding(std::istream& is, uint64_t size) {
        g_decoding = &is;
        g_decoding_size = size;
      }
      ~Decoding() { g_decoding = nullptr; }
    } scope(is, payload->size());
    cereal::PortableBinaryInputArchive ar(is);
    ar(data);
    if (is.peek() != std::char_traits<char>::eof())
      return make_error(Code::corrupt, "bundle has trailing bytes after its contents");
  } catch (const std::exception& e) {
    return make_error(Code::corrupt, std::string("bundle contents do not decode: ") + e.what());
  }
  return data;
}

} // namespace kiln::storage
