// Usage as the commands report it: the size limit in force and where it
// comes from, statistics, and settings read from what a user typed.
#include "storage/usage.h"

#include "storage/records.h"

#include "support/units.h"

#include <cstdlib>

namespace kiln::storage {

Result<SizeLimit> size_limit(Records& store) {
  KILN_TRY_ASSIGN(auto bytes, store.upkeep().max_size());
  const char *env = std::getenv("KILN_CACHE_MAX_SIZE");
  std::string source = env && *env                          ? "KILN_CACHE_MAX_SIZE"
                       : store.upkeep().setting("max_size") ? "cache setting"
                                                            : "default";
  return SizeLimit{bytes, source};
}

Result<StatsReport> stats_report(Records& store, bool zero_first) {
  if (zero_first)
    KILN_TRY(store.upkeep().zero_counters());
  KILN_TRY_ASSIGN(auto st, store.upkeep().stats());
  KILN_TRY_ASSIGN(auto limit, store.upkeep().max_size());
  return StatsReport{std::move(st), limit};
}

Result<std::string> parse_setting(const std::string& name, const std::string& value) {
  if (name != "max_size" && name != "require_signed")
    return make_error(Code::invalid_argument,
                      "unknown setting '" + name + "' (known: max_size, require_signed)");
  if (value.empty())
    return std::string();
  if (name == "require_signed") {
    // Read by storage::signing_for: "1" refuses unsigned bundles and values.
    if (value != "0" && value != "1")
      return make_error(Code::invalid_argument, "require_signed is 0 or 1, not '" + value + "'");
    return value;
  }
  KILN_TRY_ASSIGN(auto v, parse_size(value));
  return std::to_string(v);
}

} // namespace kiln::storage
