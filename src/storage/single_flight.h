// Single-flight: each key's work done once across the processes that share a
// cache file, and across machines that share a remote tier with leases.
//
// A process claims the keys it is about to work on (Claims::claim, one
// transaction for all of them). Those it gets, it works on; for the others it
// waits until their result is stored, polling the claims. A claim belongs to
// a live holder: the holder bumps its beat every quarter of the lease term,
// and a waiter that sees the same beat for a whole term (on its own clock), or
// sees on its own machine that the holder's process is gone, takes the claim
// over and does the work itself. On a remote tier with leases
// (remote::Backend::take_lease), a key claimed here is also leased there
// (SET NX PX, renewed with the beat): a key another machine leases is waited
// for in the remote tier, and taken when its lease lapses.
//
// Nothing waits forever: a waiter whose holder still beats after the wait
// limit does the work itself, and any error in claiming (a read-only cache, a
// busy or damaged file, a remote that fails) only means that this process
// works on the key without waiting for anyone. Claims never fail a request.
#pragma once

#include "storage/records.h"

#include <kiln/result.hpp>

#include <chrono>
#include <functional>
#include <string>
#include <vector>

namespace kiln::storage {

class Storage;

struct FlightOptions {
  unsigned threads = 1; ///< work() calls at once
  /// A holder that has not beaten for this long has lost its claim
  /// ($KILN_CLAIM_LEASE_MS, default 2000).
  std::chrono::milliseconds term{2000};
  /// How often a waiter reads the claims, and asks the remote tier.
  std::chrono::milliseconds poll{20};
  std::chrono::milliseconds remote_poll{100};
  /// A key still held by a live holder after this long is worked on here
  /// too ($KILN_CLAIM_WAIT_S, default 600).
  std::chrono::milliseconds wait_limit{600'000};
  /// False: no claims, every key worked here ($KILN_SINGLE_FLIGHT=0).
  bool enabled = true;
};

/// The options from the environment, for `threads` workers.
FlightOptions flight_options(unsigned threads);

/// A key waited for, for progress: whose it is and for how long.
struct FlightWait {
  size_t index = 0;    ///< into the keys
  std::string holder;  ///< "pid 123 on host" or "another machine (...)"
  double seconds = 0;  ///< waited so far
};

struct FlightCalls {
  /// Whether the key's result is stored (here, or fetched from the remote
  /// tier just now). An error counts as not stored.
  std::function<Result<bool>(size_t index)> ready;
  /// Makes and stores the key's result; on up to `threads` threads at once.
  std::function<void(size_t index)> work;
  /// Another process made the key's result, after `waited_s` seconds.
  std::function<void(size_t index, double waited_s)> theirs;
  /// The keys waited for, about once a second while there are any.
  std::function<void(const std::vector<FlightWait>&)> waiting;
};

/// Works on each of `keys` that no other process is working on, waits for
/// the others (see above), and returns when every key is worked or waited
/// for. Only a worker thread that cannot start is an error.
Status single_flight(Storage& storage, const std::vector<Hash128>& keys, const FlightCalls& calls,
                     const FlightOptions& options);

/// This process as a claim holder, with a new random id.
ClaimHolder this_holder();

/// Whether `holder` is known to be gone: on this machine (same boot and pid
/// namespace), its pid is not running, or runs another process, or is a
/// zombie. Another machine's holder is never known to be gone.
bool holder_gone(const ClaimHolder& holder);

} // namespace kiln::storage
