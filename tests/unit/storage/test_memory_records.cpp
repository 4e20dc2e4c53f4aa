// Conformance of the in-memory records (tests/unit/fixtures/memory_records.hpp)
// with the cache file (storage/local/store.h): each scenario runs on a new
// cache file and on new in-memory records named by the same path, checks
// what it sees on each, and writes what it saw to a transcript (values,
// error codes and messages); the two transcripts must be equal. Then the
// fake's own parts: fault injection, call counts, dropped jobs, threads.
#include "fixtures/memory_records.hpp"

#include "fixtures/cache.hpp"
#include "fixtures/env.hpp"
#include "fixtures/records.hpp"
#include "storage/local/store.h"

#include <kiln/kiln.h>

#include <doctest/doctest.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <ctime>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

using namespace kiln;
using namespace kiln::storage;
using namespace kiln::test;

namespace {

// Code's values are the C API's statuses (include/kiln/result.hpp).
const char* code_name(Code c) { return kiln_status_name(static_cast<kiln_status>(c)); }

std::string said(const Error& e) { return std::string(code_name(e.code)) + ": " + e.message; }
std::string said(const Status& s) { return s ? "ok" : said(s.error()); }
template <class T> std::string said(const Result<T>& r) { return r ? "ok" : said(r.error()); }
/// The code alone, where the file's message is SQLite's.
std::string code(const Status& s) { return s ? "ok" : code_name(s.error().code); }
template <class T> std::string code(const Result<T>& r) {
  return r ? "ok" : code_name(r.error().code);
}

std::string str(const ClosureRecord& c) {
  std::string out = c.key.hex() + " root " + c.root_job.hex() + " " + c.target + " [";
  for (const ClosureMember& m : c.members)
    out += m.symbol + "=" + m.job.hex() + "(" + m.entry + ") ";
  return out + "]";
}

std::string str(const std::vector<NameRecord>& names) {
  std::string out;
  for (const NameRecord& n : names)
    out += n.name + "/" + n.target + "=" + n.closure.hex() + " ";
  return out;
}

std::string str(const LibraryRecord& l) {
  std::string out = l.name + "/" + l.target + "=" + l.closure.hex() + " roots";
  for (const std::string& r : l.roots)
    out += " " + r;
  return out;
}

/// One run of a scenario: the records, what it saw, and a way to remove a
/// job behind the records' back (as another process's gc would).
struct Subject {
  Records& r;
  std::function<void(const Hash128&)> drop_job;
  std::vector<std::string> log;
  void say(std::string line) { log.push_back(std::move(line)); }
};

using Scenario = std::function<void(Subject&)>;

/// Runs `scenario` on a new cache file and on new in-memory records given
/// its path; with `fill`, that first, and with `read_only`, the scenario
/// then on the records read-only (the file reopened so). Both runs must see
/// the same.
void conform(const Scenario& scenario, const Scenario& fill = nullptr, bool read_only = false) {
  TempDir dir = temp_dir("kiln-records");
  std::string path = cache_file(dir);
  std::vector<std::string> file_log, memory_log;
  {
    INFO("on the cache file");
    auto store = open_store(path);
    auto drop = [&](const Hash128& job) {
      raw_exec(path, "DELETE FROM jobs WHERE key = X'" + job.hex() + "'");
    };
    if (fill) {
      Subject s{*store, drop, {}};
      fill(s);
    }
    if (read_only) {
      store.reset();
      auto ro = Store::open(path, OpenMode::read_only);
      REQUIRE(ro);
      store = ro.take();
      REQUIRE(store->read_only());
    }
    Subject s{*store, drop, {}};
    scenario(s);
    file_log = std::move(s.log);
  }
  {
    INFO("in memory");
    MemoryRecords mem(false, path);
    auto drop = [&](const Hash128& job) { mem.drop_job(job); };
    if (fill) {
      Subject s{mem, drop, {}};
      fill(s);
    }
    if (read_only)
      mem.set_read_only(true);
    Subject s{mem, drop, {}};
    scenario(s);
    memory_log = std::move(s.log);
  }
  REQUIRE_FALSE(file_log.empty());
  for (size_t i = 0; i < std::max(file_log.size(), memory_log.size()); ++i) {
    INFO("transcript line " << i);
    CHECK(i < file_log.size());
    CHECK(i < memory_log.size());
    if (i < file_log.size() && i < memory_log.size())
      CHECK(file_log[i] == memory_log[i]);
  }
}

/// Stores a job with an object.
void put(Records& r, const JobRecord& j, std::vector<JobRef> refs = {}) {
  Status s = r.jobs().put_job(j, {{"obj", "object of " + j.entry}}, refs);
  INFO(said(s));
  REQUIRE(s);
}

/// Records a closure, with names; REQUIREs that it is recorded.
void record(Records& r, const ClosureRecord& c, const std::vector<NameRecord>& names = {}) {
  Status s = r.closures().put_closure(c, names);
  INFO(said(s));
  REQUIRE(s);
}

/// Waits until the clock's second has moved on (stored times are seconds).
void next_second() {
  std::time_t t = std::time(nullptr);
  while (std::time(nullptr) <= t)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
}

// A key-form name (32 hex digits, mixed case).
const std::string kKeyForm = "0123456789ABCDEF0123456789abcdef";

} // namespace

