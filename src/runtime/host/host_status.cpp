// dlerror() and errno → text for the host backend's messages.
#include "runtime/host/host_status.h"

#include <dlfcn.h>

#include <cstring>

namespace kiln::runtime {

std::string host_status_text(const char* dl_error) { return dl_error ? dl_error : "unknown"; }

std::string host_dl_error() { return host_status_text(dlerror()); }

std::string host_errno_text(int err) {
  char buf[256];
  // GNU strerror_r returns the text, in `buf` or a static string.
  return strerror_r(err, buf, sizeof buf);
}

} // namespace kiln::runtime
