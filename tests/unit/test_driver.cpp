// Unit tests for ingest, job extraction (src/ir), job/closure keys
// (src/driver/job_key.h) and the compiler API's Plan (include/kiln/compiler.hpp).
#include "storage/local/store.h"
#include "codegen/target.h"
#include "core/keys.h"
#include "ir/extract.h"
#include "ir/unit.h"
#include "support/files.h"
#include "support/hash.h"

#include <kiln/compiler.hpp>

#include <doctest/doctest.h>

#include <llvm/Bitcode/BitcodeReader.h>
#include <llvm/IR/Function.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/Support/MemoryBuffer.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

using namespace kiln;

namespace {

const std::string kData = KILN_TEST_DATA;

core::TargetDesc host() {
  auto t = codegen::resolve_target("host");
  REQUIRE(t);
  return *t;
}

ir::ExtractConfig config(bool debug = false) {
  core::TargetDesc t = host();
  auto layout = codegen::target_data_layout(t);
  REQUIRE(layout);
  ir::ExtractConfig cfg;
  cfg.triple = t.triple;
  cfg.data_layout = *layout;
  cfg.debug = debug;
  core::CodegenOptions opts;
  opts.debug = debug;
  cfg.deferred_symbol = [t, opts](const std::string& entry) {
    return core::deferred_symbol({entry, t, opts});
  };
  return cfg;
}

std::string deferred_symbol_for(const std::string& entry, bool debug = false) {
  core::CodegenOptions opts;
  opts.debug = debug;
  return core::deferred_symbol({entry, host(), opts});
}

// Ingests in-memory IR and extracts one job from it.
Result<ir::ExtractedJob> extract(const std::string& ir, const std::string& entry,
                                 const std::string& name = "unit.ll", bool debug = false) {
  llvm::LLVMContext ctx;
  auto unit = ir::ingest(ctx, {{name, ir, true}});
  if (!unit)
    return unit.error();
  return ir::extract_job(**unit, entry, config(debug));
}

ir::ExtractedJob must_extract(const std::string& ir, const std::string& entry,
                              const std::string& name = "unit.ll", bool debug = false) {
  auto j = extract(ir, entry, name, debug);
  INFO((j ? std::string() : j.error().message));
  REQUIRE(j);
  return j.take();
}

std::unique_ptr<llvm::Module> parse_bitcode(llvm::LLVMContext& ctx, const std::string& bc) {
  auto buf = llvm::MemoryBuffer::getMemBuffer(bc, "job.bc", false);
  auto m = llvm::parseBitcodeFile(buf->getMemBufferRef(), ctx);
  REQUIRE(static_cast<bool>(m));
  return std::move(*m);
}

std::string data_file(const std::string& name) {
  auto r = read_file(kData + "/" + name);
  REQUIRE(r);
  return *r;
}

const char* kBase = R"(
define i32 @f(i32 %x) {
entry:
  %y = add i32 %x, 1
  %z = mul i32 %y, 3
  ret i32 %z
}
)";

const char* kRenamed = R"(
define i32 @f(i32 %arg) {
start:
  %tmp.1 = add i32 %arg, 1
  %result = mul i32 %tmp.1, 3
  ret i32 %result
}
)";

const char* kWithOthers = R"(
@unrelated = global i32 7

define i32 @g(i32 %a) {
  %b = sub i32 %a, 9
  ret i32 %b
}

define i32 @f(i32 %x) {
entry:
  %y = add i32 %x, 1
  %z = mul i32 %y, 3
  ret i32 %z
}

define internal i32 @h(i32 %a) {
  %v = load i32, ptr @unrelated
  %b = add i32 %a, %v
  ret i32 %b
}

define i32 @k() {
  %r = call i32 @h(i32 1)
  ret i32 %r
}
)";

const char* kWithOthersReordered = R"(
define i32 @k() {
  %r = call i32 @h(i32 1)
  ret i32 %r
}

define i32 @f(i32 %x) {
entry:
  %y = add i32 %x, 1
  %z = mul i32 %y, 3
  ret i32 %z
}

define internal i32 @h(i32 %a) {
  %v = load i32, ptr @unrelated
  %b = add i32 %a, %v
  ret i32 %b
}