TEST_CASE("records: a job is stored once (the first write wins), its artifacts byte for byte") {
  conform([](Subject& s) {
    Records& r = s.r;
    JobRecord a = consistent_job("a");
    a.compile_ms = 2.5;
    std::string bytes("obj\0with a nul", 14);
    REQUIRE(r.jobs().put_job(a, {{"obj", bytes}}, {{"sym_b", "b"}}));
    // Same key, other content: the stored row, artifact and reference stay;
    // what is new (a format, a reference) is added.
    JobRecord other = a;
    other.compile_ms = 99;
    other.entry = "changed";
    REQUIRE(r.jobs().put_job(other, {{"obj", "other bytes"}, {"asm", "asm of a"}},
                             {{"sym_b", "other"}, {"sym_c", "c"}}));
    auto got = r.jobs().get_job(a.key);
    REQUIRE(got);
    CHECK(got->compile_ms == 2.5);
    CHECK(got->entry == "a");
    CHECK(got->symbol == a.symbol);
    CHECK(got->triple == a.triple);
    CHECK(got->cpu == a.cpu);
    CHECK(got->features == a.features);
    CHECK(got->options == a.options);
    CHECK(got->module_hash == a.module_hash);
    CHECK(got->toolchain == a.toolchain);
    CHECK(got->created_at > 0); // stamped when stored
    s.say("job " + got->entry + " " + got->target + " " + std::to_string(got->compile_ms));
    auto obj = r.jobs().get_artifact(a.key, "obj");
    REQUIRE(obj);
    CHECK(*obj == bytes);
    auto asm_ = r.jobs().get_artifact(a.key, "asm");
    REQUIRE(asm_);
    CHECK(*asm_ == "asm of a");
    s.say("obj " + *obj + ", asm " + *asm_);
    auto refs = r.jobs().job_refs(a.key);
    REQUIRE(refs);
    REQUIRE(refs->size() == 2);
    CHECK((*refs)[0].symbol == "sym_b");
    CHECK((*refs)[0].entry == "b");
    CHECK((*refs)[1].symbol == "sym_c");
    auto infos = r.jobs().artifact_infos(a.key);
    REQUIRE(infos);
    REQUIRE(infos->size() == 2);
    CHECK((*infos)[0].format == "asm");
    CHECK((*infos)[1].format == "obj");
    CHECK((*infos)[1].raw_size == int64_t(bytes.size()));
    CHECK((*infos)[1].stored_size > 0);
    CHECK(*r.jobs().has_job(a.key, {}));
    CHECK(*r.jobs().has_job(a.key, {"obj", "asm"}));
    CHECK_FALSE(*r.jobs().has_job(a.key, {"obj", "ptx"}));
    CHECK_FALSE(*r.jobs().has_job(hash128("no such job"), {}));
    auto missing = r.jobs().get_job(hash128("no such job"));
    REQUIRE_FALSE(missing);
    CHECK(missing.error().code == Code::not_found);
    s.say(said(missing));
    auto no_ptx = r.jobs().get_artifact(a.key, "ptx");
    REQUIRE_FALSE(no_ptx);
    CHECK(no_ptx.error().code == Code::not_found);
    s.say(said(no_ptx));
    // Listed by target, then entry.
    put(r, consistent_job("c"));
    put(r, consistent_job("b", "sm_90"));
    auto all = r.jobs().list_jobs();
    REQUIRE(all);
    std::string order;
    for (const JobRecord& j : *all)
      order += j.target + ":" + j.entry + " ";
    CHECK(order == "host:a host:c sm_90:b ");
    s.say(order);
  });
}

TEST_CASE("records: a closure is recorded whole or not at all: a missing member or root is "
          "not_found naming the job, a key-form name invalid_argument") {
  conform([](Subject& s) {
    Records& r = s.r;
    JobRecord a = consistent_job("a"), b = consistent_job("b"), c = consistent_job("c"),
              d = consistent_job("d");
    put(r, a);
    put(r, b);
    ClosureRecord abc = closure_of(a, {b, c});
    Status no_member = r.closures().put_closure(abc, {{"a", "host", abc.key}});
    REQUIRE_FALSE(no_member);
    CHECK(no_member.error().code == Code::not_found);
    CHECK(no_member.error().message.find(c.key.hex()) != std::string::npos);
    s.say(said(no_member));
    ClosureRecord da = closure_of(d, {a});
    Status no_root = r.closures().put_closure(da, {});
    REQUIRE_FALSE(no_root);
    CHECK(no_root.error().code == Code::not_found);
    CHECK(no_root.error().message.find(d.key.hex()) != std::string::npos);
    s.say(said(no_root));
    // A key-form name refuses the whole closure, the good name with it.
    ClosureRecord ab = closure_of(a, {b});
    Status key_form =
        r.closures().put_closure(ab, {{"a", "host", ab.key}, {kKeyForm, "host", ab.key}});
    REQUIRE_FALSE(key_form);
    CHECK(key_form.error().code == Code::invalid_argument);
    s.say(said(key_form));
    for (const ClosureRecord& refused : {abc, da, ab}) {
      auto got = r.closures().get_closure(refused.key);
      REQUIRE_FALSE(got);
      CHECK(got.error().code == Code::not_found);
      s.say(said(got));
    }
    CHECK(r.names().list_names()->empty());
    CHECK(r.closures().list_closures()->empty());
    CHECK(r.names().resolve_name("a", "host").error().code == Code::not_found);
    // Recorded, then again (idempotent).
    record(r, ab, {{"a", "host", ab.key}});
    record(r, ab, {{"a", "host", ab.key}});
    auto got = r.closures().get_closure(ab.key);
    REQUIRE(got);
    REQUIRE(got->members.size() == 2);
    CHECK(got->root_job == a.key);
    for (const ClosureMember& m : got->members)
      CHECK(m.entry == (m.job == a.key ? "a" : "b")); // entries filled on read
    CHECK(got->members[0].symbol < got->members[1].symbol);
    s.say(str(*got));
    auto closures = r.closures().list_closures();
    REQUIRE(closures);
    REQUIRE(closures->size() == 1);
    CHECK(str((*closures)[0]) == str(*got));
    // Once c is stored, the closure that lacked it is recorded.
    put(r, c);
    record(r, abc, {{"a", "sm_90", abc.key}});
    s.say(str(*r.closures().get_closure(abc.key)));
    s.say(str(*r.names().list_names()));
  });
}

