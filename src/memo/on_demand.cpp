// Compile-or-load without LLVM in the process until it is needed: a request
// the cache's memo answers is replayed here; a miss loads libkiln-compiler
// (beside libkiln) and runs the driver through its one C entry point
// (memo/compiler_plugin.h: bytes and a C callback, no C++ type). The
// report types' few functions live here too, in the LLVM-free library, so
// that a memo hit needs nothing else.
#include "memo/compiler_plugin.h"
#include "memo/memo.h"
#include "storage/remote/remote_backend.h"

#include <dlfcn.h>

#include <cstdlib>
#include <exception>
#include <mutex>
#include <optional>
#include <string>
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

std::optional<Error> CompileReport::first_failure() const {
  for (const JobReport& j : jobs)
    if (j.status == JobStatus::failed)
      return make_error(Code::internal, "job " + j.key + " (" + j.entry + ", " + j.target +
                                            ") failed: " + j.error)
          .with_entry(j.entry)
          .with_target(j.target)
          .with_job(j.key);
  for (const RootReport& r : roots)
    if (!r.error.empty())
      return make_error(Code::internal, "root " + r.name + " (" + r.target + "): " + r.error)
          .with_entry(r.name)
          .with_target(r.target);
  for (const LibraryReport& l : libraries)
    if (!l.error.empty())
      return make_error(Code::internal, l.error).with_target(l.target);
  return std::nullopt;
}

} // namespace kiln

namespace kiln {

namespace {

// libkiln-compiler sits beside libkiln, in the build tree as when installed.
Result<kiln_compiler_compile_fn> compiler_entry() {
  static Result<kiln_compiler_compile_fn> entry = Error(Code::internal, "not loaded");
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
    auto fn = reinterpret_cast<kiln_compiler_compile_fn>(dlsym(h, memo::kCompilerEntry));
    if (!fn)
      entry = Error(Code::unavailable, "the compiler library '" + path + "' lacks " +
                                           memo::kCompilerEntry +
                                           ": it comes from another version of Kiln");
    else
      entry = fn;
  });
  return entry;
}

} // namespace

Result<CompileReport> compile_on_demand(const CompileRequest& request,
                                        const std::string& cache_path) {
  // A bad remote URL is an error even where the memo answers, where the
  // remote would not be used.
  KILN_TRY(storage::remote::configured(request.remote, request.remote_read_only));
  KILN_TRY_ASSIGN(auto hit, memo::memo_answer(request, cache_path, memo::memo_key(request)));
  if (hit)
    return std::move(*hit);
  KILN_TRY_ASSIGN(auto fn, compiler_entry());
  std::string bytes = memo::encode_request(request);
  // The caller's progress callback, behind a C one; an exception it throws
  // must not unwind through the other library.
  struct Relay {
    const std::function<void(const Progress&)>* fn;
    std::optional<Error> failed;
  } relay{&request.progress, std::nullopt};
  auto progress = [](void* context, size_t done, size_t total, const char* entry,
                     const char* target, const char* status) {
    auto* r = static_cast<Relay*>(context);
    if (r->failed)
      return;
    try {
      (*r->fn)(Progress{done, total, entry, target, status});
    } catch (const std::exception& e) {
      r->failed = Error(Code::internal, std::string("the progress callback threw: ") + e.what());
    } catch (...) {
      r->failed = Error(Code::internal, "the progress callback threw");
    }
  };
  kiln_plugin_reply reply{nullptr, 0, nullptr};
  int rc = fn(bytes.data(), bytes.size(), cache_path.c_str(), KILN_PLUGIN_MEMO_MISSED,
              request.progress ? +progress : nullptr, &relay, &reply);
  std::string answer(reply.data ? reply.data : "", reply.data ? reply.size : 0);
  if (reply.data && reply.release)
    reply.release(reply.data);
  if (rc != 0 || answer.empty())
    return Error(Code::internal, "the compiler library returned no reply (status " +
                                     std::to_string(rc) + ")");
  if (relay.failed)
    return *relay.failed;
  return memo::decode_reply(answer);
}

} // namespace kiln