@unrelated = global i32 7

define i32 @g(i32 %a) {
  %b = sub i32 %a, 9
  ret i32 %b
}
)";

const char* kWithDebug = R"(
source_filename = "f.c"

define i32 @f(i32 %x) !dbg !5 {
entry:
  %y = add i32 %x, 1, !dbg !8
  %z = mul i32 %y, 3, !dbg !9
  ret i32 %z, !dbg !9
}

!llvm.dbg.cu = !{!0}
!llvm.module.flags = !{!3, !4}
!llvm.ident = !{!10}

!0 = distinct !DICompileUnit(language: DW_LANG_C99, file: !1, producer: "clang 22", isOptimized: false, runtimeVersion: 0, emissionKind: FullDebug)
!1 = !DIFile(filename: "f.c", directory: "/src")
!3 = !{i32 7, !"Dwarf Version", i32 5}
!4 = !{i32 2, !"Debug Info Version", i32 3}
!5 = distinct !DISubprogram(name: "f", scope: !1, file: !1, line: 1, type: !6, scopeLine: 1, spFlags: DISPFlagDefinition, unit: !0)
!6 = !DISubroutineType(types: !7)
!7 = !{null}
!8 = !DILocation(line: 2, column: 3, scope: !5)
!9 = !DILocation(line: 3, column: 5, scope: !5)
!10 = !{!"clang version 22"}
)";

const char* kChangedBody = R"(
define i32 @f(i32 %x) {
entry:
  %y = add i32 %x, 2
  %z = mul i32 %y, 3
  ret i32 %z
}
)";

const char* kDeferred = R"(
declare ptr @kiln_deferred(ptr)

define i32 @child(i32 %x) {
  %r = mul i32 %x, 3
  ret i32 %r
}

define i32 @parent(i32 %x) {
  %p = call ptr @kiln_deferred(ptr @child)
  %r = call i32 %p(i32 %x)
  %v = add i32 %r, 1
  ret i32 %v
}
)";

} // namespace

// ---------------------------------------------------------------------------
// extract_job

TEST_CASE("extract_job: local value and block names do not change the job") {
  auto a = must_extract(kBase, "f");
  auto b = must_extract(kRenamed, "f");
  CHECK(a.bitcode == b.bitcode);
  CHECK(a.refs.empty());
}

TEST_CASE("extract_job: the input's name does not change the job") {
  auto a = must_extract(kBase, "f", "a.ll");
  auto b = must_extract(kBase, "f", "/some/where/else/other_name.ll");
  CHECK(a.bitcode == b.bitcode);
}

TEST_CASE("extract_job: unrelated functions and globals, and their order, do not change the job") {
  auto base = must_extract(kBase, "f");
  auto others = must_extract(kWithOthers, "f");
  auto reordered = must_extract(kWithOthersReordered, "f");
  CHECK(base.bitcode == others.bitcode);
  CHECK(base.bitcode == reordered.bitcode);
  // And a job that does use some of them is order-independent too.
  auto k1 = must_extract(kWithOthers, "k");
  auto k2 = must_extract(kWithOthersReordered, "k");
  CHECK(k1.bitcode == k2.bitcode);
  CHECK(k1.bitcode != base.bitcode);
}

TEST_CASE("extract_job: debug info does not change a job extracted without debug") {
  auto plain = must_extract(kBase, "f", "unit.ll", /*debug=*/false);
  auto with_dbg = must_extract(kWithDebug, "f", "unit.ll", /*debug=*/false);
  CHECK(plain.bitcode == with_dbg.bitcode);
  {
    // Nothing of the debug info may survive, module flags included.
    llvm::LLVMContext ctx;
    auto m = parse_bitcode(ctx, with_dbg.bitcode);
    CHECK(m->getNamedMetadata("llvm.dbg.cu") == nullptr);
    CHECK(m->getNamedMetadata("llvm.ident") == nullptr);
    CHECK(m->getModuleFlag("Debug Info Version") == nullptr);
    CHECK(m->getModuleFlag("Dwarf Version") == nullptr);
    REQUIRE(m->getFunction("f"));
    CHECK(m->getFunction("f")->getSubprogram() == nullptr);
  }

  // With debug kept, the debug info is part of the job.
  auto kept = must_extract(kWithDebug, "f", "unit.ll", /*debug=*/true);
  CHECK(kept.bitcode != with_dbg.bitcode);
  llvm::LLVMContext ctx;
  auto m = parse_bitcode(ctx, kept.bitcode);
  llvm::Function* f = m->getFunction("f");
  REQUIRE(f);
  CHECK(f->getSubprogram() != nullptr);
}

