// TEMPORARY: placeholders so the tree builds while casts are written.
#include "hitbox/collide.h"

namespace hitbox {
CastResult Cast(const Shape&, const Pose&, const Vec3&, const Shape&, const Pose&, const CastSettings&) { return {}; }
CastResult Raycast(const Vec3&, const Vec3&, const Shape&, const Pose&) { return {}; }
}  // namespace hitbox
