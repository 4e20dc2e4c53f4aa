#include "support/dynlib.h"

#include <dlfcn.h>

namespace kiln {

Result<void*> open_library(const char* soname, const std::string& needed_for) {
  void* h = ::dlopen(soname, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    const char* why = ::dlerror();
    return make_error(Code::unavailable, needed_for + " needs " + soname + ", which cannot be " +
                                             "loaded: " + (why ? why : "unknown reason"));
  }
  return h;
}

void* library_symbol(void* library, const char* name) { return ::dlsym(library, name); }

} // namespace kiln