TEST_CASE("extract_job: a changed entry body changes the job") {
  auto a = must_extract(kBase, "f");
  auto b = must_extract(kChangedBody, "f");
  CHECK(a.bitcode != b.bitcode);
}

TEST_CASE("extract_job: the job module names only what the entry reaches") {
  auto k = must_extract(kWithOthers, "k");
  llvm::LLVMContext ctx;
  auto m = parse_bitcode(ctx, k.bitcode);
  REQUIRE(m->getFunction("k"));
  CHECK_FALSE(m->getFunction("k")->isDeclaration());
  CHECK(m->getFunction("h") != nullptr);
  CHECK(m->getGlobalVariable("unrelated", /*AllowInternal=*/true) != nullptr);
  CHECK(m->getFunction("f") == nullptr);
  CHECK(m->getFunction("g") == nullptr);
  CHECK(m->getTargetTriple().str() == host().triple);
}

TEST_CASE("extract_job lowers kiln_deferred(@f) to f's deferred symbol") {
  auto parent = must_extract(kDeferred, "parent");
  std::string sym = deferred_symbol_for("child");
  REQUIRE(parent.refs.size() == 1);
  CHECK(parent.refs[0].symbol == sym);
  CHECK(parent.refs[0].entry == "child");

  llvm::LLVMContext ctx;
  auto m = parse_bitcode(ctx, parent.bitcode);
  CHECK(m->getFunction("kiln_deferred") == nullptr);
  llvm::Function* child = m->getFunction("child");
  CHECK((child == nullptr || child->isDeclaration()));
  llvm::Function* decl = m->getFunction(sym);
  REQUIRE(decl);
  CHECK(decl->isDeclaration());
  REQUIRE(m->getFunction("parent"));
  CHECK_FALSE(m->getFunction("parent")->isDeclaration());

  // The child's own job has no references, and its body is there.
  auto c = must_extract(kDeferred, "child");
  CHECK(c.refs.empty());
  auto cm = parse_bitcode(ctx, c.bitcode);
  REQUIRE(cm->getFunction("child"));
  CHECK_FALSE(cm->getFunction("child")->isDeclaration());
}

TEST_CASE("extract_job: a child's body change does not change its parent's job") {
  auto v1 = must_extract(data_file("change_v1.ll"), "chg_parent");
  auto v2 = must_extract(data_file("change_v2.ll"), "chg_parent");
  CHECK(v1.bitcode == v2.bitcode);
  CHECK(v1.refs == v2.refs);
  auto c1 = must_extract(data_file("change_v1.ll"), "chg_child");
  auto c2 = must_extract(data_file("change_v2.ll"), "chg_child");
  CHECK(c1.bitcode != c2.bitcode);
}

TEST_CASE("extract_job: a deferred reference inside an internal helper is the entry's") {
  auto root = must_extract(data_file("helper.ll"), "hlp_root");
  REQUIRE(root.refs.size() == 1);
  CHECK(root.refs[0].entry == "hlp_child");
  CHECK(root.refs[0].symbol == deferred_symbol_for("hlp_child"));

  llvm::LLVMContext ctx;
  auto m = parse_bitcode(ctx, root.bitcode);
  llvm::Function* helper = m->getFunction("hlp_helper");
  REQUIRE(helper);
  CHECK_FALSE(helper->isDeclaration());
  llvm::Function* child = m->getFunction("hlp_child");
  CHECK((child == nullptr || child->isDeclaration()));
  CHECK(m->getFunction("kiln_deferred") == nullptr);
}

