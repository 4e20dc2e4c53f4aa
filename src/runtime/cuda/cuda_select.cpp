#include "runtime/cuda/cuda_select.h"

#include <cctype>

namespace kiln::runtime {

std::optional<NvArch> parse_nv_arch(const std::string& target) {
  if (target.rfind("sm_", 0) != 0)
    return std::nullopt;
  std::string rest = target.substr(3);
  NvArch a;
  if (!rest.empty() && (rest.back() == 'a' || rest.back() == 'f')) {
    a.suffix = rest.back();
    rest.pop_back();
  }
  if (rest.size() < 2 || rest.size() > 3)
    return std::nullopt;
  for (char c : rest)
    if (!std::isdigit(static_cast<unsigned char>(c)))
      return std::nullopt;
  a.minor = rest.back() - '0';
  a.major = std::stoi(rest.substr(0, rest.size() - 1));
  return a;
}

bool cubin_runs_on(const std::string& target, int major, int minor) {
  auto a = parse_nv_arch(target);
  if (!a || a->major != major)
    return false;
  if (a->suffix == 'a')
    return a->minor == minor;
  return a->minor <= minor;
}

bool ptx_jits_on(const std::string& target, int major, int minor) {
  auto a = parse_nv_arch(target);
  if (!a)
    return false;
  if (a->suffix == 'a')
    return a->major == major && a->minor == minor;
  if (a->suffix == 'f')
    return a->major == major && a->minor <= minor;
  return a->major < major || (a->major == major && a->minor <= minor);
}

NvChoice select_nvidia_target(const std::vector<std::string>& have, int major, int minor) {
  NvChoice best;
  int best_rank = -1;
  for (const std::string& t : have) {
    auto a = parse_nv_arch(t);
    if (!a)
      continue;
    int rank = -1;
    bool jit = false;
    if (cubin_runs_on(t, major, minor)) {
      // Exact arch beats a lower minor; arch-specific beats plain beats family.
      int kind = a->suffix == 'a' ? 2 : a->suffix == 0 ? 1 : 0;
      rank = 1000 + a->minor * 10 + kind;
    } else if (ptx_jits_on(t, major, minor)) {
      rank = a->major * 10 + a->minor;
      jit = true;
    }
    if (rank > best_rank) {
      best_rank = rank;
      best = {t, jit};
    }
  }
  return best;
}

} // namespace kiln::runtime
