// This machine's CPU as the loader sees it, without LLVM: the features of
// core/host_cpu.h's table (read there, once, from cpuid and xgetbv on
// x86-64 or the auxiliary vector's HWCAP words on AArch64), and the check
// every host load passes before its image reaches dlopen. It lives in the host backend, the
// layer that runs host code, so every load path (name, closure key, bundle
// import, remote) goes through it.
#pragma once

#include "core/host_cpu.h"
#include "core/data_model.h"

#include <kiln/result.hpp>

#include <string>

namespace kiln::runtime {

/// The table features this CPU has (and the OS enables the state of).
const core::CpuFeatures& host_cpu_features();

/// What stops host code built as `root` (a closure's root job; the members
/// share its target) from running here. A required feature the table does
/// not know stops it too, unless the job was built for plain "host" and its
/// feature string matches this CPU on every feature the table knows: code
/// built for this very CPU.
core::CpuGap host_cpu_gap(const core::JobRecord& root);

/// ok when host code built as `root` runs on this CPU; unavailable naming
/// the missing features and the CPU the code was built for otherwise.
Status check_host_job(const core::JobRecord& root);

} // namespace kiln::runtime