TEST_CASE("extract_job: references are sorted by symbol and unique") {
  const char* ir = R"(
declare ptr @kiln_deferred(ptr)
define i32 @c1(i32 %x) { ret i32 %x }
define i32 @c2(i32 %x) { ret i32 %x }
define i32 @p(i32 %x) {
  %a = call ptr @kiln_deferred(ptr @c2)
  %b = call ptr @kiln_deferred(ptr @c1)
  %c = call ptr @kiln_deferred(ptr @c2)
  %r1 = call i32 %a(i32 %x)
  %r2 = call i32 %b(i32 %r1)
  %r3 = call i32 %c(i32 %r2)
  ret i32 %r3
}
)";
  auto p = must_extract(ir, "p");
  REQUIRE(p.refs.size() == 2);
  CHECK(p.refs[0].symbol < p.refs[1].symbol);
  std::set<std::string> entries{p.refs[0].entry, p.refs[1].entry};
  CHECK(entries == std::set<std::string>{"c1", "c2"});
}

TEST_CASE("extract_job errors: missing entry names the entry") {
  auto r = extract(kBase, "no_such_function");
  REQUIRE_FALSE(r);
  CHECK(r.error().code == Code::invalid_argument);
  CHECK(r.error().message.find("no_such_function") != std::string::npos);

  const char* decl_only = "declare i32 @ext(i32)\n";
  auto d = extract(decl_only, "ext");
  REQUIRE_FALSE(d);
  CHECK(d.error().code == Code::invalid_argument);
  CHECK(d.error().message.find("ext") != std::string::npos);

  auto marker = extract(kDeferred, "kiln_deferred");
  REQUIRE_FALSE(marker);
  CHECK(marker.error().code == Code::invalid_argument);
}

TEST_CASE("extract_job errors: kiln_deferred on a global variable names the parent") {
  auto r = extract(data_file("bad_deferred_global.ll"), "bdg_parent");
  REQUIRE_FALSE(r);
  CHECK(r.error().code == Code::invalid_argument);
  CHECK(r.error().message.find("bdg_parent") != std::string::npos);
  CHECK(r.error().message.find("bdg_data") != std::string::npos);

  // Reached through a helper, the error still names the entry being extracted.
  const char* via_helper = R"(
declare ptr @kiln_deferred(ptr)
@gv = global i32 1
define internal i32 @helper(i32 %x) {
  %p = call ptr @kiln_deferred(ptr @gv)
  %r = call i32 %p(i32 %x)
  ret i32 %r
}
define i32 @outer(i32 %x) {
  %r = call i32 @helper(i32 %x)
  ret i32 %r
}
)";
  auto h = extract(via_helper, "outer");
  REQUIRE_FALSE(h);
  CHECK(h.error().code == Code::invalid_argument);
  CHECK(h.error().message.find("outer") != std::string::npos);
}

TEST_CASE("extract_job errors: kiln_deferred on a declaration or used indirectly") {
  const char* on_decl = R"(
declare ptr @kiln_deferred(ptr)
declare i32 @nowhere(i32)
define i32 @p(i32 %x) {
  %q = call ptr @kiln_deferred(ptr @nowhere)
  %r = call i32 %q(i32 %x)
  ret i32 %r
}
)";
  auto d = extract(on_decl, "p");
  REQUIRE_FALSE(d);
  CHECK(d.error().code == Code::invalid_argument);
  CHECK(d.error().message.find("'p'") != std::string::npos);

  const char* escaped = R"(
declare ptr @kiln_deferred(ptr)
@slot = global ptr null
define void @p() {
  store ptr @kiln_deferred, ptr @slot
  ret void
}
)";
  auto e = extract(escaped, "p");
  REQUIRE_FALSE(e);
  CHECK(e.error().code == Code::invalid_argument);
  CHECK(e.error().message.find("'p'") != std::string::npos);
}

