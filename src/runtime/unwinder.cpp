// The unwinder, loaded when first needed. Built into libkiln alone.
//
// libkiln carries its own C++ runtime (src/CMakeLists.txt says why) but not
// an unwinder: the process has one, libgcc_s, and an exception a caller
// throws through libkiln's frames must be unwound by the same unwinder that
// libkiln's personality routine asks about it (a private copy, linked with
// -static-libgcc, made such an exception abort the process). So the runtime's
// calls into the unwinder land here, and each forwards to libgcc_s's own.
//
// What this buys: libkiln no longer needs libgcc_s when it is loaded. A
// process that only loads images (a C program, Python) throws no exception
// on that path and never maps libgcc_s, which is a library fewer to map
// and relocate at start. The first call here opens it (a C++ process has
// it already, and gets that same copy).
//
// These frames sit between the runtime and the unwinder: each has ordinary
// unwind information and no handler, so a search or cleanup walks through
// it as through any caller's frame, and a landing pad that resumes is seen
// by the unwinder at the same address as with a direct call.
#include <dlfcn.h>

// Declared hidden, so the definitions below are too: libkiln's own runtime
// binds to them, and no other object in the process sees them.
#pragma GCC visibility push(hidden)
#include <unwind.h>
#pragma GCC visibility pop

#include <cstdio>
#include <cstdlib>

namespace {

struct Unwinder {
  _Unwind_Reason_Code (*raise_exception)(_Unwind_Exception*);
  void (*resume)(_Unwind_Exception*);
  _Unwind_Reason_Code (*resume_or_rethrow)(_Unwind_Exception*);
  void (*delete_exception)(_Unwind_Exception*);
  _Unwind_Ptr (*get_data_rel_base)(_Unwind_Context*);
  _Unwind_Ptr (*get_ip_info)(_Unwind_Context*, int*);
  void* (*get_language_specific_data)(_Unwind_Context*);
  _Unwind_Ptr (*get_region_start)(_Unwind_Context*);
  _Unwind_Ptr (*get_text_rel_base)(_Unwind_Context*);
  void (*set_gr)(_Unwind_Context*, int, _Unwind_Word);
  void (*set_ip)(_Unwind_Context*, _Unwind_Ptr);
};

[[noreturn]] void no_unwinder(const char* what) {
  // No exception can be thrown without it; there is nothing to return to.
  std::fprintf(stderr, "libkiln: cannot unwind an exception: %s\n", what);
  std::abort();
}

template <class Fn> void bind(void* lib, Fn& fn, const char* name, const char* version) {
  void* p = dlvsym(lib, name, version);
  if (!p)
    no_unwinder(dlerror());
  fn = reinterpret_cast<Fn>(p);
}

Unwinder open_unwinder() {
  void* lib = dlopen("libgcc_s.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib)
    no_unwinder(dlerror());
  Unwinder u{};
  bind(lib, u.raise_exception, "_Unwind_RaiseException", "GCC_3.0");
  bind(lib, u.resume, "_Unwind_Resume", "GCC_3.0");
  bind(lib, u.resume_or_rethrow, "_Unwind_Resume_or_Rethrow", "GCC_3.3");
  bind(lib, u.delete_exception, "_Unwind_DeleteException", "GCC_3.0");
  bind(lib, u.get_data_rel_base, "_Unwind_GetDataRelBase", "GCC_3.0");
  bind(lib, u.get_ip_info, "_Unwind_GetIPInfo", "GCC_4.2.0");
  bind(lib, u.get_language_specific_data, "_Unwind_GetLanguageSpecificData", "GCC_3.0");
  bind(lib, u.get_region_start, "_Unwind_GetRegionStart", "GCC_3.0");
  bind(lib, u.get_text_rel_base, "_Unwind_GetTextRelBase", "GCC_3.0");
  bind(lib, u.set_gr, "_Unwind_SetGR", "GCC_3.0");
  bind(lib, u.set_ip, "_Unwind_SetIP", "GCC_3.0");
  return u; // the library stays open for the life of the process
}

const Unwinder& unwinder() {
  static const Unwinder u = open_unwinder();
  return u;
}

} // namespace

#define KILN_UNWIND_API extern "C"

KILN_UNWIND_API _Unwind_Reason_Code _Unwind_RaiseException(_Unwind_Exception* e) {
  return unwinder().raise_exception(e);
}

KILN_UNWIND_API void _Unwind_Resume(_Unwind_Exception* e) {
  unwinder().resume(e);
  no_unwinder("_Unwind_Resume returned");
}

KILN_UNWIND_API _Unwind_Reason_Code _Unwind_Resume_or_Rethrow(_Unwind_Exception* e) {
  return unwinder().resume_or_rethrow(e);
}

KILN_UNWIND_API void _Unwind_DeleteException(_Unwind_Exception* e) {
  unwinder().delete_exception(e);
}

KILN_UNWIND_API _Unwind_Ptr _Unwind_GetDataRelBase(_Unwind_Context* c) {
  return unwinder().get_data_rel_base(c);
}

KILN_UNWIND_API _Unwind_Ptr _Unwind_GetIPInfo(_Unwind_Context* c, int* before) {
  return unwinder().get_ip_info(c, before);
}

KILN_UNWIND_API void* _Unwind_GetLanguageSpecificData(_Unwind_Context* c) {
  return unwinder().get_language_specific_data(c);
}

KILN_UNWIND_API _Unwind_Ptr _Unwind_GetRegionStart(_Unwind_Context* c) {
  return unwinder().get_region_start(c);
}

KILN_UNWIND_API _Unwind_Ptr _Unwind_GetTextRelBase(_Unwind_Context* c) {
  return unwinder().get_text_rel_base(c);
}

KILN_UNWIND_API void _Unwind_SetGR(_Unwind_Context* c, int index, _Unwind_Word value) {
  unwinder().set_gr(c, index, value);
}

KILN_UNWIND_API void _Unwind_SetIP(_Unwind_Context* c, _Unwind_Ptr ip) {
  unwinder().set_ip(c, ip);
}
