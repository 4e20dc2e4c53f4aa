// libkiln's entry point into the compiler, for a memo miss in a process that
// linked only the loader (kiln-precompile, compile_on_demand): plain C over
// encoded bytes (memo/compiler_plugin.h), answered by the one request path
// (request/request.h). Nothing may unwind out of it.
#include "request/request.h"
#include "memo/compiler_plugin.h"

#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>

namespace {

// The reply in memory the caller releases through the reply itself.
int hand_over(const kiln::Result<kiln::CompileReport>& out, kiln_plugin_reply* reply) {
  std::string bytes = kiln::memo::encode_reply(out);
  char* data = static_cast<char*>(std::malloc(bytes.size()));
  if (!data)
    return 2;
  std::memcpy(data, bytes.data(), bytes.size());
  *reply = {data, bytes.size(), [](char* d) { std::free(d); }};
  return 0;
}

} // namespace

extern "C" __attribute__((visibility("default"))) int
kiln_compiler_compile_v3(const char* request, size_t request_size, const char* cache_path,
                         unsigned flags, kiln_plugin_progress_fn progress, void* context,
                         kiln_plugin_reply* reply) {
  if (!reply)
    return 1;
  *reply = {nullptr, 0, nullptr};
  try {
    return hand_over([&]() -> kiln::Result<kiln::CompileReport> {
      KILN_TRY_ASSIGN(auto req, kiln::memo::decode_request({request, request_size}));
      if (progress)
        req.progress = [progress, context](const kiln::Progress& p) {
          progress(context, p.done, p.total, p.entry.c_str(), p.target.c_str(),
                   p.status.c_str());
        };
      kiln::request::Asked asked;
      asked.memo_missed = (flags & KILN_PLUGIN_MEMO_MISSED) != 0;
      return kiln::request::answer(req, {cache_path ? cache_path : "", nullptr}, asked);
    }(), reply);
  } catch (const std::exception& e) {
    try {
      return hand_over(kiln::make_error(kiln::Code::internal,
                                        std::string("the compiler: internal error: ") + e.what()),
                       reply);
    } catch (...) {
      return 2;
    }
  } catch (...) {
    return 3;
  }
}