TEST_CASE("ingest: a syntax error names the input and the line") {
  llvm::LLVMContext ctx;
  std::string ir = "define i32 @ok(i32 %x) {\n  ret i32 %x\n}\n\ndefine i32 @bad(i32 %x) {\n"
                   "  %r = add i33x %x, 1\n  ret i32 %r\n}\n";
  auto r = ir::ingest(ctx, {{"memory_unit.ll", ir, true}});
  REQUIRE_FALSE(r);
  CHECK(r.error().code == Code::invalid_argument);
  INFO(r.error().message);
  CHECK(r.error().message.find("memory_unit.ll") != std::string::npos);
  CHECK(r.error().message.find(":6:") != std::string::npos);

  std::string path = kData + "/bad_syntax.ll";
  auto f = ir::ingest(ctx, {{path, {}, false}});
  REQUIRE_FALSE(f);
  CHECK(f.error().code == Code::invalid_argument);
  INFO(f.error().message);
  CHECK(f.error().message.find("bad_syntax.ll") != std::string::npos);
  CHECK(f.error().message.find(":13:") != std::string::npos);

  auto missing = ir::ingest(ctx, {{kData + "/does_not_exist.ll", {}, false}});
  REQUIRE_FALSE(missing);
  CHECK(missing.error().code == Code::invalid_argument);
  CHECK(missing.error().message.find("does_not_exist.ll") != std::string::npos);

  auto none = ir::ingest(ctx, {});
  REQUIRE_FALSE(none);
  CHECK(none.error().code == Code::invalid_argument);
}

TEST_CASE("ingest links several inputs into one unit; exported_functions lists roots") {
  llvm::LLVMContext ctx;
  auto u = ir::ingest(ctx, {{kData + "/multi_a.ll", {}, false}, {kData + "/multi_b.ll", {}, false}});
  INFO((u ? std::string() : u.error().message));
  REQUIRE(u);
  auto roots = ir::exported_functions(**u);
  CHECK(std::find(roots.begin(), roots.end(), "mf_root") != roots.end());
  CHECK(std::find(roots.begin(), roots.end(), "mf_child") != roots.end());
  CHECK(std::find(roots.begin(), roots.end(), "kiln_deferred") == roots.end());

  llvm::LLVMContext ctx2;
  auto h = ir::ingest(ctx2, {{kData + "/helper.ll", {}, false}});
  REQUIRE(h);
  auto hr = ir::exported_functions(**h);
  CHECK(std::find(hr.begin(), hr.end(), "hlp_helper") == hr.end()); // internal
  CHECK(std::find(hr.begin(), hr.end(), "hlp_root") != hr.end());
}

// ---------------------------------------------------------------------------
// job_key, deferred_symbol, closure_key

