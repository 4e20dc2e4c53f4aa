// Single-flight over the claims of a cache file and the leases of a remote
// tier (storage/single_flight.h).
#include "storage/single_flight.h"

#include "storage/storage.h"
#include "support/fault.h"

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <sstream>
#include <system_error>
#include <thread>
#include <unistd.h>

#include <sys/random.h>
#include <sys/stat.h>

namespace kiln::storage {

namespace {

using Clock = std::chrono::steady_clock;

int64_t env_number(const char* name, int64_t fallback, int64_t least) {
  const char* v = std::getenv(name);
  if (!v || !*v)
    return fallback;
  char* end = nullptr;
  errno = 0;
  long long n = std::strtoll(v, &end, 10);
  if (errno || *end || n < least)
    return fallback;
  return n;
}

// The start time of process `pid` (clock ticks after boot, field 22 of
// /proc/PID/stat), and whether it is a zombie; nullopt if there is none.
std::optional<std::pair<int64_t, bool>> process_start(int64_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!f || !std::getline(f, line))
    return std::nullopt;
  // The command name, in parentheses, may hold anything: fields are
  // counted after its last ')'.
  size_t close = line.rfind(')');
  if (close == std::string::npos)
    return std::nullopt;
  std::istringstream rest(line.substr(close + 1));
  std::string state;
  rest >> state; // field 3
  std::string field;
  for (int i = 4; i <= 22 && rest >> field; ++i)
    if (i == 22)
      return std::make_pair(int64_t(std::strtoll(field.c_str(), nullptr, 10)), state == "Z");
  return std::nullopt;
}

std::string this_host() {
  // One machine: one boot, one pid namespace (a pid means the same process).
  std::string boot;
  std::ifstream b("/proc/sys/kernel/random/boot_id");
  std::getline(b, boot);
  struct stat ns {};
  std::string pid_ns =
      ::stat("/proc/self/ns/pid", &ns) == 0 ? std::to_string(uint64_t(ns.st_ino)) : "?";
  return boot + "/" + pid_ns;
}

std::string describe_holder(const ClaimHolder& h) {
  return "pid " + std::to_string(h.pid) + " on " + (h.host_name.empty() ? "?" : h.host_name);
}

// One key on its way.
enum class Phase {
  pending,      ///< not claimed yet
  queued,       ///< to work on here
  running,      ///< being worked on here
  local_wait,   ///< claimed by another process on this cache
  remote_wait,  ///< leased by another machine
  done,
};

struct Key {
  Phase phase = Phase::pending;
  bool claimed = false; ///< we hold its local claim
  bool leased = false;  ///< we hold its remote lease
  ClaimState seen;      ///< local_wait: the claim as last read
  Clock::time_point seen_at;     ///< when `seen`'s beat was first seen
  Clock::time_point wait_started;
};

class Flight {
public:
  Flight(Storage& storage, const std::vector<Hash128>& keys, const FlightCalls& calls,
         const FlightOptions& options)
      : storage_(storage), records_(storage.records()), keys_(keys), calls_(calls),
        options_(options), me_(this_holder()), state_(keys.size()) {}

  Status run() {
    start();
    std::vector<std::thread> pool;
    std::optional<Error> no_thread;
    const unsigned threads =
        std::max(1u, std::min<unsigned>(options_.threads, unsigned(keys_.size())));
    // A thread that cannot start (no memory, a thread limit) fails the run;
    // the workers already started finish their current key and stop.
    for (unsigned w = 0; w < threads && !no_thread; ++w) {
      try {
        if (fault::hit("thread-start"))
          throw std::system_error(std::make_error_code(std::errc::resource_unavailable_try_again),
                                  fault::message("thread-start"));
        pool.emplace_back([this] { work_loop(); });
      } catch (const std::exception& e) {
        no_thread = make_error(Code::internal, "cannot start compile worker " +
                                                   std::to_string(w + 1) + " of " +
                                                   std::to_string(threads) + ": " + e.what());
        std::lock_guard lock(mu_);
        queue_.clear();
        pending_.clear();
        finished_ = true;
      }
    }
    // The beat has a thread of its own, so that a slow poll (a remote fetch)
    // never lets this process's claims lapse; without one, the watcher beats.
    std::thread beat;
    if (!no_thread && options_.enabled && !keys_.empty()) {
      try {
        beat = std::thread([this] { beat_loop(); });
      } catch (const std::exception&) {
        beat_in_watch_ = true;
      }
    }
    if (!no_thread)
      watch();
    {
      std::lock_guard lock(mu_);
      finished_ = true;
    }
    work_cv_.notify_all();
    beat_cv_.notify_all();
    for (std::thread& t : pool)
      t.join();
    if (beat.joinable())
      beat.join();
    if (any_claimed_)
      (void)records_.claims().release_claims(me_.id, {});
    if (no_thread)
      return *no_thread;
    return Status::ok();
  }

private:
  // Keys are claimed a batch at a time, as this process's workers need
  // work (claim_batch): processes that start together on one unit share
  // its keys, each compiling a part, instead of the first claiming all.
  void start() {
    const Clock::time_point now = Clock::now();
    for (size_t i = 0; i < keys_.size(); ++i) {
      state_[i].wait_started = state_[i].seen_at = now;
      state_[i].phase = Phase::pending;
      pending_.push_back(i);
    }
    if (!options_.enabled) {
      for (size_t i : pending_)
        state_[i].phase = Phase::queued;
      queue_.swap(pending_);
    }
    leasing_ = options_.enabled && storage_.leases().available();
  }

