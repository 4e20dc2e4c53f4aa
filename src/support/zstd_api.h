// zstd as Kiln calls it: through a table of its functions, filled by
// load_zstd() when a cache file is first opened or a bundle first packed,
// not through libkiln's own imports: a process that loads published images
// (storage/published/published.h) never maps libzstd. Only support/compress.cpp and
// storage/local/codec.cpp include it, instead of <zstd.h> and <zdict.h>.
#pragma once

#include <zdict.h>
#include <zstd.h>

#include <kiln/result.hpp>

namespace kiln {

struct ZstdApi {
#define KILN_ZSTD_FN(name) decltype(&::name) name = nullptr;
  KILN_ZSTD_FN(ZDICT_isError)
  KILN_ZSTD_FN(ZDICT_trainFromBuffer)
  KILN_ZSTD_FN(ZSTD_DCtx_refDDict)
  KILN_ZSTD_FN(ZSTD_DCtx_setParameter)
  KILN_ZSTD_FN(ZSTD_compress)
  KILN_ZSTD_FN(ZSTD_compressBound)
  KILN_ZSTD_FN(ZSTD_compressCCtx)
  KILN_ZSTD_FN(ZSTD_compress_usingCDict)
  KILN_ZSTD_FN(ZSTD_createCCtx)
  KILN_ZSTD_FN(ZSTD_createCDict)
  KILN_ZSTD_FN(ZSTD_createDCtx)
  KILN_ZSTD_FN(ZSTD_createDDict)
  KILN_ZSTD_FN(ZSTD_decompressDCtx)
  KILN_ZSTD_FN(ZSTD_decompressStream)
  KILN_ZSTD_FN(ZSTD_decompress_usingDDict)
  KILN_ZSTD_FN(ZSTD_freeCCtx)
  KILN_ZSTD_FN(ZSTD_freeCDict)
  KILN_ZSTD_FN(ZSTD_freeDCtx)
  KILN_ZSTD_FN(ZSTD_freeDDict)
  KILN_ZSTD_FN(ZSTD_getErrorName)
  KILN_ZSTD_FN(ZSTD_getFrameContentSize)
  KILN_ZSTD_FN(ZSTD_isError)
#undef KILN_ZSTD_FN
};
extern ZstdApi g_zstd;

/// Opens libzstd and binds every function, once per process; an
/// unavailable error naming the library otherwise. Every entry point that
/// compresses or decompresses calls it first.
Status load_zstd();

} // namespace kiln

#ifndef KILN_ZSTD_API_DEFINITION
#define ZDICT_isError (::kiln::g_zstd.ZDICT_isError)
#define ZDICT_trainFromBuffer (::kiln::g_zstd.ZDICT_trainFromBuffer)
#define ZSTD_DCtx_refDDict (::kiln::g_zstd.ZSTD_DCtx_refDDict)
#define ZSTD_DCtx_setParameter (::kiln::g_zstd.ZSTD_DCtx_setParameter)
#define ZSTD_compress (::kiln::g_zstd.ZSTD_compress)
#define ZSTD_compressBound (::kiln::g_zstd.ZSTD_compressBound)
#define ZSTD_compressCCtx (::kiln::g_zstd.ZSTD_compressCCtx)
#define ZSTD_compress_usingCDict (::kiln::g_zstd.ZSTD_compress_usingCDict)
#define ZSTD_createCCtx (::kiln::g_zstd.ZSTD_createCCtx)
#define ZSTD_createCDict (::kiln::g_zstd.ZSTD_createCDict)
#define ZSTD_createDCtx (::kiln::g_zstd.ZSTD_createDCtx)
#define ZSTD_createDDict (::kiln::g_zstd.ZSTD_createDDict)
#define ZSTD_decompressDCtx (::kiln::g_zstd.ZSTD_decompressDCtx)
#define ZSTD_decompressStream (::kiln::g_zstd.ZSTD_decompressStream)
#define ZSTD_decompress_usingDDict (::kiln::g_zstd.ZSTD_decompress_usingDDict)
#define ZSTD_freeCCtx (::kiln::g_zstd.ZSTD_freeCCtx)
#define ZSTD_freeCDict (::kiln::g_zstd.ZSTD_freeCDict)
#define ZSTD_freeDCtx (::kiln::g_zstd.ZSTD_freeDCtx)
#define ZSTD_freeDDict (::kiln::g_zstd.ZSTD_freeDDict)
#define ZSTD_getErrorName (::kiln::g_zstd.ZSTD_getErrorName)
#define ZSTD_getFrameContentSize (::kiln::g_zstd.ZSTD_getFrameContentSize)
#define ZSTD_isError (::kiln::g_zstd.ZSTD_isError)
#endif
