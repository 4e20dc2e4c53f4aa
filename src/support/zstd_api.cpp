// libzstd, opened at first use (support/zstd_api.h).
#define KILN_ZSTD_API_DEFINITION
#include "support/zstd_api.h"

#include "support/dynlib.h"

#include <mutex>
#include <string>

namespace kiln {

ZstdApi g_zstd;

Status load_zstd() {
  static std::once_flag once;
  static Status loaded = Status::ok();
  std::call_once(once, [] {
    auto lib = open_library(KILN_ZSTD_SONAME, "compressing or decompressing cache contents");
    if (!lib) {
      loaded = lib.error();
      return;
    }
    std::string missing;
#define KILN_ZSTD_BIND(name)                                                                   \
  if (!bind_symbol(*lib, #name, g_zstd.name))                                                 \
    missing += (missing.empty() ? "" : ", ") + std::string(#name);
    KILN_ZSTD_BIND(ZDICT_isError)
    KILN_ZSTD_BIND(ZDICT_trainFromBuffer)
    KILN_ZSTD_BIND(ZSTD_DCtx_refDDict)
    KILN_ZSTD_BIND(ZSTD_DCtx_setParameter)
    KILN_ZSTD_BIND(ZSTD_compress)
    KILN_ZSTD_BIND(ZSTD_compressBound)
    KILN_ZSTD_BIND(ZSTD_compressCCtx)
    KILN_ZSTD_BIND(ZSTD_compress_usingCDict)
    KILN_ZSTD_BIND(ZSTD_createCCtx)
    KILN_ZSTD_BIND(ZSTD_createCDict)
    KILN_ZSTD_BIND(ZSTD_createDCtx)
    KILN_ZSTD_BIND(ZSTD_createDDict)
    KILN_ZSTD_BIND(ZSTD_decompressDCtx)
    KILN_ZSTD_BIND(ZSTD_decompressStream)
    KILN_ZSTD_BIND(ZSTD_decompress_usingDDict)
    KILN_ZSTD_BIND(ZSTD_freeCCtx)
    KILN_ZSTD_BIND(ZSTD_freeCDict)
    KILN_ZSTD_BIND(ZSTD_freeDCtx)
    KILN_ZSTD_BIND(ZSTD_freeDDict)
    KILN_ZSTD_BIND(ZSTD_getErrorName)
    KILN_ZSTD_BIND(ZSTD_getFrameContentSize)
    KILN_ZSTD_BIND(ZSTD_isError)
#undef KILN_ZSTD_BIND
    if (!missing.empty())
      loaded = make_error(Code::unavailable, std::string(KILN_ZSTD_SONAME) +
                                                 " lacks functions Kiln calls: " + missing);
  });
  return loaded;
}

} // namespace kiln
