// Human units on the command line: sizes ("64K", "1.5G") and durations
// ("30s", "7d"). Knows nothing of jobs or caches.
#pragma once

#include <kiln/result.hpp>

#include <cstdint>
#include <string>

namespace kiln {

/// Bytes from "N", "NK", "NM", "NG" (binary: K = 1024), optionally with "B"/"iB".
Result<int64_t> parse_size(const std::string& text);
/// Seconds from "Ns", "Nm", "Nh", "Nd", "Nw" (a bare number is seconds).
Result<int64_t> parse_duration(const std::string& text);
/// "1.5 MiB"-style text for tables.
std::string human_size(int64_t bytes);

} // namespace kiln
