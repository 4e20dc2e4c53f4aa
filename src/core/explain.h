// "Why did it miss?": a stored job's key components by name, as text a user
// can compare, and the components in which two jobs differ. The key itself
// is core/keys.h's; this only names and compares what goes into it.
#pragma once

#include "core/records.h"

#include <string>
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

} // namespace kiln::core
