// The penetration of a cylinder core into a triangle in closed form, where
// EPA approaches the cylinder's curved side and rims only linearly: the
// least support of their Minkowski difference over the directions where its
// nearest boundary point can lie, each pair of boundary features' critical
// points.
#pragma once

#include "collision/triangles/cylinder_triangle.h"
#include "collision/triangles/triangle_epa.h"
#include "hitbox/math/math.h"

namespace hitbox {

/// The penetration of cylinder `cyl` into triangle `tri` (surface frame) as
/// TriangleConvexEpa gives it (depth, the normal that pushes the cylinder
/// out, the deepest point of each), exact to rounding: the least support
/// h(n) of cylinder - triangle over the unit directions n where a pair of
/// boundary features has a point nearest the origin (cap, face, side x edge,
/// side x vertex, rim x vertex, and rim x edge: along the edge, a quartic's
/// roots and turning points). False, leaving the pair to EPA, when the cores
/// overlap by at most 1e-9 * scale, for a sliver, for a vertex or an edge
/// within 1e-6 * scale of the axis (its rim direction ill-conditioned), for
/// a contact whose points are not unique (a cap or the side flat against
/// the triangle, an edge or the face flat against a cap), and where the
/// points found do not meet the depth within 1e-9 * scale (a normal nearly
/// the axis's).
bool CylinderTrianglePenetration(const Vec3 tri[3], const PlacedCylinder& cyl, double scale,
                                 TriangleConvexPenetration* out);

}  // namespace hitbox
