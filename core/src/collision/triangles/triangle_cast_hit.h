// The result of a shape cast against one triangle (internal to hitbox_core).
#pragma once

#include "hitbox/math/math.h"

namespace hitbox {

/// First contact of a shape translating for t in [0, t_max] with one triangle:
/// every triangle cast (closed forms and the GJK cast) answers with it.
struct TriangleCastHit {
  bool hit = false;
  bool started_inside = false;
  /// Fraction in [0, t_max].
  double t = 1.0;
  /// Unit normal from the triangle towards the moving convex.
  Vec3 normal{0, 1, 0};
  /// Contact point on the triangle.
  Vec3 point;
  /// True when the sweep gave up (iteration cap, or no advance possible): t
  /// is then a lower bound, `point` the closest point on the triangle to the
  /// convex at t.
  bool capped = false;
};

}  // namespace hitbox
