// TEMPORARY: placeholders so the tree builds while the narrow phase is written.
// Replaced by overlap.cc / contact.cc / distance.cc / cast.cc.
#include "hitbox/collide.h"

namespace hitbox {
bool Overlap(const Shape&, const Pose&, const Shape&, const Pose&) { return false; }
bool ComputeContact(const Shape&, const Pose&, const Shape&, const Pose&, Contact*) { return false; }
DistanceResult ComputeDistance(const Shape&, const Pose&, const Shape&, const Pose&) { return {}; }
CastResult Cast(const Shape&, const Pose&, const Vec3&, const Shape&, const Pose&, const CastSettings&) { return {}; }
CastResult Raycast(const Vec3&, const Vec3&, const Shape&, const Pose&) { return {}; }
}  // namespace hitbox
