// Compound shapes: validation naming the child and field, shared data,
// bounds, the children's candidate search (scan and hierarchy), query-shape
// rejection, and the defining property: a compound answers as its children
// added as separate colliders (the same overlaps, the same first hit and
// fraction, sub_shape = the child index), near the origin and 20 km out.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "hitbox/collision/collide.h"
#include "hitbox/world/collider_set.h"
#include "collision/pair_dispatch.h"
#include "test_util.h"

namespace hitbox {
namespace {

using testing::Random;

constexpr uint64_t kCompoundId = 1000;

/// A compound of `n` random convex children (sizes 0.1..1 m) placed within
/// +-spread metres of its origin, randomly rotated.
Compound RandomChildren(Random& rng, int n, double spread) {
  Compound c;
  for (int i = 0; i < n; ++i) {
    const auto kind = static_cast<ShapeKind>(rng.Int(0, kConvexKindCount - 1));
    c.children.push_back({rng.MakeShape(kind, 0.1, 1.0), Pose(rng.InBox(spread), rng.Rotation())});
  }
  return c;
}

Shape Build(const Compound& c) {
  Result<Shape> r = Shape::Make(c);
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message);
  return r.ok() ? *r : Shape();
}

std::string MakeError(const Compound& c) {
  Result<Shape> r = Shape::Make(c);
  if (r.ok()) return "ok";
  EXPECT_EQ(r.error().code, ErrorCode::kInvalidArgument);
  return r.error().message;
}

TEST(CompoundShape, InvalidInputIsNamed) {
  Compound c;
  EXPECT_EQ(MakeError(c), "compound.children: needs 1 to 64 children, got 0");
  Random rng(3);
  c = RandomChildren(rng, 65, 2.0);
  EXPECT_EQ(MakeError(c), "compound.children: needs 1 to 64 children, got 65");
  c.children.resize(64);
  EXPECT_EQ(MakeError(c), "ok");

  // Collider-only kinds are refused as children.
  const Shape inner = Build(RandomChildren(rng, 2, 1.0));
  c = RandomChildren(rng, 3, 1.0);
  c.children[1].shape = inner;
  EXPECT_EQ(MakeError(c),
            "compound.children[1].shape: a compound cannot be a compound child (use sphere, "
            "box, capsule, cylinder or convex_hull)");
  TriangleMeshShape m;
  m.vertices = {{0, 0, 0}, {1, 0, 0}, {0, 1, 0}};
  m.triangles = {{0, 1, 2}};
  c.children[1].shape = *Shape::Make(m);
  EXPECT_NE(MakeError(c).find("compound.children[1].shape: a mesh cannot be a compound child"),
            std::string::npos);

  // Poses: finite positions within the size range, unit rotations.
  c = RandomChildren(rng, 3, 1.0);
  c.children[2].pose.position.y = std::nan("");
  EXPECT_EQ(MakeError(c),
            "compound.children[2].position.y must be finite and in [-1e6, 1e6] metres, got nan");
  c.children[2].pose.position.y = 2e6;
  EXPECT_EQ(MakeError(c),
            "compound.children[2].position.y must be finite and in [-1e6, 1e6] metres, got 2e+06");
  c.children[2].pose.position.y = 0.0;
  c.children[0].pose.rotation = Quat{0, 0, 0, 2};
  EXPECT_EQ(MakeError(c),
            "compound.children[0].rotation: quaternion norm 2 is not 1 (tolerance 1e-6)");
  c.children[0].pose.rotation = Quat{0, 0, std::nan(""), 1};
  EXPECT_NE(MakeError(c).find("compound.children[0].rotation: quaternion norm nan"),
            std::string::npos);
  // Within the tolerance: accepted and kept normalized.
  c.children[0].pose.rotation = Quat{0, 0, 0, 1.0 + 5e-7};
  const Shape ok = Build(c);
  EXPECT_EQ(ok.compound()->children()[0].pose.rotation, Quat::Identity());
}

TEST(CompoundShape, KindBoundsAndSharing) {
  Random rng(5);
  Compound c = RandomChildren(rng, 12, 3.0);
  c.children[4].shape = rng.MakeShape(ShapeKind::kConvexHull);
  const Shape s = Build(c);
  EXPECT_EQ(s.kind(), ShapeKind::kCompound);
  EXPECT_STREQ(ShapeKindName(s.kind()), "compound");
  EXPECT_FALSE(IsConvexKind(s.kind()));
  EXPECT_FALSE(IsSurfaceKind(s.kind()));
  EXPECT_EQ(s.surface(), nullptr);
  EXPECT_EQ(s.hull(), nullptr);
  ASSERT_NE(s.compound(), nullptr);
  EXPECT_EQ(s.compound()->children().size(), 12u);
  // Data bytes include the children's shared hull data.
  EXPECT_GT(s.DataBytes(), c.children[4].shape.DataBytes());
  const Shape copy = s;  // shared, not rebuilt
  EXPECT_EQ(copy.compound(), s.compound());
  EXPECT_EQ(copy, s);
  EXPECT_EQ(Build(c), s);  // same children: equal
  Shape moved = std::move(Shape(copy));
  EXPECT_EQ(moved.compound(), s.compound());
  EXPECT_NE(s.ToString().find("compound{children=["), std::string::npos);

  // Bounds: every child's world support points lie inside the world box; the
  // bounding radius holds every child's ball; Support is the farthest child's.
  for (int i = 0; i < 200; ++i) {
    const Pose pose(rng.InBox(1e4), rng.Rotation());
    const Aabb box = s.WorldBounds(pose);
    const Vec3 dir = rng.UnitVector();
    double best = -1e300;
    for (const CompoundChild& child : s.compound()->children()) {
      const Pose world = pose * child.pose;
      const Vec3 p = world.TransformPoint(child.shape.Support(world.InverseTransformDirection(dir)));
      EXPECT_TRUE(box.Expanded(1e-9 * 1e4).Contains(p));
      best = std::max(best, Dot(p - pose.position, dir));
      EXPECT_LE((child.pose.position).Length() + child.shape.BoundingRadius(),
                s.BoundingRadius() + 1e-12);
    }
    EXPECT_NEAR(Dot(s.Support(pose.InverseTransformDirection(dir)),
                    pose.InverseTransformDirection(dir)),
                best, 1e-9);
  }
}

// The candidate search (a scan up to 8 children, a hierarchy beyond) never
// drops a child whose box the moving box reaches, and names only children
// whose boxes meet the box's swept bounds.
TEST(CompoundShape, CandidatesAreConservative) {
  Random rng(7);
  for (int n : {1, 5, 8, 9, 17, 40, 64}) {
    const Shape s = Build(RandomChildren(rng, n, 4.0));
    const CompoundData& data = *s.compound();
    for (int i = 0; i < 2000; ++i) {
      const Vec3 c = rng.InBox(6.0);
      const Aabb box = Aabb::FromCenterExtents(c, rng.InBox(1.0).Abs());
      const Vec3 v = i % 3 == 0 ? Vec3{} : rng.InBox(8.0);
      const uint64_t mask = data.Candidates(box, v);
      for (int k = 0; k < n; ++k) {
        const Aabb& child = data.child_bounds()[k];
        const bool set = (mask >> k) & 1;
        for (int step = 0; step <= 64 && !set; ++step) {
          const Vec3 at = v * (step / 64.0);
          EXPECT_FALSE(Aabb(box.min + at, box.max + at).Overlaps(child))
              << "n=" << n << " child " << k << " dropped";
        }
        if (set) { EXPECT_TRUE(box.Swept(v).Expanded(1e-9).Overlaps(child)) << "n=" << n; }
      }
    }
  }
}

TEST(CompoundShape, NotAQueryShape) {
  Random rng(9);
  OverlapQuery o;
  o.shape = Build(RandomChildren(rng, 3, 1.0));
  const Status s = ColliderSet::ValidateQuery(o, "queries[3].overlap");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(s.error().message,
            "queries[3].overlap.shape: compound is a collider-only shape, not a query shape (use "
            "sphere, box, capsule, cylinder or convex_hull)");
  CastQuery c;
  c.shape = o.shape;
  c.translation = {1, 0, 0};
  EXPECT_FALSE(ColliderSet::ValidateQuery(c, "q").ok());
}

TEST(CompoundShape, PairTableCoversCompounds) {
  for (int a = 0; a < kConvexKindCount; ++a) {
    const internal::PairEntry& e =
        internal::PairFor(static_cast<ShapeKind>(a), ShapeKind::kCompound);
    EXPECT_TRUE(e.registered);
    EXPECT_EQ(e.cast, internal::CastMethod::kCompound);
  }
}

// ---------------------------------------------------------------------------
// A compound against its children as separate colliders.

/// The compound as one collider, and its children as colliders with id = the
/// child index at the composed world pose.
struct World {
  Shape compound;
  Pose pose;
  ColliderSet whole;
  ColliderSet parts;
  std::vector<Pose> child_world;
};

void MakeWorld(const Shape& compound, const Pose& pose, World* w) {
  w->compound = compound;
  w->pose = pose;
  Collider c;
  c.id = kCompoundId;
  c.shape = compound;
  c.pose = pose;
  ASSERT_TRUE(w->whole.AddBulk({&c, 1}).ok());
  std::vector<Collider> parts;
  const std::vector<CompoundChild>& children = compound.compound()->children();
  for (size_t i = 0; i < children.size(); ++i) {
    Collider p;
    p.id = i;
    p.shape = children[i].shape;
    p.pose = pose * children[i].pose;
    w->child_world.push_back(p.pose);
    parts.push_back(p);
  }
  ASSERT_TRUE(w->parts.AddBulk(parts).ok());
}

/// True when `q` at `pose` is within 1e-9 m of touching child `i` (either
/// side): rounding in the two frames may then decide either way.
bool Grazes(const World& w, const Shape& q, const Pose& pose, uint64_t i) {
  const Shape& child = w.compound.compound()->children()[i].shape;
  Contact k;
  if (ComputeContact(q, pose, child, w.child_world[i], &k)) return k.depth < 1e-9;
  return ComputeDistance(q, pose, child, w.child_world[i]).distance < 1e-9;
}

/// Fraction of the hit on child `id` among all-hits results, or -1.
double FractionOf(const std::vector<CastHit>& hits, uint64_t id) {
  for (const CastHit& h : hits) {
    if (h.id == id) return h.fraction;
  }
  return -1.0;
}

struct Tally {
  int overlaps = 0, sweeps = 0, rays = 0, grazing = 0;
};

void CheckOverlap(const World& w, Random& rng, Tally* t) {
  OverlapQuery q;
  q.shape = rng.MakeShape(static_cast<ShapeKind>(rng.Int(0, kConvexKindCount - 1)), 0.1, 1.5);
  q.pose = Pose(w.pose.position + rng.InBox(3.0), rng.Rotation());
  q.want_contact = true;
  std::vector<OverlapHit> whole, parts;
  w.whole.Overlap(q, &whole);
  w.parts.Overlap(q, &parts);
  const std::string what = q.shape.ToString() + " at " + ToString(q.pose);
  if (parts.empty() != whole.empty() ||
      (!whole.empty() && whole[0].sub_shape != parts[0].id)) {
    // Only a child touched within rounding may differ.
    const uint64_t child = whole.empty() ? parts[0].id
                           : parts.empty() ? whole[0].sub_shape
                                           : std::min<uint64_t>(whole[0].sub_shape, parts[0].id);
    EXPECT_TRUE(Grazes(w, q.shape, q.pose, child)) << what;
    ++t->grazing;
    return;
  }
  if (whole.empty()) return;
  ++t->overlaps;
  ASSERT_EQ(whole.size(), 1u);
  EXPECT_EQ(whole[0].id, kCompoundId);
  // The contact is the deepest child's.
  double deepest = 0.0;
  for (const OverlapHit& h : parts) deepest = std::max(deepest, h.contact->depth);
  ASSERT_TRUE(whole[0].contact.has_value());
  EXPECT_NEAR(whole[0].contact->depth, deepest, 1e-6 * std::max(1.0, deepest)) << what;
  EXPECT_NEAR(whole[0].contact->normal.Length(), 1.0, 1e-9);
}

/// Checks the compound's closest hit `whole` against every hit on its
/// children `parts`: both miss, or both hit at the same fraction (within
/// `tol`) with sub_shape naming a child hit at that fraction. A hit on one
/// side only must be a graze (`grazes(child, hit)`). Returns the compound's
/// hit when both sides hit.
template <typename GrazeFn>
const CastHit* CompareFirstHits(const std::vector<CastHit>& whole,
                                const std::vector<CastHit>& parts, double tol,
                                const std::string& what, const GrazeFn& grazes, Tally* t) {
  if (parts.empty() != whole.empty()) {
    const CastHit& h = whole.empty() ? parts[0] : whole[0];
    EXPECT_TRUE(grazes(whole.empty() ? h.id : h.sub_shape, h)) << what;
    ++t->grazing;
    return nullptr;
  }
  if (whole.empty()) return nullptr;
  EXPECT_EQ(whole.size(), 1u);
  const CastHit& h = whole[0];
  EXPECT_EQ(h.id, kCompoundId);
  EXPECT_NEAR(h.fraction, parts[0].fraction, tol) << what;
  // The child named was hit at that fraction too.
  EXPECT_NEAR(FractionOf(parts, h.sub_shape), parts[0].fraction, tol)
      << what << " sub_shape " << h.sub_shape;
  EXPECT_NEAR(h.normal.Length(), 1.0, 1e-9) << what;
  return &h;
}

void CheckSweep(const World& w, Random& rng, Tally* t) {
  CastQuery q;
  q.shape = rng.MakeShape(static_cast<ShapeKind>(rng.Int(0, kConvexKindCount - 1)), 0.1, 1.0);
  q.pose = Pose(w.pose.position + rng.InBox(7.0), rng.Rotation());
  q.translation = (w.pose.position + rng.InBox(3.0) - q.pose.position) * rng.Uniform(0.2, 1.5);
  std::vector<CastHit> whole, parts;
  w.whole.Cast(q, &whole);
  q.all_hits = true;
  w.parts.Cast(q, &parts);
  const std::string what = q.shape.ToString() + " at " + ToString(q.pose) + " by " +
                           ToString(q.translation);
  const auto grazes = [&](uint64_t child, const CastHit& hit) {
    return Grazes(w, q.shape, Pose(q.pose.position + q.translation * hit.fraction, q.pose.rotation),
                  child);
  };
  const CastHit* h =
      CompareFirstHits(whole, parts, 1e-7 * std::max(1.0, q.translation.Length()), what, grazes, t);
  if (h == nullptr) return;
  ++t->sweeps;
  EXPECT_EQ(h->started_overlapping(), parts[0].started_overlapping()) << what;
  // (Normals at edge and vertex contacts are not unique: checked for sanity
  // only, not against the child's.)
  if (h->fraction > 0.0) { EXPECT_LE(Dot(h->normal, q.translation), 1e-6) << what; }
}

void CheckRay(const World& w, Random& rng, Tally* t) {
  RayQuery q;
  q.origin = w.pose.position + rng.InBox(6.0);
  q.translation = (w.pose.position + rng.InBox(1.5) - q.origin) * rng.Uniform(0.5, 2.0);
  std::vector<CastHit> whole, parts;
  w.whole.Raycast(q, &whole);
  q.all_hits = true;
  w.parts.Raycast(q, &parts);
  const std::string what = ToString(q.origin) + " by " + ToString(q.translation);
  const auto grazes = [&](uint64_t child, const CastHit& hit) {
    const Shape& shape = w.compound.compound()->children()[child].shape;
    return testing::PointToShapeDistance(shape, w.child_world[child], hit.point) < 1e-9;
  };
  const CastHit* h =
      CompareFirstHits(whole, parts, 1e-9 * std::max(1.0, q.translation.Length()), what, grazes, t);
  if (h == nullptr) return;
  ++t->rays;
  if (h->sub_shape == parts[0].id) {
    EXPECT_TRUE(testing::VecNear(h->normal, parts[0].normal, 1e-9)) << what;
    EXPECT_TRUE(testing::VecNear(h->point, parts[0].point, 1e-9 * (1 + w.pose.position.Length())))
        << what;
  }
}

// Thousands of seeded cases: random compounds of 1..64 children (hulls
// included), at the origin and 20 km out, against random overlaps (with
// contacts), sweeps and rays of every query kind.
TEST(CompoundCollider, MatchesChildrenAsSeparateColliders) {
  Random rng(2026);
  Tally t;
  for (int trial = 0; trial < 500; ++trial) {
    const int n = trial % 4 == 0 ? rng.Int(9, 64) : rng.Int(1, 12);
    const Shape compound = Build(RandomChildren(rng, n, 2.5));
    const Vec3 at = trial % 2 == 0 ? rng.InBox(10.0) : Vec3{20000.0, -3000.0, 15000.0};
    World w;
    MakeWorld(compound, Pose(at, rng.Rotation()), &w);
    for (int i = 0; i < 8; ++i) {
      CheckOverlap(w, rng, &t);
      CheckSweep(w, rng, &t);
      CheckRay(w, rng, &t);
    }
  }
  // Enough hits of each kind to mean something; grazes are rare.
  EXPECT_GT(t.overlaps, 1000);
  EXPECT_GT(t.sweeps, 1000);
  EXPECT_GT(t.rays, 1000);
  EXPECT_LT(t.grazing, 10);
  std::printf("overlaps %d, sweeps %d, rays %d hit; %d grazing\n", t.overlaps, t.sweeps, t.rays,
              t.grazing);
}

// Distance is the least over the children; a zero-length sweep is an overlap
// test at fraction 0 naming the lowest child touched.
TEST(CompoundCollider, DistanceAndZeroSweep) {
  Random rng(31);
  for (int trial = 0; trial < 300; ++trial) {
    const Shape compound = Build(RandomChildren(rng, rng.Int(1, 20), 2.0));
    const Pose pose(rng.InBox(50.0), rng.Rotation());
    const Shape q = rng.MakeShape(static_cast<ShapeKind>(rng.Int(0, kConvexKindCount - 1)));
    const Pose qp(pose.position + rng.InBox(6.0), rng.Rotation());
    double least = 1e300;
    uint32_t lowest = UINT32_MAX;
    const std::vector<CompoundChild>& children = compound.compound()->children();
    for (size_t i = 0; i < children.size(); ++i) {
      const Pose cw = pose * children[i].pose;
      const double d = ComputeDistance(q, qp, children[i].shape, cw).distance;
      least = std::min(least, d);
      if (lowest == UINT32_MAX && Overlap(q, qp, children[i].shape, cw)) lowest = static_cast<uint32_t>(i);
    }
    const DistanceResult d = ComputeDistance(q, qp, compound, pose);
    EXPECT_NEAR(d.distance, least, 1e-9);
    if (d.distance > 1e-6) {
      EXPECT_NEAR((d.point_a - d.point_b).Length(), d.distance, 1e-7);
      EXPECT_FALSE(Overlap(q, qp, compound, pose));
    }
    const CastResult r = Cast(q, qp, Vec3{}, compound, pose);
    EXPECT_EQ(r.hit(), lowest != UINT32_MAX);
    if (r.hit() && d.distance == 0.0) {
      EXPECT_EQ(r.fraction, 0.0);
      EXPECT_EQ(r.sub_shape, lowest);
    }
  }
}

}  // namespace
}  // namespace hitbox
