// Shared fixtures of the IR-level unit tests (ingest, extraction, keys, Plan):
// the host target, an extraction config, small IR units.
#pragma once

#include "codegen/target.h"
#include "core/keys.h"
#include "ir/extract.h"
#include "ir/unit.h"
#include "support/files.h"
#include "support/hash.h"

#include <doctest/doctest.h>

#include <llvm/Bitcode/BitcodeReader.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/Support/MemoryBuffer.h>

#include <algorithm>
#include <string>

namespace kiln::test {

using namespace kiln;

inline const std::string kData = KILN_TEST_DATA;

inline core::TargetDesc host() {
  auto t = codegen::resolve_target("host");
  REQUIRE(t);
  return *t;
}

inline ir::ExtractConfig config(bool debug = false) {
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

inline std::string deferred_symbol_for(const std::string& entry, bool debug = false) {
  core::CodegenOptions opts;
  opts.debug = debug;
  return core::deferred_symbol({entry, host(), opts});
}

// Ingests in-memory IR and extracts one job from it.
inline Result<ir::ExtractedJob> extract(const std::string& ir, const std::string& entry,
                                 const std::string& name = "unit.ll", bool debug = false) {
  llvm::LLVMContext ctx;
  auto unit = ir::ingest(ctx, {{name, ir, true}});
  if (!unit)
    return unit.error();
  return ir::extract_job(**unit, entry, config(debug));
}

inline ir::ExtractedJob must_extract(const std::string& ir, const std::string& entry,
                              const std::string& name = "unit.ll", bool debug = false) {
  auto j = extract(ir, entry, name, debug);
  INFO((j ? std::string() : j.error().message));
  REQUIRE(j);
  return j.take();
}

inline std::unique_ptr<llvm::Module> parse_bitcode(llvm::LLVMContext& ctx, const std::string& bc) {
  auto buf = llvm::MemoryBuffer::getMemBuffer(bc, "job.bc", false);
  auto m = llvm::parseBitcodeFile(buf->getMemBufferRef(), ctx);
  REQUIRE(static_cast<bool>(m));
  return std::move(*m);
}

inline std::string data_file(const std::string& name) {
  auto r = read_file(kData + "/" + name);
  REQUIRE(r);
  return *r;
}

inline constexpr const char* kBase = R"(
define i32 @f(i32 %x) {
entry:
  %y = add i32 %x, 1
  %z = mul i32 %y, 3
  ret i32 %z
}
)";

inline constexpr const char* kRenamed = R"(
define i32 @f(i32 %arg) {
start:
  %tmp.1 = add i32 %arg, 1
  %result = mul i32 %tmp.1, 3
  ret i32 %result
}
)";

inline constexpr const char* kWithOthers = R"(
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

inline constexpr const char* kWithOthersReordered = R"(
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

inline constexpr const char* kWithDebug = R"(
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

inline constexpr const char* kChangedBody = R"(
define i32 @f(i32 %x) {
entry:
  %y = add i32 %x, 2
  %z = mul i32 %y, 3
  ret i32 %z
}
)";

inline constexpr const char* kDeferred = R"(
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

inline bool is_deferred_symbol(const std::string& s) {
  const std::string prefix = "__kiln_deferred_";
  if (s.size() != prefix.size() + 32 || s.compare(0, prefix.size(), prefix) != 0)
    return false;
  return std::all_of(s.begin() + long(prefix.size()), s.end(),
                     [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

} // namespace kiln::test