TEST_CASE("records: names and closure keys: resolve_name, read_name and read_root, a key in "
          "either case read as a key only") {
  conform([](Subject& s) {
    Records& r = s.r;
    JobRecord a = consistent_job("a"), b = consistent_job("b");
    put(r, a);
    put(r, b);
    ClosureRecord ab = closure_of(a, {b}), lone = closure_of(b);
    record(r, ab, {{"a", "host", ab.key}});
    record(r, lone, {{"b", "host", lone.key}, {"b", "sm_90", lone.key}});
    auto by_name = r.names().resolve_name("a", "host");
    REQUIRE(by_name);
    CHECK(*by_name == ab.key);
    for (auto [name, target] : {std::pair<std::string, std::string>{"a", "sm_90"},
                                {"nothing", "host"},
                                {ab.key.hex(), "host"}}) {
      auto miss = r.names().resolve_name(name, target);
      REQUIRE_FALSE(miss);
      CHECK(miss.error().code == Code::not_found);
      s.say(said(miss));
    }
    auto rn = r.names().read_name("a", "host");
    REQUIRE(rn);
    REQUIRE(*rn);
    CHECK((*rn)->first == ab.key);
    CHECK((*rn)->second.empty());
    CHECK_FALSE(*r.names().read_name(ab.key.hex(), "host"));
    CHECK_FALSE(*r.names().read_name("nothing", "host"));
    auto targets = r.names().names_for("b");
    REQUIRE(targets);
    CHECK(str(*targets) == "b/host=" + lone.key.hex() + " b/sm_90=" + lone.key.hex() + " ");
    CHECK(r.names().names_for(lone.key.hex())->empty());
    s.say(str(*r.names().list_names()));
    std::string upper = ab.key.hex();
    std::transform(upper.begin(), upper.end(), upper.begin(), ::toupper);
    REQUIRE(upper != ab.key.hex());
    for (const std::string& name : {std::string("a"), ab.key.hex(), upper}) {
      CAPTURE(name);
      auto root = r.closures().read_root(name, "host", "", true);
      REQUIRE(root);
      CHECK(root->closure.key == ab.key);
      CHECK(root->closure.members.size() == 2);
      CHECK_FALSE(root->image);
      CHECK_FALSE(root->image_of);
      REQUIRE(root->root);
      CHECK(root->root->entry == "a");
      s.say(str(root->closure));
    }
    auto without_root = r.closures().read_root("b", "sm_90", "");
    REQUIRE(without_root);
    CHECK(without_root->closure.key == lone.key);
    CHECK_FALSE(without_root->root);
    REQUIRE(without_root->closure.members.size() == 1);
    CHECK(without_root->closure.members[0].symbol == b.symbol);
    // Not here: a name, a closure key (any target: a key is no name).
    for (const std::string& name : {std::string("nothing"), hash128("none").hex(), kKeyForm}) {
      auto miss = r.closures().read_root(name, "host", "x86-64");
      REQUIRE_FALSE(miss);
      CHECK(miss.error().code == Code::not_found);
      s.say(said(miss));
    }
  });
}

TEST_CASE("records: point_name moves a name and says from where; units kept and forgotten") {
  conform([](Subject& s) {
    Records& r = s.r;
    JobRecord a = consistent_job("a"), b = consistent_job("b");
    put(r, a);
    put(r, b);
    ClosureRecord one = closure_of(a), two = closure_of(a, {b});
    record(r, one, {{"k", "host", one.key}});
    record(r, two, {});
    CHECK(*r.names().name_unit("k", "host") == "");
    auto moved = r.names().point_name({"k", "host", two.key}, "unit1.ll");
    REQUIRE(moved);
    REQUIRE(*moved);
    CHECK((*moved)->name == "k");
    CHECK((*moved)->target == "host");
    CHECK((*moved)->old_closure == one.key);
    CHECK((*moved)->old_unit == "");
    CHECK((*moved)->new_closure == two.key);
    CHECK((*moved)->new_unit == "unit1.ll");
    CHECK(*r.names().resolve_name("k", "host") == two.key);
    CHECK(*r.names().name_unit("k", "host") == "unit1.ll");
    // Pointed again at its closure: no move, the unit as given.
    auto same = r.names().point_name({"k", "host", two.key}, "unit2.ll");
    REQUIRE(same);
    CHECK_FALSE(*same);
    CHECK(*r.names().name_unit("k", "host") == "unit2.ll");
    auto back = r.names().point_name({"k", "host", one.key}, "unit3.ll");
    REQUIRE(back);
    REQUIRE(*back);
    CHECK((*back)->old_unit == "unit2.ll");
    auto rn = r.names().read_name("k", "host");
    REQUIRE(rn);
    REQUIRE(*rn);
    CHECK((*rn)->second == "unit3.ll");
    // A new name moves nothing.
    auto fresh = r.names().point_name({"new", "host", one.key}, "");
    REQUIRE(fresh);
    CHECK_FALSE(*fresh);
    // put_closure keeps the unit of a name that stays, forgets one that moves.
    record(r, one, {{"k", "host", one.key}});
    CHECK(*r.names().name_unit("k", "host") == "unit3.ll");
    record(r, two, {{"k", "host", two.key}});
    CHECK(*r.names().name_unit("k", "host") == "");
    // Refused: a key-form name, a closure not here, a name not here.
    auto key_form = r.names().point_name({kKeyForm, "host", one.key}, "");
    REQUIRE_FALSE(key_form);
    CHECK(key_form.error().code == Code::invalid_argument);
    s.say(said(key_form));
    auto gone = r.names().point_name({"k", "host", hash128("gone")}, "");
    REQUIRE_FALSE(gone);
    CHECK(gone.error().code == Code::not_found);
    s.say(said(gone));
    CHECK(*r.names().resolve_name("k", "host") == two.key);
    auto no_unit = r.names().name_unit("nothing", "host");
    REQUIRE_FALSE(no_unit);
    CHECK(no_unit.error().code == Code::not_found);
    s.say(said(no_unit));
    s.say(str(*r.names().list_names()));
  });
}

