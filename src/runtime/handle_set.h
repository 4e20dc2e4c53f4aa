// The set of one C handle type's live handles, so that the C APIs can answer
// a closed, released or never-made handle with an error instead of using it.
// A pointer that was never a handle may point anywhere (0x1234, a stack
// buffer of garbage), so the set is asked about the pointer's value alone:
// nothing is ever read through it.
//
// Lookups take no lock and write nothing, so every call that takes a handle
// (kiln_image_lookup from many threads at once included) pays a few loads of
// a table that no lookup makes contended. Adding and removing take a mutex.
// The table is linear-probed, fixed in size and never moved, so a lookup
// cannot race with a rehash: a handle removed leaves a tombstone, which a
// later add reuses and which is cleared as soon as no probe path runs over
// it. A table whose slots are three quarters in use sends further handles
// to a locked overflow set, which a lookup consults only when it is not
// empty and the table did not have the pointer.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <unordered_set>

namespace kiln::runtime {

template <size_t kSlots> class HandleSet {
  static_assert(kSlots >= 8 && (kSlots & (kSlots - 1)) == 0, "a power of two");

public:
  constexpr HandleSet() = default;
  HandleSet(const HandleSet&) = delete;
  HandleSet& operator=(const HandleSet&) = delete;

  /// Whether `p` is a live handle. Reads nothing through `p`.
  bool contains(const void* p) const {
    uintptr_t v = reinterpret_cast<uintptr_t>(p);
    if (v <= kTombstone)
      return false;
    for (size_t i = home(v), n = 0; n < kSlots; i = next(i), ++n) {
      uintptr_t s = slots_[i].load(std::memory_order_acquire);
      if (s == v)
        return true;
      if (s == kEmpty)
        break;
    }
    if (overflow_count_.load(std::memory_order_acquire) == 0) [[likely]]
      return false;
    std::lock_guard lock(mu_);
    return overflow_ && overflow_->count(v) != 0;
  }

  /// Adds a handle that has just been made. Throws std::bad_alloc if the
  /// overflow set cannot grow.
  void add(const void* p) {
    uintptr_t v = reinterpret_cast<uintptr_t>(p);
    std::lock_guard lock(mu_);
    size_t i = home(v);
    for (size_t n = 0; n < kSlots; i = next(i), ++n) {
      uintptr_t s = slots_[i].load(std::memory_order_relaxed);
      if (s == kTombstone)
        break;
      if (s == kEmpty) {
        if ((used_ + 1) * 4 > kSlots * 3)
          return add_overflow(v);
        ++used_;
        break;
      }
    }
    // Every slot from home to i is in use, so a lookup of v reaches i.
    slots_[i].store(v, std::memory_order_release);
  }

  /// Removes `p` if it is a live handle: true if it was (the caller now
  /// owns its end), false if it was not (closed already, or never made).
  /// Of two threads removing the same handle, one gets true.
  bool take(const void* p) {
    uintptr_t v = reinterpret_cast<uintptr_t>(p);
    if (v <= kTombstone)
      return false;
    std::lock_guard lock(mu_);
    for (size_t i = home(v), n = 0; n < kSlots; i = next(i), ++n) {
      uintptr_t s = slots_[i].load(std::memory_order_relaxed);
      if (s == v) {
        slots_[i].store(kTombstone, std::memory_order_release);
        clear_tombstones(i);
        return true;
      }
      if (s == kEmpty)
        break;
    }
    if (!overflow_ || !overflow_->erase(v))
      return false;
    overflow_count_.fetch_sub(1, std::memory_order_release);
    return true;
  }

private:
  static constexpr uintptr_t kEmpty = 0;
  // Handles are aligned objects: no handle lives at address 1.
  static constexpr uintptr_t kTombstone = 1;

  static size_t home(uintptr_t v) {
    // Fibonacci hashing of the address without its alignment bits.
    return size_t(((v >> 4) * 0x9E3779B97F4A7C15ull) >> 32) & (kSlots - 1);
  }
  static size_t next(size_t i) { return (i + 1) & (kSlots - 1); }
  static size_t prev(size_t i) { return (i - 1) & (kSlots - 1); }

  // A tombstone followed by an empty slot lies on no live handle's probe
  // path (that path would go on through the next slot, which is empty), so
  // it can become empty again, and so can the tombstones before it.
  void clear_tombstones(size_t i) {
    while (slots_[i].load(std::memory_order_relaxed) == kTombstone &&
           slots_[next(i)].load(std::memory_order_relaxed) == kEmpty) {
      slots_[i].store(kEmpty, std::memory_order_release);
      --used_;
      i = prev(i);
    }
  }

  void add_overflow(uintptr_t v) {
    if (!overflow_)
      overflow_ = std::make_unique<std::unordered_set<uintptr_t>>();
    overflow_->insert(v);
    overflow_count_.fetch_add(1, std::memory_order_release);
  }

  std::atomic<uintptr_t> slots_[kSlots] = {};
  mutable std::mutex mu_;
  size_t used_ = 0; ///< slots that are not empty (handles and tombstones); under mu_
  std::unique_ptr<std::unordered_set<uintptr_t>> overflow_; ///< under mu_
  std::atomic<size_t> overflow_count_{0};
};

} // namespace kiln::runtime
