// Libraries a feature needs only when it is used (the Redis tier, signing),
// opened at its first use instead of at every program start: a process that
// only loads images maps neither, and one on a machine without them still
// loads images, with a clear error where the feature is asked for.
#pragma once

#include <kiln/result.hpp>

#include <string>

namespace kiln {

/// dlopen(soname) (RTLD_NOW | RTLD_LOCAL), kept open for the process; an
/// unavailable error naming the library, what needs it and the dynamic
/// loader's reason otherwise.
Result<void*> open_library(const char* soname, const std::string& needed_for);

/// The address of `name` in `library`, or null.
void* library_symbol(void* library, const char* name);

/// Binds the function pointer `fn` to `name` in `library`; false if absent.
template <class Fn>
bool bind_symbol(void* library, const char* name, Fn& fn) {
  fn = reinterpret_cast<Fn>(library_symbol(library, name));
  return fn != nullptr;
}

} // namespace kiln
