// PlaceQuery: a placement reused inside a ScopedPlacementReuse is the one a
// fresh PlacedConvex gives, for the same core at the same pose only.
#include <gtest/gtest.h>

#include <bit>
#include <cstdint>
#include <string>
#include <vector>

#include "collision/placed_query.h"
#include "shape/convex_core.h"
#include "test_util.h"

namespace hitbox {
namespace {

bool SameBits(const Aabb& a, const Aabb& b) {
  for (int i = 0; i < 3; ++i) {
    if (std::bit_cast<uint64_t>(a.min[i]) != std::bit_cast<uint64_t>(b.min[i]) ||
        std::bit_cast<uint64_t>(a.max[i]) != std::bit_cast<uint64_t>(b.max[i])) {
      return false;
    }
  }
  return true;
}

std::vector<Shape> Shapes() {
  std::vector<Shape> shapes;
  for (const Result<Shape>& s :
       {Shape::Make(Sphere{0.5}), Shape::Make(Sphere{0.75}), Shape::Make(Capsule{0.5, 0.4}),
        Shape::Make(Capsule{0.5, 0.9}), Shape::Make(Box{{0.3, 0.6, 0.9}}),
        Shape::Make(Box{{0.3, 0.6, 1.0}}), Shape::Make(Cylinder{0.5, 0.7}), Shape::Make(Cylinder{0.6, 0.7}),
        Shape::Make(ConvexHull{{{0, 0, 0}, {1, 0, 0}, {0, 1, 0}, {0, 0, 1}}}),
        Shape::Make(ConvexHull{{{0, 0, 0}, {1, 0, 0}, {0, 1, 0}, {0, 0, 2}}})}) {
    EXPECT_TRUE(s.ok()) << s.error().message;
    shapes.push_back(*s);
  }
  return shapes;
}

std::vector<Pose> Poses() {
  const Quat turn = Quat::FromAxisAngle(Vec3{0.3, 1, -0.2}.Normalized(), 0.7);
  return {Pose({0, 0, 0}),        Pose({-0.0, 0, 0}),       Pose({0, 0, 1e-300}),
          Pose({2, -1, 5}),       Pose({2, -1, 5}, turn),   Pose({0, 0, 0}, turn),
          Pose({2, -1, 5.000000000000001}, turn)};
}

void ExpectFresh(const Shape& s, const Pose& p, const char* after) {
  const internal::ConvexCore core = internal::CoreOf(s);
  const PlacedConvex fresh(core, p);
  const PlacedConvex& got = internal::PlaceQuery(s, p);
  EXPECT_TRUE(SameBits(got.bounds(), fresh.bounds())) << s.ToString() << " after " << after;
  EXPECT_EQ(got.scale(), fresh.scale()) << s.ToString() << " after " << after;
  EXPECT_EQ(got.margin(), fresh.margin()) << s.ToString() << " after " << after;
  EXPECT_EQ(got.rounded(), fresh.rounded()) << s.ToString() << " after " << after;
  const Vec3 dir{0.2, -0.9, 0.4};
  EXPECT_EQ(got(dir), fresh(dir)) << s.ToString() << " after " << after;
}

// Each shape placed right after each other one at the same pose, and after
// itself at each other pose: a key that left out any part of the core or
// of the pose would hand back the previous placement, with other bounds.
TEST(PlaceQuery, ReusedPlacementIsTheFreshOne) {
  const std::vector<Shape> shapes = Shapes();
  const std::vector<Pose> poses = Poses();
  const internal::ScopedPlacementReuse reuse;
  for (const Pose& p : poses) {
    for (const Shape& a : shapes) {
      for (const Shape& b : shapes) {
        internal::PlaceQuery(a, p);
        ExpectFresh(b, p, a.ToString().c_str());
        ExpectFresh(b, p, "itself");
      }
    }
  }
  for (const Shape& s : shapes) {
    for (size_t i = 0; i < poses.size(); ++i) {
      for (const Pose& q : poses) {
        internal::PlaceQuery(s, poses[i]);
        ExpectFresh(s, q, ("pose " + std::to_string(i)).c_str());
      }
    }
  }
}

}  // namespace
}  // namespace hitbox
