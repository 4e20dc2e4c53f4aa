// The Redis remote tier against a real redis-server, started on a free
// loopback port for each test and stopped after it: caches in different
// directories share work through it, read-only consumers publish nothing, a
// dead server costs a notice and nothing else, a corrupted value is rejected
// and not propagated, three shards fill the tier for everyone, and signed
// values are fetched only by readers with the key.
#include "harness.hpp"

#include "../unit/fixtures/env.hpp"
#include "../unit/fixtures/redis.hpp"

#include <doctest/doctest.h>

#if KILN_TEST_HIREDIS
#include <hiredis/hiredis.h>
#endif

#include <chrono>
#include <thread>

using namespace kiln_it;
using kiln::test::EnvVar;

namespace {

#if KILN_TEST_HIREDIS

/// The shared redis-server, with a hiredis connection of the test's own for
/// looking inside it.
class Redis : public kiln::test::RedisServer {
public:
  using RedisServer::RedisServer;
  ~Redis() { kill(); }

  void kill() {
    if (ctx_) {
      redisFree(ctx_);
      ctx_ = nullptr;
    }
    stop();
  }
  /// One command on the test's own connection; the caller frees the reply.
  template <class... A> redisReply* command(const char* fmt, A... args) {
    if (!ctx_) {
      timeval tv{2, 0};
      ctx_ = redisConnectWithTimeout("127.0.0.1", port(), tv);
      if (!ctx_ || ctx_->err) {
        if (ctx_)
          redisFree(ctx_);
        ctx_ = nullptr;
        return nullptr;
      }
    }
    return static_cast<redisReply*>(redisCommand(ctx_, fmt, args...));
  }
  long long integer(const char* cmd) {
    redisReply* r = command(cmd);
    REQUIRE(r);
    REQUIRE(r->type == REDIS_REPLY_INTEGER);
    long long v = r->integer;
    freeReplyObject(r);
    return v;
  }
  std::vector<std::string> keys(const std::string& pattern) {
    redisReply* r = command("KEYS %s", pattern.c_str());
    REQUIRE(r);
    REQUIRE(r->type == REDIS_REPLY_ARRAY);
    std::vector<std::string> out;
    for (size_t i = 0; i < r->elements; ++i)
      out.emplace_back(r->element[i]->str, r->element[i]->len);
    freeReplyObject(r);
    return out;
  }

private:
  redisContext* ctx_ = nullptr;
};

json precompile_json(const Cache& cache, const std::vector<std::string>& args) {
  RunResult r = precompile(cache, args);
  REQUIRE_MESSAGE(r.exit_code == 0, describe(r));
  return json::parse(r.out);
}

size_t count_status(const json& j, const std::string& status) {
  size_t n = 0;
  for (const json& jb : j["jobs"])
    n += jb["status"] == status;
  return n;
}

size_t count_remote(const json& j) {
  size_t n = 0;
  for (const json& jb : j["jobs"])
    n += jb.value("remote", false);
  return n;
}

json stats(const Cache& cache) {
  RunResult r = inspect(cache, {"stats", "--json"});
  REQUIRE_MESSAGE(r.exit_code == 0, describe(r));
  return json::parse(r.out);
}

RunResult probe(const Cache& cache, const std::string& name, const std::string& arg) {
  return run({KILN_LOAD_PROBE, cache.db().string(), name, arg});
}

#endif

} // namespace

