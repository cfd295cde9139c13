// A history track's pose samples, oldest first, in a ring: the window's
// prune drops the oldest without moving the others (a vector's front erase
// moved a window of samples a track a tick), and a sample a tick is added
// at the back without allocating once the ring has grown to the window.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "hitbox/math/math.h"

namespace hitbox::internal {

/// A collider's pose after the changes of tick `tick` (kept until the next sample).
struct PoseSample {
  uint64_t tick = 0;
  Pose pose;
};

class PoseSamples {
 public:
  size_t size() const { return count_; }
  size_t capacity() const { return ring_.size(); }
  /// Sample i, 0 the oldest.
  const PoseSample& operator[](size_t i) const { return ring_[Slot(i)]; }
  PoseSample& back() { return ring_[Slot(count_ - 1)]; }
  const PoseSample& back() const { return ring_[Slot(count_ - 1)]; }

  /// Holds only `s`.
  void Reset(const PoseSample& s) {
    if (ring_.empty()) ring_.resize(1);
    first_ = 0;
    count_ = 1;
    ring_[0] = s;
  }
  void PushBack(const PoseSample& s) {
    if (count_ == ring_.size()) Grow();
    ring_[Slot(count_)] = s;
    ++count_;
  }
  void PopBack() { --count_; }
  /// Drops the `n` oldest samples (n <= size()).
  void DropFront(size_t n) {
    first_ = static_cast<uint32_t>(Slot(n));
    count_ -= static_cast<uint32_t>(n);
  }
  /// The number of samples whose tick is at most `tick` (they come first).
  size_t CountAtOrBefore(uint64_t tick) const {
    size_t lo = 0, hi = count_;
    while (lo < hi) {
      const size_t mid = lo + (hi - lo) / 2;
      if ((*this)[mid].tick <= tick) {
        lo = mid + 1;
      } else {
        hi = mid;
      }
    }
    return lo;
  }

 private:
  size_t Slot(size_t i) const {
    const size_t s = first_ + i;
    return s >= ring_.size() ? s - ring_.size() : s;
  }
  // Unrolled into a larger ring, oldest at slot 0 (the growth of a vector).
  void Grow() {
    std::vector<PoseSample> bigger(std::max<size_t>(4, ring_.size() + ring_.size() / 2));
    for (size_t i = 0; i < count_; ++i) bigger[i] = (*this)[i];
    ring_.swap(bigger);
    first_ = 0;
  }

  std::vector<PoseSample> ring_;  // every slot a sample; the live ones from first_
  uint32_t first_ = 0;
  uint32_t count_ = 0;
};

}  // namespace hitbox::internal
