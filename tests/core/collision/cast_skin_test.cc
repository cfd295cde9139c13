// Tests of the casts' contact offset (CastSettings::contact_offset,
// CastQuery::contact_offset; core/src/collision/cast_skin.cc): a capsule resting on a
// floor of every kind (box, mesh, heightfield, compound) sweeps along it
// without a hit and still stops at walls and when driven into the floor;
// seeded property tests: offset 0 answers exactly as without the setting, a
// positive offset only removes hits (never adds or moves one of a convex
// pair), and whatever it passes over is never penetrated by the offset or more
// along the translation.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <string>
#include <vector>

#include "hitbox/collision/collide.h"
#include "hitbox/world/collider_set.h"
#include "test_util.h"

namespace hitbox {
namespace {

using testing::Random;

constexpr double kSkin = 1e-3;

// A capsule of radius 0.5 and half-height 0.5 (axis Y) whose bottom rests
// exactly on y = 0 at (x, z).
const Shape& Capsule() {
  static const Shape s = *Shape::MakeCapsule(0.5, 0.5);
  return s;
}
Pose RestingAt(double x, double z, double sink = 0.0) { return Pose({x, 1.0 - sink, z}); }

// Floors whose top is the plane y = 0 over at least [-8, 8]^2.
Collider BoxFloor(uint64_t id) {
  return {id, *Shape::MakeBox({10, 0.5, 10}), Pose({0, -0.5, 0}), 0, 0};
}
Collider MeshFloor(uint64_t id) {
  // An 8 x 8 grid of 2 m quads, two triangles each, facing up.
  TriangleMeshShape m;
  for (int r = 0; r <= 8; ++r) {
    for (int c = 0; c <= 8; ++c) m.vertices.push_back({-8.0 + 2 * c, 0.0, -8.0 + 2 * r});
  }
  for (uint32_t r = 0; r < 8; ++r) {
    for (uint32_t c = 0; c < 8; ++c) {
      const uint32_t i = r * 9 + c;
      m.triangles.push_back({i, i + 9, i + 1});
      m.triangles.push_back({i + 1, i + 9, i + 10});
    }
  }
  return {id, *Shape::Make(m), Pose(), 0, 0};
}
Collider HeightfieldFloor(uint64_t id) {
  HeightfieldShape h;
  h.rows = h.cols = 9;
  h.cell_size_x = h.cell_size_z = 2.0;
  h.heights.assign(81, 0.0);
  return {id, *Shape::Make(h), Pose({-8, 0, -8}), 0, 0};
}
Collider CompoundFloor(uint64_t id) {
  // Two slabs side by side, meeting at x = 0 (the sweep crosses the seam).
  Compound c;
  c.children.push_back({*Shape::MakeBox({4, 0.5, 8}), Pose({-4, -0.5, 0})});
  c.children.push_back({*Shape::MakeBox({4, 0.5, 8}), Pose({4, -0.5, 0})});
  return {id, *Shape::Make(c), Pose(), 0, 0};
}

struct Floor {
  const char* name;
  Collider collider;
};
std::vector<Floor> Floors() {
  return {{"box", BoxFloor(1)},
          {"mesh", MeshFloor(1)},
          {"heightfield", HeightfieldFloor(1)},
          {"compound", CompoundFloor(1)}};
}

CastResult CastOn(const Collider& floor, const Pose& start, const Vec3& translation,
                  double skin) {
  CastSettings s;
  s.contact_offset = skin;
  return Cast(Capsule(), start, translation, floor.shape, floor.pose, s);
}

std::vector<CastHit> Sweep(const ColliderSet& set, const Pose& start, const Vec3& translation,
                           double skin, bool all = false) {
  CastQuery q;
  q.shape = Capsule();
  q.pose = start;
  q.translation = translation;
  q.all_hits = all;
  q.contact_offset = skin;
  std::vector<CastHit> hits;
  set.Cast(q, &hits);
  return hits;
}

// The case: resting exactly on the floor, swept sideways across the
// floor's internal edges (mesh and heightfield triangles, compound seam).
// Offset 0 keeps today's answer (a hit at fraction 0); a skin makes it no hit.
TEST(CastSkinTest, RestingCapsuleSlidesOverEveryFloorKind) {
  for (const Floor& f : Floors()) {
    const Pose start = RestingAt(-1.3, 0.3);
    const Vec3 side{3.0, 0.0, 0.2};
    const CastResult today = CastOn(f.collider, start, side, 0.0);
    EXPECT_EQ(today.state, CastState::kStartedOverlapping) << f.name;
    EXPECT_EQ(today.fraction, 0.0) << f.name;
    const CastResult skinned = CastOn(f.collider, start, side, kSkin);
    EXPECT_EQ(skinned.state, CastState::kMiss) << f.name << " fraction " << skinned.fraction;

    // Sunk less than the skin: still free to slide; sunk deeper: a hit at 0.
    // (A compound's seam is the edge of its next child, a piece of its own:
    // sunk below its top, the capsule meets that edge head-on, as it would a
    // separate box; meshes and heightfields merge internal edges.)
    const bool seam = std::string(f.name) == "compound";
    const CastResult sunk = CastOn(f.collider, RestingAt(-1.3, 0.3, 4e-4), side, kSkin);
    if (seam) {
      EXPECT_EQ(sunk.state, CastState::kHit) << f.name;
      EXPECT_EQ(sunk.sub_shape, 1u) << f.name;
      EXPECT_NEAR(sunk.fraction, 1.3 / 3.0, 0.01) << f.name;
    } else {
      EXPECT_FALSE(sunk.hit()) << f.name;
    }
    const CastResult deep = CastOn(f.collider, RestingAt(-1.3, 0.3, 4e-4), side, 3e-4);
    EXPECT_EQ(deep.state, CastState::kStartedOverlapping) << f.name;

    // Driven into the floor by the skin or more: a hit at fraction 0 (the
    // started-overlapping answer as without the skin); by less: no hit.
    const CastResult down = CastOn(f.collider, start, {0, -0.2, 0}, kSkin);
    EXPECT_EQ(down.state, CastState::kStartedOverlapping) << f.name;
    EXPECT_EQ(down.fraction, 0.0) << f.name;
    EXPECT_TRUE(CastOn(f.collider, start, {3.0, -2 * kSkin, 0.2}, kSkin).hit()) << f.name;
    EXPECT_EQ(CastOn(f.collider, start, {3.0, -0.4 * kSkin, 0.2}, kSkin).hit(), seam) << f.name;
    // Moving up off the floor: no hit with a skin.
    EXPECT_FALSE(CastOn(f.collider, start, {1.0, 0.5, 0.0}, kSkin).hit()) << f.name;
  }
}

// The same through a world sweep with a wall ahead: offset 0 stops at the
// floor at fraction 0, a skin lets the capsule reach the wall at the exact
// fraction (wall face x = 2.5, capsule radius 0.5: centre from -1.5 to 2.0).
TEST(CastSkinTest, WorldSweepReachesTheWall) {
  for (const Floor& f : Floors()) {
    ColliderSet set;
    ASSERT_TRUE(set.Apply(std::vector<ColliderChange>{
                              ColliderChange::Add(f.collider),
                              ColliderChange::Add({2, *Shape::MakeBox({0.5, 2, 5}),
                                                   Pose({3.0, 1.0, 0}), 0, 0})})
                    .ok());
    const Pose start = RestingAt(-1.5, 0.3);
    const Vec3 side{4.0, 0.0, 0.0};
    std::vector<CastHit> hits = Sweep(set, start, side, 0.0);
    ASSERT_EQ(hits.size(), 1u) << f.name;
    EXPECT_EQ(hits[0].id, 1u) << f.name;
    EXPECT_EQ(hits[0].fraction, 0.0) << f.name;
    EXPECT_TRUE(hits[0].started_overlapping()) << f.name;

    hits = Sweep(set, start, side, kSkin);
    ASSERT_EQ(hits.size(), 1u) << f.name;
    EXPECT_EQ(hits[0].id, 2u) << f.name;
    EXPECT_NEAR(hits[0].fraction, 3.5 / 4.0, 1e-9) << f.name;
    EXPECT_FALSE(hits[0].started_overlapping()) << f.name;
    EXPECT_TRUE(testing::VecNear(hits[0].normal, {-1, 0, 0}, 1e-6)) << f.name;

    // All hits: the wall only; the floor was never a hit.
    hits = Sweep(set, start, side, kSkin, /*all=*/true);
    ASSERT_EQ(hits.size(), 1u) << f.name;
    EXPECT_EQ(hits[0].id, 2u) << f.name;

    // Rewound (history) sweeps apply the skin too.
    ColliderSet hist;
    ASSERT_TRUE(hist.Apply(std::vector<ColliderChange>{ColliderChange::Add(f.collider)}, 1).ok());
    ASSERT_TRUE(hist.Apply(std::vector<ColliderChange>{ColliderChange::Move(1, f.collider.pose)},
                           2)
                    .ok());
    CastQuery q;
    q.shape = Capsule();
    q.pose = start;
    q.translation = side;
    q.contact_offset = kSkin;
    q.at_tick = 1.5;
    hist.Cast(q, &hits);
    EXPECT_TRUE(hits.empty()) << f.name;
    q.contact_offset = 0.0;
    hist.Cast(q, &hits);
    EXPECT_EQ(hits.size(), 1u) << f.name;
  }
}

// Out-of-range offsets are refused by name in process too.
TEST(CastSkinTest, ValidateQueryChecksTheOffset) {
  CastQuery q;
  q.shape = Capsule();
  for (double bad : {-1e-9, std::nan(""), 1e3 * 1.000001, HUGE_VAL}) {
    q.contact_offset = bad;
    const Status s = ColliderSet::ValidateQuery(q, "q");
    EXPECT_EQ(s.code(), ErrorCode::kInvalidArgument) << bad;
    EXPECT_NE(s.message().find("q.contact_offset"), std::string::npos) << s.message();
  }
  for (double good : {0.0, 1e-3, kMaxContactOffset}) {
    q.contact_offset = good;
    EXPECT_TRUE(ColliderSet::ValidateQuery(q, "q").ok()) << good;
  }
}

// Random target shapes: every convex kind, a closed mesh (icosphere of
// triangles), a wavy heightfield and a compound of two children.
Shape RandomTarget(Random& rng, int kind) {
  switch (kind) {
    case 0: return rng.MakeShape(ShapeKind::kSphere, 0.3, 2.0);
    case 1: return rng.MakeShape(ShapeKind::kBox, 0.3, 2.0);
    case 2: return rng.MakeShape(ShapeKind::kCapsule, 0.3, 2.0);
    case 3: return rng.MakeShape(ShapeKind::kCylinder, 0.3, 2.0);
    case 4: return rng.MakeShape(ShapeKind::kConvexHull, 0.3, 2.0);
    case 5: {
      // A coarse icosahedron-like closed mesh.
      TriangleMeshShape m;
      const double t = (1.0 + std::sqrt(5.0)) / 2.0, s = rng.Uniform(0.5, 1.5);
      const std::array<Vec3, 12> v = {{{-1, t, 0}, {1, t, 0}, {-1, -t, 0}, {1, -t, 0},
                                       {0, -1, t}, {0, 1, t}, {0, -1, -t}, {0, 1, -t},
                                       {t, 0, -1}, {t, 0, 1}, {-t, 0, -1}, {-t, 0, 1}}};
      for (const Vec3& p : v) m.vertices.push_back(p * s);
      m.triangles = {{0, 11, 5}, {0, 5, 1},  {0, 1, 7},   {0, 7, 10}, {0, 10, 11},
                     {1, 5, 9},  {5, 11, 4}, {11, 10, 2}, {10, 7, 6}, {7, 1, 8},
                     {3, 9, 4},  {3, 4, 2},  {3, 2, 6},   {3, 6, 8},  {3, 8, 9},
                     {4, 9, 5},  {2, 4, 11}, {6, 2, 10},  {8, 6, 7},  {9, 8, 1}};
      return *Shape::Make(m);
    }
    case 6: {
      HeightfieldShape h;
      h.rows = h.cols = 6;
      h.cell_size_x = h.cell_size_z = rng.Uniform(0.5, 1.0);
      for (int i = 0; i < 36; ++i) h.heights.push_back(rng.Uniform(-0.3, 0.3));
      return *Shape::Make(h);
    }
    default: {
      Compound c;
      c.children.push_back({rng.MakeShape(ShapeKind::kBox, 0.3, 1.0), Pose({-0.6, 0, 0})});
      c.children.push_back(
          {rng.MakeShape(ShapeKind::kCapsule, 0.3, 1.0), Pose({0.6, 0, 0}, rng.Rotation())});
      return *Shape::Make(c);
    }
  }
}

bool IsConvexTarget(int kind) { return kind <= 4; }

// Deepest penetration of A moving from pose_a by `v` against B, sampled at
// fractions in [0, t_end] (ComputeContact: the deepest triangle of a surface,
// the deepest child of a compound).
double DeepestAlong(const Shape& a, const Pose& pose_a, const Vec3& v, double t_end,
                    const Shape& b, const Pose& pose_b) {
  double deepest = 0.0;
  constexpr int kSteps = 40;
  for (int i = 0; i <= kSteps; ++i) {
    const double t = t_end * i / kSteps;
    Contact c;
    if (ComputeContact(a, Pose(pose_a.position + v * t, pose_a.rotation), b, pose_b, &c)) {
      deepest = std::max(deepest, c.depth);
    }
  }
  return deepest;
}

// Seeded random casts that start touching, slightly sunk into, or a little
// apart from a random target, moving in random directions. Offset 0 equals
// the default settings bit for bit; a positive offset only removes hits (a
// convex pair's kept hit is the same; a surface or compound may then report
// a later piece); what it passes over is penetrated by less than the offset
// along the way (up to the reported fraction); and a hit it keeps is a real
// contact (the shapes touch at its fraction).
TEST(CastSkinTest, PropertyOffsetOnlyPassesOverShallowContacts) {
  Random rng(20261123);
  int passed_over = 0, kept = 0;
  const std::array<ShapeKind, 4> movers = {ShapeKind::kSphere, ShapeKind::kBox,
                                           ShapeKind::kCapsule, ShapeKind::kCylinder};
  for (int iter = 0; iter < 4000; ++iter) {
    const int kind = iter % 8;
    const Shape b = RandomTarget(rng, kind);
    const Pose pb(rng.InBox(2.0), rng.Rotation());
    const Shape a = rng.MakeShape(movers[rng.Int(0, 3)], 0.2, 1.0);
    // Bring A into contact: cast it from afar towards B and stop at the hit.
    const Vec3 dir = rng.UnitVector();
    Pose pa(pb.position - dir * 8.0, rng.Rotation());
    const CastResult approach = Cast(a, pa, dir * 16.0, b, pb);
    if (approach.state != CastState::kHit) continue;
    pa.position += dir * (16.0 * approach.fraction);
    // Sink a little along the contact normal, or back off a little.
    pa.position += approach.normal * rng.Uniform(-0.02, 0.004);
    const Vec3 v = rng.UnitVector() * rng.Uniform(0.01, 2.0);
    const double skin = rng.Uniform(1e-4, 0.05);
    const std::string what = "iter " + std::to_string(iter) + " kind " + std::to_string(kind) +
                             " skin " + std::to_string(skin);

    const CastResult plain = Cast(a, pa, v, b, pb);
    CastSettings zero;
    zero.contact_offset = 0.0;
    const CastResult with_zero = Cast(a, pa, v, b, pb, zero);
    ASSERT_EQ(with_zero.state, plain.state) << what;
    ASSERT_EQ(with_zero.fraction, plain.fraction) << what;
    ASSERT_EQ(with_zero.sub_shape, plain.sub_shape) << what;

    CastSettings s;
    s.contact_offset = skin;
    const CastResult r = Cast(a, pa, v, b, pb, s);
    if (r.hit()) {
      ++kept;
      ASSERT_TRUE(plain.hit()) << what;
      if (IsConvexTarget(kind)) {
        EXPECT_EQ(r.state, plain.state) << what;
        EXPECT_EQ(r.fraction, plain.fraction) << what;
      } else {
        EXPECT_GE(r.fraction, plain.fraction) << what;
      }
      // A real contact at the reported fraction.
      const DistanceResult d =
          ComputeDistance(a, Pose(pa.position + v * r.fraction, pa.rotation), b, pb);
      EXPECT_LE(d.distance, 1e-6) << what;
    }
    if (plain.hit() && (!r.hit() || r.fraction > plain.fraction)) {
      ++passed_over;
      // Everything met before the reported fraction (or along the whole
      // translation on a miss) stays shallower than the skin.
      const double t_end = r.hit() ? r.fraction : 1.0;
      EXPECT_LT(DeepestAlong(a, pa, v, t_end, b, pb), skin + 1e-6) << what;
    }
  }
  // The random cases exercise both outcomes.
  EXPECT_GT(passed_over, 300);
  EXPECT_GT(kept, 300);
}

}  // namespace
}  // namespace hitbox
