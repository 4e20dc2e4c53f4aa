// The C API (kiln.h) and the C++ API (kiln.hpp) over a whole cache rather
// than one image: verification.
#include "runtime/c_entry.h"
#include "runtime/handles.h"
#include "runtime/loader.h"
#include "storage/verify.h"

#include <kiln/kiln.hpp>

extern "C" kiln_status kiln_cache_verify(kiln_cache* cache, size_t* problems) {
  return kiln::runtime::c_entry("kiln_cache_verify", [&]() -> kiln_status {
    if (problems)
      *problems = 0;
    if (!cache) {
      kiln::runtime::set_last_error("kiln_cache_verify: cache is NULL");
      return KILN_INVALID_ARGUMENT;
    }
    if (!kiln::runtime::handle_live(kiln::runtime::HandleType::cache, cache)) {
      kiln::runtime::set_last_error(kiln::runtime::not_live_message(
          "kiln_cache_verify", "cache", kiln::runtime::HandleType::cache));
      return KILN_INVALID_ARGUMENT;
    }
    auto opened = cache->store();
    if (!opened) {
      kiln::runtime::set_last_error(opened.error().message);
      return static_cast<kiln_status>(opened.error().code);
    }
    auto rep = kiln::storage::verify_cache((*opened)->records());
    if (!rep) {
      kiln::runtime::set_last_error(rep.error().message);
      // KILN_CORRUPT always comes with the count of what is wrong.
      if (rep.error().code == kiln::Code::corrupt && problems)
        *problems = 1;
      return static_cast<kiln_status>(rep.error().code);
    }
    if (problems)
      *problems = rep->problems.size();
    if (rep->ok())
      return KILN_OK;
    kiln::runtime::set_last_error(rep->problems.front().message);
    return KILN_CORRUPT;
  });
}

namespace kiln {

Result<std::vector<CacheProblem>> Cache::verify() const {
  KILN_TRY_ASSIGN(storage::Storage * opened, cache_->store());
  KILN_TRY_ASSIGN(auto rep, storage::verify_cache(opened->records()));
  std::vector<CacheProblem> out;
  for (storage::Problem &p : rep.problems)
    out.push_back({std::move(p.kind), std::move(p.key), std::move(p.message)});
  return out;
}

} // namespace kiln
