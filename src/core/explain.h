// "Why did it miss?": a stored job's key components by name, as text a user
// can compare, and the components in which two jobs differ. The key itself
// is core/keys.h's; this only names and compares what goes into it. A job
// the cache lacks is explained against the nearest one it holds.
#pragma once

#include "core/data_model.h"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kiln::core {

/// One key component by name, as text.
struct NamedComponent {
  std::string name;
  std::string value;
};

/// A stored job's key components, always in this order: module_hash,
/// entry, target, triple, cpu, features, opt_level, debug, toolchain.
/// Options that are not canonical are shown as stored, in both opt_level
/// and debug, so they still compare.
std::vector<NamedComponent> named_components(const JobRecord& job);

/// A component whose value differs between two jobs.
struct KeyDifference {
  std::string component;
  std::string a;
  std::string b;
};

/// The components in which `a` and `b` differ, in named_components order;
/// empty when every component agrees.
std::vector<KeyDifference> compare_keys(const JobRecord& a, const JobRecord& b);

/// What a component is about, as a user names it: "the input (module
/// hash)", "entry", "target" (target, triple), "CPU/features" (cpu,
/// features), "options" (opt_level, debug) or "toolchain version".
std::string_view component_area(std::string_view component);

/// Why `wanted` is not among `cached`: the nearest cached job (same entry
/// and target, else same entry on any target; of those, the fewest differing
/// components, the first on a tie) and the components in which `wanted`
/// differs from it (a = wanted, b = cached). No nearest job when no cached
/// job has the entry.
struct MissExplanation {
  std::optional<JobRecord> nearest;
  std::vector<KeyDifference> differences;
};
MissExplanation explain_miss(const JobRecord& wanted, const std::vector<JobRecord>& cached);

/// The explanation as one clause: "the nearest cached job <key> (target T)
/// differs in <areas>: <component> <wanted> wanted, <cached> cached; ..." or
/// "no cached job for entry '<entry>' on any target".
std::string describe_miss(const JobRecord& wanted, const MissExplanation& miss);

} // namespace kiln::core