  // Claims the next keys; those another process holds are waited for.
  // Called by one worker at a time, without mu_ held.
  void claim_batch(const std::vector<size_t>& all) {
    // What another process stored since this one looked is done: no claim.
    std::vector<size_t> batch;
    std::vector<Hash128> keys;
    for (size_t i : all)
      if (!stored(i, Clock::now())) {
        batch.push_back(i);
        keys.push_back(keys_[i]);
      }
    if (batch.empty())
      return;
    auto claims = records_.claims().claim(me_, keys, {});
    std::vector<Hash128> release;
    for (size_t n = 0; n < batch.size(); ++n) {
      size_t i = batch[n];
      if (!claims) {
        enqueue(i); // no claims here (read-only, busy): work on it
        continue;
      }
      const ClaimState& c = (*claims)[n];
      if (c.held && c.holder.id != me_.id) {
        std::lock_guard lock(mu_);
        state_[i].phase = Phase::local_wait;
        state_[i].seen = c;
        state_[i].seen_at = state_[i].wait_started = Clock::now();
        continue;
      }
      {
        std::lock_guard lock(mu_);
        state_[i].claimed = c.held;
        any_claimed_ = any_claimed_ || c.held;
      }
      // Another process may have stored it since this one looked (and let
      // go of its claim): then there is nothing to do.
      if (c.held && stored(i, Clock::now())) {
        release.push_back(keys_[i]);
        std::lock_guard lock(mu_);
        state_[i].claimed = false;
        continue;
      }
      lease_or_wait(i);
    }
    if (!release.empty())
      (void)records_.claims().release_claims(me_.id, release);
    watch_cv_.notify_one();
  }

  /// How many keys a worker claims at once: a larger batch while many are
  /// left (fewer transactions), down to one per worker near the end (the
  /// last keys spread over the processes).
  size_t batch_size() const {
    const size_t least = std::min<size_t>(std::max(1u, options_.threads), 32);
    return std::clamp<size_t>(pending_.size() / 8, least, 32);
  }

  // A key claimed here: leased in the remote tier too, or waited for there.
  // Called without mu_ held (from start() or the watcher).
  void lease_or_wait(size_t i) {
    if (leasing_) {
      std::optional<bool> taken = storage_.leases().take(keys_[i], me_.id, options_.term);
      if (taken && !*taken) {
        std::lock_guard lock(mu_);
        state_[i].phase = Phase::remote_wait;
        state_[i].wait_started = Clock::now();
        return;
      }
      if (!taken)
        leasing_ = false; // the remote failed (its one notice is given)
      std::lock_guard lock(mu_);
      state_[i].leased = taken.value_or(false);
    }
    enqueue(i);
  }

  void enqueue(size_t i) {
    {
      std::lock_guard lock(mu_);
      state_[i].phase = Phase::queued;
      queue_.push_back(i);
    }
    work_cv_.notify_one();
  }

  void work_loop() {
    for (;;) {
      size_t i;
      {
        std::unique_lock lock(mu_);
        work_cv_.wait(lock, [&] {
          return finished_ || !queue_.empty() || (!pending_.empty() && !claiming_);
        });
        if (queue_.empty() && !pending_.empty() && !claiming_) {
          claiming_ = true;
          std::vector<size_t> batch;
          for (size_t n = batch_size(); n-- && !pending_.empty();) {
            batch.push_back(pending_.front());
            pending_.pop_front();
          }
          lock.unlock();
          claim_batch(batch);
          lock.lock();
          claiming_ = false;
          work_cv_.notify_all();
          continue;
        }
        if (queue_.empty())
          return;
        i = queue_.front();
        queue_.pop_front();
        state_[i].phase = Phase::running;
      }
      calls_.work(i);
      // The result is stored: the claim and lease go, and a waiter finds it.
      if (state_[i].claimed)
        (void)records_.claims().release_claims(me_.id, {keys_[i]});
      if (state_[i].leased)
        storage_.leases().release(keys_[i], me_.id);
      {
        std::lock_guard lock(mu_);
        state_[i].phase = Phase::done;
        state_[i].claimed = state_[i].leased = false;
      }
      watch_cv_.notify_one();
    }
  }