TEST_CASE("records: get_closures reads a member set once, for the first closure naming it") {
  conform([](Subject& s) {
    Records& r = s.r;
    JobRecord a = consistent_job("a"), b = consistent_job("b"), x = consistent_job("x");
    put(r, a);
    put(r, b);
    put(r, x);
    // The roots of a cycle share their members; a lone root has no set.
    ClosureRecord ca = closure_of(a, {b}), cb = closure_of(b, {a}), cx = closure_of(x);
    REQUIRE(ca.key != cb.key);
    record(r, ca);
    record(r, cb);
    record(r, cx);
    auto batch = r.closures().get_closures({cb.key, cx.key, ca.key, cb.key});
    REQUIRE(batch);
    CHECK(batch->first_of_set == std::vector<size_t>{0, 1, 0, 0});
    REQUIRE(batch->closures.size() == 4);
    CHECK(batch->closures[0].members.size() == 2);
    CHECK(batch->closures[1].members.size() == 1);
    for (size_t i : {2, 3}) {
      CHECK(batch->closures[i].members.empty());
      CHECK(batch->closures[i].target == "host");
    }
    CHECK(batch->closures[2].key == ca.key);
    CHECK(batch->closures[2].root_job == a.key);
    for (const ClosureRecord& c : batch->closures)
      s.say(str(c));
    auto missing = r.closures().get_closures({ca.key, hash128("none")});
    REQUIRE_FALSE(missing);
    CHECK(missing.error().code == Code::not_found);
    CHECK(missing.error().message.find(hash128("none").hex()) != std::string::npos);
    s.say(said(missing));
    auto none = r.closures().get_closures({});
    REQUIRE(none);
    CHECK(none->closures.empty());
  });
}

TEST_CASE("records: images by key, by any linker (the newest), a member set sibling's and a "
          "library's") {
  conform([](Subject& s) {
    Records& r = s.r;
    JobRecord a = consistent_job("a"), b = consistent_job("b"), c = consistent_job("c");
    put(r, a);
    put(r, b);
    put(r, c);
    ClosureRecord ca = closure_of(a, {b}), cb = closure_of(b, {a});
    record(r, ca);
    record(r, cb);
    REQUIRE(r.images().put_image({ca.key, "x86-64", "ld"}, "elf", "image ld"));
    CHECK(*r.images().get_image({ca.key, "x86-64", "ld"}) == "image ld");
    CHECK(*r.images().get_image({cb.key, "x86-64", "ld"}) == "image ld"); // its sibling's
    auto other_linker = r.images().get_image({ca.key, "x86-64", "lld"});
    REQUIRE_FALSE(other_linker);
    CHECK(other_linker.error().code == Code::not_found);
    s.say(said(other_linker));
    CHECK(*r.images().get_image_any_linker(cb.key, "x86-64") == "image ld");
    auto sibling = r.closures().read_root(cb.key.hex(), "host", "x86-64");
    REQUIRE(sibling);
    CHECK(sibling->image == std::optional<std::string>("image ld"));
    CHECK(sibling->image_of == std::optional<Hash128>(ca.key));
    auto no_arch = r.closures().read_root(cb.key.hex(), "host", "znver4");
    REQUIRE(no_arch);
    CHECK_FALSE(no_arch->image);
    auto no_image = r.images().get_image_any_linker(ca.key, "znver4");
    REQUIRE_FALSE(no_image);
    CHECK(no_image.error().code == Code::not_found);
    s.say(said(no_image));
    // Newer or, in the same second, a greater linker: "zz" either way.
    REQUIRE(r.images().put_image({ca.key, "x86-64", "zz"}, "elf", "image zz"));
    CHECK(*r.images().get_image_any_linker(ca.key, "x86-64") == "image zz");
    CHECK(*r.images().get_image_any_linker(cb.key, "x86-64") == "image zz");
    // Put again: replaced.
    REQUIRE(r.images().put_image({ca.key, "x86-64", "ld"}, "elf", "image ld 2"));
    CHECK(*r.images().get_image({ca.key, "x86-64", "ld"}) == "image ld 2");
    next_second();
    REQUIRE(r.images().put_image({ca.key, "x86-64", "aa"}, "elf", "image aa"));
    CHECK(*r.images().get_image_any_linker(ca.key, "x86-64") == "image aa"); // the newest
    auto root = r.closures().read_root(ca.key.hex(), "host", "x86-64");
    REQUIRE(root);
    CHECK(root->image == std::optional<std::string>("image aa"));
    CHECK(root->image_of == std::optional<Hash128>(ca.key));
    // One per (arch, linker), under the closure asked for.
    auto images = r.images().images_of(cb.key);
    REQUIRE(images);
    std::string listed;
    for (const ImageRecord& i : *images) {
      CHECK(i.key.closure == cb.key);
      listed += i.key.arch + "/" + i.key.linker + "/" + i.format + "=" + i.bytes + " ";
    }
    CHECK(listed == "x86-64/aa/elf=image aa x86-64/ld/elf=image ld 2 x86-64/zz/elf=image zz ");
    s.say(listed);
    CHECK(r.images().images_of(hash128("none"))->empty());
    // A closure not here takes no image.
    Status orphan = r.images().put_image({hash128("none"), "x86-64", "ld"}, "elf", "x");
    CHECK_FALSE(orphan);
    s.say(code(orphan));
    // A lone root a kernel library holds is served by the library's image.
    ClosureRecord lib = closure_of(a, {b, c}), cc = closure_of(c);
    REQUIRE(r.images().put_library(lib, {"kernels", "host", lib.key, {"a", "c"}}));
    REQUIRE(r.images().put_image({lib.key, "x86-64", "ld"}, "elf", "library image"));
    record(r, cc);
    auto held = r.closures().read_root(cc.key.hex(), "host", "x86-64");
    REQUIRE(held);
    CHECK(held->image == std::optional<std::string>("library image"));
    CHECK(held->image_of == std::optional<Hash128>(lib.key));
    CHECK(*r.images().get_image_any_linker(cc.key, "x86-64") == "library image");
    CHECK_FALSE(
        r.images().get_image({cc.key, "x86-64", "ld"})); // by key: its own or a sibling's only
    auto stats = r.upkeep().stats();
    REQUIRE(stats);
    CHECK(stats->images == 4);
  });
}

