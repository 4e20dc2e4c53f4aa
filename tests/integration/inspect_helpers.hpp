// Helpers for the integration tests that drive kiln-inspect: its --json
// answers parsed and checked, `stats` with every field of its contract
// typed, loads through the C API that may be expected to fail, and listings
// as sets.
#pragma once

#include "harness.hpp"

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace kiln_it {

/// kiln-inspect's exit statuses besides 0.
inline constexpr int kExitNotFound = 1; ///< also: verify found problems
inline constexpr int kExitUsage = 2;

/// kiln-inspect <args...>: REQUIREs exit `want` and one JSON object on stdout.
json inspect_json(const Cache& cache, const std::vector<std::string>& args, int want = 0);

/// kiln-inspect on an arbitrary cache path (not a harness Cache).
RunResult inspect_at(const fs::path& db, const std::vector<std::string>& args);

/// An integer field of a JSON object (REQUIREs that it is one).
std::int64_t num(const json& j, const char* field);

/// stats --json, with every field of the contract checked for type.
json stats(const Cache& cache);

/// True if the program at this absolute path is installed.
bool have(const char* tool);

/// Loads `name` from the cache file at `db` in-process and calls `entry`
/// (int(int)) with `arg`. Returns the result, or nothing (with the reason in
/// *why) if the cache does not open or the name does not load.
std::optional<int> try_call(const fs::path& db, const std::string& name, const char* entry,
                            int arg, std::string* why = nullptr);

/// Loads through the harness Image (REQUIREs success), calls, closes.
int call(const Cache& cache, const std::string& name, const char* entry, int arg);

/// The root names, and the job keys, of an `ls --json` answer.
std::set<std::string> ls_names(const json& ls);
std::set<std::string> ls_keys(const json& ls);

/// Writes a whole file (binary); REQUIREs that it can.
void write_file(const fs::path& p, const std::string& bytes);

} // namespace kiln_it
