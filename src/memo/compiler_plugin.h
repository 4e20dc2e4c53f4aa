// The boundary between libkiln and libkiln-compiler, which libkiln loads
// only on a memo miss. It is plain C: a request and its reply cross it as
// bytes in a versioned encoding, progress as a C callback, so the two
// libraries share no C++ type, allocator or runtime (libkiln carries its
// own, private C++ runtime), and either may be rebuilt alone.
#pragma once

#include <kiln/request.hpp>

#include <stddef.h>
#include <string>
#include <string_view>

extern "C" {

/// Progress of a compile, as the compiler reports it: strings live for the
/// call only.
typedef void (*kiln_plugin_progress_fn)(void* context, size_t done, size_t total,
                                        const char* entry, const char* target,
                                        const char* status);

/// The compiler's reply: bytes it allocated, released by its `release`.
typedef struct kiln_plugin_reply {
  char* data;
  size_t size;
  void (*release)(char* data);
} kiln_plugin_reply;

/// What libkiln did before calling: the request memo was asked and missed
/// (it is not looked up again, only recorded).
#define KILN_PLUGIN_MEMO_MISSED 1u

/// libkiln-compiler's one entry point for libkiln: answers the encoded
/// request (request/request.h) against the cache at `cache_path` and fills
/// *reply with the encoded result (a report or an error). `progress` may be
/// NULL; `flags` are KILN_PLUGIN_* bits. Returns 0, or nonzero if no reply
/// could be made (out of memory).
typedef int (*kiln_compiler_compile_fn)(const char* request, size_t request_size,
                                        const char* cache_path, unsigned flags,
                                        kiln_plugin_progress_fn progress, void* context,
                                        kiln_plugin_reply* reply);
}

namespace kiln::memo {

/// The entry point's name: its number rises with the encoding's.
inline constexpr const char* kCompilerEntry = "kiln_compiler_compile_v3";

/// A request as bytes (its progress callback stays behind: it crosses as a
/// C callback).
std::string encode_request(const CompileRequest& request);
/// The request back; an error names what was malformed.
Result<CompileRequest> decode_request(std::string_view bytes);

/// A compile's outcome as bytes, and back.
std::string encode_reply(const Result<CompileReport>& reply);
Result<CompileReport> decode_reply(std::string_view bytes);

} // namespace kiln::memo
