// Overlap(): hand-made cases per pair, seeded random agreement with GJK
// distance, mirror symmetry, translation by 20 km, and the overlap queries of
// the shared conformance cases answered by brute force.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "geometry/epa.h"
#include "geometry/gjk.h"
#include "hitbox/collision/collide.h"
#include "shape/convex_core.h"
#include "test_util.h"

namespace hitbox {
namespace {

using testing::AllKindPairs;
using testing::AtRot;
using testing::DescribePair;
using testing::NearbyPoses;
using testing::PairName;
using testing::Random;
using testing::Translated;
using testing::VariedShape;
using testing::At;
using testing::BoxH;
using testing::CapsuleRH;
using testing::CylinderRH;
using testing::SphereR;

/// Checks Overlap in both argument orders.
void ExpectOverlap(bool expected, const Shape& a, const Pose& pa, const Shape& b, const Pose& pb) {
  EXPECT_EQ(Overlap(a, pa, b, pb), expected) << DescribePair(a, pa, b, pb);
  EXPECT_EQ(Overlap(b, pb, a, pa), expected) << "mirrored: " << DescribePair(b, pb, a, pa);
}

// Sphere-sphere: separated by 1e-9, exactly touching, overlapping, coincident.
TEST(OverlapTest, SphereSphere) {
  ExpectOverlap(false, SphereR(1), At(0, 0, 0), SphereR(0.5), At(1.5 + 1e-9, 0, 0));
  ExpectOverlap(true, SphereR(1), At(0, 0, 0), SphereR(0.5), At(1.5, 0, 0));
  ExpectOverlap(true, SphereR(1), At(0, 0, 0), SphereR(0.5), At(0, 0, 0));
}

// Sphere-box: face, edge and corner regions; centre inside the box.
TEST(OverlapTest, SphereBox) {
  const Shape box = BoxH(1, 2, 3);
  ExpectOverlap(true, SphereR(0.5), At(1.5, 0, 0), box, At(0, 0, 0));
  ExpectOverlap(false, SphereR(0.5), At(1.5 + 1e-9, 0, 0), box, At(0, 0, 0));
  const double k = 0.5 / std::sqrt(3.0);
  ExpectOverlap(true, SphereR(0.5), At(1 + k * 0.999999, 2 + k * 0.999999, 3 + k * 0.999999), box,
                At(0, 0, 0));
  ExpectOverlap(false, SphereR(0.5), At(1 + k * 1.000001, 2 + k * 1.000001, 3 + k * 1.000001), box,
                At(0, 0, 0));
  ExpectOverlap(true, SphereR(0.01), At(0.2, 0.3, 0.1), box, At(0, 0, 0));
  // Rotated box: 45 degrees about Z, corner along +X at sqrt(2).
  ExpectOverlap(false, SphereR(0.1), At(std::sqrt(2.0) + 0.1 + 1e-7, 0, 0), BoxH(1, 1, 1),
                AtRot(0, 0, 0, {0, 0, 1}, M_PI / 4));
  ExpectOverlap(true, SphereR(0.1), At(std::sqrt(2.0) + 0.1 - 1e-7, 0, 0), BoxH(1, 1, 1),
                AtRot(0, 0, 0, {0, 0, 1}, M_PI / 4));
}

// Sphere-capsule and capsule-capsule: side, end cap, crossing, parallel.
TEST(OverlapTest, Capsules) {
  const Shape cap = CapsuleRH(0.5, 1);
  ExpectOverlap(true, SphereR(0.5), At(1, 0.3, 0), cap, At(0, 0, 0));
  ExpectOverlap(false, SphereR(0.5), At(1 + 1e-9, 0.3, 0), cap, At(0, 0, 0));
  ExpectOverlap(true, SphereR(0.5), At(0, 2.0, 0), cap, At(0, 0, 0));
  ExpectOverlap(false, SphereR(0.5), At(0, 2.0 + 1e-9, 0), cap, At(0, 0, 0));
  // Crossing capsules (one along Y, one along X), gap 1e-9 then touching.
  const Pose along_x = AtRot(0, 0, 1.0 + 1e-9, {0, 0, 1}, M_PI / 2);
  ExpectOverlap(false, cap, At(0, 0, 0), cap, along_x);
  ExpectOverlap(true, cap, At(0, 0, 0), cap, AtRot(0, 0, 1.0, {0, 0, 1}, M_PI / 2));
  // Parallel capsules side by side, and end to end.
  ExpectOverlap(true, cap, At(0, 0, 0), cap, At(1.0, 0.7, 0));
  ExpectOverlap(false, cap, At(0, 0, 0), cap, At(1.0 + 1e-9, 0.7, 0));
  ExpectOverlap(true, cap, At(0, 0, 0), cap, At(0, 3.0, 0));
  ExpectOverlap(false, cap, At(0, 0, 0), cap, At(0, 3.0 + 1e-9, 0));
}

// Capsule-box: segment parallel to a face, through an edge, end cap on a face.
TEST(OverlapTest, CapsuleBox) {
  const Shape box = BoxH(1, 1, 1);
  const Shape cap = CapsuleRH(0.25, 2);
  // Lying along X above the top face.
  ExpectOverlap(true, cap, AtRot(0, 1.25, 0, {0, 0, 1}, M_PI / 2), box, At(0, 0, 0));
  ExpectOverlap(false, cap, AtRot(0, 1.25 + 1e-9, 0, {0, 0, 1}, M_PI / 2), box, At(0, 0, 0));
  // Standing on the top face.
  ExpectOverlap(true, cap, At(0.3, 3.25, 0.3), box, At(0, 0, 0));
  ExpectOverlap(false, cap, At(0.3, 3.25 + 1e-9, 0.3), box, At(0, 0, 0));
  // Along Z passing the (+x, +y) edge diagonally off.
  const double off = 1.0 + 0.25 / std::sqrt(2.0);
  ExpectOverlap(true, cap, AtRot(off - 1e-9, off - 1e-9, 0, {1, 0, 0}, M_PI / 2), box, At(0, 0, 0));
  ExpectOverlap(false, cap, AtRot(off + 1e-8, off + 1e-8, 0, {1, 0, 0}, M_PI / 2), box,
                At(0, 0, 0));
}

// Box-box: face-face, parallel edges (the degenerate cross axes), edge-edge at 45 degrees.
TEST(OverlapTest, BoxBox) {
  const Shape box = BoxH(1, 1, 1);
  ExpectOverlap(true, box, At(0, 0, 0), box, At(2, 0.5, 0.5));
  ExpectOverlap(false, box, At(0, 0, 0), box, At(2 + 1e-9, 0.5, 0.5));
  // Same orientation, offset diagonally: only face axes can separate.
  ExpectOverlap(true, box, At(0, 0, 0), box, At(2, 2, 2));
  ExpectOverlap(false, box, At(0, 0, 0), box, At(2, 2 + 1e-9, 2));
  // Edge on edge: B rotated 45 degrees about Z and X... about Z only: B's edge
  // along Z touches A's top face.
  const double rz = 1.0 + std::sqrt(2.0);
  ExpectOverlap(true, box, At(0, 0, 0), box, AtRot(0, rz, 0, {0, 0, 1}, M_PI / 4));
  ExpectOverlap(false, box, At(0, 0, 0), box, AtRot(0, rz + 1e-9, 0, {0, 0, 1}, M_PI / 4));
  // Crossed edges: A's top edges along X, B rotated about X then Z so its lowest edge runs
  // along Z above A's (+y) face rotated.
  const Pose crossed{Vec3{0, 0, 0}, Quat::FromAxisAngle({0, 0, 1}, M_PI / 4) *
                                        Quat::FromAxisAngle({1, 0, 0}, M_PI / 4)};
  // Lowest point of B along -Y after the rotations: find it through the support.
  const Vec3 low = crossed.TransformPoint(box.Support(crossed.InverseTransformDirection({0, -1, 0})));
  const Pose touching{Vec3{0, 1.0 - low.y, 0}, crossed.rotation};
  EXPECT_TRUE(Overlap(box, At(0, 0, 0), box, Translated(touching, {0, -1e-9, 0})));
  EXPECT_FALSE(Overlap(box, At(0, 0, 0), box, Translated(touching, {0, 1e-9, 0})));
}

// Cylinder pairs: stacked caps, side by side, rim against a box face.
TEST(OverlapTest, Cylinders) {
  const Shape cyl = CylinderRH(0.5, 1);
  ExpectOverlap(true, SphereR(0.5), At(0, 1.5, 0.2), cyl, At(0, 0, 0));
  ExpectOverlap(false, SphereR(0.5), At(0, 1.5 + 1e-9, 0.2), cyl, At(0, 0, 0));
  ExpectOverlap(true, SphereR(0.5), At(1.0, 0.2, 0), cyl, At(0, 0, 0));
  ExpectOverlap(false, SphereR(0.5), At(1.0 + 1e-9, 0.2, 0), cyl, At(0, 0, 0));
  ExpectOverlap(true, cyl, At(0, 0, 0), cyl, At(0.3, 2.0, 0));
  ExpectOverlap(false, cyl, At(0, 0, 0), cyl, At(0.3, 2.0 + 1e-9, 0));
  ExpectOverlap(true, cyl, At(0, 0, 0), cyl, At(1.0, 0.5, 0));
  ExpectOverlap(false, cyl, At(0, 0, 0), cyl, At(1.0 + 1e-9, 0.5, 0));
  ExpectOverlap(true, cyl, At(0, 0, 0), BoxH(1, 1, 1), At(1.5, 0, 0));
  ExpectOverlap(false, cyl, At(0, 0, 0), BoxH(1, 1, 1), At(1.5 + 1e-9, 0, 0));
  ExpectOverlap(true, CapsuleRH(0.5, 1), At(1.0, 0, 0), cyl, At(0, 0, 0));
  ExpectOverlap(false, CapsuleRH(0.5, 1), At(1.0 + 1e-9, 0, 0), cyl, At(0, 0, 0));
  // Tilted cylinder whose rim touches the plane y = 0 (a box top face).
  const double tilt = 0.3;
  const Pose tilted = AtRot(0, 0, 0, {0, 0, 1}, tilt);
  const Vec3 low = tilted.TransformPoint(cyl.Support(tilted.InverseTransformDirection({0, -1, 0})));
  const Shape slab = BoxH(5, 1, 5);
  ExpectOverlap(true, cyl, Translated(tilted, {0, -low.y - 1e-9, 0}), slab, At(0, -1, 0));
  ExpectOverlap(false, cyl, Translated(tilted, {0, -low.y + 1e-9, 0}), slab, At(0, -1, 0));
  // Contained: a small cylinder inside a big one.
  ExpectOverlap(true, CylinderRH(0.1, 0.1), At(0.1, 0.1, 0.1), CylinderRH(2, 2), At(0, 0, 0));
}

// Every ordered pair, random poses (a fifth thin or tiny): Overlap agrees with
// the GJK distance outside a 1e-9 m band, and with the mirrored call.
TEST(OverlapTest, RandomPairsAgreeWithGjk) {
  for (const auto& [ka, kb] : AllKindPairs()) {
    Random rng(1000 + 16 * static_cast<int>(ka) + static_cast<int>(kb));
    int overlaps = 0;
    for (int i = 0; i < 10000; ++i) {
      const Shape a = VariedShape(rng, ka);
      const Shape b = VariedShape(rng, kb);
      const auto [pa, pb] = NearbyPoses(rng, a, b);
      const bool o = Overlap(a, pa, b, pb);
      ASSERT_EQ(o, Overlap(b, pb, a, pa)) << PairName(ka, kb) << " " << DescribePair(a, pa, b, pb);
      const internal::GjkResult g = internal::GjkDistance(a, pa, b, pb);
      overlaps += o ? 1 : 0;
      if (g.state == internal::GjkState::kSeparated && g.distance > 1e-9) {
        ASSERT_FALSE(o) << PairName(ka, kb) << " distance " << g.distance << " "
                        << DescribePair(a, pa, b, pb);
      }
      if (g.cores_overlap || (g.state == internal::GjkState::kOverlapping &&
                              g.core_distance < a.radius() * (ka == ShapeKind::kCylinder ? 0 : 1) +
                                                    b.radius() * (kb == ShapeKind::kCylinder ? 0 : 1) -
                                                    1e-9)) {
        ASSERT_TRUE(o) << PairName(ka, kb) << " " << DescribePair(a, pa, b, pb);
      }
    }
    // The generator must give a real mix.
    EXPECT_GT(overlaps, 500) << PairName(ka, kb);
    EXPECT_LT(overlaps, 9500) << PairName(ka, kb);
  }
}

// The same pair 20 km from the origin gives the same answer, unless it is
// within 1e-9 m of touching (the input itself is rounded at 20 km).
TEST(OverlapTest, FarFromOriginMatchesOrigin) {
  const Vec3 far{20000.0, -20000.0, 15000.0};
  for (const auto& [ka, kb] : AllKindPairs()) {
    Random rng(2000 + 16 * static_cast<int>(ka) + static_cast<int>(kb));
    for (int i = 0; i < 10000; ++i) {
      const Shape a = VariedShape(rng, ka);
      const Shape b = VariedShape(rng, kb);
      const auto [pa, pb] = NearbyPoses(rng, a, b);
      const Pose fa = Translated(pa, far);
      const Pose fb = Translated(pb, far);
      const bool near_origin = Overlap(a, pa, b, pb);
      if (near_origin == Overlap(a, fa, b, fb)) continue;
      // Disagreement is only allowed within 1e-9 of touching.
      const double d = ComputeDistance(a, pa, b, pb).distance;
      Contact c;
      const double depth = ComputeContact(a, pa, b, pb, &c) ? c.depth : 0.0;
      ASSERT_LE(std::max(d, depth), 1e-9) << PairName(ka, kb) << " " << DescribePair(a, fa, b, fb);
    }
  }
}

// ---------------------------------------------------------------------------
// Conformance: the overlap queries of /work/shared/cases, brute force over the
// colliders. `hits` must all be reported; nothing outside hits + maybe may be.

Shape ParseShape(const nlohmann::json& j) {
  if (j.contains("sphere")) return *Shape::MakeSphere(j["sphere"]["radius"].get<double>());
  if (j.contains("box")) {
    const auto& h = j["box"]["half_extents"];
    return *Shape::MakeBox({h[0].get<double>(), h[1].get<double>(), h[2].get<double>()});
  }
  if (j.contains("capsule")) {
    return *Shape::MakeCapsule(j["capsule"]["radius"].get<double>(),
                               j["capsule"]["half_height"].get<double>());
  }
  return *Shape::MakeCylinder(j["cylinder"]["radius"].get<double>(),
                              j["cylinder"]["half_height"].get<double>());
}

Pose ParsePose(const nlohmann::json& j) {
  const auto& p = j["position"];
  Pose pose{Vec3{p[0].get<double>(), p[1].get<double>(), p[2].get<double>()}};
  if (j.contains("rotation")) {
    const auto& q = j["rotation"];
    pose.rotation = Quat{q[0].get<double>(), q[1].get<double>(), q[2].get<double>(),
                         q[3].get<double>()};
  }
  return pose;
}

class OverlapConformanceTest : public ::testing::TestWithParam<std::string> {};

TEST_P(OverlapConformanceTest, BruteForceMatchesExpected) {
  const std::string path = std::string(HITBOX_CASES_DIR) + "/" + GetParam() + ".json";
  std::ifstream in(path);
  if (!in) GTEST_SKIP() << "no case file " << path;
  const nlohmann::json doc = nlohmann::json::parse(in);
  struct Collider {
    uint64_t id;
    uint32_t layer;
    Shape shape;
    Pose pose;
  };
  std::vector<Collider> colliders;
  for (const auto& c : doc["colliders"]) {
    colliders.push_back({c["id"].get<uint64_t>(), c["layer"].get<uint32_t>(), ParseShape(c["shape"]),
                         ParsePose(c)});
  }
  const auto& queries = doc["queries"];
  const auto& expected = doc["expected"];
  int checked = 0;
  for (size_t qi = 0; qi < queries.size(); ++qi) {
    const auto& q = queries[qi];
    if (!q.contains("overlap")) continue;
    const auto& ov = q["overlap"];
    const Shape shape = ParseShape(ov["shape"]);
    const Pose pose = ParsePose(ov);
    const uint32_t mask = ov.contains("mask") ? ov["mask"].get<uint32_t>() : 0xffffffffu;
    std::vector<uint64_t> hits = expected[qi]["hits"].get<std::vector<uint64_t>>();
    std::vector<uint64_t> maybe;
    if (expected[qi].contains("maybe")) maybe = expected[qi]["maybe"].get<std::vector<uint64_t>>();
    auto in_list = [](const std::vector<uint64_t>& v, uint64_t id) {
      return std::find(v.begin(), v.end(), id) != v.end();
    };
    for (const Collider& c : colliders) {
      if ((mask & (1u << c.layer)) == 0) continue;
      const bool o = Overlap(shape, pose, c.shape, c.pose);
      if (in_list(hits, c.id)) {
        ASSERT_TRUE(o) << GetParam() << " query " << q["id"] << " misses collider " << c.id << ": "
                       << DescribePair(shape, pose, c.shape, c.pose);
      } else if (!in_list(maybe, c.id)) {
        ASSERT_FALSE(o) << GetParam() << " query " << q["id"] << " wrongly hits collider " << c.id
                        << ": " << DescribePair(shape, pose, c.shape, c.pose);
      }
    }
    ++checked;
  }
  EXPECT_GT(checked, 0);
}

INSTANTIATE_TEST_SUITE_P(Cases, OverlapConformanceTest,
                         ::testing::Values("mixed", "far_from_origin", "thin_and_tiny", "grazing",
                                           "layers", "axis_aligned"));

}  // namespace
}  // namespace hitbox

