// The admin C API (kiln/admin.h): each call is the C++ call of
// kiln/admin.hpp over a borrowed kiln_cache, answered as its JSON view. The
// cache handle is checked against libkiln's registry of live handles, and
// what kiln_admin_free may free is kept in a registry of its own.
#include "runtime/c_entry.h"
#include "runtime/handle_set.h"
#include "runtime/handles.h"

#include <kiln/admin.h>
#include <kiln/admin.hpp>

#include <cstdlib>
#include <cstring>

namespace {

using kiln::Cache;

std::string str(const char* s) { return s ? s : ""; }

kiln_status fail(const kiln::Error& e) {
  kiln::runtime::set_last_error(e.message);
  return static_cast<kiln_status>(e.code);
}

kiln_status fail(kiln::Code code, const std::string& message) {
  return fail(kiln::make_error(code, message));
}

// What the calls handed out and kiln_admin_free has not freed yet: a second
// free of one, or a pointer the calls never returned, is ignored rather
// than handed to free().
constinit kiln::runtime::HandleSet<1024> g_answers;

/// `bytes` in memory the caller frees with kiln_admin_free.
char* copied(const std::string& bytes) {
  char* p = static_cast<char*>(std::malloc(bytes.size() + 1));
  if (!p)
    throw std::bad_alloc();
  std::memcpy(p, bytes.data(), bytes.size());
  p[bytes.size()] = '\0';
  try {
    g_answers.add(p);
  } catch (...) {
    std::free(p);
    throw;
  }
  return p;
}

// A cache argument that is not a live handle, or KILN_OK.
kiln_status check_cache(const char* fn, kiln_cache* cache) {
  if (kiln::runtime::handle_live(kiln::runtime::HandleType::cache, cache))
    return KILN_OK;
  return fail(kiln::Code::invalid_argument,
              kiln::runtime::not_live_message(fn, "cache", kiln::runtime::HandleType::cache));
}

/// Runs `view(cache)` for C entry point `fn` and answers with its JSON.
template <class View>
kiln_status answer(const char* fn, kiln_cache* cache, char** json_out, View&& view,
                   bool cache_optional = false) {
  return kiln::runtime::c_entry(fn, [&]() -> kiln_status {
    if (!json_out)
      return fail(kiln::Code::invalid_argument, std::string(fn) + ": json_out is NULL");
    *json_out = nullptr;
    if (!cache_optional && !cache)
      return fail(kiln::Code::invalid_argument, std::string(fn) + ": cache is NULL");
    if (cache)
      if (kiln_status st = check_cache(fn, cache); st != KILN_OK)
        return st;
    // A borrowed handle: the caller keeps and closes it.
    std::optional<Cache> borrowed;
    if (cache)
      borrowed.emplace(Cache::borrow(cache));
    auto v = view(borrowed ? &*borrowed : nullptr);
    if (!v)
      return fail(v.error());
    *json_out = copied(kiln::admin::to_json(*v));
    return KILN_OK;
  });
}

} // namespace

