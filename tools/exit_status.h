// The exit statuses of kiln-precompile and kiln-inspect, the one mapping
// from an error to its status, and the forms both tools report an error in
// (text on stderr, and with --json one object on stdout), so that both tools
// mean the same by each. No exception ends a tool in std::terminate: main's
// body runs under run_guarded.
#pragma once

#include "safe_text.h"

#include <kiln/result.hpp>

#include <nlohmann/json.hpp>

#include <cstring>
#include <exception>
#include <iostream>
#include <string>

namespace kiln::tools {

inline constexpr int kExitOk = 0;
/// A job or root failed, something looked up is not in the cache, or the
/// cache or toolchain is unusable: corrupt, read-only for a write, a library
/// missing, a service unavailable.
inline constexpr int kExitFailed = 1;
/// Usage or input error: bad flags, bad IR, unknown target, missing entry.
inline constexpr int kExitUsage = 2;
/// kiln-precompile only: LLVM crashed this process (a fatal error or a
/// signal in code generation, which runs in the tool's own process). Jobs
/// stored before the crash stay; the crashed job and later ones are not.
inline constexpr int kExitCrashed = 3;

/// The exit status an error ends a tool with: input errors are the caller's
/// to fix (2); everything else is the cache's or the toolchain's (1).
inline int exit_status(const Error& e) {
  return e.code == Code::invalid_argument ? kExitUsage : kExitFailed;
}

/// The exit statuses, for both tools' --help.
inline constexpr const char* kExitHelp =
    "Exit status: 0 success; 1 a job or root failed, or the cache or toolchain is unusable "
    "(corrupt or read-only cache for a write, missing library, unavailable service); 2 usage or "
    "input error (bad flags, bad IR, unknown target, missing entry); 3 (kiln-precompile) LLVM "
    "crashed the process while compiling (KILN_CODEGEN_ISOLATION=on makes such a crash the "
    "job's error, exit 1).";

/// The name of a code, as JSON error objects carry it ("invalid_argument").
inline const char* code_name(Code c) {
  switch (c) {
  case Code::ok: return "ok";
  case Code::not_found: return "not_found";
  case Code::invalid_argument: return "invalid_argument";
  case Code::unavailable: return "unavailable";
  case Code::corrupt: return "corrupt";
  case Code::internal: return "internal";
  }
  return "internal";
}

/// Whether the command line asks for JSON: looked up in argv itself, so that
/// an error the argument parser raises is reported as JSON too.
inline bool json_requested(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--") == 0)
      return false;
    if (std::strcmp(argv[i], "--json") == 0)
      return true;
  }
  return false;
}

/// {"error": {code, message, entry, target, source, line, column, job},
/// "exit_status": N}: what a tool run with --json prints on stdout when it
/// fails. Fields the error does not have are null.
inline nlohmann::ordered_json error_json(const Error& e, int status) {
  auto text = [](const std::string& s) {
    return s.empty() ? nlohmann::ordered_json() : nlohmann::ordered_json(s);
  };
  auto number = [](unsigned n) { return n ? nlohmann::ordered_json(n) : nlohmann::ordered_json(); };
  return {{"error",
           {{"code", code_name(e.code)},
            {"message", e.message},
            {"entry", text(e.entry)},
            {"target", text(e.target)},
            {"source", text(e.source)},
            {"line", number(e.line)},
            {"column", number(e.column)},
            {"job", text(e.job)}}},
          {"exit_status", status}};
}

/// Reports `e` as TOOL does: "TOOL: error: MESSAGE" on stderr (escaped for a
/// terminal) and, with --json, error_json on stdout. Returns `status`.
inline int report_error(const char* tool, const Error& e, int status, bool json) {
  std::cerr << tool << ": error: " << shown_message(e.message) << "\n";
  if (json)
    std::cout << json_text(error_json(e, status)) << "\n";
  return status;
}

/// body(argc, argv), with any exception that escapes it (out of memory, a
/// library's std::system_error) reported as an internal error, exit 1, and
/// as JSON if the command line asks for it.
template <class Body> int run_guarded(const char* tool, int argc, char** argv, Body body) {
  std::string what;
  try {
    return body(argc, argv);
  } catch (const std::exception& e) {
    what = e.what();
  } catch (...) {
    what = "an unknown exception";
  }
  std::cout.flush();
  return report_error(tool, make_error(Code::internal, "internal error: " + what), kExitFailed,
                      json_requested(argc, argv));
}

/// "TOOL VERSION (LLVM VERSION)": what --version prints. The LLVM version is
/// the one libkiln-compiler is built with, fixed at configure time (the
/// tools themselves never load LLVM for it).
inline std::string version_line(const char* tool) {
  return std::string(tool) + " " + KILN_VERSION + " (LLVM " + KILN_LLVM_VERSION + ")";
}

} // namespace kiln::tools
