// Unit tests for the error model (include/kiln/result.hpp): the fields an
// Error carries, how context() and the setters treat them, and the fields
// the core checks set (src/core/check.cpp, src/core/keys.cpp), and the one
// encoding of an Error that messages carry (src/core/error_codec.h).
#include "core/check.h"
#include "core/error_codec.h"
#include "core/keys.h"

#include <cereal/archives/portable_binary.hpp>
#include <cereal/types/string.hpp>

#include <kiln/result.hpp>

#include <doctest/doctest.h>

#include <sstream>
#include <string>

using namespace kiln;

namespace {

Status fails_with(Error e) { return e; }

Status passes_up(Error e) {
  KILN_TRY(fails_with(std::move(e)));
  return Status::ok();
}

Result<int> passes_up_result(Error e) {
  KILN_TRY(fails_with(std::move(e)));
  return 1;
}

} // namespace

TEST_CASE("Error: make_error sets the code and message and no field") {
  Error e = make_error(Code::not_found, "no such thing");
  CHECK(e.code == Code::not_found);
  CHECK(e.message == "no such thing");
  CHECK(e.entry.empty());
  CHECK(e.target.empty());
  CHECK(e.source.empty());
  CHECK(e.line == 0);
  CHECK(e.column == 0);
  CHECK(e.job.empty());
}

TEST_CASE("Error: the setters fill empty fields; the innermost origin wins") {
  Error e = make_error(Code::invalid_argument, "bad")
                .with_entry("inner")
                .with_target("sm_90")
                .with_job("0123456789abcdef0123456789abcdef")
                .at("kernels.ll", 3, 7);
  CHECK(e.entry == "inner");
  CHECK(e.target == "sm_90");
  CHECK(e.job == "0123456789abcdef0123456789abcdef");
  CHECK(e.source == "kernels.ll");
  CHECK(e.line == 3);
  CHECK(e.column == 7);

  Error outer = e.with_entry("outer")
                    .with_target("host")
                    .with_job("ffffffffffffffffffffffffffffffff")
                    .at("other.ll", 9, 1);
  CHECK(outer.entry == "inner");
  CHECK(outer.target == "sm_90");
  CHECK(outer.job == "0123456789abcdef0123456789abcdef");
  CHECK(outer.source == "kernels.ll");
  CHECK(outer.line == 3);
  CHECK(outer.column == 7);
  CHECK(outer.message == "bad");
}

TEST_CASE("Error: the const setters leave the original alone") {
  const Error e = make_error(Code::internal, "x");
  Error f = e.with_entry("f").with_target("host").at("a.ll", 1, 2).with_job("k");
  CHECK(e.entry.empty());
  CHECK(e.target.empty());
  CHECK(e.source.empty());
  CHECK(e.job.empty());
  CHECK(f.entry == "f");
  CHECK(f.target == "host");
  CHECK(f.source == "a.ll");
  CHECK(f.job == "k");
}

TEST_CASE("Error::at: a position for the input already named fills in its line") {
  Error e = make_error(Code::invalid_argument, "cannot link").at("b.ll");
  CHECK(e.source == "b.ll");
  CHECK(e.line == 0);
  Error same = e.at("b.ll", 4, 2);
  CHECK(same.line == 4);
  CHECK(same.column == 2);
  Error other = e.at("c.ll", 5, 1);
  CHECK(other.source == "b.ll");
  CHECK(other.line == 0);
  // No line, no column.
  CHECK(make_error(Code::internal, "m").at("d.ll", 0, 9).column == 0);
}

TEST_CASE("Error::context prefixes the message and keeps every field") {
  Error e = make_error(Code::corrupt, "inner message")
                .with_entry("fib")
                .with_target("gfx942")
                .at("unit.ll", 12, 5)
                .with_job("abc");
  Error c = e.context("outer").context("outermost");
  CHECK(c.message == "outermost: outer: inner message");
  CHECK(c.code == Code::corrupt);
  CHECK(c.entry == "fib");
  CHECK(c.target == "gfx942");
  CHECK(c.source == "unit.ll");
  CHECK(c.line == 12);
  CHECK(c.column == 5);
  CHECK(c.job == "abc");
  CHECK(e.message == "inner message"); // the const form copies
}

TEST_CASE("KILN_TRY passes an error up unchanged, fields and all") {
  Error e = make_error(Code::unavailable, "gone").with_entry("f").at("x.ll", 2, 3);
  Status s = passes_up(e);
  REQUIRE_FALSE(s);
  CHECK(s.error().code == Code::unavailable);
  CHECK(s.error().message == "gone");
  CHECK(s.error().entry == "f");
  CHECK(s.error().source == "x.ll");
  CHECK(s.error().line == 2);
  CHECK(s.error().column == 3);
  auto r = passes_up_result(e);
  REQUIRE_FALSE(r);
  CHECK(r.error().entry == "f");
}

TEST_CASE("core: a job record that does not key names its job, entry and target") {
  core::JobRecord j;
  j.key = hash128("job");
  j.entry = "fib";
  j.target = "host";
  j.options = "-O9"; // not canonical
  auto k = core::job_key_of(j);
  REQUIRE_FALSE(k);
  CHECK(k.error().code == Code::corrupt);
  CHECK(k.error().job == j.key.hex());
  CHECK(k.error().entry == "fib");
  CHECK(k.error().target == "host");

  // A bundle holding it says so, and keeps the fields.
  core::BundleData data;
  data.jobs.push_back({j, {{"obj", "x"}}, {}});
  Status s = core::check_bundle(data);
  REQUIRE_FALSE(s);
  CHECK(s.error().code == Code::corrupt);
  CHECK(s.error().message.rfind("bundle: ", 0) == 0);
  CHECK(s.error().job == j.key.hex());
  CHECK(s.error().entry == "fib");
}

TEST_CASE("core: an image that is no ELF names its closure's target") {
  core::ClosureRecord c;
  c.key = hash128("closure");
  c.target = "sm_90";
  Status s = core::check_image("not an ELF file", c);
  REQUIRE_FALSE(s);
  CHECK(s.error().code == Code::corrupt);
  CHECK(s.error().target == "sm_90");
}

TEST_CASE("an Error's encoding keeps every field, and reads an unknown code as internal") {
  Error e(Code::corrupt, "bad blob");
  e.entry = "k";
  e.target = "sm_90";
  e.source = "a.ll";
  e.line = 3;
  e.column = 7;
  e.job = std::string(32, 'a');
  auto round = [](const Error& in) {
    std::stringstream ss;
    {
      cereal::PortableBinaryOutputArchive out(ss);
      out(in);
    }
    Error back;
    cereal::PortableBinaryInputArchive in_ar(ss);
    in_ar(back);
    return back;
  };
  Error back = round(e);
  CHECK(back.code == Code::corrupt);
  CHECK(back.message == "bad blob");
  CHECK(back.entry == "k");
  CHECK(back.target == "sm_90");
  CHECK(back.source == "a.ll");
  CHECK(back.line == 3);
  CHECK(back.column == 7);
  CHECK(back.job == e.job);
  // A code no Code names (a newer or damaged peer) is read as internal.
  Error odd(Code::ok, "odd");
  std::stringstream ss;
  {
    cereal::PortableBinaryOutputArchive out(ss);
    out(int(4242), odd.message, odd.entry, odd.target, odd.source, odd.line, odd.column, odd.job);
  }
  Error read;
  cereal::PortableBinaryInputArchive in(ss);
  in(read);
  CHECK(read.code == Code::internal);
  CHECK(read.message == "odd");
}