namespace {

core::KeyComponents base_components() {
  core::KeyComponents c;
  c.module_hash = hash128("module");
  c.identity.entry = "f";
  c.identity.target = host();
  c.identity.options = {};
  c.toolchain = codegen::toolchain_fingerprint(c.identity.target);
  return c;
}

bool is_deferred_symbol(const std::string& s) {
  const std::string prefix = "__kiln_deferred_";
  if (s.size() != prefix.size() + 32 || s.compare(0, prefix.size(), prefix) != 0)
    return false;
  return std::all_of(s.begin() + long(prefix.size()), s.end(),
                     [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

} // namespace

TEST_CASE("job_key is stable for equal inputs and changes with every component") {
  core::KeyComponents base = base_components();
  Hash128 k = core::job_key(base);
  CHECK(core::job_key(base_components()) == k);

  std::vector<std::pair<const char*, core::KeyComponents>> variants;
  auto add = [&](const char* what, auto mutate) {
    core::KeyComponents c = base_components();
    mutate(c);
    variants.emplace_back(what, c);
  };
  add("module hash", [](auto& c) { c.module_hash = hash128("module2"); });
  add("entry", [](auto& c) { c.identity.entry = "g"; });
  add("target spec", [](auto& c) { c.identity.target.spec = "host2"; });
  add("target kind", [](auto& c) { c.identity.target.kind = core::TargetKind::nvptx; });
  add("triple", [](auto& c) { c.identity.target.triple = "aarch64-unknown-linux-gnu"; });
  add("cpu", [](auto& c) { c.identity.target.cpu = c.identity.target.cpu + "x"; });
  add("features", [](auto& c) { c.identity.target.features += ",+madeup"; });
  add("opt level", [](auto& c) { c.identity.options.opt_level = 3; });
  add("opt level 0", [](auto& c) { c.identity.options.opt_level = 0; });
  add("debug", [](auto& c) { c.identity.options.debug = true; });
  add("toolchain", [](auto& c) { c.toolchain += " (patched)"; });
  // Field boundaries matter: moving a character from one field to the next
  // must not collide.
  add("boundary", [](auto& c) {
    c.identity.target.cpu = c.identity.target.cpu + ",";
    c.identity.target.features = c.identity.target.features.substr(
        std::min<size_t>(1, c.identity.target.features.size()));
  });

  std::set<Hash128> all{k};
  for (auto& [what, c] : variants) {
    INFO(what);
    Hash128 v = core::job_key(c);
    CHECK(v != k);
    CHECK(core::job_key(c) == v); // stable
    all.insert(v);
  }
  CHECK(all.size() == variants.size() + 1); // pairwise distinct
}

TEST_CASE("deferred_symbol: __kiln_deferred_ + 32 hex, from identity but not module hash") {
  core::KeyComponents a = base_components();
  std::string s = core::deferred_symbol(a.identity);
  CHECK(is_deferred_symbol(s));
  CHECK(core::deferred_symbol(base_components().identity) == s);

  // The module hash changes the job key but not the symbol parents use.
  core::KeyComponents b = base_components();
  b.module_hash = hash128("a different body");
  b.toolchain = "other toolchain";
  CHECK(core::job_key(a) != core::job_key(b));
  CHECK(core::deferred_symbol(b.identity) == s);

  auto differs = [&](auto mutate) {
    core::KeyComponents c = base_components();
    mutate(c);
    std::string t = core::deferred_symbol(c.identity);
    CHECK(is_deferred_symbol(t));
    return t != s;
  };
  CHECK(differs([](auto& c) { c.identity.entry = "g"; }));
  CHECK(differs([](auto& c) { c.identity.target.spec = "other"; }));
  CHECK(differs([](auto& c) { c.identity.target.cpu += "x"; }));
  CHECK(differs([](auto& c) { c.identity.target.features += ",+x"; }));
  CHECK(differs([](auto& c) { c.identity.target.triple = "aarch64-unknown-linux-gnu"; }));
  CHECK(differs([](auto& c) { c.identity.options.opt_level = 0; }));
  CHECK(differs([](auto& c) { c.identity.options.debug = true; }));

  // Not the same hash as the job key.
  CHECK(s.substr(16) != core::job_key(a).hex());
}

TEST_CASE("closure_key is independent of member order and depends on members and root") {
  Hash128 root = hash128("root");
  core::ClosureMap m1{{"sym_a", hash128("a")}, {"sym_b", hash128("b")}, {"sym_c", hash128("c")}};
  core::ClosureMap m2{{"sym_c", hash128("c")}, {"sym_a", hash128("a")}, {"sym_b", hash128("b")}};
  Hash128 k = core::closure_key(root, m1);
  CHECK(core::closure_key(root, m2) == k);
  CHECK(core::closure_key(root, m1) == k);

  CHECK(core::closure_key(hash128("other root"), m1) != k);
  core::ClosureMap fewer{{"sym_a", hash128("a")}, {"sym_b", hash128("b")}};
  CHECK(core::closure_key(root, fewer) != k);
  core::ClosureMap other_job{{"sym_a", hash128("a")}, {"sym_b", hash128("b2")},
                               {"sym_c", hash128("c")}};
  CHECK(core::closure_key(root, other_job) != k);
  // Swapping which symbol maps to which job is a different closure.
  core::ClosureMap swapped{{"sym_a", hash128("b")}, {"sym_b", hash128("a")},
                             {"sym_c", hash128("c")}};
  CHECK(core::closure_key(root, swapped) != k);
}

// ---------------------------------------------------------------------------
// Plan

namespace {

CompileRequest request_for(const std::string& name, const std::string& bytes,
                           std::vector<std::string> entries = {}) {
  CompileRequest req;
  req.inputs = {SourceInput::memory(name, bytes)};
  req.entries = std::move(entries);
  req.jobs = 2;
  return req;
}

Plan must_plan(const CompileRequest& req) {
  auto p = Plan::create(req);
  INFO((p ? std::string() : p.error().message));
  REQUIRE(p);
  return p.take();
}

std::vector<std::string> keys_of(const CompileReport& r) {
  std::vector<std::string> out;
  for (const JobReport& j : r.jobs)
    out.push_back(j.key);
  return out;
}

} // namespace

TEST_CASE("Plan::describe gives the same keys twice and from a second Plan") {
  std::string ir = data_file("nested.ll");
  Plan a = must_plan(request_for("nested.ll", ir, {"nest_a"}));
  CHECK(a.job_count() == 3);
  CompileReport r1 = a.describe();
  CompileReport r2 = a.describe();
  REQUIRE(r1.jobs.size() == 3);
  CHECK(keys_of(r1) == keys_of(r2));
  // Another Plan, and another input name: same keys.
  Plan b = must_plan(request_for("elsewhere/renamed.ll", ir, {"nest_a"}));
  CompileReport r3 = b.describe();
  CHECK(keys_of(r1) == keys_of(r3));
  REQUIRE(r1.roots.size() == 1);
  REQUIRE(r3.roots.size() == 1);
  CHECK(r1.roots[0].name == "nest_a");
  CHECK(r1.roots[0].target == "host");
  CHECK(r1.roots[0].closure.size() == 32);
  CHECK(r1.roots[0].closure == r3.roots[0].closure);

  // Each job's refs point at the other jobs' keys by their symbols.
  std::vector<std::string> key_list = keys_of(r1);
  std::set<std::string> keys(key_list.begin(), key_list.end());
  CHECK(keys.size() == 3);
  for (const JobReport& j : r1.jobs) {
    CHECK(j.target == "host");
    CHECK(j.options == "-O2");
    CHECK(is_deferred_symbol(j.symbol));
    for (const auto& [sym, child] : j.refs) {
      CHECK(keys.count(child) == 1);
      auto it = std::find_if(r1.jobs.begin(), r1.jobs.end(),
                             [&](const JobReport& o) { return o.key == child; });
      REQUIRE(it != r1.jobs.end());
      CHECK(it->symbol == sym);
    }
  }
}

TEST_CASE("Plan: a cycle a -> b -> c -> a terminates with three jobs") {
  Plan p = must_plan(request_for("cycle.ll", data_file("cycle.ll"), {"cyc_a"}));
  CHECK(p.job_count() == 3);
  CompileReport r = p.describe();
  REQUIRE(r.jobs.size() == 3);
  std::set<std::string> entries;
  for (const JobReport& j : r.jobs) {
    entries.insert(j.entry);
    CHECK(j.refs.size() == 1);
  }
  CHECK(entries == std::set<std::string>{"cyc_a", "cyc_b", "cyc_c"});

  // Every member as a root: still three jobs, three distinct closures.
  Plan all = must_plan(request_for("cycle.ll", data_file("cycle.ll")));
  CHECK(all.job_count() == 3);
  CompileReport ra = all.describe();
  REQUIRE(ra.roots.size() == 3);
  std::set<std::string> closures;
  for (const RootReport& rr : ra.roots)
    closures.insert(rr.closure);
  CHECK(closures.size() == 3);
  CHECK(keys_of(ra) == keys_of(r)); // discovery from cyc_a first
}

TEST_CASE("Plan: a self-recursive deferred reference is one job") {
  Plan p = must_plan(request_for("self.ll", data_file("self_recursive.ll")));
  CompileReport r = p.describe();
  CHECK(p.job_count() == r.jobs.size());
  for (const JobReport& j : r.jobs)
    for (const auto& [sym, child] : j.refs)
      if (sym == j.symbol)
        CHECK(child == j.key);
}

TEST_CASE("Plan::run compiles into a cache; a second run finds every job cached") {
  auto dir = TempDir::create("kiln-plan-test");
  REQUIRE(dir);
  std::string cache = dir->path() + "/kiln.db";
  std::string ir = data_file("nested.ll");

  Plan first = must_plan(request_for("nested.ll", ir, {"nest_a"}));
  auto r1 = first.run(cache);
  INFO((r1 ? std::string() : r1.error().message));
  REQUIRE(r1);
  CHECK(r1->ok());
  REQUIRE(r1->jobs.size() == 3);
  for (const JobReport& j : r1->jobs) {
    INFO(j.entry << ": " << j.error);
    CHECK(j.status == JobStatus::compiled);
  }
  REQUIRE(r1->roots.size() == 1);
  CHECK(r1->roots[0].error == "");
  CHECK(r1->roots[0].closure == first.describe().roots[0].closure);

  Plan second = must_plan(request_for("nested.ll", ir, {"nest_a"}));
  std::vector<Progress> progress;
  CompileRequest req = request_for("nested.ll", ir, {"nest_a"});
  req.progress = [&](const Progress& p) { progress.push_back(p); };
  Plan third = must_plan(req);
  auto r2 = second.run(cache);
  REQUIRE(r2);
  CHECK(r2->ok());
  CHECK(keys_of(*r2) == keys_of(*r1));
  for (const JobReport& j : r2->jobs)
    CHECK(j.status == JobStatus::cached);
  REQUIRE(r2->roots.size() == 1);
  CHECK(r2->roots[0].closure == r1->roots[0].closure);

  auto r3 = third.run(cache);
  REQUIRE(r3);
  REQUIRE(progress.size() == 3);
  for (const Progress& p : progress) {
    CHECK(p.status == "cached");
    CHECK(p.total == 3);
  }
  CHECK(progress.back().done == 3);

  // The cache holds the jobs once each, and the root's name resolves.
  auto st = storage::Store::open(cache);
  REQUIRE(st);
  auto jobs = (*st)->list_jobs();
  REQUIRE(jobs);
  CHECK(jobs->size() == 3);
  auto named = (*st)->resolve_name("nest_a", "host");
  REQUIRE(named);
  CHECK(named->hex() == r1->roots[0].closure);
  auto closure = (*st)->get_closure(*named);
  REQUIRE(closure);
  CHECK(closure->members.size() == 3);
}

TEST_CASE("Plan::create input errors are invalid_argument") {
  std::string ir = data_file("nested.ll");
  SUBCASE("unknown target") {
    CompileRequest req = request_for("nested.ll", ir);
    req.targets = {"not_a_target"};
    auto p = Plan::create(req);
    REQUIRE_FALSE(p);
    CHECK(p.error().code == Code::invalid_argument);
    CHECK(p.error().message.find("not_a_target") != std::string::npos);
  }
  SUBCASE("missing entry") {
    auto p = Plan::create(request_for("nested.ll", ir, {"no_such_entry"}));
    REQUIRE_FALSE(p);
    CHECK(p.error().code == Code::invalid_argument);
    CHECK(p.error().message.find("no_such_entry") != std::string::npos);
  }
  SUBCASE("bad optimization level") {
    CompileRequest req = request_for("nested.ll", ir);
    req.opt_level = 4;
    auto p = Plan::create(req);
    REQUIRE_FALSE(p);
    CHECK(p.error().code == Code::invalid_argument);
  }
  SUBCASE("syntax error") {
    auto p = Plan::create(request_for("broken.ll", "define i32 @f( {\n"));
    REQUIRE_FALSE(p);
    CHECK(p.error().code == Code::invalid_argument);
    CHECK(p.error().message.find("broken.ll") != std::string::npos);
  }
  SUBCASE("kiln_deferred on a global") {
    auto p = Plan::create(request_for("bdg.ll", data_file("bad_deferred_global.ll")));
    REQUIRE_FALSE(p);
    CHECK(p.error().code == Code::invalid_argument);
    CHECK(p.error().message.find("bdg_parent") != std::string::npos);
  }
}

TEST_CASE("Plan: options are part of the keys") {
  std::string ir = data_file("nested.ll");
  CompileRequest o2 = request_for("nested.ll", ir, {"nest_a"});
  CompileRequest o0 = o2;
  o0.opt_level = 0;
  CompileRequest dbg = o2;
  dbg.debug = true;
  auto k2 = keys_of(must_plan(o2).describe());
  auto k0 = keys_of(must_plan(o0).describe());
  auto kg = keys_of(must_plan(dbg).describe());
  REQUIRE(k2.size() == 3);
  REQUIRE(k0.size() == 3);
  REQUIRE(kg.size() == 3);
  for (size_t i = 0; i < 3; ++i) {
    CHECK(k2[i] != k0[i]);
    CHECK(k2[i] != kg[i]);
  }
}
