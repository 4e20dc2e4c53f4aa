// Unit tests for the Redis backend (src/storage/remote/redis.h) and the
// remote factory (src/storage/remote/backend.h): URLs parsed without ever
// echoing credentials; $KILN_REMOTE and read-only mode; get/put/remove, TTL,
// database selection, AUTH, a dead server and a read timeout against a real
// redis-server on a free loopback port (skipped where none is installed);
// and Storage's fail-open notice over Redis, word for word.
#include "storage/remote/redis.h"
#include "storage/storage.h"

#include "storage/bundle.h"
#include "support/files.h"

#include <doctest/doctest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <thread>
#include <vector>

using namespace kiln;
using namespace kiln::storage;
using namespace kiln::storage::remote;

namespace {

std::string find_redis_server() {
  const char* path = std::getenv("PATH");
  std::string dirs = std::string(path ? path : "") + ":/usr/sbin:/usr/bin:/bin";
  size_t start = 0;
  while (start <= dirs.size()) {
    size_t end = dirs.find(':', start);
    std::string dir =
        dirs.substr(start, end == std::string::npos ? std::string::npos : end - start);
    if (!dir.empty() && ::access((dir + "/redis-server").c_str(), X_OK) == 0)
      return dir + "/redis-server";
    if (end == std::string::npos)
      break;
    start = end + 1;
  }
  return {};
}

int free_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(fd >= 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
  socklen_t len = sizeof a;
  REQUIRE(::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0);
  ::close(fd);
  return ntohs(a.sin_port);
}

RedisConfig config_for(int port, int timeout_ms = 2000) {
  RedisConfig c;
  c.host = "127.0.0.1";
  c.port = port;
  c.timeout_ms = timeout_ms;
  return c;
}

/// A redis-server child on 127.0.0.1:<free port>, no persistence; stopped
/// with the object.
class Server {
public:
  explicit Server(std::vector<std::string> extra = {}, std::string password = "") {
    std::string bin = find_redis_server();
    if (bin.empty())
      return;
    auto dir = TempDir::create("kiln-redis-test");
    REQUIRE(dir);
    dir_.emplace(dir.take());
    port_ = free_port();
    std::vector<std::string> args{bin,     "--port",        std::to_string(port_), "--bind",
                                  "127.0.0.1", "--save",    "",                    "--appendonly",
                                  "no",    "--daemonize",   "no",                  "--dir",
                                  dir_->path()};
    args.insert(args.end(), extra.begin(), extra.end());
    std::vector<char*> argv;
    for (std::string& a : args)
      argv.push_back(a.data());
    argv.push_back(nullptr);
    pid_ = ::fork();
    REQUIRE(pid_ >= 0);
    if (pid_ == 0) {
      std::freopen("/dev/null", "w", stdout);
      ::execv(argv[0], argv.data());
      ::_exit(127);
    }
    RedisConfig c = config_for(port_);
    c.password = password;
    for (int i = 0; i < 100; ++i) {
      RedisBackend probe(c);
      if (probe.get("kiln-test:probe"))
        return;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    FAIL("redis-server did not answer on port " << port_);
  }
  ~Server() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
  }
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  bool running() const { return pid_ > 0; }
  int port() const { return port_; }

  /// One inline command on a connection of its own; the first reply line.
  std::string command(const std::string& line) const {
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    REQUIRE(fd >= 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(uint16_t(port_));
    REQUIRE(::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
    std::string out = line + "\r\n";
    REQUIRE(::write(fd, out.data(), out.size()) == ssize_t(out.size()));
    std::string reply;
    char c;
    while (::read(fd, &c, 1) == 1 && c != '\n')
      reply += c;
    ::close(fd);
    return reply;
  }

private:
  std::optional<TempDir> dir_;
  int port_ = 0;
  pid_t pid_ = -1;
};

#define NEED_REDIS(server)                                                                        \
  if (!(server).running()) {                                                                     \
    MESSAGE("skipped: redis-server is not installed (Debian package redis-server)");              \
    return;                                                                                      \
  }

/// Sets (or, with nullptr, unsets) an environment variable for the scope.
class ScopedEnv {
public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name))
      old_ = old;
    if (value)
      ::setenv(name, value, 1);
    else
      ::unsetenv(name);
  }
  ~ScopedEnv() {
    if (old_)
      ::setenv(name_.c_str(), old_->c_str(), 1);
    else
      ::unsetenv(name_.c_str());
  }

private:
  std::string name_;
  std::optional<std::string> old_;
};

/// What the block writes on stderr.
template <class F> std::string stderr_of(F&& f) {
  std::fflush(stderr);
  int saved = ::dup(2);
  std::FILE* tmp = std::tmpfile();
  REQUIRE(tmp);
  ::dup2(::fileno(tmp), 2);
  f();
  std::fflush(stderr);
  ::dup2(saved, 2);
  ::close(saved);
  std::string out;
  std::rewind(tmp);
  for (int c; (c = std::fgetc(tmp)) != EOF;)
    out += char(c);
  std::fclose(tmp);
  return out;
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
  ScopedEnv no_ro("KILN_REMOTE_READ_ONLY", nullptr);
  {
    ScopedEnv none("KILN_REMOTE", nullptr);
    auto r = configured("");
    REQUIRE(r);
    CHECK_FALSE(r->backend);
    auto off = configured("off");
    REQUIRE(off);
    CHECK_FALSE(off->backend);
  }
  {
    ScopedEnv env("KILN_REMOTE", "redis://u:pw@from-env:5/2?prefix=env");
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
    ScopedEnv ro("KILN_REMOTE_READ_ONLY", "1");
    auto r2 = configured("");
    REQUIRE(r2);
    CHECK(r2->options.read_only);
  }
  {
    ScopedEnv env("KILN_REMOTE", "memcached://h");
    auto bad = configured("");
    REQUIRE_FALSE(bad);
    CHECK(bad.error().message == "KILN_REMOTE: remote cache URL: must start with redis://");
    auto bad_flag = configured("rediss://h");
    REQUIRE_FALSE(bad_flag);
    CHECK(bad_flag.error().message.rfind("--remote: remote cache URL: rediss://", 0) == 0);
  }
}

TEST_CASE("RedisBackend: get, put, remove, TTL and database selection") {
  Server server;
  NEED_REDIS(server);
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
  Server server({"--requirepass", "s3cret-pw"}, "s3cret-pw");
  NEED_REDIS(server);
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

  Server server;
  NEED_REDIS(server);
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
  Server server;
  NEED_REDIS(server);
  auto dir = TempDir::create("kiln-redis-storage");
  REQUIRE(dir);
  std::string url = "redis://127.0.0.1:" + std::to_string(server.port()) + "?prefix=team&ttl=600";
  auto opened = Storage::open(dir->path() + "/kiln.db", url);
  REQUIRE(opened);
  Storage& s = **opened;
  REQUIRE(s.has_remote());
  NameRecord name{"root", "host", hash128("closure")};
  s.publish_name(name);
  std::string key = "team:v1:name:" + Storage::name_id("root", "host");
  CHECK(s.remote_key("name", Storage::name_id("root", "host")) == key);
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
  auto dead = Storage::open(dir->path() + "/other.db",
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
