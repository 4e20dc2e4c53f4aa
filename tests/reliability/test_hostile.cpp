// Regression tests for what the fuzzers (tests/fuzz) found or forced, and
// hostile sizes, run through the real CLIs: each input is refused with a
// clear message, never by running out of memory.
#include "common.hpp"

#include <doctest/doctest.h>

#include "support/compress.h"
#include "support/hash.h"

#include "../unit/fixtures/zstd_bomb.hpp"

#include <fstream>

#ifndef KILN_FUZZ_REGRESSIONS
#error "KILN_FUZZ_REGRESSIONS must name tests/fuzz/regressions"
#endif
#ifndef KILN_FUZZ_CORPUS
#error "KILN_FUZZ_CORPUS must name tests/fuzz/corpus"
#endif

using namespace kiln_rel;

namespace {

void put_le(std::string& out, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i)
    out.push_back(char((v >> (8 * i)) & 0xff));
}

// A well-formed bundle envelope around an arbitrary payload.
std::string envelope(const std::string& payload) {
  std::string packed = kiln::zstd_compress(payload, 3);
  kiln::Hash128 h = kiln::hash128(packed);
  std::string out = "KILNBNDL";
  put_le(out, 1, 4);
  put_le(out, payload.size(), 8);
  put_le(out, h.hi, 8);
  put_le(out, h.lo, 8);
  return out + packed;
}

// The version-1 envelope around an already compressed payload that claims
// to decode to `raw_size` bytes.
std::string bundle_of(const std::string& packed, uint64_t raw_size) {
  kiln::Hash128 h = kiln::hash128(packed);
  std::string out = "KILNBNDL";
  put_le(out, 1, 4);
  put_le(out, raw_size, 8);
  put_le(out, h.hi, 8);
  put_le(out, h.lo, 8);
  return out + packed;
}

// A zstd frame whose header claims `claimed` content bytes (single segment,
// 8-byte content size) and holds one empty last raw block.
std::string frame_claiming(uint64_t claimed) {
  std::string f = {'\x28', '\xb5', '\x2f', '\xfd', '\xe0'};
  put_le(f, claimed, 8);
  return f + std::string("\x01\x00\x00", 3);
}

} // namespace

TEST_SUITE("reliability.hostile") {

TEST_CASE("fuzz finding: sizes and durations beyond 64 bits are refused, not wrapped") {
  Cache cache;
  precompile_ok(cache, {kiln_it::data("nested.ll")});
  std::string huge = slurp(fs::path(KILN_FUZZ_REGRESSIONS) / "target_spec-size-overflow");
  REQUIRE(huge == "892222222222222222222222");
  for (const auto& args : {std::vector<std::string>{"config", "max_size", huge},
                           std::vector<std::string>{"gc", "--max-size", huge},
                           std::vector<std::string>{"gc", "--older-than", "1e300d"}}) {
    RunResult r = inspect(cache, args);
    INFO(describe(r));
    CHECK(r.exit_code == 2);
    CHECK(r.err.find(args.back()) != std::string::npos);
  }
  require_verify_clean(cache.db(), "after refused sizes");
  RunResult ls = inspect(cache, {"ls", "--json"});
  CHECK(json::parse(ls.out)["jobs"].size() == 3); // nothing was evicted
}

TEST_CASE("fuzz finding: bitcode that LLVM's reader rejects is an input error") {
  Cache cache;
  fs::path input = fs::path(KILN_FUZZ_REGRESSIONS) / "ir_ingest-bitcode-reader-leak.bc";
  RunResult r = precompile(cache, {input.string()});
  INFO(describe(r));
  CHECK(r.exit_code == 2);
  CHECK(r.err.find(input.filename().string()) != std::string::npos);
}

TEST_CASE("fuzz finding: bitcode whose type table claims more types than it holds is an input "
          "error, not std::bad_alloc") {
  // 1,928 bytes whose TYPE_CODE_NUMENTRY asks LLVM's reader for 6.4e15
  // types: it allocated them first and ended the process.
  Cache cache;
  fs::path input = fs::path(KILN_FUZZ_REGRESSIONS) / "ir_ingest-type-table-count.bc";
  RunResult r = precompile(cache, {input.string()});
  INFO(describe(r));
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("its type table claims") != std::string::npos);
  CHECK(r.err.find(input.filename().string()) != std::string::npos);
}

