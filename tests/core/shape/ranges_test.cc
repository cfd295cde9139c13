// Accepted ranges (shapes.h): sizes in [kMinShapeSize, kMaxShapeSize],
// coordinates within +-kMaxCoordinate. Everything outside is rejected with a
// message naming the value; everything inside gives finite answers: a
// property test over random pairs across the whole accepted range (sizes and
// distances spread over 16 decades, positions up to the limit), for every
// pairwise query and for world queries.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <limits>
#include <string>
#include <vector>

#include "hitbox/collision/collide.h"
#include "hitbox/world/collider_set.h"
#include "hitbox/shape/shapes.h"
#include "test_util.h"

namespace hitbox {
namespace {

using testing::Random;

TEST(RangesTest, SizesOutsideTheRangeAreRejected) {
  const double bad[] = {0.0,     -1.0,   5e-324, 1e-8, 9.99e-8, 1.0000001e6, 1e7,
                        1e308, std::numeric_limits<double>::infinity(),
                        std::numeric_limits<double>::quiet_NaN()};
  for (double v : bad) {
    EXPECT_FALSE(Shape::MakeSphere(v).ok()) << v;
    EXPECT_FALSE(Shape::MakeBox({1, v, 1}).ok()) << v;
    EXPECT_FALSE(Shape::MakeCapsule(v, 1).ok()) << v;
    EXPECT_FALSE(Shape::MakeCylinder(v, 1).ok()) << v;
    if (v != 0.0) {
      EXPECT_FALSE(Shape::MakeCapsule(1, v).ok()) << v;
      EXPECT_FALSE(Shape::MakeCylinder(1, v).ok()) << v;
    }
  }
  const Result<Shape> tiny = Shape::MakeSphere(5e-324);
  EXPECT_NE(tiny.error().message.find("sphere.radius must be finite and in [1e-7, 1e6] metres"),
            std::string::npos)
      << tiny.error().message;
  for (double v : {kMinShapeSize, 1.0, kMaxShapeSize}) {
    EXPECT_TRUE(Shape::MakeSphere(v).ok()) << v;
    EXPECT_TRUE(Shape::MakeBox({v, v, v}).ok()) << v;
    EXPECT_TRUE(Shape::MakeCapsule(v, v).ok()) << v;
    EXPECT_TRUE(Shape::MakeCylinder(v, 0.0).ok()) << v;
  }
}

TEST(RangesTest, CoordinatesOutsideTheRangeAreRejected) {
  ColliderSet set;
  Collider c;
  c.id = 1;
  c.shape = *Shape::MakeSphere(1.0);
  c.pose.position = {0, -1.0000001e9, 0};
  const Status st = set.Apply(std::vector{ColliderChange::Add(c)});
  EXPECT_EQ(st.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(st.message().find("changes[0].pose.position"), std::string::npos) << st.message();
  EXPECT_EQ(set.size(), 0u);
  c.pose.position = {kMaxCoordinate, -kMaxCoordinate, 0};
  EXPECT_TRUE(set.Apply(std::vector{ColliderChange::Add(c)}).ok());

  RayQuery ray;
  ray.origin = {0, 0, 0};
  ray.translation = {2e9, 0, 0};
  EXPECT_EQ(ColliderSet::ValidateQuery(ray).code(), ErrorCode::kInvalidArgument);
  ray.translation = {1e9, 0, 0};
  EXPECT_TRUE(ColliderSet::ValidateQuery(ray).ok());
}

// A value spread log-uniformly over [lo, hi], or one of the two ends.
double Spread(Random& rng, double lo, double hi) {
  switch (rng.Int(0, 9)) {
    case 0: return lo;
    case 1: return hi;
    default: return std::exp(rng.Uniform(std::log(lo), std::log(hi)));
  }
}

Shape AnyShape(Random& rng) {
  const double r = Spread(rng, kMinShapeSize, kMaxShapeSize);
  const double h = rng.Int(0, 5) == 0 ? 0.0 : Spread(rng, kMinShapeSize, kMaxShapeSize);
  switch (rng.Int(0, 3)) {
    case 0: return *Shape::MakeSphere(r);
    case 1:
      return *Shape::MakeBox({r, Spread(rng, kMinShapeSize, kMaxShapeSize),
                              Spread(rng, kMinShapeSize, kMaxShapeSize)});
    case 2: return *Shape::MakeCapsule(r, h);
    default: return *Shape::MakeCylinder(r, h);
  }
}

// A coordinate anywhere in range: magnitudes over 17 decades, both signs,
// the limits themselves included.
double AnyCoordinate(Random& rng) {
  const double m = rng.Int(0, 7) == 0 ? 0.0 : Spread(rng, 1e-8, kMaxCoordinate);
  return rng.Int(0, 1) ? m : -m;
}

Vec3 AnyPoint(Random& rng) { return {AnyCoordinate(rng), AnyCoordinate(rng), AnyCoordinate(rng)}; }

// A point at a distance spread over the whole range from `p`, clamped into range.
Vec3 Near(Random& rng, const Vec3& p) {
  const Vec3 q = p + rng.UnitVector() * Spread(rng, 1e-8, 2 * kMaxShapeSize);
  auto clamp = [](double v) { return std::fmax(-kMaxCoordinate, std::fmin(kMaxCoordinate, v)); };
  return {clamp(q.x), clamp(q.y), clamp(q.z)};
}

Vec3 AnyTranslation(Random& rng) {
  if (rng.Int(0, 3) == 0) return AnyPoint(rng);
  return rng.UnitVector() * Spread(rng, 1e-8, kMaxCoordinate);
}

::testing::AssertionResult Finite(const Vec3& v, const char* what) {
  if (v.IsFinite()) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << what << " = " << ToString(v);
}

::testing::AssertionResult Finite(double v, const char* what) {
  if (std::isfinite(v)) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << what << " = " << v;
}

std::string Describe(const Shape& a, const Pose& pa, const Shape& b, const Pose& pb) {
  return std::string(ShapeKindName(a.kind())) + " r=" + std::to_string(a.BoundingRadius()) +
         " at " + ToString(pa) + " vs " + ShapeKindName(b.kind()) +
         " r=" + std::to_string(b.BoundingRadius()) + " at " + ToString(pb);
}

// Every output field of every pairwise query is finite, and fractions stay
// in [0, 1], for shapes, poses and translations anywhere in range.
TEST(RangesTest, PairwiseAnswersAreFiniteAcrossTheRange) {
  Random rng(90210);
  int contacts = 0, cast_hits = 0, ray_hits = 0;
  for (int i = 0; i < 20000; ++i) {
    const Shape a = AnyShape(rng);
    const Shape b = AnyShape(rng);
    const Pose pa{AnyPoint(rng), rng.Rotation()};
    const Pose pb{rng.Int(0, 3) == 0 ? AnyPoint(rng) : Near(rng, pa.position), rng.Rotation()};
    const std::string where = "case " + std::to_string(i) + ": " + Describe(a, pa, b, pb);

    Overlap(a, pa, b, pb);
    Contact contact;
    if (ComputeContact(a, pa, b, pb, &contact)) {
      ++contacts;
      ASSERT_TRUE(Finite(contact.depth, "depth")) << where;
      ASSERT_TRUE(Finite(contact.normal, "normal")) << where;
      ASSERT_TRUE(Finite(contact.point_a, "point_a")) << where;
      ASSERT_TRUE(Finite(contact.point_b, "point_b")) << where;
    }
    const DistanceResult d = ComputeDistance(a, pa, b, pb);
    ASSERT_TRUE(Finite(d.distance, "distance")) << where;
    ASSERT_TRUE(Finite(d.point_a, "point_a")) << where;
    ASSERT_TRUE(Finite(d.point_b, "point_b")) << where;

    const Vec3 t = AnyTranslation(rng);
    const CastResult c = Cast(a, pa, t, b, pb);
    cast_hits += c.hit();
    ASSERT_TRUE(Finite(c.fraction, "fraction")) << where << " t=" << ToString(t);
    ASSERT_GE(c.fraction, 0.0) << where;
    ASSERT_LE(c.fraction, 1.0) << where;
    ASSERT_TRUE(Finite(c.normal, "normal")) << where << " t=" << ToString(t);
    ASSERT_TRUE(Finite(c.point, "point")) << where << " t=" << ToString(t);
    ASSERT_TRUE(Finite(c.depth, "depth")) << where << " t=" << ToString(t);

    const Vec3 origin = rng.Int(0, 1) ? AnyPoint(rng) : Near(rng, pb.position);
    const CastResult r = Raycast(origin, t, b, pb);
    ray_hits += r.hit();
    ASSERT_TRUE(Finite(r.fraction, "fraction")) << where;
    ASSERT_GE(r.fraction, 0.0) << where;
    ASSERT_LE(r.fraction, 1.0) << where;
    ASSERT_TRUE(Finite(r.normal, "normal")) << where << " ray " << ToString(origin);
    ASSERT_TRUE(Finite(r.point, "point")) << where << " ray " << ToString(origin);
  }
  // Not vacuous: many pairs touch, hit or are hit.
  EXPECT_GT(contacts, 2000);
  EXPECT_GT(cast_hits, 2000);
  EXPECT_GT(ray_hits, 500);
  std::printf("contacts %d, cast hits %d, ray hits %d of 20000\n", contacts, cast_hits, ray_hits);
}

// World queries too: a set of colliders spread over the range, queried by
// overlaps with contacts, all-hits casts and rays.
TEST(RangesTest, WorldAnswersAreFiniteAcrossTheRange) {
  Random rng(4711);
  for (int scene = 0; scene < 20; ++scene) {
    ColliderSet set;
    std::vector<ColliderChange> adds;
    const Vec3 centre = AnyPoint(rng);
    for (uint64_t id = 1; id <= 60; ++id) {
      Collider c;
      c.id = id;
      c.shape = AnyShape(rng);
      c.pose = {rng.Int(0, 2) == 0 ? AnyPoint(rng) : Near(rng, centre), rng.Rotation()};
      adds.push_back(ColliderChange::Add(c));
    }
    ASSERT_TRUE(set.Apply(adds).ok());
    std::vector<Query> queries;
    for (int i = 0; i < 60; ++i) {
      const Pose p{rng.Int(0, 2) == 0 ? AnyPoint(rng) : Near(rng, centre), rng.Rotation()};
      switch (i % 3) {
        case 0: {
          OverlapQuery q;
          q.shape = AnyShape(rng);
          q.pose = p;
          q.want_contact = true;
          queries.push_back(q);
          break;
        }
        case 1: {
          CastQuery q;
          q.shape = AnyShape(rng);
          q.pose = p;
          q.translation = AnyTranslation(rng);
          q.all_hits = true;
          queries.push_back(q);
          break;
        }
        default: {
          RayQuery q;
          q.origin = p.position;
          q.translation = AnyTranslation(rng);
          q.all_hits = true;
          queries.push_back(q);
          break;
        }
      }
      ASSERT_TRUE(ColliderSet::ValidateQuery(queries.back()).ok());
    }
    std::vector<QueryResult> results(queries.size());
    set.RunBatch(queries, results);
    for (size_t i = 0; i < results.size(); ++i) {
      const std::string where = "scene " + std::to_string(scene) + " query " + std::to_string(i);
      for (const OverlapHit& h : results[i].overlaps) {
        ASSERT_TRUE(h.contact.has_value()) << where;
        ASSERT_TRUE(Finite(h.contact->depth, "depth")) << where;
        ASSERT_TRUE(Finite(h.contact->normal, "normal")) << where;
        ASSERT_TRUE(Finite(h.contact->point_a, "point_a")) << where;
        ASSERT_TRUE(Finite(h.contact->point_b, "point_b")) << where;
      }
      for (const CastHit& h : results[i].hits) {
        ASSERT_TRUE(Finite(h.fraction, "fraction")) << where;
        ASSERT_TRUE(Finite(h.normal, "normal")) << where;
        ASSERT_TRUE(Finite(h.point, "point")) << where;
        ASSERT_TRUE(Finite(h.depth, "depth")) << where;
      }
    }
    ASSERT_EQ(set.Bounds().min.IsFinite() && set.Bounds().max.IsFinite(), true);
  }
}

}  // namespace
}  // namespace hitbox