TEST_CASE("records: kernel libraries put, got and listed; refused whole like closures") {
  conform([](Subject& s) {
    Records& r = s.r;
    JobRecord a = consistent_job("a"), b = consistent_job("b"), c = consistent_job("c");
    put(r, a);
    put(r, b);
    ClosureRecord lib = closure_of(a, {b, c});
    LibraryRecord rec{"kernels", "host", lib.key, {"a", "c"}};
    Status missing = r.images().put_library(lib, rec);
    REQUIRE_FALSE(missing);
    CHECK(missing.error().code == Code::not_found);
    CHECK(missing.error().message.find(c.key.hex()) != std::string::npos);
    s.say(said(missing));
    CHECK(r.closures().get_closure(lib.key).error().code == Code::not_found);
    put(r, c);
    Status key_form = r.images().put_library(lib, {kKeyForm, "host", lib.key, {"a"}});
    REQUIRE_FALSE(key_form);
    CHECK(key_form.error().code == Code::invalid_argument);
    s.say(said(key_form));
    CHECK(r.images().list_libraries()->empty());
    REQUIRE(r.images().put_library(lib, rec));
    auto got = r.images().get_library("kernels", "host");
    REQUIRE(got);
    CHECK(str(*got) == str(rec));
    CHECK(r.closures().get_closure(lib.key)->members.size() == 3);
    ClosureRecord small = closure_of(b, {c});
    REQUIRE(r.images().put_library(small, {"alpha", "sm_90", small.key, {"b"}}));
    // Recorded again: the closure and roots replaced.
    REQUIRE(r.images().put_library(small, {"kernels", "host", small.key, {"b", "c"}}));
    for (const std::string& name :
         {std::string(""), std::string("kernels"), std::string("none"), kKeyForm}) {
      auto listed = r.images().list_libraries(name);
      REQUIRE(listed);
      std::string line = "[" + name + "]";
      for (const LibraryRecord& l : *listed)
        line += " " + str(l);
      s.say(line);
    }
    CHECK(r.images().list_libraries("")->size() == 2);
    CHECK(r.images().get_library("kernels", "host")->closure == small.key);
    for (auto [name, target] :
         {std::pair<std::string, std::string>{"kernels", "sm_90"}, {kKeyForm, "host"}}) {
      auto miss = r.images().get_library(name, target);
      REQUIRE_FALSE(miss);
      CHECK(miss.error().code == Code::not_found);
      s.say(said(miss));
    }
  });
}

TEST_CASE("records: memos round trip, are replaced, and one without roots is never recorded") {
  conform([](Subject& s) {
    Records& r = s.r;
    Hash128 key = hash128("request");
    auto none = r.memos().get_memo(key);
    REQUIRE_FALSE(none);
    CHECK(none.error().code == Code::not_found);
    s.say(said(none));
    storage::Memo memo{{{"a", "host", hash128("ca")}, {"b", "sm_90", hash128("cb")}},
                       {{"/usr/bin/ptxas", "stamp 1"}, {"/lib/libdevice.bc", "stamp 2"}}};
    REQUIRE(r.memos().put_memo(key, memo));
    auto got = r.memos().get_memo(key);
    REQUIRE(got);
    REQUIRE(got->roots.size() == 2);
    CHECK(got->roots[1].name == "b");
    CHECK(got->roots[1].target == "sm_90");
    CHECK(got->roots[1].closure == hash128("cb"));
    CHECK(got->deps == memo.deps);
    storage::Memo again{{{"c", "host", hash128("cc")}}, {}};
    REQUIRE(r.memos().put_memo(key, again));
    got = r.memos().get_memo(key);
    REQUIRE(got);
    REQUIRE(got->roots.size() == 1);
    CHECK(got->roots[0].name == "c");
    CHECK(got->deps.empty());
    REQUIRE(r.memos().put_memo(hash128("empty"), {{}, {{"/x", "y"}}}));
    CHECK(r.memos().get_memo(hash128("empty")).error().code == Code::not_found);
  });
}