TEST_CASE("fuzz finding: bitcode whose blocks claim more bytes than it holds is an input error, "
          "not an abort") {
  // 1,928 bytes with a constants block claiming 10 GB: LLVM's reader grew
  // its value table to 16 GiB in about 75 s, then aborted.
  Cache cache;
  fs::path input = fs::path(KILN_FUZZ_REGRESSIONS) / "ir_ingest-block-length-claim.bc";
  RunResult r = precompile(cache, {input.string()});
  INFO(describe(r));
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("is malformed bitcode: block") != std::string::npos);
  CHECK(r.err.find("in the block around it") != std::string::npos);
  CHECK(r.err.find(input.filename().string()) != std::string::npos);
  // Well-formed bitcode of every size still reads: what clang and llvm-as
  // write is checked by the suites that compile it.
}

TEST_CASE("fuzz finding: bitcode that crashes LLVM's reader is an input error, not a crash") {
  // 2,568 bytes on which LLVM 22's reader dereferences a null GEP index
  // while it materialises the module (SIGSEGV in StructType::getTypeAtIndex).
  // A worker reads bitcode first; its death is this input's error.
  Cache cache;
  fs::path input = fs::path(KILN_FUZZ_REGRESSIONS) / "ir_ingest-gep-index-reader-crash.bc";
  RunResult r = precompile(cache, {input.string()});
  INFO(describe(r));
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("LLVM's bitcode reader crashed") != std::string::npos);
  CHECK(r.err.find(input.filename().string()) != std::string::npos);
}

TEST_CASE("a bundle whose lengths claim more than it holds is refused without allocating them") {
  TempDir dir;
  // PortableBinary: an endianness byte, then the jobs vector's length, and
  // a first job whose key... is preceded by a string length of 2^40.
  std::string claims_jobs = std::string(1, '\1');
  put_le(claims_jobs, uint64_t(1) << 40, 8);
  std::string claims_string = std::string(1, '\1');
  put_le(claims_string, 1, 8);         // one job
  put_le(claims_string, 0, 8);         // key.hi
  put_le(claims_string, 0, 8);         // key.lo
  put_le(claims_string, uint64_t(3) << 30, 8); // entry: 3 GiB claimed
  claims_string += "x";
  for (const auto& [name, payload] :
       {std::pair{"jobs.kiln", claims_jobs}, std::pair{"string.kiln", claims_string}}) {
    CAPTURE(name);
    fs::path file = dir.path() / name;
    {
      std::ofstream f(file, std::ios::binary);
      f << envelope(payload);
    }
    Cache cache;
    // 512 MiB of address space: enough for Kiln, not for what is claimed.
    RunResult r = run({"/bin/sh", "-c", "ulimit -v 524288; exec \"$@\"", "sh",
                       inspect_bin().string(), "--cache", cache.db().string(), "import",
                       file.string()});
    INFO(describe(r));
    CHECK(r.exit_code != 0);
    CHECK(r.exit_code < 128);
    CHECK(r.err.find("exceeds") != std::string::npos);
    CHECK(r.err.find("bundle") != std::string::npos);
  }
}

TEST_CASE("a bundle whose zstd frame claims gigabytes is refused before decompressing") {
  TempDir dir;
  const uint64_t claimed = uint64_t(3) << 30;
  std::string packed = frame_claiming(claimed);
  kiln::Hash128 h = kiln::hash128(packed);
  std::string bundle = "KILNBNDL";
  put_le(bundle, 1, 4);
  put_le(bundle, claimed, 8);
  put_le(bundle, h.hi, 8);
  put_le(bundle, h.lo, 8);
  bundle += packed;
  fs::path file = dir.path() / "frame.kiln";
  {
    std::ofstream f(file, std::ios::binary);
    f << bundle;
  }
  Cache cache;
  // 512 MiB of address space: enough for Kiln, not for what is claimed.
  RunResult r = run({"/bin/sh", "-c", "ulimit -v 524288; exec \"$@\"", "sh",
                     inspect_bin().string(), "--cache", cache.db().string(), "import",
                     file.string()});
  INFO(describe(r));
  CHECK(r.exit_code == 1);
  CHECK(r.err.find("bundle payload claims 3221225472 decoded bytes, over the " +
                   std::to_string(kiln::max_decoded_size()) +
                   "-byte maximum (KILN_MAX_DECODED_SIZE)") != std::string::npos);
}

