// PoseSamples: a history track's samples in a ring behave as a vector that
// drops its oldest entries, whatever the ring's wrap and growth.
#include "world/pose_samples.h"

#include <gtest/gtest.h>

#include <deque>
#include <random>

namespace hitbox::internal {
namespace {

PoseSample At(uint64_t tick) { return PoseSample{tick, Pose(Vec3{double(tick), 0.0, 1.0})}; }

void ExpectSame(const PoseSamples& got, const std::deque<PoseSample>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(got[i].tick, want[i].tick) << i;
    EXPECT_EQ(got[i].pose.position, want[i].pose.position) << i;
  }
}

// Random pushes, pops, drops at the front and resets against a deque: the
// same samples in the same order, and CountAtOrBefore their upper bound.
TEST(PoseSamples, BehavesAsADequeOfAscendingTicks) {
  std::mt19937_64 rng(5);
  PoseSamples got;
  std::deque<PoseSample> want;
  uint64_t tick = 10;
  got.Reset(At(tick));
  want.push_back(At(tick));
  for (int step = 0; step < 20000; ++step) {
    const int op = static_cast<int>(rng() % 10);
    if (op < 5) {
      tick += 1 + rng() % 3;
      got.PushBack(At(tick));
      want.push_back(At(tick));
    } else if (op < 8 && want.size() > 1) {
      const size_t n = rng() % want.size();
      got.DropFront(n);
      want.erase(want.begin(), want.begin() + static_cast<std::ptrdiff_t>(n));
    } else if (op == 8 && want.size() > 1) {
      got.PopBack();
      want.pop_back();
    } else if (op == 9 && rng() % 50 == 0) {
      got.Reset(At(++tick));
      want.assign(1, At(tick));
    }
    if (step % 97 == 0) ExpectSame(got, want);
    const uint64_t probe =
        want.front().tick - 1 + rng() % (want.back().tick - want.front().tick + 3);
    size_t count = 0;
    while (count < want.size() && want[count].tick <= probe) ++count;
    ASSERT_EQ(got.CountAtOrBefore(probe), count) << "step " << step;
    ASSERT_EQ(got.back().tick, want.back().tick);
  }
  ExpectSame(got, want);
}

// A window of samples a tick (push one, drop the oldest) stays in the ring
// it grew to: no growth once it holds the window, the oldest kept in order.
TEST(PoseSamples, ASlidingWindowKeepsItsRing) {
  PoseSamples s;
  s.Reset(At(0));
  for (uint64_t t = 1; t <= 64; ++t) s.PushBack(At(t));
  s.PushBack(At(65));
  s.DropFront(1);
  const size_t ring = s.capacity();
  for (uint64_t t = 66; t < 1000; ++t) {
    s.PushBack(At(t));
    s.DropFront(1);
    ASSERT_EQ(s.size(), 65u);
    ASSERT_EQ(s[0].tick, t - 64);
    ASSERT_EQ(s.back().tick, t);
  }
  EXPECT_EQ(s.capacity(), ring);
}

}  // namespace
}  // namespace hitbox::internal
