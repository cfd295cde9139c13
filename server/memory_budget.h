// The memory budgets of hitboxd's calls: the bytes of answers in flight
// (--max-inflight-bytes), of geometry being built (--max-build-bytes), a change
// batch's reservations against them and --max-memory, and the trimmer that
// gives freed heap back to the system.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>

#include "hitbox/status.h"
#include "session.h"

namespace hitbox::server {

/// A server-wide byte budget for the answers of calls in flight (query
/// results and the response messages built from them). Thread-safe.
class InflightMemory {
 public:
  explicit InflightMemory(uint64_t cap) : cap_(cap) {}
  /// Takes `bytes` if they fit under the cap; false (nothing taken) otherwise.
  bool TryTake(uint64_t bytes);
  void Give(uint64_t bytes) { used_.fetch_sub(bytes, std::memory_order_relaxed); }
  uint64_t used() const { return used_.load(std::memory_order_relaxed); }
  uint64_t cap() const { return cap_; }

 private:
  const uint64_t cap_;
  std::atomic<uint64_t> used_{0};
};

/// Bytes one call holds of an InflightMemory, given back when it is reset or
/// destroyed (so an early return can never leak budget).
class MemoryReservation {
 public:
  MemoryReservation() = default;
  explicit MemoryReservation(InflightMemory* pool) : pool_(pool) {}
  MemoryReservation(const MemoryReservation&) = delete;
  MemoryReservation& operator=(const MemoryReservation&) = delete;
  ~MemoryReservation() { Reset(); }
  /// Holds `bytes` in total from now on (taking or giving back the
  /// difference); false when growing would pass the cap (nothing changes).
  bool Resize(uint64_t bytes);
  void Reset() { Resize(0); }
  uint64_t bytes() const { return bytes_; }
  void set_pool(InflightMemory* pool) { pool_ = pool; }

 private:
  InflightMemory* pool_ = nullptr;
  uint64_t bytes_ = 0;
};

/// Heap bytes freed at once from which hitboxd asks for a trim (MemoryTrimmer).
inline constexpr uint64_t kTrimThresholdBytes = 1ull << 20;

/// What a change batch holds between its pricing and its application
/// (SessionTxn::Prepare): its growth reserved against --max-memory
/// (settled by ApplyLocked) and its priced geometry in the build budget
/// (--max-build-bytes). Whatever is still held is given back when it is
/// destroyed, so a refused or failed batch can never leak either.
class BatchReservation {
 public:
  BatchReservation(SessionRegistry* sessions, InflightMemory* build_pool)
      : building(build_pool), sessions_(sessions) {}
  BatchReservation(const BatchReservation&) = delete;
  BatchReservation& operator=(const BatchReservation&) = delete;
  ~BatchReservation() { ReleaseMemory(); }
  /// Gives back the --max-memory reservation still held.
  void ReleaseMemory() {
    if (memory > 0) sessions_->ReleaseMemory(memory);
    memory = 0;
  }

  /// The build budget's share (the priced shape bytes), held until the
  /// batch is applied or refused.
  MemoryReservation building;
  /// The batch was priced (its shapes need a build): `memory` is its growth
  /// estimate, reserved; ApplyLocked settles it instead of estimating again.
  bool priced = false;
  /// Bytes reserved against --max-memory, not yet settled.
  uint64_t memory = 0;
  /// The priced bytes of its shapes (Shape::DataBytes once built).
  uint64_t shape_bytes = 0;
  /// About the bytes its parsed request holds in meshes and heightfields
  /// (freed after the call, refused or not: a reason to trim).
  uint64_t request_bytes = 0;
  /// Whether the call's end should ask for a trim (MemoryTrimmer).
  bool WorthTrimming() const;

 private:
  SessionRegistry* sessions_;
};

/// Has blocks of 1 MiB and more mapped on their own, so that they go back to
/// the system as soon as they are freed (glibc's malloc fixed at that mmap
/// threshold; by default it raises the threshold after each big free, and
/// later big arrays, such as a map load's transient ones, then come from the
/// heap, whose freed holes stay resident until trimmed). hitboxd calls it
/// at start unless --no-malloc-trim.
void MapLargeBlocks();

/// Gives freed heap memory back to the system after big frees (a session
/// deleted or expired, a big batch applied or refused, a map dropped):
/// glibc keeps freed memory in its arenas until trimmed, so without it RSS
/// only grows. Requests are served on a thread of its own, `delay` after the
/// first request (so the call that asked has freed its messages too) and at
/// most once per `delay`. Disabled: Request does nothing.
class MemoryTrimmer {
 public:
  MemoryTrimmer(bool enabled, std::chrono::milliseconds delay);
  ~MemoryTrimmer();
  MemoryTrimmer(const MemoryTrimmer&) = delete;
  MemoryTrimmer& operator=(const MemoryTrimmer&) = delete;
  /// Asks for a trim soon (cheap; never blocks on a trim in progress).
  void Request();
  /// Trims now on the calling thread (tests, benchmarks).
  static void TrimNow();
  /// Trims done so far.
  uint64_t trims() const { return trims_.load(std::memory_order_relaxed); }
  bool enabled() const { return enabled_; }

 private:
  void Loop();
  const bool enabled_;
  const std::chrono::milliseconds delay_;
  std::atomic<uint64_t> trims_{0};
  std::mutex mu_;
  std::condition_variable cv_;
  bool requested_ = false;  // guarded by mu_
  bool stop_ = false;       // guarded by mu_
  std::thread thread_;
};

/// RESOURCE_EXHAUSTED: the answers in flight are full; "<field>: ... <needs>
/// <bytes> more: <advice>".
Status AnswerMemoryFull(const InflightMemory& answers, const std::string& field,
                        const std::string& needs, uint64_t bytes, const char* advice);

}  // namespace hitbox::server
