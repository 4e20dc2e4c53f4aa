// Unit tests for the libkiln / libkiln-compiler boundary's encoding
// (src/memo/compiler_plugin.cpp): every field of a request and of a reply
// crosses unchanged, any byte included, and bytes from another encoding, a
// short reply or trailing bytes are an error naming what was wrong.
#include "memo/compiler_plugin.h"

#include <doctest/doctest.h>

#include <string>

using namespace kiln;

namespace {

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

CompileReport full_report() {
  CompileReport r;
  JobReport j;
  j.key = std::string(32, 'a');
  j.entry = std::string("f\0\xff\n", 4);
  j.target = "sm_90";
  j.symbol = "kiln.deferred.f";
  j.triple = "nvptx64-nvidia-cuda";
  j.cpu = "sm_90";
  j.features = "+ptx80";
  j.options = "-O3 -g";
  j.module_hash = std::string(32, 'b');
  j.toolchain = "llvm 22";
  j.status = JobStatus::cached;
  j.error = "none";
  j.warnings = {"loop not unrolled", ""};
  j.refs = {{"kiln.deferred.g", std::string(32, 'c')}};
  j.compile_ms = 12.5;
  j.remote = true;
  j.other_shard = true;
  r.jobs = {j, JobReport{}};
  RootReport root{"f", "sm_90", std::string(32, 'd'), true, "note", "err", "a.ll, b.ll",
                  std::string(32, 'e'), "old.ll"};
  r.roots = {root};
  r.libraries = {LibraryReport{"lib", "host", std::string(32, 'f'), 3, 7, true, "n", "e"}};
  r.evicted_closures = 4;
  r.memo_hit = true;
  r.warnings = {"IR built for sm_80"};
  return r;
}

} // namespace

TEST_CASE("compiler plugin: a request crosses with every field and any byte") {
  CompileRequest req;
  req.inputs = {SourceInput::memory("a.bc", std::string("BC\xc0\xde\0\xff", 6)),
                SourceInput::file("/dir/b.ll")};
  req.entries = {"f", std::string("\xff\xfe", 2)};
  req.targets = {"sm_90", "host"};
  req.opt_level = 3;
  req.debug = true;
  req.jobs = 7;
  req.link_images = false;
  req.library = "kernels";
  req.remote = "redis://h:1";
  req.remote_read_only = true;
  req.shard_index = 2;
  req.shard_count = 5;
  req.must_hit = true;
  req.progress = [](const Progress&) {};

  auto back = memo::decode_request(memo::encode_request(req));
  INFO((back ? std::string() : back.error().message));
  REQUIRE(back);
  REQUIRE(back->inputs.size() == 2);
  CHECK(back->inputs[0].name == "a.bc");
  CHECK(back->inputs[0].bytes == req.inputs[0].bytes);
  CHECK(back->inputs[0].in_memory);
  CHECK(back->inputs[1].name == "/dir/b.ll");
  CHECK_FALSE(back->inputs[1].in_memory);
  CHECK(back->entries == req.entries);
  CHECK(back->targets == req.targets);
  CHECK(back->opt_level == 3);
  CHECK(back->debug);
  CHECK(back->jobs == 7);
  CHECK_FALSE(back->link_images);
  CHECK(back->library == "kernels");
  CHECK(back->remote == "redis://h:1");
  CHECK(back->remote_read_only);
  CHECK(back->shard_index == 2);
  CHECK(back->shard_count == 5);
  CHECK(back->must_hit);
  // The callback does not cross as bytes: it crosses as a C callback.
  CHECK_FALSE(back->progress);
}