TEST_CASE("a 32 KiB bundle holding 1 GiB of zeros is refused before it is decoded, in a few MiB "
          "of memory") {
  // zstd's densest blocks: 1 GiB of zeros really is in these 32 KiB, so
  // the ratio of claimed to compressed size lets it through; the maximum
  // on what anything may decode to does not.
  const uint64_t gib = uint64_t(1) << 30;
  const std::string bomb = bundle_of(kiln::test::zero_frame(gib), gib);
  REQUIRE(bomb.size() < 33 * 1024);
  // The same bytes are in the fuzz corpus (after fuzz_bundle's even byte
  // for "a whole file"), so the fuzzer starts from them.
  CHECK(slurp(fs::path(KILN_FUZZ_CORPUS) / "bundle" / "zstd-bomb-1gib-zeros") ==
        std::string(1, '\0') + bomb);
  TempDir dir;
  fs::path file = dir.path() / "bomb.kiln";
  {
    std::ofstream f(file, std::ios::binary);
    f << bomb;
  }
  Cache cache;
  precompile_ok(cache, {kiln_it::data("nested.ll")});
  const std::string ls0 = inspect(cache, {"ls", "--json"}).out;
  auto import_limited = [&](const std::string& env) {
    // 512 MiB of address space: enough for Kiln, not for what is claimed.
    return run({"/bin/sh", "-c", env + " ulimit -v 524288; exec \"$@\"", "sh",
                inspect_bin().string(), "--cache", cache.db().string(), "import",
                file.string()});
  };
  RunResult baseline = inspect(cache, {"ls", "--json"});
  {
    RunResult r = import_limited("");
    INFO(describe(r));
    CHECK(r.exit_code == 1);
    CHECK(r.err.find("'" + file.string() + "': bundle payload claims 1073741824 decoded bytes, "
                     "over the " + std::to_string(kiln::max_decoded_size()) +
                     "-byte maximum (KILN_MAX_DECODED_SIZE)") != std::string::npos);
    // About what listing the cache takes; 1 GiB before it was bounded.
    INFO("import peak " << r.max_rss_kib << " KiB, ls peak " << baseline.max_rss_kib << " KiB");
    CHECK(r.max_rss_kib > 0);
    CHECK(r.max_rss_kib < baseline.max_rss_kib + 16 * 1024);
    CHECK(r.max_rss_kib < 64 * 1024);
  }
  {
    // A lower maximum from the environment is the one applied and named.
    RunResult r = import_limited("export KILN_MAX_DECODED_SIZE=1M;");
    INFO(describe(r));
    CHECK(r.exit_code == 1);
    CHECK(r.err.find("over the 1048576-byte maximum") != std::string::npos);
  }
  // A frame that claims less than its header, or no size, or a size within
  // the maximum with too little behind it: refused, memory still small.
  const uint64_t claim = uint64_t(96) << 20;
  for (const auto& [frame, why] :
       {std::pair{kiln::test::zero_frame(gib, false), std::string("does not declare its size")},
        std::pair{kiln::test::zero_frame(claim, true, uint64_t(4) << 20, 4 << 10),
                  std::string("truncated (4198400 of 100663296 bytes decoded)")}}) {
    CAPTURE(why);
    {
      std::ofstream f(file, std::ios::binary | std::ios::trunc);
      f << bundle_of(frame, claim);
    }
    RunResult r = import_limited("");
    INFO(describe(r));
    CHECK(r.exit_code == 1);
    CHECK(r.err.find(why) != std::string::npos);
    INFO("import peak " << r.max_rss_kib << " KiB, ls peak " << baseline.max_rss_kib << " KiB");
    CHECK(r.max_rss_kib < baseline.max_rss_kib + 24 * 1024);
  }
  // The cache was never touched.
  CHECK(inspect(cache, {"ls", "--json"}).out == ls0);
  require_verify_clean(cache.db(), "after the refused bombs");
}

} // TEST_SUITE
