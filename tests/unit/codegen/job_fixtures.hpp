// Jobs as the driver makes them, for any target: the canonical module
// extracted with that target's triple and layout, its children named by
// placeholders, and the renames finishing turns them into deferred symbols.
#pragma once

#include "codegen/compile.h"
#include "ir_fixtures.hpp"

#include <string>

namespace kiln::test {

inline core::TargetDesc resolved(const std::string& spec) {
  auto t = codegen::resolve_target(spec);
  INFO(spec);
  REQUIRE(t);
  return *t;
}

/// Extracts `entry` of in-memory IR for `t`, as the driver plans it.
inline ir::ExtractedJob extract_for(const std::string& ir, const std::string& entry,
                                    const core::TargetDesc& t, bool debug = false) {
  auto layout = codegen::target_data_layout(t);
  REQUIRE(layout);
  ir::ExtractConfig cfg;
  cfg.triple = t.triple;
  cfg.data_layout = *layout;
  cfg.debug = debug;
  cfg.deferred_symbol = core::placeholder_symbol;
  llvm::LLVMContext ctx;
  auto unit = ir::ingest(ctx, {{"unit.ll", ir, true}});
  INFO((unit ? std::string() : unit.error().message));
  REQUIRE(unit);
  auto job = ir::extract_job(**unit, entry, cfg);
  INFO((job ? std::string() : job.error().message));
  REQUIRE(job);
  return job.take();
}

/// The job for `entry` on `t` with `options`, ready for compile_job.
inline codegen::JobInput job_for(const std::string& ir, const std::string& entry,
                                 const core::TargetDesc& t, const core::CodegenOptions& options) {
  ir::ExtractedJob ex = extract_for(ir, entry, t, options.debug);
  codegen::JobInput job{entry, core::deferred_symbol({entry, t, options}), ex.bitcode, {}};
  for (const ir::DeferredRef& r : ex.refs)
    job.renames.emplace_back(r.symbol, core::deferred_symbol({r.entry, t, options}));
  return job;
}

} // namespace kiln::test