namespace hitbox {
namespace {

// Non-finite poses (callers are meant to validate them) must not crash or
// hang any query of any pair: GJK and EPA stop within their iteration caps,
// a distance is never negative, and each answer is the same when asked again
// (nothing read that was not set).
TEST(OverlapTest, NonFinitePosesTerminate) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  const Shape shapes[4] = {*Shape::MakeSphere(1), *Shape::MakeBox({1, 2, 3}),
                           *Shape::MakeCapsule(0.5, 1), *Shape::MakeCylinder(0.5, 1)};
  const Pose bad[3] = {Pose{Vec3{nan, 0, 0}}, Pose{Vec3{inf, 0, 0}},
                       Pose{Vec3{0, 0, 0}, Quat{nan, 0, 0, 1}}};
  int epa_runs = 0;
  for (const Shape& a : shapes) {
    for (const Shape& b : shapes) {
      for (const Pose& p : bad) {
        const internal::GjkResult g = internal::GjkDistance(a, Pose{}, b, p);
        EXPECT_LE(g.iterations, internal::GjkSettings{}.max_iterations);
        if (g.cores_overlap) {
          ++epa_runs;
          const internal::EpaResult e =
              internal::Epa(internal::CoreOf(a), internal::CoreOf(b), p, g);
          EXPECT_LE(e.iterations, internal::kEpaMaxIterations);
        }
        Contact c, again;
        const bool overlap = Overlap(a, Pose{}, b, p);
        EXPECT_EQ(Overlap(a, Pose{}, b, p), overlap);
        const bool contact = ComputeContact(a, Pose{}, b, p, &c);
        EXPECT_EQ(ComputeContact(a, Pose{}, b, p, &again), contact);
        const DistanceResult d = ComputeDistance(a, Pose{}, b, p);
        EXPECT_FALSE(d.distance < 0.0);
        const DistanceResult d2 = ComputeDistance(a, Pose{}, b, p);
        EXPECT_TRUE(d2.distance == d.distance || (std::isnan(d.distance) && std::isnan(d2.distance)));
        const bool reversed = Overlap(a, p, b, Pose{});
        EXPECT_EQ(Overlap(a, p, b, Pose{}), reversed);
      }
    }
  }
  EXPECT_GT(epa_runs, 0);
}

}  // namespace
}  // namespace hitbox
