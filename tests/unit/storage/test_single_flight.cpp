// Unit tests for single-flight (src/storage/single_flight.h) over the claims
// of a real cache file (storage/local/claims.cpp) and the leases of a real
// redis-server: a key another holder claims is waited for, not worked; a
// holder that is gone (its process ended) or stalled (no beat for a term)
// loses its claim to the waiter, within a term; a holder that beats but
// never finishes is outwaited at the wait limit; claims are per key; a
// remote lease another machine holds is waited for and taken when it lapses;
// and a remote that is down leaves single-flight to this machine, with one
// notice. Other holders are played by hand-written claims, so each case says
// exactly what the waiter saw.
#include "storage/single_flight.h"

#include "fixtures/cache.hpp"
#include "fixtures/process.hpp"
#include "fixtures/redis.hpp"
#include "storage/storage.h"

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <set>
#include <string>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>

using namespace kiln;
using namespace kiln::storage;
using namespace kiln::test;

namespace {

using Clock = std::chrono::steady_clock;

std::vector<Hash128> some_keys(size_t n, const std::string& salt = "") {
  std::vector<Hash128> keys;
  for (size_t i = 0; i < n; ++i)
    keys.push_back(hash128("single-flight key " + salt + std::to_string(i)));
  return keys;
}

/// What a flight did with each key: worked here, or found another's.
struct Outcome {
  std::mutex mu;
  std::set<size_t> worked, theirs;
  std::vector<std::string> waits; ///< holders the progress named
};

/// Calls where `stored` says which keys' results exist; work() stores its own.
FlightCalls calls_for(Outcome& out, std::set<size_t>& stored, std::mutex& stored_mu) {
  FlightCalls c;
  c.ready = [&](size_t i) -> Result<bool> {
    std::lock_guard lock(stored_mu);
    return stored.count(i) > 0;
  };
  c.work = [&](size_t i) {
    {
      std::lock_guard lock(out.mu);
      out.worked.insert(i);
    }
    std::lock_guard lock(stored_mu);
    stored.insert(i);
  };
  c.theirs = [&](size_t i, double) {
    std::lock_guard lock(out.mu);
    out.theirs.insert(i);
  };
  c.waiting = [&](const std::vector<FlightWait>& waits) {
    std::lock_guard lock(out.mu);
    for (const FlightWait& w : waits)
      out.waits.push_back(w.holder);
  };
  return c;
}

FlightOptions quick(std::chrono::milliseconds term = std::chrono::milliseconds(300)) {
  FlightOptions o;
  o.threads = 2;
  o.term = term;
  o.poll = std::chrono::milliseconds(10);
  o.remote_poll = std::chrono::milliseconds(20);
  return o;
}

/// Another holder: on another machine unless `here`.
ClaimHolder other(bool here = false, int64_t pid = 4242) {
  ClaimHolder h = this_holder();
  h.pid = pid;
  if (!here)
    h.host = "another-boot/another-ns";
  h.host_name = "elsewhere";
  return h;
}

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

} // namespace

