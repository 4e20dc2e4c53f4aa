// Compile-or-load without LLVM in the process until it is needed: a request
// the cache's memo answers is replayed here; a miss loads libkiln-compiler
// (beside libkiln) and runs the driver through its one C entry point. The
// report types' few functions live here too, in the LLVM-free library, so
// that a memo hit needs nothing else.
#include "memo/memo.h"

#include <dlfcn.h>

#include <cstdlib>
#include <mutex>
#include <string_view>

#ifndef KILN_COMPILER_LIBRARY
#error "KILN_COMPILER_LIBRARY must name libkiln-compiler's file"
#endif

namespace kiln {

const char* job_status_name(JobStatus s) {
  switch (s) {
  case JobStatus::compiled: return "compiled";
  case JobStatus::cached: return "cached";
  case JobStatus::failed: return "failed";
  }
  return "?";
}

bool must_hit_from_environment() {
  const char* v = std::getenv("KILN_MUST_HIT");
  return v && *v && std::string_view(v) != "0";
}

bool CompileReport::ok() const {
  for (const JobReport& j : jobs)
    if (j.status == JobStatus::failed)
      return false;
  for (const RootReport& r : roots)
    if (!r.error.empty())
      return false;
  for (const LibraryReport& l : libraries)
    if (!l.error.empty())
      return false;
  return true;
}

} // namespace kiln

namespace kiln {

namespace {

using CompileFn = void (*)(const CompileRequest*, const char*,
                           std::optional<Result<CompileReport>>*);

// libkiln-compiler sits beside libkiln, in the build tree as when installed.
Result<CompileFn> compiler_entry() {
  static Result<CompileFn> entry = Error(Code::internal, "not loaded");
  static std::once_flag once;
  std::call_once(once, [] {
    std::string path;
    if (const char* forced = std::getenv("KILN_COMPILER_LIBRARY"); forced && *forced) {
      path = forced;
    } else {
      Dl_info info;
      std::string self = dladdr(reinterpret_cast<void*>(&compiler_entry), &info) && info.dli_fname
                             ? info.dli_fname
                             : "";
      size_t slash = self.rfind('/');
      path = (slash == std::string::npos ? std::string() : self.substr(0, slash + 1)) +
             KILN_COMPILER_LIBRARY;
    }
    void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!h) {
      const char* e = dlerror();
      entry = Error(Code::unavailable,
                    "cannot load the compiler library '" + path + "': " + (e ? e : "unknown"));
      return;
    }
    auto fn = reinterpret_cast<CompileFn>(dlsym(h, "kiln_compiler_compile_v1"));
    if (!fn)
      entry = Error(Code::unavailable, "the compiler library '" + path +
                                           "' lacks kiln_compiler_compile_v1");
    else
      entry = fn;
  });
  return entry;
}

} // namespace

Result<CompileReport> compile_on_demand(const CompileRequest& request,
                                        const std::string& cache_path) {
  KILN_TRY_ASSIGN(auto hit, memo::memo_answer(request, cache_path, memo::memo_key(request)));
  if (hit)
    return std::move(*hit);
  KILN_TRY_ASSIGN(auto fn, compiler_entry());
  std::optional<Result<CompileReport>> out;
  (fn)(&request, cache_path.c_str(), &out);
  if (!out)
    return Error(Code::internal, "the compiler library returned nothing");
  return std::move(*out);
}

} // namespace kiln
