// Work counted inside one narrow-phase query (internal to hitbox_core): the
// triangles a mesh or heightfield query tests, the children a compound query
// tests. A budgeted batch (world/collider_set_batch.cc) installs a WorkMeter
// on its thread; the surface and compound loops count into a WorkTally, which
// charges the meter every kWorkCheckEvery tests (the batch's max_pair_tests,
// deadline and cancellation checked there) and stops the loop when the meter
// says so. Without a meter (single queries, tools) a tally costs one test of
// a thread-local pointer per query and one increment per test.
#pragma once

#include <cstdint>

namespace hitbox::internal {

/// Tests between two checks of the meter (a few microseconds of work or
/// less: one triangle test is ~0.1-1 us).
inline constexpr uint32_t kWorkCheckEvery = 64;

/// The receiver of counted work: a batch's budget.
class WorkMeter {
 public:
  /// Adds `tests` pair tests; with `poll`, also checks the deadline and the
  /// cancellation. False when the query must stop (the batch is over budget,
  /// past its deadline, cancelled or already stopped).
  virtual bool Charge(uint64_t tests, bool poll) = 0;

 protected:
  ~WorkMeter() = default;
};

namespace work_meter_detail {
/// The meter of the batch query running on this thread, or null.
inline thread_local WorkMeter* current = nullptr;
}  // namespace work_meter_detail

/// Installs `meter` for this thread while in scope (restores the previous one).
class ScopedWorkMeter {
 public:
  explicit ScopedWorkMeter(WorkMeter* meter) : previous_(work_meter_detail::current) {
    work_meter_detail::current = meter;
  }
  ~ScopedWorkMeter() { work_meter_detail::current = previous_; }
  ScopedWorkMeter(const ScopedWorkMeter&) = delete;
  ScopedWorkMeter& operator=(const ScopedWorkMeter&) = delete;

 private:
  WorkMeter* previous_;
};

/// The tests of one narrow-phase query, charged to this thread's meter (if
/// any) every kWorkCheckEvery tests and, for the rest, when it goes out of scope.
class WorkTally {
 public:
  WorkTally() : meter_(work_meter_detail::current) {}
  ~WorkTally() {
    if (meter_ != nullptr && pending_ != 0) meter_->Charge(pending_, false);
  }
  WorkTally(const WorkTally&) = delete;
  WorkTally& operator=(const WorkTally&) = delete;

  /// Counts one test; false when the query must stop now.
  bool Count() {
    if (meter_ == nullptr) return true;
    if (++pending_ < kWorkCheckEvery) return true;
    const bool go = meter_->Charge(pending_, true);
    pending_ = 0;
    return go;
  }

 private:
  WorkMeter* meter_;
  uint32_t pending_ = 0;
};

}  // namespace hitbox::internal
