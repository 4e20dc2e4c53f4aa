// The request and reply of the libkiln / libkiln-compiler boundary as bytes:
// a magic line with the encoding's number, then cereal's portable binary
// form of each field, in an order this file alone defines. A field added is
// a new number (and a new entry point name), never a silent misreading.
#include "memo/compiler_plugin.h"

#include "core/error_codec.h"
#include "support/no_iostream.h"

#include <cereal/archives/portable_binary.hpp>
#include <cereal/types/string.hpp>
#include <cereal/types/utility.hpp>
#include <cereal/types/vector.hpp>

#include <exception>
#include <sstream>

namespace kiln {

// cereal finds these by argument-dependent lookup: the types are kiln's.
template <class A> void serialize(A& a, SourceInput& s) { a(s.name, s.bytes, s.in_memory); }

template <class A> void serialize(A& a, JobReport& j) {
  a(j.key, j.entry, j.target, j.symbol, j.triple, j.cpu, j.features, j.options, j.module_hash,
    j.toolchain, j.status, j.error, j.warnings, j.refs, j.compile_ms, j.remote, j.other_shard);
}

template <class A> void serialize(A& a, RootReport& r) {
  a(r.name, r.target, r.closure, r.image, r.note, r.error, r.unit, r.previous_closure,
    r.previous_unit);
}

template <class A> void serialize(A& a, LibraryReport& l) {
  a(l.name, l.target, l.closure, l.roots, l.members, l.image, l.note, l.error);
}

template <class A> void serialize(A& a, CompileReport& r) {
  a(r.jobs, r.roots, r.libraries, r.evicted_closures, r.memo_hit, r.warnings);
}


} // namespace kiln

namespace kiln::memo {

namespace {

constexpr std::string_view kRequestMagic = "kiln compile request 2\n";
constexpr std::string_view kReplyMagic = "kiln compile reply 2\n";

template <class Body> std::string encode(std::string_view magic, Body&& body) {
  std::ostringstream os;
  os.write(magic.data(), std::streamsize(magic.size()));
  {
    cereal::PortableBinaryOutputArchive ar(os);
    body(ar);
  }
  return std::move(os).str();
}

// Decodes `bytes` after `magic`; cereal throws on a short or malformed input.
template <class Body>
Status decode(std::string_view what, std::string_view magic, std::string_view bytes,
              Body&& body) {
  if (bytes.substr(0, magic.size()) != magic)
    return make_error(Code::internal,
                      "the compiler library's " + std::string(what) +
                          " is not in this libkiln's encoding (" +
                          std::string(magic.substr(0, magic.size() - 1)) +
                          "): libkiln and libkiln-compiler come from different builds");
  std::istringstream is(std::string(bytes.substr(magic.size())));
  try {
    cereal::PortableBinaryInputArchive ar(is);
    body(ar);
  } catch (const std::exception& e) {
    return make_error(Code::internal, "the compiler library's " + std::string(what) +
                                          " is malformed: " + e.what());
  }
  if (is.peek() != std::char_traits<char>::eof())
    return make_error(Code::internal, "the compiler library's " + std::string(what) +
                                          " has bytes past its end");
  return {};
}

} // namespace

std::string encode_request(const CompileRequest& r) {
  return encode(kRequestMagic, [&](auto& ar) {
    ar(r.inputs, r.entries, r.targets, r.opt_level, r.debug, r.jobs, r.link_images, r.library,
       r.remote, r.remote_read_only, r.shard_index, r.shard_count, r.must_hit);
  });
}

Result<CompileRequest> decode_request(std::string_view bytes) {
  CompileRequest r;
  KILN_TRY(decode("request", kRequestMagic, bytes, [&](auto& ar) {
    ar(r.inputs, r.entries, r.targets, r.opt_level, r.debug, r.jobs, r.link_images, r.library,
       r.remote, r.remote_read_only, r.shard_index, r.shard_count, r.must_hit);
  }));
  return r;
}

std::string encode_reply(const Result<CompileReport>& reply) {
  return encode(kReplyMagic, [&](auto& ar) {
    bool ok = bool(reply);
    ar(ok);
    if (ok)
      ar(*reply);
    else
      ar(reply.error());
  });
}

Result<CompileReport> decode_reply(std::string_view bytes) {
  bool ok = false;
  CompileReport report;
  Error error;
  KILN_TRY(decode("reply", kReplyMagic, bytes, [&](auto& ar) {
    ar(ok);
    if (ok)
      ar(report);
    else
      ar(error);
  }));
  if (!ok)
    return error;
  return report;
}

} // namespace kiln::memo