TEST_CASE("records: counters, stats, recency and settings; the size limit's sources") {
  EnvVar no_limit("KILN_CACHE_MAX_SIZE", nullptr);
  conform([](Subject& s) {
    Records& r = s.r;
    JobRecord a = consistent_job("a"), b = consistent_job("b", "sm_90");
    put(r, a);
    put(r, b);
    ClosureRecord ca = closure_of(a);
    record(r, ca, {{"a", "host", ca.key}});
    REQUIRE(r.images().put_image({ca.key, "x86-64", "ld"}, "elf", "image"));
    REQUIRE(r.upkeep().add_counters(Counters{.job_hits = 2, .loads = 1}));
    REQUIRE(r.upkeep().record_usage({ca.key}, 2000000000, Counters{.image_hits = 3}));
    REQUIRE(r.upkeep().touch_closures({ca.key, hash128("none")}, 2000000001));
    REQUIRE(r.upkeep().add_counters({}));
    REQUIRE(r.upkeep().record_usage({}, 0, {}));
    auto st = r.upkeep().stats();
    REQUIRE(st);
    CHECK(st->jobs == 2);
    CHECK(st->closures == 1);
    CHECK(st->images == 1);
    CHECK(st->names == 1);
    CHECK(st->raw_bytes > 0);
    CHECK(st->stored_bytes > 0);
    CHECK(st->live_bytes > 0);
    CHECK(*r.upkeep().live_bytes() > 0);
    CHECK(st->counters.job_hits == 2);
    CHECK(st->counters.loads == 1);
    CHECK(st->counters.image_hits == 3);
    CHECK(st->counters.job_misses == 0);
    REQUIRE(st->jobs_per_target.size() == 2);
    CHECK(st->jobs_per_target[0] == std::pair<std::string, int64_t>{"host", 1});
    CHECK(st->jobs_per_target[1] == std::pair<std::string, int64_t>{"sm_90", 1});
    REQUIRE(r.upkeep().zero_counters());
    CHECK(r.upkeep().stats()->counters.empty());
    REQUIRE(r.claims().lease_jobs("holder", {a.key, hash128("not yet")}, 4000000000));
    REQUIRE(r.claims().release_leases("holder"));
    // Settings, and the size limit: the environment, else the setting, else
    // the default.
    auto unset = r.upkeep().setting("max_size");
    REQUIRE_FALSE(unset);
    CHECK(unset.error().code == Code::not_found);
    s.say(said(unset));
    CHECK(*r.upkeep().max_size() == kDefaultMaxSize);
    REQUIRE(r.upkeep().set_setting("max_size", "1048576"));
    CHECK(*r.upkeep().setting("max_size") == "1048576");
    CHECK(*r.upkeep().max_size() == 1048576);
    REQUIRE(r.upkeep().set_setting("max_size", "2048"));
    CHECK(*r.upkeep().max_size() == 2048);
    {
      EnvVar limit("KILN_CACHE_MAX_SIZE", "3M");
      CHECK(*r.upkeep().max_size() == 3 * 1048576);
    }
    {
      EnvVar limit("KILN_CACHE_MAX_SIZE", "lots");
      auto bad = r.upkeep().max_size();
      REQUIRE_FALSE(bad);
      CHECK(bad.error().code == Code::invalid_argument);
      s.say(said(bad));
    }
    REQUIRE(r.upkeep().set_setting("max_size", "huge"));
    CHECK_FALSE(r.upkeep().max_size());
    s.say(said(r.upkeep().max_size()));
  });
}

TEST_CASE("records: a bundle is written at once; one that fails records nothing") {
  conform([](Subject& s) {
    Records& r = s.r;
    REQUIRE(r.upkeep().put_bundle(consistent_bundle()));
    auto root = r.closures().read_root("root", "host", "");
    REQUIRE(root);
    s.say(str(root->closure));
    CHECK(*r.jobs().get_artifact(root->closure.root_job, "obj") == "object bytes");
    BundleData bad;
    JobRecord j1 = consistent_job("j1"), j2 = consistent_job("j2");
    bad.jobs.push_back({j1, {{"obj", "j1"}}, {}});
    ClosureRecord c = closure_of(j1, {j2});
    bad.closures.push_back(c);
    bad.names.push_back({"j1", "host", c.key});
    Status failed = r.upkeep().put_bundle(bad);
    REQUIRE_FALSE(failed);
    CHECK(failed.error().code == Code::not_found);
    s.say(said(failed));
    CHECK_FALSE(*r.jobs().has_job(j1.key, {}));
    CHECK(r.names().resolve_name("j1", "host").error().code == Code::not_found);
    CHECK(r.upkeep().stats()->jobs == 1);
  });
}

TEST_CASE("records: other builds of a root's source, newest first") {
  conform([](Subject& s) {
    Records& r = s.r;
    JobRecord a = consistent_job("a"), znver = a, other = consistent_job("other");
    znver.cpu = "znver4";
    znver.key = hash128("a for znver4");
    put(r, a);
    put(r, znver);
    put(r, other);
    record(r, closure_of(a));
    record(r, closure_of(znver));
    record(r, closure_of(other));
    auto builds = r.closures().other_builds(a.key, 10);
    REQUIRE(builds);
    CHECK(*builds == std::vector<Hash128>{closure_of(znver).key});
    CHECK(*r.closures().other_builds(znver.key, 10) == std::vector<Hash128>{closure_of(a).key});
    CHECK(r.closures().other_builds(a.key, 0)->empty());
    CHECK(r.closures().other_builds(other.key, 10)->empty());
    CHECK(r.closures().other_builds(hash128("none"), 10)->empty());
    s.say("other builds " + (*builds)[0].hex());
  });
}

TEST_CASE("records: the data stamp holds across reads and moves with a write") {
  conform([](Subject& s) {
    Records& r = s.r;
    put(r, consistent_job("a"));
    auto before = r.data_stamp();
    REQUIRE(before);
    (void)r.jobs().get_job(consistent_job("a").key);
    (void)r.names().list_names();
    CHECK(*r.data_stamp() == *before);
    put(r, consistent_job("a")); // nothing new
    CHECK(*r.data_stamp() == *before);
    put(r, consistent_job("b"));
    CHECK_FALSE(*r.data_stamp() == *before);
    s.say("stamps checked");
  });
}

