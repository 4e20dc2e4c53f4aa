// Fault injection for the reliability tests: named points where a write or a
// vendor call can be made to fail on demand. Inert (one relaxed load per
// call) unless $KILN_FAULT names a plan.
//
// Plan: comma-separated items `POINT`, `POINT:N` or `POINT:N+`: fail every
// call at POINT, only its Nth call (1-based, counted per process), or the
// Nth and every later one. Points in use:
//   sqlite-write      a write to the cache file, its WAL or its journal fails (I/O error)
//   disk-full         such a write fails with SQLITE_FULL (the disk is full)
//   sqlite-sync       an fsync of the cache's files fails
//   file-write        a commit-or-discard file write (export) fails
//   dlopen:kiln-link  loading the linker library fails
//   dlopen:cuda, dlopen:hip, dlopen:nvjitlink   loading a vendor library fails
//   link:host, link:amdgpu, link:nvjitlink      a link step fails
//   link:ptxas        the ptxas program's whole-program image fails (nvJitLink links it)
//   thread-start      a compile worker thread fails to start
//   slow-plan         a plan counts as slow from its start: it reports its
//                     discovery's progress at once, not after a second
//   c-entry           a C entry point of libkiln throws before its body runs
//                     (the exception unwinds libkiln's frames to the guard)
// e.g. KILN_FAULT=sqlite-write:3  KILN_FAULT=disk-full:2+,dlopen:kiln-link
#pragma once

#include <string>

namespace kiln::fault {

/// True if the fault plan says the call at `point` should fail now. Counts
/// the call. Thread-safe.
bool hit(const char* point);

/// True if the plan names `point` at all (whether or not it fires yet):
/// lets a layer install its shim only when needed.
bool planned(const char* point);

/// The message for an injected failure at `point`: names the point and the
/// plan, so a test (or a puzzled user) can tell it from a real failure.
std::string message(const char* point);

/// Replaces the plan (in-process tests); "" disables injection. Resets the
/// call counts. A malformed plan is reported once on stderr and ignored.
void set_plan(const std::string& plan);

} // namespace kiln::fault
