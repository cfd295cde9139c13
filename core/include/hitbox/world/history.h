// Lag compensation: the poses of a collider set's recent ticks, and the
// interpolation that places a collider between two ticks.
//
// A ColliderSet records, for each tick, only the colliders that changed in it
// (moved, added, replaced, removed); colliders that did not change in the
// window cost nothing. Queries with `at_tick` run against the world as it was
// at that (real-valued) tick: see ColliderSet and docs in FORMAT.md "Rewind".
#pragma once

#include <cstdint>

#include "hitbox/math/math.h"

namespace hitbox {

/// Ticks a set keeps by default (about one second at 60 Hz).
inline constexpr uint32_t kDefaultHistoryTicks = 64;
/// Largest tick number accepted (ticks are compared with real-valued at_tick,
/// so they must be exact as doubles).
inline constexpr uint64_t kMaxTick = uint64_t{1} << 53;

/// The ticks a set can answer rewound queries for: every real t with
/// oldest <= t <= newest.
struct TickRange {
  uint64_t oldest = 0;
  uint64_t newest = 0;
};

/// Rotation between unit quaternions q0 (s = 0) and q1 (s = 1) on the shorter
/// arc, s in [0, 1]: c = dot(q0, q1) over all four components; when c < 0, q1
/// and c change sign; c > 0.9995: normalize((1 - s) q0 + s q1); else
/// (sin((1 - s) theta) q0 + sin(s theta) q1) / sin(theta), theta = acos(c).
Quat Slerp(const Quat& q0, const Quat& q1, double s);

/// The pose a fraction s in [0, 1] of the way from a to b: position
/// a + s (b - a) per component, rotation Slerp(a, b, s); exactly a when b
/// equals a (a collider that did not move stays where it is).
Pose InterpolatePose(const Pose& a, const Pose& b, double s);

}  // namespace hitbox