  // Every quarter term: this process's claims and leases are renewed.
  void beat_loop() {
    std::unique_lock lock(mu_);
    while (!finished_) {
      beat_cv_.wait_for(lock, options_.term / 4);
      if (finished_)
        return;
      lock.unlock();
      renew();
      lock.lock();
    }
  }

  void renew() {
    std::vector<Hash128> leased;
    {
      std::lock_guard lock(mu_);
      for (size_t i = 0; i < state_.size(); ++i)
        if (state_[i].leased)
          leased.push_back(keys_[i]);
    }
    (void)records_.claims().renew_claims(me_.id);
    if (!leased.empty())
      (void)storage_.leases().renew(leased, me_.id, options_.term);
  }

  bool all_done() {
    for (const Key& k : state_)
      if (k.phase != Phase::done)
        return false;
    return true;
  }

  // The polling thread: renews this process's claims and leases, settles
  // the keys waited for, and reports the waits.
  void watch() {
    Clock::time_point last_beat = Clock::now(), last_remote{}, last_report = Clock::now();
    for (;;) {
      std::vector<size_t> local, remote;
      {
        std::unique_lock lock(mu_);
        if (all_done())
          return;
        watch_cv_.wait_for(lock, options_.poll);
        if (all_done())
          return;
        for (size_t i = 0; i < state_.size(); ++i) {
          if (state_[i].phase == Phase::local_wait)
            local.push_back(i);
          else if (state_[i].phase == Phase::remote_wait)
            remote.push_back(i);
        }
      }
      const Clock::time_point now = Clock::now();
      if (beat_in_watch_ && now - last_beat >= options_.term / 4) {
        last_beat = now;
        renew();
      }
      if (!local.empty())
        settle_local(local, now);
      if (!remote.empty() && now - last_remote >= options_.remote_poll) {
        last_remote = now;
        settle_remote(remote, now);
      }
      if ((!local.empty() || !remote.empty()) && calls_.waiting &&
          now - last_report >= std::chrono::seconds(1)) {
        last_report = now;
        report_waits(now);
      }
    }
  }

  // Done once stored; else claimed here once its holder let go of it, died,
  // stalled or outlasted the wait limit.
  void settle_local(const std::vector<size_t>& waiting, Clock::time_point now) {
    auto claims = records_.claims().read_claims();
    if (!claims) {
      for (size_t i : waiting)
        enqueue(i); // the claims cannot be read: work on it here
      return;
    }
    std::map<Hash128, const ClaimState*> held;
    for (const ClaimState& c : *claims)
      held[c.key] = &c;
    std::vector<Hash128> ask;
    std::vector<size_t> asked;
    std::vector<ClaimState> lapsed;
    for (size_t i : waiting) {
      Key& k = state_[i];
      auto it = held.find(keys_[i]);
      if (it == held.end()) {
        if (stored(i, now))
          continue;
        ask.push_back(keys_[i]);
        asked.push_back(i);
        continue;
      }
      const ClaimState& c = *it->second;
      if (c.holder.id != k.seen.holder.id || c.beat != k.seen.beat) {
        k.seen = c;
        k.seen_at = now;
      }
      if (now - k.wait_started >= options_.wait_limit) {
        // Alive, but past the wait limit: worked on here as well, unclaimed.
        enqueue(i);
        continue;
      }
      if (now - k.seen_at >= options_.term || holder_gone(c.holder)) {
        lapsed.push_back(c);
        ask.push_back(keys_[i]);
        asked.push_back(i);
      }
    }
    if (ask.empty())
      return;
    auto got = records_.claims().claim(me_, ask, lapsed);
    for (size_t n = 0; n < asked.size(); ++n) {
      size_t i = asked[n];
      if (!got) {
        enqueue(i);
        continue;
      }
      const ClaimState& c = (*got)[n];
      if (!c.held || c.holder.id != me_.id) {
        if (c.held) {
          state_[i].seen = c; // another waiter took it first
          state_[i].seen_at = now;
        }
        continue;
      }
      state_[i].claimed = true;
      any_claimed_ = true;
      // Stored between the read and the claim: nothing to do.
      if (stored(i, now)) {
        (void)records_.claims().release_claims(me_.id, {keys_[i]});
        state_[i].claimed = false;
        continue;
      }
      lease_or_wait(i);
    }
  }

