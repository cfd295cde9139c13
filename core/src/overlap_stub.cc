// TEMPORARY: placeholders so the tree builds while the narrow phase is written.
// Replaced by the real overlap / contact / distance sources.
#include "hitbox/collide.h"

namespace hitbox {
bool Overlap(const Shape&, const Pose&, const Shape&, const Pose&) { return false; }
bool ComputeContact(const Shape&, const Pose&, const Shape&, const Pose&, Contact*) { return false; }
DistanceResult ComputeDistance(const Shape&, const Pose&, const Shape&, const Pose&) { return {}; }
}  // namespace hitbox
