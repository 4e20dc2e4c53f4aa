// The $KILN_FAULT plan: parsed once, on first use; per-point call counts.
#include "support/fault.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <string_view>

namespace kiln::fault {

namespace {

struct Rule {
  long nth = 0;        ///< 0: every call; else the Nth call (1-based)
  bool and_after = false; ///< with nth: the Nth and every later call
};

struct Plan {
  std::mutex mu;
  std::string text;
  std::map<std::string, Rule, std::less<>> rules;
  std::map<std::string, long, std::less<>> calls;
};

Plan& plan() {
  static Plan* p = new Plan(); // never destroyed: hit() may run in static destructors
  return *p;
}

// 0: not parsed yet; 1: no plan (the fast path); 2: a plan is active.
std::atomic<int> g_state{0};

// Parses `text` into `out`; false (with `why`) if malformed.
bool parse(std::string_view text, std::map<std::string, Rule, std::less<>>& out,
           std::string& why) {
  while (!text.empty()) {
    size_t comma = text.find(',');
    std::string_view item = text.substr(0, comma);
    text = comma == std::string_view::npos ? std::string_view() : text.substr(comma + 1);
    if (item.empty())
      continue;
    Rule r;
    std::string_view name = item;
    // A trailing ":N" or ":N+" is a count; any other ':' belongs to the
    // point's name (dlopen:kiln-link).
    if (size_t colon = item.rfind(':'); colon != std::string_view::npos) {
      std::string_view count = item.substr(colon + 1);
      bool after = !count.empty() && count.back() == '+';
      if (after)
        count.remove_suffix(1);
      bool digits = !count.empty() && count.size() < 10 &&
                    count.find_first_not_of("0123456789") == std::string_view::npos;
      if (digits) {
        r.nth = std::strtol(std::string(count).c_str(), nullptr, 10);
        r.and_after = after;
        name = item.substr(0, colon);
        if (r.nth <= 0) {
          why = "count in '" + std::string(item) + "' must be 1 or more";
          return false;
        }
      } else if (after) {
        why = "'" + std::string(item) + "': '+' must follow a count";
        return false;
      }
    }
    if (name.empty()) {
      why = "empty point name in '" + std::string(item) + "'";
      return false;
    }
    out[std::string(name)] = r;
  }
  return true;
}

void install(const std::string& text) {
  Plan& p = plan();
  std::map<std::string, Rule, std::less<>> rules;
  std::string why;
  if (!parse(text, rules, why)) {
    std::fprintf(stderr, "kiln: ignoring KILN_FAULT='%s': %s\n", text.c_str(), why.c_str());
    rules.clear();
  }
  p.text = text;
  p.rules = std::move(rules);
  p.calls.clear();
  g_state.store(p.rules.empty() ? 1 : 2, std::memory_order_release);
}

bool active() {
  int s = g_state.load(std::memory_order_acquire);
  if (s == 0) {
    Plan& p = plan();
    std::lock_guard lock(p.mu);
    if (g_state.load(std::memory_order_relaxed) == 0) {
      const char* env = std::getenv("KILN_FAULT");
      install(env ? env : "");
    }
    s = g_state.load(std::memory_order_relaxed);
  }
  return s == 2;
}

} // namespace

bool hit(const char* point) {
  if (!active())
    return false;
  Plan& p = plan();
  std::lock_guard lock(p.mu);
  auto it = p.rules.find(std::string_view(point));
  if (it == p.rules.end())
    return false;
  long n = ++p.calls[it->first];
  const Rule& r = it->second;
  return r.nth == 0 || n == r.nth || (r.and_after && n > r.nth);
}

bool planned(const char* point) {
  if (!active())
    return false;
  Plan& p = plan();
  std::lock_guard lock(p.mu);
  return p.rules.count(std::string_view(point)) > 0;
}

std::string message(const char* point) {
  Plan& p = plan();
  std::lock_guard lock(p.mu);
  return std::string("injected fault at ") + point + " (KILN_FAULT=" + p.text + ")";
}

void set_plan(const std::string& text) {
  Plan& p = plan();
  std::lock_guard lock(p.mu);
  install(text);
}

} // namespace kiln::fault