  // Done once fetched; else leased here once the other machine's lease is
  // gone. The local claim is kept meanwhile: this machine's other processes
  // wait for this one, which fetches the result for them.
  void settle_remote(const std::vector<size_t>& waiting, Clock::time_point now) {
    for (size_t i : waiting) {
      if (stored(i, now)) {
        if (state_[i].claimed)
          (void)records_.claims().release_claims(me_.id, {keys_[i]});
        std::lock_guard lock(mu_);
        state_[i].claimed = false;
        continue;
      }
      std::optional<bool> taken = now - state_[i].wait_started >= options_.wait_limit
                                      ? std::optional<bool>()
                                      : storage_.leases().take(keys_[i], me_.id, options_.term);
      if (taken && !*taken)
        continue;
      {
        std::lock_guard lock(mu_);
        state_[i].leased = taken.value_or(false);
      }
      if (taken && stored(i, now)) { // published just before its lease went
        storage_.leases().release(keys_[i], me_.id);
        if (state_[i].claimed)
          (void)records_.claims().release_claims(me_.id, {keys_[i]});
        std::lock_guard lock(mu_);
        state_[i].claimed = state_[i].leased = false;
        continue;
      }
      enqueue(i);
    }
  }

  // Whether key i's result is stored; if so it is another's, and done.
  bool stored(size_t i, Clock::time_point now) {
    auto r = calls_.ready(i);
    if (!r || !*r)
      return false;
    double waited = std::chrono::duration<double>(now - state_[i].wait_started).count();
    calls_.theirs(i, waited);
    std::lock_guard lock(mu_);
    state_[i].phase = Phase::done;
    return true;
  }

  void report_waits(Clock::time_point now) {
    std::vector<FlightWait> waits;
    {
      std::lock_guard lock(mu_);
      for (size_t i = 0; i < state_.size(); ++i) {
        const Key& k = state_[i];
        if (k.phase != Phase::local_wait && k.phase != Phase::remote_wait)
          continue;
        FlightWait w;
        w.index = i;
        w.holder = k.phase == Phase::local_wait
                       ? describe_holder(k.seen.holder)
                       : "another machine (its lease in the shared tier)";
        w.seconds = std::chrono::duration<double>(now - k.wait_started).count();
        waits.push_back(std::move(w));
      }
    }
    if (!waits.empty())
      calls_.waiting(waits);
  }

  Storage& storage_;
  Records& records_;
  const std::vector<Hash128>& keys_;
  const FlightCalls& calls_;
  const FlightOptions options_;
  const ClaimHolder me_;
  std::vector<Key> state_;
  std::deque<size_t> queue_;
  std::deque<size_t> pending_; ///< keys not claimed yet, in order
  bool claiming_ = false;      ///< a worker is in claim_batch
  std::mutex mu_; ///< guards state_'s phases, queue_, finished_
  std::condition_variable work_cv_, watch_cv_, beat_cv_;
  bool finished_ = false;
  bool beat_in_watch_ = false;
  bool leasing_ = false;
  bool any_claimed_ = false;
};

} // namespace

FlightOptions flight_options(unsigned threads) {
  FlightOptions o;
  o.threads = std::max(1u, threads);
  o.term = std::chrono::milliseconds(env_number("KILN_CLAIM_LEASE_MS", 2000, 100));
  o.wait_limit = std::chrono::milliseconds(env_number("KILN_CLAIM_WAIT_S", 600, 1) * 1000);
  const char* sf = std::getenv("KILN_SINGLE_FLIGHT");
  o.enabled = !(sf && (std::string(sf) == "0" || std::string(sf) == "off"));
  return o;
}

ClaimHolder this_holder() {
  ClaimHolder h;
  unsigned char bytes[16] = {};
  if (::getrandom(bytes, sizeof bytes, 0) != ssize_t(sizeof bytes)) {
    // No entropy: the pid and the time still tell this run from others.
    auto t = Clock::now().time_since_epoch().count();
    for (size_t i = 0; i < sizeof bytes; ++i)
      bytes[i] = static_cast<unsigned char>((i < 8 ? t >> (8 * i) : ::getpid() >> (8 * (i - 8))));
  }
  static const char* hex = "0123456789abcdef";
  for (unsigned char b : bytes) {
    h.id += hex[b >> 4];
    h.id += hex[b & 15];
  }
  h.host = this_host();
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) == 0)
    h.host_name = name;
  h.pid = ::getpid();
  if (auto s = process_start(h.pid))
    h.pid_start = s->first;
  return h;
}

bool holder_gone(const ClaimHolder& holder) {
  static const std::string host = this_host();
  if (holder.host != host || holder.pid <= 0)
    return false;
  auto s = process_start(holder.pid);
  return !s || s->first != holder.pid_start || s->second;
}

Status single_flight(Storage& storage, const std::vector<Hash128>& keys, const FlightCalls& calls,
                     const FlightOptions& options) {
  return Flight(storage, keys, calls, options).run();
}

} // namespace kiln::storage
