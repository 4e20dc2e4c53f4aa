#include "support/units.h"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace kiln {

namespace {

// Splits "1.5G" into 1.5 and "G"; false if there is no leading number.
bool split(const std::string& text, double* value, std::string* unit) {
  const char* begin = text.c_str();
  char* end = nullptr;
  *value = std::strtod(begin, &end);
  if (end == begin || *value < 0 || !std::isfinite(*value))
    return false;
  *unit = std::string(end);
  for (char& c : *unit)
    c = char(std::toupper(static_cast<unsigned char>(c)));
  return true;
}

} // namespace

Result<int64_t> parse_size(const std::string& text) {
  double v;
  std::string unit;
  if (!split(text, &v, &unit))
    return make_error(Code::invalid_argument, "'" + text + "' is not a size (e.g. 500M, 2G)");
  for (const char* suffix : {"IB", "B"})
    if (unit.size() > 1 && unit.size() >= std::string(suffix).size() &&
        unit.compare(unit.size() - std::string(suffix).size(), std::string::npos, suffix) == 0) {
      unit.resize(unit.size() - std::string(suffix).size());
      break;
    }
  double scale = unit.empty() || unit == "B" ? 1
                 : unit == "K"               ? 1024.0
                 : unit == "M"               ? 1024.0 * 1024
                 : unit == "G"               ? 1024.0 * 1024 * 1024
                 : unit == "T"               ? 1024.0 * 1024 * 1024 * 1024
                                             : -1;
  if (scale < 0)
    return make_error(Code::invalid_argument,
                      "'" + text + "' has an unknown size unit (use K, M, G or T)");
  if (v * scale >= 9.2e18)
    return make_error(Code::invalid_argument, "'" + text + "' is too large a size");
  return int64_t(v * scale);
}

Result<int64_t> parse_duration(const std::string& text) {
  double v;
  std::string unit;
  if (!split(text, &v, &unit))
    return make_error(Code::invalid_argument, "'" + text + "' is not a duration (e.g. 30m, 7d)");
  double scale = unit.empty() || unit == "S" ? 1
                 : unit == "M"               ? 60
                 : unit == "H"               ? 3600
                 : unit == "D"               ? 86400
                 : unit == "W"               ? 7 * 86400
                                             : -1;
  if (scale < 0)
    return make_error(Code::invalid_argument,
                      "'" + text + "' has an unknown duration unit (use s, m, h, d or w)");
  if (v * scale >= 9.2e18)
    return make_error(Code::invalid_argument, "'" + text + "' is too long a duration");
  return int64_t(v * scale);
}

std::string human_size(int64_t n) {
  char buf[32];
  if (n < 1024)
    std::snprintf(buf, sizeof buf, "%lld B", static_cast<long long>(n));
  else if (n < 1024 * 1024)
    std::snprintf(buf, sizeof buf, "%.1f KiB", double(n) / 1024);
  else if (n < int64_t(1024) * 1024 * 1024)
    std::snprintf(buf, sizeof buf, "%.1f MiB", double(n) / (1024 * 1024));
  else
    std::snprintf(buf, sizeof buf, "%.2f GiB", double(n) / (1024.0 * 1024 * 1024));
  return buf;
}

} // namespace kiln