TEST_SUITE("storage") {

TEST_CASE("single-flight: alone, every key is worked once and no claim is left") {
  TestCache c = open_cache();
  Storage storage(*c.store);
  auto keys = some_keys(20);
  Outcome out;
  std::set<size_t> stored;
  std::mutex mu;
  REQUIRE(single_flight(storage, keys, calls_for(out, stored, mu), quick()));
  CHECK(out.worked.size() == 20);
  CHECK(out.theirs.empty());
  auto left = c.store->claims().read_claims();
  REQUIRE(left);
  CHECK(left->empty());
}

TEST_CASE("single-flight: a key another live holder claims is waited for and found, not "
          "worked; claims are per key, so the rest is worked meanwhile") {
  TestCache c = open_cache();
  Storage storage(*c.store);
  auto keys = some_keys(6);
  ClaimHolder them = other();
  // They hold keys 0 and 1, and beat while they work.
  REQUIRE(c.store->claims().claim(them, {keys[0], keys[1]}, {}));
  Outcome out;
  std::set<size_t> stored;
  std::mutex mu;
  std::atomic<bool> stop{false};
  std::thread holder([&] {
    auto start = Clock::now();
    while (!stop && seconds_since(start) < 0.8) {
      (void)c.store->claims().renew_claims(them.id);
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    // Done: stored, then released.
    {
      std::lock_guard lock(mu);
      stored.insert(0);
      stored.insert(1);
    }
    (void)c.store->claims().release_claims(them.id, {});
  });
  auto start = Clock::now();
  Status s = single_flight(storage, keys, calls_for(out, stored, mu), quick());
  double took = seconds_since(start);
  stop = true;
  holder.join();
  REQUIRE(s);
  CHECK(out.theirs == std::set<size_t>{0, 1});
  CHECK(out.worked == std::set<size_t>{2, 3, 4, 5});
  CHECK(took >= 0.7); // it waited for them
  CHECK(took < 5);
}

TEST_CASE("single-flight: a holder whose process is gone (on this machine) loses its claim at "
          "once; a stalled one (no beat) within a term") {
  TestCache c = open_cache();
  Storage storage(*c.store);
  auto keys = some_keys(2, "gone");
  // A process of this machine that has ended.
  pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0)
    ::_exit(0);
  REQUIRE(::waitpid(child, nullptr, 0) == child);
  ClaimHolder dead = other(true, child);
  CHECK(holder_gone(dead));
  CHECK_FALSE(holder_gone(this_holder()));
  CHECK_FALSE(holder_gone(other(false, child))); // another machine's: never known gone
  REQUIRE(c.store->claims().claim(dead, {keys[0]}, {}));
  // A holder elsewhere that stopped beating.
  ClaimHolder stalled = other();
  REQUIRE(c.store->claims().claim(stalled, {keys[1]}, {}));

  Outcome out;
  std::set<size_t> stored;
  std::mutex mu;
  const auto term = std::chrono::milliseconds(400);
  auto start = Clock::now();
  std::atomic<double> first_worked{0};
  FlightCalls calls = calls_for(out, stored, mu);
  auto work = calls.work;
  calls.work = [&](size_t i) {
    if (i == 0)
      first_worked = seconds_since(start);
    work(i);
  };
  REQUIRE(single_flight(storage, keys, calls, quick(term)));
  double took = seconds_since(start);
  CHECK(out.worked == std::set<size_t>{0, 1});
  CHECK(first_worked.load() < 0.3); // the dead holder's key: no term to wait out
  CHECK(took >= 0.35);              // the stalled one's: a whole term without a beat
  CHECK(took < 0.4 + 2.0);
  auto left = c.store->claims().read_claims();
  REQUIRE(left);
  CHECK(left->empty());
}

TEST_CASE("single-flight: a holder that beats but never finishes is outwaited at the wait "
          "limit, and the waits name it") {
  TestCache c = open_cache();
  Storage storage(*c.store);
  auto keys = some_keys(1, "hung");
  ClaimHolder them = other();
  REQUIRE(c.store->claims().claim(them, keys, {}));
  std::atomic<bool> stop{false};
  std::thread beating([&] {
    while (!stop) {
      (void)c.store->claims().renew_claims(them.id);
      std::this_thread::sleep_for(std::chrono::milliseconds(30));
    }
  });
  Outcome out;
  std::set<size_t> stored;
  std::mutex mu;
  FlightOptions o = quick();
  o.wait_limit = std::chrono::milliseconds(1500);
  auto start = Clock::now();
  Status s = single_flight(storage, keys, calls_for(out, stored, mu), o);
  double took = seconds_since(start);
  stop = true;
  beating.join();
  REQUIRE(s);
  CHECK(out.worked == std::set<size_t>{0});
  CHECK(took >= 1.4);
  CHECK(took < 4);
  REQUIRE_FALSE(out.waits.empty());
  CHECK(out.waits.front() == "pid 4242 on elsewhere");
}

TEST_CASE("single-flight: a cache that cannot take claims (read-only) works every key here") {
  TempDir dir = temp_dir("kiln-unit-sf-ro");
  { auto s = open_store(cache_file(dir)); }
  auto ro = storage::Store::open(cache_file(dir), OpenMode::read_only);
  REQUIRE(ro);
  Storage storage(**ro);
  auto keys = some_keys(3, "ro");
  Outcome out;
  std::set<size_t> stored;
  std::mutex mu;
  REQUIRE(single_flight(storage, keys, calls_for(out, stored, mu), quick()));
  CHECK(out.worked.size() == 3);
}

TEST_CASE("single-flight over Redis: a key another machine leases is waited for and taken when "
          "its lease lapses; a key published meanwhile is found") {
  RedisServer redis;
  if (!redis.running()) {
    MESSAGE("skipped: no redis-server installed");
    return;
  }
  TestCache c = open_cache();
  auto remote = remote::configured(redis.url(), false);
  REQUIRE(remote);
  auto storage = Storage::over(*c.store, remote.take());
  REQUIRE(storage);
  auto keys = some_keys(2, "redis");
  // Another machine leases both: key 0 for 600 ms (then it lapses: that
  // machine died), key 1 for long, published by it after 300 ms.
  const std::string lease0 = (*storage)->remote_key("lease", keys[0].hex());
  const std::string lease1 = (*storage)->remote_key("lease", keys[1].hex());
  CHECK(redis.command("SET " + lease0 + " them NX PX 600").find("OK") != std::string::npos);
  CHECK(redis.command("SET " + lease1 + " them NX PX 60000").find("OK") != std::string::npos);
  Outcome out;
  std::set<size_t> stored;
  std::mutex mu;
  std::thread publisher([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    std::lock_guard lock(mu);
    stored.insert(1);
  });
  auto start = Clock::now();
  Status s = single_flight(**storage, keys, calls_for(out, stored, mu), quick());
  double took = seconds_since(start);
  publisher.join();
  REQUIRE(s);
  CHECK(out.worked == std::set<size_t>{0});
  CHECK(out.theirs == std::set<size_t>{1});
  CHECK(took >= 0.55);
  CHECK(took < 3);
  // Ours was released; theirs is left alone.
  CHECK(redis.command("EXISTS " + lease0).find(":0") != std::string::npos);
  CHECK(redis.command("GET " + lease1).find("them") == std::string::npos); // a bulk reply: "$4"
}

TEST_CASE("single-flight over Redis: a server that is down leaves single-flight to this "
          "machine, with one notice, and every key is worked") {
  RedisServer redis;
  if (!redis.running()) {
    MESSAGE("skipped: no redis-server installed");
    return;
  }
  TestCache c = open_cache();
  auto remote = remote::configured(redis.url("?timeout_ms=200"), false);
  REQUIRE(remote);
  redis.stop();
  auto storage = Storage::over(*c.store, remote.take());
  REQUIRE(storage);
  auto keys = some_keys(4, "down");
  Outcome out;
  std::set<size_t> stored;
  std::mutex mu;
  std::string err = stderr_of([&] {
    REQUIRE(single_flight(**storage, keys, calls_for(out, stored, mu), quick()));
  });
  CHECK(out.worked.size() == 4);
  size_t notices = 0;
  for (size_t at = 0; (at = err.find("remote cache", at)) != std::string::npos; ++at)
    ++notices;
  CHECK(notices == 1);
  CHECK(err.find("continuing with the local cache only") != std::string::npos);
}

TEST_CASE("claims: a takeover succeeds only at the beat the waiter saw") {
  TestCache c = open_cache();
  auto keys = some_keys(1, "cas");
  ClaimHolder them = other(), me = this_holder();
  auto first = c.store->claims().claim(them, keys, {});
  REQUIRE(first);
  REQUIRE(first->at(0).holder.id == them.id);
  ClaimState seen = first->at(0);
  REQUIRE(c.store->claims().renew_claims(them.id)); // they beat after we looked
  auto late = c.store->claims().claim(me, keys, {seen});
  REQUIRE(late);
  CHECK(late->at(0).holder.id == them.id); // still theirs
  CHECK(late->at(0).beat == seen.beat + 1);
  auto now = c.store->claims().claim(me, keys, {late->at(0)});
  REQUIRE(now);
  CHECK(now->at(0).holder.id == me.id);
  CHECK(now->at(0).holder.pid == ::getpid());
}

} // TEST_SUITE