TEST_SUITE("integration.remote") {

#if KILN_TEST_HIREDIS

TEST_CASE("two caches share work through Redis: the second compiles nothing") {
  Redis redis;
  KILN_NEED_REDIS(redis);
  Cache a, b;
  json first = precompile_json(a, {"--remote", redis.url(), KILN_EXAMPLES "/deferred.ll"});
  size_t jobs = first["jobs"].size();
  REQUIRE(jobs > 3);
  CHECK(count_status(first, "compiled") == jobs);
  CHECK(count_remote(first) == 0);
  // Every job, every root's closure, name and image is in Redis.
  CHECK(redis.keys("kiln:v1:job:*").size() == jobs);
  CHECK(redis.keys("kiln:v1:name:*").size() == first["roots"].size());
  CHECK(redis.keys("kiln:v1:image:*").size() >= 1);

  json second = precompile_json(b, {"--remote", redis.url(), KILN_EXAMPLES "/deferred.ll"});
  CHECK(count_status(second, "compiled") == 0);
  CHECK(count_remote(second) == jobs);
  CHECK(normalized(second)["roots"] == normalized(first)["roots"]);
  json s = stats(b);
  CHECK(s["job_misses"] == 0);
  CHECK(s["remote_hits"].get<long long>() >= static_cast<long long>(jobs));
  CHECK(s["remote_bytes_in"].get<long long>() > 0);
  CHECK(s["remote_errors"] == 0);
  RunResult v = inspect(b, {"verify"});
  CHECK_MESSAGE(v.exit_code == 0, describe(v));

  // A process that only loads, with an empty cache: name, closure, jobs and
  // image all come from Redis; no linker is loaded.
  Cache c;
  precompile_json(a, {"--remote", redis.url(), data("nested.ll")});
  EnvVar env("KILN_REMOTE", redis.url());
  RunResult r = probe(c, "nest_a", "5");
  REQUIRE_MESSAGE(r.exit_code == 0, describe(r));
  CHECK(r.out.rfind("result=345 llvm=0 linker=0 ", 0) == 0);
  CHECK(r.out.find("hiredis=1") != std::string::npos); // opened for the Redis tier only
  CHECK(stats(c)["remote_hits"].get<long long>() >= 3);
}

TEST_CASE("read-only consumers fetch but never write") {
  Redis redis;
  KILN_NEED_REDIS(redis);
  Cache a, b;
  json first = precompile_json(a, {"--remote", redis.url("?read_only=1"), data("nested.ll")});
  CHECK(count_status(first, "compiled") == first["jobs"].size());
  CHECK(redis.integer("DBSIZE") == 0);
  // The flag does the same; the consumer still fetches what others published.
  precompile_json(a, {"--remote", redis.url(), data("chain8.ll")});
  long long published = redis.integer("DBSIZE");
  CHECK(published > 0);
  json consumer =
      precompile_json(b, {"--remote", redis.url(), "--remote-read-only", data("chain8.ll")});
  CHECK(count_status(consumer, "compiled") == 0);
  json other = precompile_json(b, {"--remote", redis.url(), "--remote-read-only",
                                   data("diamond.ll")});
  CHECK(count_status(other, "compiled") == other["jobs"].size());
  CHECK(redis.integer("DBSIZE") == published);
  CHECK(stats(b)["remote_bytes_out"] == 0);
}

TEST_CASE("a dead Redis: everything still succeeds locally, with one notice") {
  Redis redis;
  KILN_NEED_REDIS(redis);
  Cache a, b;
  precompile_json(a, {"--remote", redis.url(), KILN_EXAMPLES "/deferred.ll"});
  std::string url = redis.url("?timeout_ms=300");
  redis.kill();
  auto start = std::chrono::steady_clock::now();
  RunResult r = precompile(b, {"--remote", url, KILN_EXAMPLES "/deferred.ll"});
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  REQUIRE_MESSAGE(r.exit_code == 0, describe(r));
  json j = json::parse(r.out);
  CHECK(count_status(j, "compiled") == j["jobs"].size());
  size_t first = r.err.find("continuing with the local cache only");
  CHECK_MESSAGE(first != std::string::npos, r.err);
  CHECK_MESSAGE(r.err.find("continuing with", first + 1) == std::string::npos, r.err);
  CHECK(s < 60);
  CHECK(stats(b)["remote_errors"].get<long long>() >= 1);
  // A loader in the same situation loads from the local cache.
  EnvVar env("KILN_REMOTE", url);
  precompile_json(b, {"--remote", "off", data("nested.ll")});
  RunResult p = probe(b, "nest_a", "5");
  REQUIRE_MESSAGE(p.exit_code == 0, describe(p));
  CHECK(p.out.rfind("result=345 llvm=0 linker=0 ", 0) == 0);
  // And with an empty local cache it says so and fails only for lack of
  // the entry, not because of Redis.
  Cache empty;
  RunResult miss = probe(empty, "nest_a", "5");
  CHECK(miss.exit_code != 0);
  CHECK_MESSAGE(miss.err.find("unavailable") != std::string::npos, describe(miss));
}

TEST_CASE("a slow Redis costs the timeout once, then the run goes on locally") {
  Redis redis;
  KILN_NEED_REDIS(redis);
  Cache a;
  // CLIENT PAUSE holds every other client's commands for 20 s: the
  // precompile's calls time out after 300 ms.
  redisReply* pause = redis.command("CLIENT PAUSE 20000");
  REQUIRE(pause);
  REQUIRE(pause->type == REDIS_REPLY_STATUS);
  freeReplyObject(pause);
  auto start = std::chrono::steady_clock::now();
  RunResult r = precompile(a, {"--remote", redis.url("?timeout_ms=300"), data("chain8.ll")});
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  REQUIRE_MESSAGE(r.exit_code == 0, describe(r));
  json j = json::parse(r.out);
  CHECK(count_status(j, "compiled") == j["jobs"].size());
  size_t first = r.err.find("continuing with the local cache only");
  CHECK_MESSAGE(first != std::string::npos, r.err);
  CHECK_MESSAGE(r.err.find("continuing with", first + 1) == std::string::npos, r.err);
  CHECK_MESSAGE(s < 15, "took " << s << " s: the pause, not the timeout, bounded it");
}

TEST_CASE("a corrupted remote value is rejected and not propagated") {
  Redis redis;
  KILN_NEED_REDIS(redis);
  Cache a, b, c;
  json first = precompile_json(a, {"--remote", redis.url(), data("nested.ll")});
  std::string victim = first["jobs"][0]["key"];
  std::string rkey = "kiln:v1:job:" + victim;
  redisReply* len = redis.command("STRLEN %s", rkey.c_str());
  REQUIRE(len);
  REQUIRE(len->integer > 40);
  long long mid = len->integer / 2;
  freeReplyObject(len);
  redisReply* r = redis.command("SETRANGE %s %lld %s", rkey.c_str(), mid, "\x01\x02\x03");
  REQUIRE(r);
  freeReplyObject(r);
  // Also a value that is not a bundle at all, for a closure.
  std::string ck = first["roots"][0]["closure"];
  r = redis.command("SET kiln:v1:closure:%s garbage", ck.c_str());
  REQUIRE(r);
  freeReplyObject(r);

  RunResult out = precompile(b, {"--remote", redis.url(), data("nested.ll")});
  REQUIRE_MESSAGE(out.exit_code == 0, describe(out));
  CHECK_MESSAGE(out.err.find("rejected job " + victim) != std::string::npos, out.err);
  json j = json::parse(out.out);
  for (const json& jb : j["jobs"]) {
    if (jb["key"] == victim)
      CHECK(jb["status"] == "compiled"); // rejected, so made here
    else
      CHECK(jb.value("remote", false));
  }
  RunResult v = inspect(b, {"verify"});
  CHECK_MESSAGE(v.exit_code == 0, describe(v));
  CHECK(stats(b)["remote_errors"].get<long long>() >= 1);
  // b republished the job it compiled and the closure: a third cache gets
  // only good values.
  json third = precompile_json(c, {"--remote", redis.url(), data("nested.ll")});
  CHECK(count_status(third, "compiled") == 0);
  CHECK(normalized(third)["roots"] == normalized(j)["roots"]);
  RunResult p = probe(c, "nest_a", "5");
  CHECK(p.out.rfind("result=345 llvm=0 linker=0 ", 0) == 0);
}

TEST_CASE("many rejected remote values make two lines: the first, and a count at the close") {
  Redis redis;
  KILN_NEED_REDIS(redis);
  Cache a, b;
  json first = precompile_json(a, {"--remote", redis.url(), data("nested.ll")});
  std::vector<std::string> jobs = redis.keys("kiln:v1:job:*");
  REQUIRE(jobs.size() >= 3);
  for (const std::string& k : jobs) {
    redisReply* r = redis.command("SET %b garbage", k.data(), k.size());
    REQUIRE(r);
    freeReplyObject(r);
  }
  RunResult out = precompile(b, {"--remote", redis.url(), data("nested.ll")});
  REQUIRE_MESSAGE(out.exit_code == 0, describe(out));
  size_t lines = 0;
  for (size_t at = out.err.find("rejected"); at != std::string::npos;
       at = out.err.find("rejected", at + 1))
    ++lines;
  CHECK_MESSAGE(lines == 2, out.err);
  CHECK_MESSAGE(out.err.find(" more values (the last: job ") != std::string::npos, out.err);
  CHECK(stats(b)["remote_errors"].get<long long>() >= (long long)jobs.size());
}

TEST_CASE("a remote value of 32 KiB that decodes to 1 GiB of zeros is rejected without "
          "decoding it; the loader lives on and links for itself") {
  Redis redis;
  KILN_NEED_REDIS(redis);
  EnvVar no_key("KILN_SIGNING_KEY", nullptr);
  EnvVar no_requirement("KILN_REQUIRE_SIGNED", nullptr);
  // The bundle the reliability suite imports (tests/fuzz/corpus), after
  // fuzz_bundle's leading selector byte.
  const std::string bomb =
      slurp(fs::path(KILN_TEST_DATA) / ".." / "fuzz" / "corpus" / "bundle" /
            "zstd-bomb-1gib-zeros")
          .substr(1);
  REQUIRE(bomb.rfind("KILNBNDL", 0) == 0);
  REQUIRE(bomb.size() < 33 * 1024);
  Cache writer, loader, nameless;
  precompile_json(writer, {"--remote", redis.url(), data("nested.ll")});
  std::vector<std::string> images = redis.keys("kiln:v1:image:*");
  REQUIRE(!images.empty());
  auto plant = [&](const std::string& key) {
    redisReply* r = redis.command("SET %b %b", key.data(), key.size(), bomb.data(), bomb.size());
    REQUIRE(r);
    freeReplyObject(r);
  };
  for (const std::string& k : images)
    plant(k);
  EnvVar env("KILN_REMOTE", redis.url());
  EnvVar ro("KILN_REMOTE_READ_ONLY", "1"); // keep the planted values
  const std::string claim = "bundle payload claims 1073741824 decoded bytes, over the";
  {
    // Name, closure and jobs come from Redis; the image is rejected and
    // linked here.
    RunResult p = probe(loader, "nest_a", "5");
    INFO(describe(p) << "peak " << p.max_rss_kib << " KiB");
    REQUIRE(p.exit_code == 0);
    CHECK(p.out.rfind("result=345 ", 0) == 0);
    CHECK(p.out.find(" linker=1 ") != std::string::npos);
    CHECK(p.err.find("rejected image of closure") != std::string::npos);
    CHECK(p.err.find(claim) != std::string::npos);
    CHECK(p.max_rss_kib > 0);
    CHECK(p.max_rss_kib < 192 * 1024); // linking included; decoding it took 1 GiB before
  }
  {
    // The name itself is the bomb: nothing to load, a clear error, no crash.
    for (const std::string& k : redis.keys("kiln:v1:name:*"))
      plant(k);
    RunResult p = probe(nameless, "nest_a", "5");
    INFO(describe(p) << "peak " << p.max_rss_kib << " KiB");
    CHECK(p.exit_code == 1);
    CHECK(p.err.find("rejected name nest_a") != std::string::npos);
    CHECK(p.err.find(claim) != std::string::npos);
    CHECK(p.max_rss_kib < 64 * 1024);
  }
}

TEST_CASE("signed values: readers with the key fetch; another key or no signature is rejected") {
  Redis redis;
  KILN_NEED_REDIS(redis);
  const std::string key = "8f1e3a5b7c9d0e2f4a6b8c0d1e3f5a7b9c1d3e5f7a9b0c2d4e6f8a0b1c3d5e7f";
  const std::string other_key = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
  EnvVar no_requirement("KILN_REQUIRE_SIGNED", nullptr);
  Cache writer, reader, wrong, loader;
  size_t jobs = 0;
  {
    EnvVar k("KILN_SIGNING_KEY", key);
    json first = precompile_json(writer, {"--remote", redis.url(), data("nested.ll")});
    jobs = first["jobs"].size();
    CHECK(count_status(first, "compiled") == jobs);
  }
  {
    // A reader with the key that requires signatures gets everything.
    EnvVar k("KILN_SIGNING_KEY", key);
    EnvVar req("KILN_REQUIRE_SIGNED", "1");
    RunResult r = precompile(reader, {"--remote", redis.url(), data("nested.ll")});
    REQUIRE_MESSAGE(r.exit_code == 0, describe(r));
    json j = json::parse(r.out);
    CHECK(count_status(j, "compiled") == 0);
    CHECK(count_remote(j) == jobs);
    CHECK_MESSAGE(r.err.find("rejected") == std::string::npos, r.err);
    CHECK(stats(reader)["remote_errors"] == 0);
    // So does a loader with an empty cache: name, closure, jobs and image.
    EnvVar env("KILN_REMOTE", redis.url());
    RunResult p = probe(loader, "nest_a", "5");
    REQUIRE_MESSAGE(p.exit_code == 0, describe(p));
    CHECK(p.out.rfind("result=345 llvm=0 linker=0 ", 0) == 0);
  }
  {
    // Another key: every value is rejected with a notice, and the reader
    // compiles and links for itself.
    EnvVar k("KILN_SIGNING_KEY", other_key);
    EnvVar ro("KILN_REMOTE_READ_ONLY", "1"); // leave the writer's values in place
    RunResult r = precompile(wrong, {"--remote", redis.url(), data("nested.ll")});
    REQUIRE_MESSAGE(r.exit_code == 0, describe(r));
    json j = json::parse(r.out);
    CHECK(count_status(j, "compiled") == jobs);
    CHECK(count_remote(j) == 0);
    CHECK_MESSAGE(r.err.find("rejected job") != std::string::npos, r.err);
    CHECK_MESSAGE(r.err.find("signature does not match") != std::string::npos, r.err);
    CHECK(r.err.find(key) == std::string::npos);
    CHECK(r.err.find(other_key) == std::string::npos);
    json s = stats(wrong);
    CHECK(s["remote_hits"] == 0);
    CHECK(s["remote_errors"].get<long long>() >= 1);
    RunResult p = probe(wrong, "nest_a", "5");
    REQUIRE_MESSAGE(p.exit_code == 0, describe(p));
    CHECK(p.out.rfind("result=345 llvm=0", 0) == 0);
  }

  // An unsigned publisher: a requiring reader rejects its values; a reader
  // with the key that does not require signatures takes them.
  REQUIRE(redis.integer("DBSIZE") > 0);
  freeReplyObject(redis.command("FLUSHALL"));
  REQUIRE(redis.integer("DBSIZE") == 0);
  Cache plain, strict, lenient;
  {
    EnvVar k("KILN_SIGNING_KEY", nullptr);
    precompile_json(plain, {"--remote", redis.url(), data("nested.ll")});
  }
  {
    EnvVar k("KILN_SIGNING_KEY", key);
    EnvVar req("KILN_REQUIRE_SIGNED", "1");
    EnvVar ro("KILN_REMOTE_READ_ONLY", "1");
    RunResult r = precompile(strict, {"--remote", redis.url(), data("nested.ll")});
    REQUIRE_MESSAGE(r.exit_code == 0, describe(r));
    json j = json::parse(r.out);
    CHECK(count_status(j, "compiled") == jobs);
    CHECK_MESSAGE(r.err.find("not signed") != std::string::npos, r.err);
  }
  {
    EnvVar k("KILN_SIGNING_KEY", key);
    json j = precompile_json(lenient, {"--remote", redis.url(), data("nested.ll")});
    CHECK(count_status(j, "compiled") == 0);
    CHECK(count_remote(j) == jobs);
  }
}

TEST_CASE("three shards fill the tier; then nothing is compiled anywhere") {
  Redis redis;
  KILN_NEED_REDIS(redis);
  Cache s1, s2, s3, full, loader;
  std::map<std::string, int> compiled_by;
  size_t jobs = 0;
  std::set<std::string> left_roots;
  int shard = 0;
  for (Cache* c : {&s1, &s2, &s3}) {
    ++shard;
    json j = precompile_json(*c, {"--remote", redis.url(), "--shard",
                                  std::to_string(shard) + "/3", KILN_EXAMPLES "/deferred.ll"});
    jobs = j["jobs"].size();
    for (const json& jb : j["jobs"]) {
      std::string st = jb["status"];
      CHECK((st == "compiled" || st == "other_shard" || jb.value("remote", false)));
      if (st == "compiled")
        ++compiled_by[jb["key"].get<std::string>()];
    }
    for (const json& rt : j["roots"])
      if (rt.contains("note"))
        left_roots.insert(rt["name"].get<std::string>());
  }
  // Every job compiled by exactly one shard.
  CHECK(compiled_by.size() == jobs);
  for (const auto& [key, n] : compiled_by)
    CHECK_MESSAGE(n == 1, key);
  CHECK(redis.keys("kiln:v1:job:*").size() == jobs);
  // A shard that compiled only part of a closure said so and did not fail.
  CHECK(!left_roots.empty());

  json after = precompile_json(full, {"--remote", redis.url(), KILN_EXAMPLES "/deferred.ll"});
  CHECK(count_status(after, "compiled") == 0);
  CHECK(count_remote(after) == jobs);

  // A loader with an empty cache gets even the roots no shard could close.
  precompile_json(s1, {"--remote", redis.url(), "--shard", "1/3", data("nested.ll")});
  precompile_json(s2, {"--remote", redis.url(), "--shard", "2/3", data("nested.ll")});
  precompile_json(s3, {"--remote", redis.url(), "--shard", "3/3", data("nested.ll")});
  EnvVar env("KILN_REMOTE", redis.url());
  RunResult p = probe(loader, "nest_a", "5");
  REQUIRE_MESSAGE(p.exit_code == 0, describe(p));
  CHECK(p.out.rfind("result=345 llvm=0", 0) == 0);
}

TEST_CASE("credentials never appear; TLS URLs and bad shards are refused clearly") {
  Redis redis({"--requirepass", "s3cret-pw"});
  KILN_NEED_REDIS(redis);
  Cache a;
  std::string port = redis.url().substr(redis.url().rfind(':') + 1);
  // Wrong password: the server refuses AUTH; the notice names the server only.
  RunResult wrong = precompile(a, {"--remote", "redis://u:wr0ng-pw@127.0.0.1:" + port,
                                   data("nested.ll")});
  REQUIRE_MESSAGE(wrong.exit_code == 0, describe(wrong));
  CHECK(wrong.err.find("wr0ng-pw") == std::string::npos);
  CHECK_MESSAGE(wrong.err.find("unavailable") != std::string::npos, wrong.err);
  // The right one (default user): it publishes.
  Cache b;
  precompile_json(b, {"--remote", "redis://:s3cret-pw@127.0.0.1:" + port, data("nested.ll")});
  RunResult st = inspect(b, {"stats"});
  CHECK(st.out.find("s3cret") == std::string::npos);
  CHECK(st.out.find("remote") != std::string::npos);
  RunResult tls = precompile(a, {"--remote", "rediss://u:s3cret-pw@127.0.0.1:" + port,
                                 data("nested.ll")});
  CHECK(tls.exit_code == 2);
  CHECK_MESSAGE(tls.err.find("TLS") != std::string::npos, tls.err);
  CHECK(tls.err.find("s3cret") == std::string::npos);
  RunResult bad = precompile(a, {"--remote", "redis://u:s3cret-pw@127.0.0.1:notaport",
                                 data("nested.ll")});
  CHECK(bad.exit_code == 2);
  CHECK(bad.err.find("s3cret") == std::string::npos);
  CHECK_MESSAGE(bad.err.find("port") != std::string::npos, bad.err);
  RunResult shard = precompile(a, {"--shard", "4/3", data("nested.ll")});
  CHECK(shard.exit_code == 2);
  CHECK_MESSAGE(shard.err.find("--shard") != std::string::npos, shard.err);
}

#else

TEST_CASE("remote tier tests need hiredis") {
  MESSAGE("skipped: built without hiredis (Debian package libhiredis-dev)");
}

#endif
}