TEST_CASE("compiler plugin: a report crosses with every field") {
  CompileReport r = full_report();
  auto back = memo::decode_reply(memo::encode_reply(r));
  INFO((back ? std::string() : back.error().message));
  REQUIRE(back);
  REQUIRE(back->jobs.size() == 2);
  const JobReport& j = back->jobs[0];
  const JobReport& w = r.jobs[0];
  CHECK(j.key == w.key);
  CHECK(j.entry == w.entry);
  CHECK(j.target == w.target);
  CHECK(j.symbol == w.symbol);
  CHECK(j.triple == w.triple);
  CHECK(j.cpu == w.cpu);
  CHECK(j.features == w.features);
  CHECK(j.options == w.options);
  CHECK(j.module_hash == w.module_hash);
  CHECK(j.toolchain == w.toolchain);
  CHECK(j.status == JobStatus::cached);
  CHECK(j.error == w.error);
  CHECK(j.warnings == w.warnings);
  CHECK(j.refs == w.refs);
  CHECK(j.compile_ms == 12.5);
  CHECK(j.remote);
  CHECK(j.other_shard);
  CHECK(back->jobs[1].status == JobStatus::failed);
  REQUIRE(back->roots.size() == 1);
  const RootReport& root = back->roots[0];
  CHECK(root.name == "f");
  CHECK(root.closure == std::string(32, 'd'));
  CHECK(root.image);
  CHECK(root.note == "note");
  CHECK(root.error == "err");
  CHECK(root.unit == "a.ll, b.ll");
  CHECK(root.previous_closure == std::string(32, 'e'));
  CHECK(root.previous_unit == "old.ll");
  REQUIRE(back->libraries.size() == 1);
  CHECK(back->libraries[0].name == "lib");
  CHECK(back->libraries[0].roots == 3);
  CHECK(back->libraries[0].members == 7);
  CHECK(back->libraries[0].image);
  CHECK(back->evicted_closures == 4);
  CHECK(back->memo_hit);
  CHECK(back->warnings == r.warnings);
}

TEST_CASE("compiler plugin: an error crosses with its code and context") {
  Error e = make_error(Code::invalid_argument, "a.ll:3:7: expected type")
                .with_entry("f")
                .with_target("gfx942")
                .with_job(std::string(32, '1'));
  e.source = "a.ll";
  e.line = 3;
  e.column = 7;
  auto back = memo::decode_reply(memo::encode_reply(Result<CompileReport>(e)));
  REQUIRE_FALSE(back);
  CHECK(back.error().code == Code::invalid_argument);
  CHECK(back.error().message == e.message);
  CHECK(back.error().entry == "f");
  CHECK(back.error().target == "gfx942");
  CHECK(back.error().job == e.job);
  CHECK(back.error().source == "a.ll");
  CHECK(back.error().line == 3);
  CHECK(back.error().column == 7);
}

TEST_CASE("compiler plugin: another encoding, a short reply or trailing bytes are refused") {
  std::string good = memo::encode_reply(full_report());

  auto other = memo::decode_reply("kiln compile reply 1\n" + good.substr(good.find('\n') + 1));
  REQUIRE_FALSE(other);
  CHECK(other.error().code == Code::internal);
  CHECK(contains(other.error().message, "different builds"));

  // A request is not a reply.
  auto crossed = memo::decode_reply(memo::encode_request(CompileRequest{}));
  REQUIRE_FALSE(crossed);
  CHECK(contains(crossed.error().message, "different builds"));

  for (size_t cut : {good.find('\n') + 1, good.size() / 2, good.size() - 1}) {
    CAPTURE(cut);
    auto short_reply = memo::decode_reply(good.substr(0, cut));
    REQUIRE_FALSE(short_reply);
    CHECK(contains(short_reply.error().message, "malformed"));
  }

  auto trailing = memo::decode_reply(good + "x");
  REQUIRE_FALSE(trailing);
  CHECK(contains(trailing.error().message, "past its end"));

  auto request = memo::decode_request(memo::encode_request(CompileRequest{}) + "x");
  REQUIRE_FALSE(request);
  CHECK(contains(request.error().message, "request has bytes past its end"));
}