TEST_CASE("records: check_rows finds members, roots and names whose records are gone") {
  conform([](Subject& s) {
    Records& r = s.r;
    JobRecord a = consistent_job("a"), b = consistent_job("b"), x = consistent_job("x"),
              y = consistent_job("y"), open = consistent_job("open");
    put(r, a);
    put(r, b);
    put(r, x);
    put(r, open, {{"__kiln_unresolved", "elsewhere"}});
    REQUIRE(r.jobs().put_job(y, {}, {})); // no artifacts
    ClosureRecord ab = closure_of(a, {b}), cx = closure_of(x), copen = closure_of(open);
    ClosureRecord weird{
        core::closure_key(a.key, {{"weird", a.key}}), a.key, "host", {{"weird", a.key, ""}}};
    record(r, ab, {{"ghost", "host", hash128("nowhere")}});
    record(r, cx);
    record(r, copen);
    record(r, weird);
    std::vector<Problem> before;
    REQUIRE(r.upkeep().check_rows(before));
    s.drop_job(b.key);
    s.drop_job(x.key);
    auto partial = r.closures().get_closure(ab.key);
    REQUIRE(partial);
    CHECK(partial->members.size() == 1); // the member whose job is here
    auto empty = r.closures().get_closure(cx.key);
    REQUIRE_FALSE(empty);
    CHECK(empty.error().code == Code::corrupt);
    s.say(said(empty));
    std::vector<Problem> problems;
    REQUIRE(r.upkeep().check_rows(problems));
    CHECK(problems.size() > before.size());
    std::vector<std::string> lines;
    for (const Problem& p : problems)
      lines.push_back(p.kind + " | " + p.key + " | " + p.message);
    std::sort(lines.begin(), lines.end());
    auto has = [&](const std::string& line) {
      INFO(line);
      CHECK(std::find(lines.begin(), lines.end(), line) != lines.end());
    };
    auto about = [](const char* kind, const std::string& key, const std::string& what) {
      return std::string(kind) + " | " + key + " | " + kind + " " + key + ": " + what;
    };
    has(about("closure", ab.key.hex(), "member job missing: " + b.key.hex()));
    has(about("closure", cx.key.hex(), "root job missing: " + x.key.hex()));
    has(about("closure", weird.key.hex(), "member does not define its symbol: weird"));
    has(about("closure", copen.key.hex(), "open deferred symbol unresolved: __kiln_unresolved"));
    has(about("job", y.key.hex(), "has no artifacts"));
    has(about("name", "ghost (host)", "names a missing closure: " + hash128("nowhere").hex()));
    for (const std::string& line : lines)
      s.say(line);
  });
}

TEST_CASE("records: read-only records refuse every write as unavailable, and still read") {
  auto fill = [](Subject& s) {
    Records& r = s.r;
    JobRecord a = consistent_job("a"), b = consistent_job("b");
    put(r, a);
    put(r, b);
    ClosureRecord ca = closure_of(a);
    record(r, ca, {{"a", "host", ca.key}});
    REQUIRE(
        r.images().put_library(closure_of(a, {b}), {"lib", "host", closure_of(a, {b}).key, {"a"}}));
    REQUIRE(r.upkeep().set_setting("max_size", "4096"));
  };
  conform(
      [](Subject& s) {
        Records& r = s.r;
        JobRecord a = consistent_job("a"), b = consistent_job("b"), c = consistent_job("c");
        ClosureRecord ca = closure_of(a);
        CHECK(r.read_only());
        CHECK(r.read_only_reason() == "opened read-only");
        s.say(said(r.read_only_error("do this")));
        // Reads.
        CHECK(*r.names().resolve_name("a", "host") == ca.key);
        CHECK(*r.jobs().get_artifact(a.key, "obj") == "object of a");
        CHECK(*r.upkeep().setting("max_size") == "4096");
        // Writes.
        auto refused = [&](const auto& st, bool whole_message = true) {
          CHECK_FALSE(st);
          if (!st)
            CHECK(st.error().code == Code::unavailable);
          s.say(whole_message ? said(st) : code(st));
        };
        refused(r.jobs().put_job(c, {{"obj", "c"}}, {}));
        CHECK_FALSE(*r.jobs().has_job(c.key, {}));
        refused(r.closures().put_closure(ca, {{"a", "host", ca.key}}));
        refused(r.closures().put_closure(closure_of(b), {}));
        CHECK(r.closures().get_closure(closure_of(b).key).error().code == Code::not_found);
        refused(r.names().point_name({"a2", "host", ca.key}, "unit"));
        refused(r.images().put_library(closure_of(a, {b}),
                                       {"lib", "host", closure_of(a, {b}).key, {"b"}}));
        refused(r.images().put_library(ca, {"other", "host", ca.key, {"a"}}));
        refused(r.upkeep().set_setting("max_size", "1"), false);
        CHECK(*r.upkeep().setting("max_size") == "4096");
        refused(r.upkeep().add_counters(Counters{.loads = 1}));
        refused(r.upkeep().touch_closures({ca.key}, 2000000000));
        refused(r.upkeep().record_usage({ca.key}, 2000000000, Counters{.loads = 1}));
        refused(r.upkeep().zero_counters(), false);
        refused(r.memos().put_memo(hash128("memo"), {{{"a", "host", ca.key}}, {}}));
        refused(r.claims().lease_jobs("holder", {a.key}, 4000000000));
        refused(r.claims().release_leases("holder"), false);
        refused(r.upkeep().put_bundle(consistent_bundle()));
        auto gc = r.upkeep().gc(GcOptions{.max_size = 0});
        CHECK_FALSE(gc);
        s.say(said(gc));
        // What writes nothing succeeds: an unchanged library, nothing to
        // record, a memo without roots.
        CHECK(r.images().put_library(closure_of(a, {b}),
                                     {"lib", "host", closure_of(a, {b}).key, {"a"}}));
        CHECK(r.upkeep().record_usage({}, 0, {}));
        CHECK(r.memos().put_memo(hash128("memo"), {}));
        // An image linked now is kept for this connection's loads only.
        REQUIRE(r.images().put_image({ca.key, "x86-64", "ld"}, "elf", "kept"));
        CHECK(*r.images().get_image({ca.key, "x86-64", "ld"}) == "kept");
        CHECK(*r.images().get_image_any_linker(ca.key, "x86-64") == "kept");
        CHECK(r.images().images_of(ca.key)->empty());
        CHECK(r.upkeep().stats()->images == 0);
        auto st = r.upkeep().stats();
        REQUIRE(st);
        CHECK(st->jobs == 2);
        CHECK(st->counters.loads == 0);
      },
      fill, true);
}

// --- the fake's own parts ------------------------------------------------------