extern "C" {

kiln_status kiln_admin_ls(kiln_cache* cache, const char* target, const char* name_glob,
                          char** json_out) {
  return answer("kiln_admin_ls", cache, json_out,
                [&](const Cache* c) -> kiln::Result<kiln::admin::Listing> {
                  auto l = kiln::admin::list(*c, {str(target), str(name_glob)});
                  if (!l)
                    return l.error();
                  for (const auto& j : l->jobs) {
                    if (!j.artifacts)
                      return j.artifacts.error();
                    if (!j.refs)
                      return j.refs.error();
                  }
                  return l;
                });
}

kiln_status kiln_admin_show(kiln_cache* cache, const char* what, const char* target,
                            char** json_out) {
  return answer("kiln_admin_show", cache, json_out,
                [&](const Cache* c) { return kiln::admin::show(*c, str(what), str(target)); });
}

kiln_status kiln_admin_graph(kiln_cache* cache, const char* what, const char* target,
                             char** json_out) {
  return answer("kiln_admin_graph", cache, json_out,
                [&](const Cache* c) { return kiln::admin::graph(*c, str(what), str(target)); });
}

kiln_status kiln_admin_libraries(kiln_cache* cache, char** json_out) {
  return answer("kiln_admin_libraries", cache, json_out,
                [&](const Cache* c) { return kiln::admin::libraries(*c); });
}

kiln_status kiln_admin_library(kiln_cache* cache, const char* name, const char* target,
                               char** json_out) {
  return answer("kiln_admin_library", cache, json_out,
                [&](const Cache* c) { return kiln::admin::library(*c, str(name), str(target)); });
}

kiln_status kiln_admin_export_image(kiln_cache* cache, const char* what, const char* library,
                                    const char* target, const char* path, char** json_out) {
  return answer("kiln_admin_export_image", cache, json_out,
                [&](const Cache* c) -> kiln::Result<kiln::admin::ExportedImage> {
                  if (!path || !*path)
                    return kiln::make_error(kiln::Code::invalid_argument,
                                            "kiln_admin_export_image: path is empty");
                  if ((!what || !*what) && library && *library)
                    return kiln::admin::export_library_image(*c, library, str(target), path);
                  return kiln::admin::export_image(*c, str(what), str(target), path);
                });
}

kiln_status kiln_admin_dump(kiln_cache* cache, const char* job_key, const char* format,
                            void** bytes_out, size_t* size_out) {
  return kiln::runtime::c_entry("kiln_admin_dump", [&]() -> kiln_status {
    if (!bytes_out || !size_out)
      return fail(kiln::Code::invalid_argument, "kiln_admin_dump: an out argument is NULL");
    *bytes_out = nullptr;
    *size_out = 0;
    if (!cache)
      return fail(kiln::Code::invalid_argument, "kiln_admin_dump: cache is NULL");
    if (kiln_status st = check_cache("kiln_admin_dump", cache); st != KILN_OK)
      return st;
    auto bytes = kiln::admin::dump(Cache::borrow(cache), str(job_key), str(format));
    if (!bytes)
      return fail(bytes.error());
    *bytes_out = copied(*bytes);
    *size_out = bytes->size();
    return KILN_OK;
  });
}

kiln_status kiln_admin_stats(kiln_cache* cache, int zero_first, char** json_out) {
  return answer("kiln_admin_stats", cache, json_out,
                [&](const Cache* c) { return kiln::admin::stats(*c, zero_first != 0); });
}

kiln_status kiln_admin_verify(kiln_cache* cache, char** json_out) {
  return answer("kiln_admin_verify", cache, json_out,
                [&](const Cache* c) { return kiln::admin::verify(*c); });
}

kiln_status kiln_admin_gc(kiln_cache* cache, const char* max_size, const char* older_than,
                          int dry_run, char** json_out) {
  return answer("kiln_admin_gc", cache, json_out, [&](const Cache* c) {
    return kiln::admin::gc(*c, {str(max_size), str(older_than), dry_run != 0});
  });
}

kiln_status kiln_admin_export(kiln_cache* cache, const char* file, const char* const* which,
                              size_t count, char** json_out) {
  return answer("kiln_admin_export", cache, json_out,
                [&](const Cache* c) -> kiln::Result<kiln::admin::BundleSummary> {
                  if (count && !which)
                    return kiln::make_error(kiln::Code::invalid_argument,
                                            "kiln_admin_export: which is NULL");
                  std::vector<std::string> names;
                  for (size_t i = 0; i < count; ++i)
                    names.push_back(str(which[i]));
                  return kiln::admin::export_bundle(*c, str(file), names);
                });
}

kiln_status kiln_admin_import(kiln_cache* cache, const char* file, char** json_out) {
  return answer("kiln_admin_import", cache, json_out,
                [&](const Cache* c) { return kiln::admin::import_bundle(*c, str(file)); });
}

kiln_status kiln_admin_check_portable(kiln_cache* cache, const char* bundle, char** json_out) {
  bool of_bundle = bundle && *bundle;
  return answer(
      "kiln_admin_check_portable", cache, json_out,
      [&](const Cache* c) {
        return of_bundle ? kiln::admin::check_bundle(c, bundle) : kiln::admin::check_portable(*c);
      },
      of_bundle);
}

kiln_status kiln_admin_explain(kiln_cache* cache, const char* key_a, const char* key_b,
                               char** json_out) {
  return answer("kiln_admin_explain", cache, json_out, [&](const Cache* c) {
    return kiln::admin::explain(*c, str(key_a), str(key_b));
  });
}

kiln_status kiln_admin_config(kiln_cache* cache, const char* name, const char* value,
                              char** json_out) {
  return answer("kiln_admin_config", cache, json_out, [&](const Cache* c) {
    return name && *name ? kiln::admin::set_setting(*c, name, str(value))
                         : kiln::admin::settings(*c);
  });
}

void kiln_admin_free(void* p) {
  if (!p)
    return;
  if (!g_answers.take(p)) {
    kiln::runtime::set_last_error("kiln_admin_free: the pointer is not an answer of a "
                                  "kiln_admin_* call that is still unfreed (freed already, or "
                                  "never returned by one)");
    return;
  }
  std::free(p);
}

} // extern "C"
