// The exit statuses of kiln-precompile and kiln-inspect, and the one mapping
// from an error to its status, so that both tools mean the same by each.
#pragma once

#include <kiln/result.hpp>

namespace kiln::tools {

inline constexpr int kExitOk = 0;
/// A job or root failed, something looked up is not in the cache, or the
/// cache or toolchain is unusable: corrupt, read-only for a write, a library
/// missing, a service unavailable.
inline constexpr int kExitFailed = 1;
/// Usage or input error: bad flags, bad IR, unknown target, missing entry.
inline constexpr int kExitUsage = 2;

/// The exit status an error ends a tool with: input errors are the caller's
/// to fix (2); everything else is the cache's or the toolchain's (1).
inline int exit_status(const Error& e) {
  return e.code == Code::invalid_argument ? kExitUsage : kExitFailed;
}

/// The exit statuses, for both tools' --help.
inline constexpr const char* kExitHelp =
    "Exit status: 0 success; 1 a job or root failed, or the cache or toolchain is unusable "
    "(corrupt or read-only cache for a write, missing library, unavailable service); 2 usage or "
    "input error (bad flags, bad IR, unknown target, missing entry).";

} // namespace kiln::tools
