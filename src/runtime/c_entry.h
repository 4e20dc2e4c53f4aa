// The one guard every extern "C" entry point's body runs in: an exception
// (std::bad_alloc above all) that crossed into a C caller would end its
// process, so each one becomes KILN_INTERNAL with a message instead.
#pragma once

#include "runtime/loader.h"

#include "support/fault.h"

#include <kiln/kiln.h>

#include <exception>
#include <new>
#include <stdexcept>
#include <string>
#include <utility>

namespace kiln::runtime {

namespace detail {

template <class Report>
kiln_status internal_failure(const char* fn, const char* what, Report& report) noexcept {
  try {
    report(std::string(fn) + ": internal error: " + what);
  } catch (...) {
    // Not even the message could be made: the status still tells the caller.
  }
  return KILN_INTERNAL;
}

} // namespace detail

/// Runs `body` (returning kiln_status) for C entry point `fn`; an exception
/// becomes KILN_INTERNAL, its message "<fn>: internal error: <what>" ("out of
/// memory" for std::bad_alloc) handed to `report`.
template <class Body, class Report>
kiln_status c_entry(const char* fn, Body&& body, Report&& report) noexcept {
  try {
    if (fault::hit("c-entry"))
      throw std::runtime_error(fault::message("c-entry"));
    return std::forward<Body>(body)();
  } catch (const std::bad_alloc&) {
    return detail::internal_failure(fn, "out of memory", report);
  } catch (const std::exception& e) {
    return detail::internal_failure(fn, e.what(), report);
  } catch (...) {
    return detail::internal_failure(fn, "unknown exception", report);
  }
}

/// c_entry reporting through kiln_last_error.
template <class Body> kiln_status c_entry(const char* fn, Body&& body) noexcept {
  return c_entry(fn, std::forward<Body>(body),
                 [](const std::string& message) { set_last_error(message); });
}

} // namespace kiln::runtime
