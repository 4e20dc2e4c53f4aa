// Unit tests for the Redis backend (src/storage/remote/redis.h) and the
// remote factory (src/storage/remote/remote_backend.h): URLs parsed without ever
// echoing credentials; $KILN_REMOTE and read-only mode; get/put/remove, TTL,
// database selection, AUTH, a dead server and a read timeout against a real
// redis-server on a free loopback port (skipped where none is installed);
// and Storage's fail-open notice over Redis, word for word.
#include "storage/remote/redis.h"
#include "storage/storage.h"

#include "fixtures/cache.hpp"
#include "fixtures/env.hpp"
#include "fixtures/process.hpp"
#include "fixtures/redis.hpp"
#include "storage/bundle.h"

#include <doctest/doctest.h>

#include <chrono>
#include <string>
#include <thread>

using namespace kiln;
using namespace kiln::storage;
using namespace kiln::storage::remote;
using namespace kiln::test;

namespace {

RedisConfig config_for(int port, int timeout_ms = 2000) {
  RedisConfig c;
  c.host = "127.0.0.1";
  c.port = port;
  c.timeout_ms = timeout_ms;
  return c;
}

} // namespace

TEST_SUITE("storage") {

TEST_CASE("parse_redis_url: defaults, every part and every option") {
  auto plain = parse_redis_url("redis://cache.example");
  REQUIRE(plain);
  CHECK(plain->host == "cache.example");
  CHECK(plain->port == 6379);
  CHECK(plain->db == 0);
  CHECK(plain->user.empty());
  CHECK(plain->password.empty());
  CHECK(plain->timeout_ms == 1000);
  CHECK(plain->options.prefix == "kiln");
  CHECK_FALSE(plain->options.read_only);
  CHECK(plain->options.ttl == std::chrono::seconds(0));
  CHECK(plain->where() == "redis://cache.example:6379/0");

  auto full = parse_redis_url(
      "redis://al%69ce:p%40ss@[::1]:7000/3?prefix=team&ttl=60&timeout_ms=250&read_only=1");
  REQUIRE(full);
  CHECK(full->user == "alice");
  CHECK(full->password == "p@ss");
  CHECK(full->host == "::1");
  CHECK(full->port == 7000);
  CHECK(full->db == 3);
  CHECK(full->options.prefix == "team");
  CHECK(full->options.ttl == std::chrono::seconds(60));
  CHECK(full->timeout_ms == 250);
  CHECK(full->options.read_only);
  CHECK(full->where().find("p@ss") == std::string::npos);

  auto password_only = parse_redis_url("redis://s3cret@h:1");
  REQUIRE(password_only);
  CHECK(password_only->user.empty());
  CHECK(password_only->password == "s3cret");
}

TEST_CASE("parse_redis_url: errors say what is wrong and never echo the credentials") {
  struct Bad {
    const char* url;
    const char* says;
  };
  for (Bad b : {Bad{"rediss://u:s3cret@h", "TLS"}, Bad{"http://u:s3cret@h", "redis://"},
                Bad{"redis://u:s3cret@h:notaport", "port"}, Bad{"redis://u:s3cret@h:0", "port"},
                Bad{"redis://u:s3cret%zz@h", "percent escape"}, Bad{"redis://u:s3cret@", "no host"},
                Bad{"redis://u:s3cret@h/x", "database"}, Bad{"redis://u:s3cret@h?bogus=1", "bogus"},
                Bad{"redis://u:s3cret@h?read_only=2", "read_only"},
                Bad{"redis://u:s3cret@h?timeout_ms=0", "timeout_ms"},
                Bad{"redis://u:s3cret@[::1", "["}}) {
    INFO(b.url);
    auto c = parse_redis_url(b.url);
    REQUIRE_FALSE(c);
    CHECK(c.error().code == Code::invalid_argument);
    CHECK(c.error().message.rfind("remote cache URL: ", 0) == 0);
    CHECK(c.error().message.find(b.says) != std::string::npos);
    CHECK(c.error().message.find("s3cret") == std::string::npos);
  }
}

TEST_CASE("configured: the URL, else $KILN_REMOTE; off; read-only by flag or environment") {
  EnvVar no_ro("KILN_REMOTE_READ_ONLY", nullptr);
  {
    EnvVar none("KILN_REMOTE", nullptr);
    auto r = configured("");
    REQUIRE(r);
    CHECK_FALSE(r->backend);
    auto off = configured("off");
    REQUIRE(off);
    CHECK_FALSE(off->backend);
  }
  {
    EnvVar env("KILN_REMOTE", "redis://u:pw@from-env:5/2?prefix=env");
    auto r = configured("");
    REQUIRE(r);
    REQUIRE(r->backend);
    CHECK(r->backend->describe() == "redis://from-env:5/2");
    CHECK(r->options.prefix == "env");
    CHECK_FALSE(r->options.read_only);
    // An explicit URL wins; "off" turns the environment's off.
    auto flag = configured("redis://from-flag", true);
    REQUIRE(flag);
    CHECK(flag->backend->describe() == "redis://from-flag:6379/0");
    CHECK(flag->options.read_only);
    auto off = configured("off");
    REQUIRE(off);
    CHECK_FALSE(off->backend);
    EnvVar ro("KILN_REMOTE_READ_ONLY", "1");
    auto r2 = configured("");
    REQUIRE(r2);
    CHECK(r2->options.read_only);
  }
  {
    EnvVar env("KILN_REMOTE", "memcached://h");
    auto bad = configured("");
    REQUIRE_FALSE(bad);
    CHECK(bad.error().message == "KILN_REMOTE: remote cache URL: must start with redis://");
    auto bad_flag = configured("rediss://h");
    REQUIRE_FALSE(bad_flag);
    CHECK(bad_flag.error().message.rfind("--remote: remote cache URL: rediss://", 0) == 0);
  }
}

TEST_CASE("RedisBackend: get, put, remove, TTL and database selection") {
  RedisServer server;
  KILN_NEED_REDIS(server);
  RedisBackend db0(config_for(server.port()));
  auto miss = db0.get("k");
  REQUIRE(miss);
  CHECK_FALSE(*miss);
  std::string binary("a\0b\r\n\xff", 6);
  REQUIRE(db0.put("k", binary));
  auto hit = db0.get("k");
  REQUIRE(hit);
  REQUIRE(*hit);
  CHECK(**hit == binary);
  REQUIRE(db0.remove("k"));
  CHECK_FALSE(*db0.get("k"));
  CHECK(db0.remove("never there"));

  RedisConfig c1 = config_for(server.port());
  c1.db = 1;
  RedisBackend db1(c1);
  REQUIRE(db1.put("only-in-1", "v"));
  CHECK(*db1.get("only-in-1"));
  CHECK_FALSE(*db0.get("only-in-1"));
  CHECK(db1.describe() == "redis://127.0.0.1:" + std::to_string(server.port()) + "/1");

  REQUIRE(db0.put("expiring", "v", std::chrono::seconds(1)));
  REQUIRE(db0.put("lasting", "v"));
  CHECK(server.command("TTL expiring") == ":1\r");
  CHECK(server.command("TTL lasting") == ":-1\r");
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  CHECK_FALSE(*db0.get("expiring"));
  CHECK(*db0.get("lasting"));
}

TEST_CASE("RedisBackend: AUTH with the right password works; a wrong one is refused, unechoed") {
  RedisServer server({"--requirepass", "s3cret-pw"});
  KILN_NEED_REDIS(server);
  RedisConfig wrong = config_for(server.port());
  wrong.user = "default";
  wrong.password = "wr0ng-pw";
  RedisBackend bad(wrong);
  auto r = bad.get("k");
  REQUIRE_FALSE(r);
  CHECK(r.error().code == Code::unavailable);
  CHECK(r.error().message.rfind("AUTH refused: ", 0) == 0);
  CHECK(r.error().message.find("wr0ng") == std::string::npos);

  RedisConfig none = config_for(server.port());
  RedisBackend anonymous(none);
  auto denied = anonymous.put("k", "v");
  REQUIRE_FALSE(denied);
  CHECK(denied.error().message.rfind("SET refused: NOAUTH", 0) == 0);

  for (const char* user : {"", "default"}) {
    RedisConfig right = config_for(server.port());
    right.user = user;
    right.password = "s3cret-pw";
    RedisBackend good(right);
    REQUIRE(good.put("k", "v"));
    CHECK(**good.get("k") == "v");
  }
}

TEST_CASE("RedisBackend: a dead server and a silent one are errors that say why") {
  RedisBackend dead(config_for(free_port(), 300));
  auto r = dead.get("k");
  REQUIRE_FALSE(r);
  CHECK(r.error().code == Code::unavailable);
  CHECK(r.error().message == "Connection refused");

  RedisServer server;
  KILN_NEED_REDIS(server);
  RedisBackend slow(config_for(server.port(), 200));
  REQUIRE(slow.put("k", "v")); // connected before the pause
  REQUIRE(server.command("CLIENT PAUSE 3000") == "+OK\r");
  auto start = std::chrono::steady_clock::now();
  auto paused = slow.get("k");
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  REQUIRE_FALSE(paused);
  CHECK(paused.error().message == "GET: no answer within 200 ms");
  CHECK(s < 2.5);
}

TEST_CASE("Storage over Redis: publishes under the prefix with the TTL; fails open, once") {
  RedisServer server;
  KILN_NEED_REDIS(server);
  TempDir dir = temp_dir("kiln-redis-storage");
  std::string url = server.url("?prefix=team&ttl=600");
  auto opened = Storage::open(cache_file(dir), url);
  REQUIRE(opened);
  Storage& s = **opened;
  REQUIRE(s.has_remote());
  NameRecord name{"root", "host", hash128("closure")};
  s.publish_name(name);
  std::string key = "team:v1:name:" + storage::remote_name_id("root", "host");
  CHECK(s.remote_key("name", storage::remote_name_id("root", "host")) == key);
  RedisBackend reader(config_for(server.port()));
  auto value = reader.get(key);
  REQUIRE(value);
  REQUIRE(*value);
  auto data = decode_bundle(**value);
  REQUIRE(data);
  REQUIRE(data->names.size() == 1);
  CHECK(data->names[0].closure == name.closure);
  std::string ttl = server.command("TTL " + key);
  CHECK((ttl == ":600\r" || ttl == ":599\r"));

  // A dead server: one notice naming it (no credentials), then local only.
  int port = free_port();
  auto dead = Storage::open(dir.path() + "/other.db",
                            "redis://u:s3cret@127.0.0.1:" + std::to_string(port));
  REQUIRE(dead);
  std::string err = stderr_of([&] {
    CHECK_FALSE((*dead)->resolve_name("root", "host"));
    CHECK((*(*dead)->find_job(hash128("job"), {})) == Found::nowhere);
    (*dead)->publish_name(name);
  });
  CHECK(err == "kiln: remote cache redis://127.0.0.1:" + std::to_string(port) +
                   "/0 unavailable (Connection refused); continuing with the local cache only\n");
  Counters c;
  (*dead)->take_remote_counters(c);
  CHECK(c.remote_errors == 1);
}

} // TEST_SUITE