TEST_CASE("records: an injected failure returns its error and changes nothing; calls are "
          "counted") {
  MemoryRecords mem;
  JobRecord a = consistent_job("a"), b = consistent_job("b");
  put(mem, a);
  put(mem, b);
  ClosureRecord ca = closure_of(a), cb = closure_of(b);
  mem.fail("put_closure", make_error(Code::unavailable, "disk full"), 1);
  CHECK(mem.calls("put_closure") == 0);
  record(mem, ca, {{"a", "host", ca.key}}); // the one call let through
  for (int i = 0; i < 2; ++i) {
    Status s = mem.closures().put_closure(cb, {{"b", "host", cb.key}});
    REQUIRE_FALSE(s);
    CHECK(s.error().code == Code::unavailable);
    CHECK(s.error().message == "disk full");
  }
  CHECK(mem.closures().get_closure(cb.key).error().code == Code::not_found);
  CHECK(mem.names().resolve_name("b", "host").error().code == Code::not_found);
  CHECK(mem.upkeep().stats()->closures == 1);
  CHECK(mem.calls("put_closure") == 3);
  CHECK(mem.calls("put_job") == 2);
  CHECK(mem.calls("resolve_name") == 1);
  CHECK(mem.calls("put_image") == 0);
  mem.heal("put_closure");
  record(mem, cb, {{"b", "host", cb.key}});
  CHECK(*mem.names().resolve_name("b", "host") == cb.key);
  CHECK(mem.calls("put_closure") == 4);

  // A Result method, failing from its first call on; the others unaffected.
  mem.fail("get_job", make_error(Code::corrupt, "bad row"));
  auto job = mem.jobs().get_job(a.key);
  REQUIRE_FALSE(job);
  CHECK(job.error().code == Code::corrupt);
  CHECK(*mem.jobs().has_job(a.key, {"obj"}));
  mem.fail("put_job", make_error(Code::internal, "no space"));
  JobRecord c = consistent_job("c");
  CHECK(mem.jobs().put_job(c, {{"obj", "c"}}, {}).error().message == "no space");
  CHECK_FALSE(*mem.jobs().has_job(c.key, {}));
  mem.fail("put_bundle", make_error(Code::unavailable, "busy"));
  CHECK_FALSE(mem.upkeep().put_bundle(consistent_bundle()));
  CHECK(mem.names().resolve_name("root", "host").error().code == Code::not_found);
  mem.heal();
  CHECK(mem.jobs().get_job(a.key));
  CHECK(mem.upkeep().put_bundle(consistent_bundle()));
  CHECK(mem.names().resolve_name("root", "host"));

  // Names that are no method are refused, not ignored.
  CHECK_THROWS_AS(mem.fail("put_closur", make_error(Code::internal, "x")), std::invalid_argument);
  CHECK_THROWS_AS(mem.fail("defer_checkpoint", make_error(Code::internal, "x")),
                  std::invalid_argument);
  CHECK_THROWS_AS((void)mem.calls("nothing"), std::invalid_argument);
  mem.defer_checkpoint();
  mem.end_deferral();
  CHECK(mem.calls("defer_checkpoint") == 1);
  CHECK(mem.calls("end_deferral") == 1);
}

TEST_CASE("records: the in-memory records' own parts: path, read-only switch, dropped jobs, "
          "leases, gc, threads") {
  MemoryRecords mem;
  CHECK(mem.path() == ":memory:");
  CHECK_FALSE(mem.read_only());
  CHECK(mem.read_only_reason().empty());
  JobRecord a = consistent_job("a");
  put(mem, a);
  auto stamp = mem.data_stamp();
  REQUIRE(stamp);
  CHECK(stamp->version == 0);
  CHECK(stamp->reconnects == 0);
  mem.drop_job(a.key);
  CHECK_FALSE(*mem.jobs().has_job(a.key, {}));
  auto after = mem.data_stamp();
  CHECK(after->version == 1);
  CHECK(after->changes == stamp->changes);
  REQUIRE(mem.claims().lease_jobs("h1", {a.key}, 4000000000));
  REQUIRE(mem.claims().lease_jobs("h2", {a.key}, 1)); // lapsed
  CHECK(mem.lease_holders(a.key) == std::vector<std::string>{"h1"});
  REQUIRE(mem.claims().release_leases("h1"));
  CHECK(mem.lease_holders(a.key).empty());
  auto gc = mem.upkeep().gc(GcOptions{.max_size = 0});
  REQUIRE_FALSE(gc);
  CHECK(gc.error().code == Code::unavailable);
  mem.set_read_only(true, "a test said so");
  CHECK(mem.read_only());
  Status refused = mem.jobs().put_job(a, {}, {});
  REQUIRE_FALSE(refused);
  CHECK(refused.error().message.find("a test said so") != std::string::npos);
  mem.set_read_only(false);
  CHECK(mem.jobs().put_job(a, {{"obj", "a"}}, {}));

  // Threads: every job and closure recorded once, every call counted.
  MemoryRecords shared;
  constexpr int kThreads = 8, kEach = 40;
  std::vector<std::vector<JobRecord>> jobs(kThreads); // made here: they REQUIRE
  for (int t = 0; t < kThreads; ++t)
    for (int i = 0; i < kEach; ++i)
      jobs[size_t(t)].push_back(consistent_job("t" + std::to_string(t) + "_" + std::to_string(i)));
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&shared, &mine = jobs[size_t(t)]] {
      for (const JobRecord& j : mine) {
        ClosureRecord c = closure_of(j);
        (void)shared.jobs().put_job(j, {{"obj", j.entry}}, {});
        (void)shared.closures().put_closure(c, {{j.entry, "host", c.key}});
        (void)shared.closures().read_root(j.entry, "host", "x86-64");
      }
    });
  for (std::thread& t : threads)
    t.join();
  auto st = shared.upkeep().stats();
  REQUIRE(st);
  CHECK(st->jobs == kThreads * kEach);
  CHECK(st->closures == kThreads * kEach);
  CHECK(st->names == kThreads * kEach);
  CHECK(shared.calls("put_closure") == kThreads * kEach);
  CHECK(shared.calls("read_root") == kThreads * kEach);
  std::vector<Problem> problems;
  REQUIRE(shared.upkeep().check_rows(problems));
  CHECK(problems.empty());
}
