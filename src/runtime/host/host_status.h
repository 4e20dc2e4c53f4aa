// The C library's failures as text: the dynamic loader's dlerror() and
// errno, the host backend's counterparts of cuda_status and hip_status.
#pragma once

#include <string>

namespace kiln::runtime {

/// What dlerror() said, or "unknown" when it said nothing.
std::string host_status_text(const char* dl_error);

/// The dynamic loader's last error on this thread (and clears it).
std::string host_dl_error();

/// strerror(err), safely on any thread.
std::string host_errno_text(int err);

} // namespace kiln::runtime
