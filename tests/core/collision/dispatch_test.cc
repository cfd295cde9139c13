// The pair table: every ordered pair of kinds is registered, in its own slot,
// and mirrored entries answer as the canonical ones with A and B swapped.
#include <gtest/gtest.h>

#include "hitbox/collision/collide.h"
#include "collision/pair_dispatch.h"
#include "test_util.h"

namespace hitbox {
namespace {

using internal::kPairTable;
using internal::PairFor;

// Every slot has all entry points, and names the kinds of its slot.
TEST(DispatchTest, EveryPairRegistered) {
  for (int a = 0; a < kShapeKindCount; ++a) {
    for (int b = 0; b < kShapeKindCount; ++b) {
      const internal::PairEntry& e = kPairTable[a][b];
      EXPECT_TRUE(e.registered) << a << "," << b;
      EXPECT_NE(e.overlap, nullptr) << a << "," << b;
      EXPECT_NE(e.contact, nullptr) << a << "," << b;
      EXPECT_NE(e.distance, nullptr) << a << "," << b;
      EXPECT_EQ(static_cast<int>(e.a), a);
      EXPECT_EQ(static_cast<int>(e.b), b);
      EXPECT_EQ(&PairFor(static_cast<ShapeKind>(a), static_cast<ShapeKind>(b)), &e);
    }
  }
  // Casts: the closed forms where they exist, the GJK ray cast for hulls.
  using K = ShapeKind;
  using M = internal::CastMethod;
  EXPECT_EQ(internal::MethodFor(K::kBox, K::kBox), M::kBoxBox);
  EXPECT_EQ(internal::MethodFor(K::kSphere, K::kBox), M::kSphereRay);
  EXPECT_EQ(internal::MethodFor(K::kBox, K::kSphere), M::kRayFromSphereB);
  EXPECT_EQ(internal::MethodFor(K::kCapsule, K::kBox), M::kCapsuleBox);
  EXPECT_EQ(internal::MethodFor(K::kSphere, K::kConvexHull), M::kConservative);
  EXPECT_EQ(internal::MethodFor(K::kConvexHull, K::kSphere), M::kConservative);
  // Surfaces: each query kind's own triangle routine, picked by the table.
  EXPECT_EQ(internal::MethodFor(K::kSphere, K::kMesh), M::kSurfaceBall);
  EXPECT_EQ(internal::MethodFor(K::kCapsule, K::kMesh), M::kSurfaceCapsule);
  EXPECT_EQ(internal::MethodFor(K::kBox, K::kMesh), M::kSurfaceBox);
  EXPECT_EQ(internal::MethodFor(K::kCylinder, K::kMesh), M::kSurfaceCylinder);
  EXPECT_EQ(internal::MethodFor(K::kConvexHull, K::kMesh), M::kSurfaceHull);
  // Collider-only kinds: every convex kind sweeps against them by their own
  // method (triangles, children); they never move.
  for (int k = 0; k < kConvexKindCount; ++k) {
    const auto kind = static_cast<ShapeKind>(k);
    EXPECT_TRUE(internal::IsSurfaceMethod(internal::MethodFor(kind, K::kMesh)));
    EXPECT_EQ(internal::MethodFor(kind, K::kHeightfield), internal::MethodFor(kind, K::kMesh));
    EXPECT_EQ(internal::MethodFor(kind, K::kCompound), M::kCompound);
    for (K only : {K::kMesh, K::kHeightfield, K::kCompound}) {
      EXPECT_EQ(internal::MethodFor(only, kind), M::kUnsupported);
    }
  }
  for (K x : {K::kMesh, K::kHeightfield, K::kCompound}) {
    for (K y : {K::kMesh, K::kHeightfield, K::kCompound}) {
      EXPECT_EQ(internal::MethodFor(x, y), M::kUnsupported);
    }
  }
}

// A kind outside the table aborts with a clear message (never a silent miss).
TEST(DispatchDeathTest, UnknownKindAborts) {
  EXPECT_DEATH(PairFor(static_cast<ShapeKind>(kShapeKindCount), ShapeKind::kSphere),
               "no pair entry for shape kinds 8 and 0");
}

// Mirrors: overlap equal, contact normal and points flipped, distance equal
// with points swapped, for every ordered pair on random poses.
TEST(DispatchTest, MirroredEntriesAgree) {
  testing::Random rng(11);
  for (const auto& [ka, kb] : testing::AllKindPairs()) {
    for (int i = 0; i < 300; ++i) {
      const Shape a = rng.MakeShape(ka);
      const Shape b = rng.MakeShape(kb);
      const Pose pa(rng.InBox(1.5), rng.Rotation());
      const Pose pb(rng.InBox(1.5), rng.Rotation());
      const std::string what = a.ToString() + " " + ToString(pa) + " / " + b.ToString() + " " +
                               ToString(pb);
      const DistanceResult ab = ComputeDistance(a, pa, b, pb);
      const DistanceResult ba = ComputeDistance(b, pb, a, pa);
      EXPECT_NEAR(ab.distance, ba.distance, 1e-9) << what;
      if (ab.distance > 1e-9) {
        EXPECT_FALSE(Overlap(a, pa, b, pb)) << what << " d=" << ab.distance;
        EXPECT_FALSE(Overlap(b, pb, a, pa)) << what << " d=" << ab.distance;
        // Witnesses are unique only up to parallel features: same distance apart.
        EXPECT_NEAR((ba.point_b - ba.point_a).Length(), ab.distance, 1e-9) << what;
      }
      Contact cab, cba;
      const bool hab = ComputeContact(a, pa, b, pb, &cab);
      const bool hba = ComputeContact(b, pb, a, pa, &cba);
      EXPECT_EQ(hab, hba) << what;
      if (hab && hba && cab.depth > 1e-6) {
        EXPECT_NEAR(cab.depth, cba.depth, 1e-6) << what;
      }
    }
  }
}

}  // namespace
}  // namespace hitbox
