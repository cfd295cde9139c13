// Character movement (ColliderSet::Move, character.cc): scenarios on floors,
// walls, corners, stairs and slopes, and properties over thousands of seeded
// random worlds (no overlap beyond the skin, bounded displacement, same bits).
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "hitbox/world/character.h"
#include "hitbox/world/collider_set.h"
#include "world/character_internal.h"
#include "mesh_util.h"
#include "test_util.h"

namespace hitbox {
namespace {

using testing::BoxH;
using testing::CapsuleRH;
using testing::Random;

constexpr double kRadius = 0.4;
constexpr double kHalf = 0.5;
constexpr double kSkin = 0.01;
/// Capsule centre height standing on ground at y = 0.
constexpr double kStand = kRadius + kHalf + kSkin;

class World {
 public:
  void Add(uint64_t id, const Shape& shape, const Pose& pose) {
    Collider c;
    c.id = id;
    c.shape = shape;
    c.pose = pose;
    const ColliderChange ch = ColliderChange::Add(c);
    const Status st = set_.Apply({&ch, 1});
    ASSERT_TRUE(st.ok()) << st.ToString();
  }
  /// A triangulated quad grid (n x n cells of `cell`) from (x0, z0) at height
  /// y(x, z) as one mesh collider.
  template <typename Height>
  void AddGrid(uint64_t id, double x0, double z0, int n, double cell, Height y) {
    TriangleMeshShape m;
    for (int i = 0; i <= n; ++i) {
      for (int j = 0; j <= n; ++j) {
        const double x = x0 + i * cell;
        const double z = z0 + j * cell;
        m.vertices.push_back({x, y(x, z), z});
      }
    }
    const auto v = [n](int i, int j) { return static_cast<uint32_t>(i * (n + 1) + j); };
    for (int i = 0; i < n; ++i) {
      for (int j = 0; j < n; ++j) {
        m.triangles.push_back({v(i, j), v(i, j + 1), v(i + 1, j)});
        m.triangles.push_back({v(i + 1, j), v(i, j + 1), v(i + 1, j + 1)});
      }
    }
    Result<Shape> s = Shape::Make(m);
    ASSERT_TRUE(s.ok()) << s.error().message;
    Add(id, *s, Pose{});
  }
  MoveResult Move(const Vec3& from, const Vec3& d, const MoveSettings& settings = {}) const {
    MoveQuery q = Query(from, d);
    q.settings = settings;
    MoveResult r;
    set_.Move(q, &r);
    return r;
  }
  static MoveQuery Query(const Vec3& from, const Vec3& d) {
    MoveQuery q;
    q.shape = CapsuleRH(kRadius, kHalf);
    q.pose = Pose{from};
    q.displacement = d;
    return q;
  }
  const ColliderSet& set() const { return set_; }
  /// Moves collider `id` to `pose` (the game moving it between ticks).
  void Place(uint64_t id, const Pose& pose) {
    const ColliderChange ch = ColliderChange::Move(id, pose);
    const Status st = set_.Apply({&ch, 1});
    ASSERT_TRUE(st.ok()) << st.ToString();
  }

 private:
  ColliderSet set_;
};

/// Deepest penetration of the capsule at `pos` into anything of the world.
double DeepestOverlap(const ColliderSet& set, const Shape& shape, const Vec3& pos) {
  OverlapQuery oq;
  oq.shape = shape;
  oq.pose = Pose{pos};
  oq.want_contact = true;
  std::vector<OverlapHit> hits;
  set.Overlap(oq, &hits);
  double deepest = 0.0;
  for (const OverlapHit& h : hits) deepest = std::max(deepest, h.contact->depth);
  return deepest;
}

// A floor of 3200 coplanar triangles: walking (with gravity) keeps the
// height bit for bit and the horizontal motion exactly, across every seam.
TEST(Move, TessellatedFloorKeepsHeightAndSpeed) {
  World w;
  w.AddGrid(1, -20.0, -20.0, 40, 1.0, [](double, double) { return 0.0; });
  Vec3 pos{-15.0, kStand, -14.0};
  const Vec3 d{0.137, -0.05, 0.0913};
  for (int i = 0; i < 200; ++i) {
    const MoveResult r = w.Move(pos, d);
    ASSERT_EQ(r.position.y, kStand) << "move " << i;
    ASSERT_EQ(r.position.x, pos.x + d.x) << "move " << i;
    ASSERT_EQ(r.position.z, pos.z + d.z) << "move " << i;
    ASSERT_TRUE(r.on_ground);
    EXPECT_EQ(r.ground_id, 1u);
    EXPECT_EQ(r.ground_normal, (Vec3{0, 1, 0}));
    EXPECT_FALSE(r.blocked);
    EXPECT_FALSE(r.stepped);
    pos = r.position;
  }
}

// Sliding into a wall at an angle keeps the part of the motion along it.
TEST(Move, WallSlideKeepsParallelPart) {
  World w;
  w.Add(1, BoxH(20, 0.5, 20), testing::At(0, -0.5, 0));
  w.Add(2, BoxH(0.5, 2, 20), testing::At(2.5, 2, 0));  // face at x = 2
  const MoveResult r = w.Move({0, kStand, 0}, {5, 0, 3});
  EXPECT_NEAR(r.position.x, 2 - kRadius - kSkin, 1e-6);
  EXPECT_NEAR(r.position.z, 3.0, 1e-6);
  EXPECT_NEAR(r.position.y, kStand, 1e-9);
  EXPECT_TRUE(r.blocked);
  ASSERT_FALSE(r.contacts.empty());
  EXPECT_EQ(r.contacts.front().id, 2u);
  EXPECT_NEAR(r.contacts.front().normal.x, -1.0, 1e-6);
}

// Two walls meeting at a right angle: moving into the corner stops there.
TEST(Move, CornerStops) {
  World w;
  w.Add(1, BoxH(20, 0.5, 20), testing::At(0, -0.5, 0));
  w.Add(2, BoxH(0.5, 2, 20), testing::At(2.5, 2, 0));  // x = 2
  w.Add(3, BoxH(20, 2, 0.5), testing::At(0, 2, 2.5));  // z = 2
  const MoveResult r = w.Move({0, kStand, 0}, {5, -0.1, 4});
  EXPECT_NEAR(r.position.x, 2 - kRadius - kSkin, 1e-6);
  EXPECT_NEAR(r.position.z, 2 - kRadius - kSkin, 1e-6);
  EXPECT_NEAR(r.position.y, kStand, 1e-6);
  EXPECT_TRUE(r.blocked);
  // Moving on into the corner changes nothing.
  const MoveResult again = w.Move(r.position, {1, -0.1, 1});
  EXPECT_LE((again.position - r.position).Length(), 1e-9);
  EXPECT_TRUE(again.blocked);
}

// Stairs up to the step height are climbed; a taller one blocks.
TEST(Move, StairsUpToStepHeight) {
  for (const double rise : {0.1, 0.25, 0.29, 0.35, 0.6}) {
    World w;
    w.Add(1, BoxH(20, 0.5, 20), testing::At(0, -0.5, 0));
    for (int k = 1; k <= 4; ++k) {  // a staircase from z = 2: treads 0.5 m deep, then a landing
      const double front = 1.5 + 0.5 * k;
      w.Add(1 + k, BoxH(10, rise * k / 2, (20 - front) / 2),
            testing::At(0, rise * k / 2, (20 + front) / 2));
    }
    Vec3 pos{0, kStand, 0};
    bool stepped = false;
    for (int i = 0; i < 30; ++i) {
      const MoveResult r = w.Move(pos, {0, -0.1, 0.2});
      stepped = stepped || r.stepped;
      pos = r.position;
      EXPECT_LE(DeepestOverlap(w.set(), CapsuleRH(kRadius, kHalf), pos), kSkin);
    }
    if (rise <= 0.3) {
      // Low steps are ridden over by the capsule's rounded end without the step pass.
      if (rise >= 0.2) { EXPECT_TRUE(stepped) << rise; }
      EXPECT_NEAR(pos.y, kStand + 4 * rise, 1e-6) << rise;
      EXPECT_GT(pos.z, 4.0) << rise;
    } else {
      EXPECT_FALSE(stepped) << rise;
      EXPECT_NEAR(pos.y, kStand, 1e-6) << rise;
      EXPECT_LT(pos.z, 2.0) << rise;
    }
  }
}

// A ramp from a floor: a 30 degree one is walked up; a 60 degree one is
// never climbed (not even by stepping) and a capsule on it is not on ground.
TEST(Move, SlopesAboveTheLimitAreNotWalkable) {
  for (const double degrees : {30.0, 44.0, 46.0, 60.0}) {
    const double slope = std::tan(degrees * 0.017453292519943295);
    World w;
    w.AddGrid(1, -10.0, -10.0, 20, 1.0, [slope](double x, double) {
      return x <= 2.0 ? 0.0 : (x - 2.0) * slope;
    });
    Vec3 pos{0, kStand, 0};
    for (int i = 0; i < 30; ++i) pos = w.Move(pos, {0.2, -0.1, 0}).position;
    if (degrees <= 45.0) {
      EXPECT_GT(pos.y, kStand + 1.0) << degrees;
    } else {
      EXPECT_LE(pos.y, kStand + 1e-6) << degrees;
      EXPECT_LT(pos.x, 2.0) << degrees;
    }
    // Dropped onto the slope at x = 6.
    const MoveResult r = w.Move({6.0, 4 * slope + 3.0, 0}, {0, -3.0, 0});
    EXPECT_EQ(r.on_ground, degrees <= 45.0) << degrees;
  }
}

/// A slope rising at `degrees` along local +x through the origin, as an
/// n x n grid of `cell`-metre quads (cut along either diagonal), turned by
/// `yaw` about +y.
Collider SlopeMesh(uint64_t id, double degrees, int n, double cell, bool other_diagonal,
                   double yaw) {
  const double rise = std::tan(degrees * 0.017453292519943295);
  TriangleMeshShape m;
  const double x0 = -0.5 * n * cell;
  for (int i = 0; i <= n; ++i) {
    for (int j = 0; j <= n; ++j) {
      const double x = x0 + i * cell;
      m.vertices.push_back({x, x * rise, x0 + j * cell});
    }
  }
  const auto v = [n](int i, int j) { return static_cast<uint32_t>(i * (n + 1) + j); };
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < n; ++j) {
      if (other_diagonal) {
        m.triangles.push_back({v(i, j), v(i, j + 1), v(i + 1, j + 1)});
        m.triangles.push_back({v(i, j), v(i + 1, j + 1), v(i + 1, j)});
      } else {
        m.triangles.push_back({v(i, j), v(i, j + 1), v(i + 1, j)});
        m.triangles.push_back({v(i + 1, j), v(i, j + 1), v(i + 1, j + 1)});
      }
    }
  }
  Collider c;
  c.id = id;
  c.shape = *Shape::Make(m);
  c.pose = Pose{{}, Quat::FromAxisAngle({0, 1, 0}, yaw)};
  return c;
}

// Gravity alone never moves a character resting on walkable ground, on any
// slope below the limit, tessellation and heading (2,000 random ones): not a
// bit in 600 ticks (30 after the first 200), never `blocked`. Steeper slopes
// are walls: the same character slides down.
TEST(Move, StandingStillOnWalkableSlopesDoesNotDrift) {
  Random rng(31);
  int held = 0;
  for (int trial = 0; trial < 2000; ++trial) {
    const bool steep = trial % 10 == 9;
    const double degrees = steep ? rng.Uniform(47.0, 70.0) : rng.Uniform(0.0, 44.0);
    // At least 10 m across, so the capsule lands well inside the mesh.
    const double cell = rng.Uniform(0.3, 4.0);
    const int n = std::max(rng.Int(2, 12), static_cast<int>(std::ceil(10.0 / cell)));
    ColliderSet set;
    const Collider slope =
        SlopeMesh(1, degrees, n, cell, rng.Int(0, 1) == 1, rng.Uniform(0.0, 6.3));
    ASSERT_TRUE(set.AddBulk({&slope, 1}).ok());
    const double top = 4.0 + 5.0 * std::tan(degrees * 0.017453292519943295);
    MoveQuery q = World::Query({rng.Uniform(-1, 1), top, rng.Uniform(-1, 1)}, {0, -0.05, 0});
    // Falls onto the slope first, then settles at the skin in one more tick
    // (the ground probe reaches a little further than the skin).
    MoveResult r;
    for (int i = 0; i < 400 && !r.on_ground; ++i) {
      set.Move(q, &r);
      q.pose.position = r.position;
    }
    set.Move(q, &r);
    q.pose.position = r.position;
    if (steep) {
      ASSERT_FALSE(r.on_ground) << degrees;
      set.Move(q, &r);
      EXPECT_LT(r.position.y, q.pose.position.y) << degrees;
      continue;
    }
    ASSERT_TRUE(r.on_ground) << degrees;
    const Vec3 rest = r.position;
    const int ticks = trial < 200 ? 600 : 30;
    for (int tick = 0; tick < ticks; ++tick) {
      set.Move(q, &r);
      ASSERT_EQ(r.position, rest) << degrees << " tick " << tick;
      ASSERT_FALSE(r.blocked) << degrees << " tick " << tick;
      ASSERT_TRUE(r.on_ground) << degrees << " tick " << tick;
    }
    ++held;
  }
  EXPECT_GT(held, 1700);
}

// Walking with gravity on a slightly tilted floor makes the whole motion
// along the ground and is not blocked; walking up a walkable ramp keeps the
// horizontal speed.
TEST(Move, WalkingOnWalkableGroundKeepsTheHorizontalMotion) {
  for (const double degrees : {0.5, 10.0, 30.0}) {
    ColliderSet set;
    const Collider slope = SlopeMesh(1, degrees, 20, 2.0, false, 0.0);
    ASSERT_TRUE(set.AddBulk({&slope, 1}).ok());
    MoveQuery q = World::Query({-2.0, 2.0, 0.3}, {0, -0.05, 0});
    MoveResult r;
    for (int i = 0; i < 400 && !r.on_ground; ++i) {
      set.Move(q, &r);
      q.pose.position = r.position;
    }
    set.Move(q, &r);
    q.pose.position = r.position;
    ASSERT_TRUE(r.on_ground);
    for (const Vec3 walk : {Vec3{0.25, -0.05, 0}, Vec3{-0.25, -0.05, 0}, Vec3{0.1, -0.05, 0.2}}) {
      q.displacement = walk;
      for (int tick = 0; tick < 20; ++tick) {
        set.Move(q, &r);
        const Vec3 moved = r.position - q.pose.position;
        EXPECT_NEAR(moved.x, walk.x, 1e-9) << degrees;
        EXPECT_NEAR(moved.z, walk.z, 1e-9) << degrees;
        EXPECT_FALSE(r.blocked) << degrees;
        EXPECT_TRUE(r.on_ground) << degrees;
        q.pose.position = r.position;
      }
    }
  }
}

// A platform the game moves between ticks: rising, it lifts the character
// standing on it back to the skin above its top; sinking or sliding, the
// character follows when the game adds the platform's motion to the move.
// Under a low ceiling the lift stops short of it.
TEST(Move, MovingPlatformsCarryACharacter) {
  const Vec3 steps[] = {{0, 0.05, 0}, {0, -0.03, 0}, {0.1, 0, -0.05}, {0.07, 0.04, 0.02}};
  for (const Vec3& step : steps) {
    World w;
    w.Add(1, BoxH(20, 0.5, 20), testing::At(0, -0.5, 0));
    Pose platform = testing::At(0, 1.0, 0);  // top at 1.25, above the floor throughout
    w.Add(2, BoxH(3, 0.25, 3), platform);
    Vec3 pos{0, 1.25 + kStand, 0};
    for (int tick = 0; tick < 20; ++tick) {
      platform.position += step;
      w.Place(2, platform);
      const MoveResult r = w.Move(pos, Vec3{step.x, -0.1, step.z});
      EXPECT_NEAR(r.position.y - (platform.position.y + 0.25), kStand, 1e-6)
          << ToString(step) << " tick " << tick;
      EXPECT_NEAR(r.position.x, platform.position.x, 1e-9) << ToString(step);
      EXPECT_NEAR(r.position.z, platform.position.z, 1e-9) << ToString(step);
      EXPECT_TRUE(r.on_ground);
      EXPECT_EQ(r.ground_id, 2u);
      EXPECT_LE(DeepestOverlap(w.set(), CapsuleRH(kRadius, kHalf), r.position), kSkin);
      pos = r.position;
    }
  }
  // A ceiling 2.6 m above the floor: the platform rises 0.35 m into the
  // character, which is lifted no higher than the skin below the ceiling.
  World w;
  w.Add(1, BoxH(20, 0.5, 20), testing::At(0, -0.5, 0));
  w.Add(3, BoxH(20, 0.5, 20), testing::At(0, 3.1, 0));
  w.Add(2, BoxH(3, 0.25, 3), testing::At(0, 0.25, 0));
  const MoveResult rest = w.Move({0, 0.5 + kStand, 0}, {0, -0.1, 0});
  w.Place(2, testing::At(0, 0.6, 0));
  const MoveResult r = w.Move(rest.position, {0, -0.1, 0});
  EXPECT_LE(r.position.y + kRadius + kHalf, 2.6 - kSkin + 1e-9);
  EXPECT_GT(r.position.y, rest.position.y);
}

// Snapping follows walkable ground down a small drop; a jump is not snapped.
TEST(Move, GroundSnap) {
  World w;
  w.Add(1, BoxH(20, 0.5, 1), testing::At(0, -0.5, 0));
  w.Add(2, BoxH(20, 0.5, 5), testing::At(0, -0.58, 6));  // 8 cm lower from z = 1
  const MoveResult down = w.Move({0, kStand, 0.5}, {0, 0, 1.5});
  EXPECT_NEAR(down.position.y, kStand - 0.08, 1e-6);
  EXPECT_TRUE(down.on_ground);
  EXPECT_EQ(down.ground_id, 2u);
  MoveSettings no_snap;
  no_snap.ground_snap_distance = 0;
  const MoveResult air = w.Move({0, kStand, 0.5}, {0, 0, 1.5}, no_snap);
  EXPECT_EQ(air.position.y, kStand);
  EXPECT_FALSE(air.on_ground);
  const MoveResult jump = w.Move({0, kStand, 0.5}, {0, 0.05, 1.5});
  EXPECT_NEAR(jump.position.y, kStand + 0.05, 1e-9);
}

// Two players pushed into each other (both moved on the same snapshot): the
// one that starts overlapping still slides along the other, never stuck on it.
TEST(Move, StartedOverlappingSlidesAlong) {
  World w;
  w.Add(1, BoxH(20, 0.5, 20), testing::At(0, -0.5, 0));
  w.Add(2, CapsuleRH(kRadius, kHalf), testing::At(0, kStand, 0));
  Random rng(5);
  for (int i = 0; i < 200; ++i) {
    const double a = rng.Uniform(0, 6.283185307179586);
    const Vec3 from{0.77 * std::cos(a), kStand, 0.77 * std::sin(a)};  // 3 cm inside
    const Vec3 tangent{-std::sin(a), 0, std::cos(a)};
    const Vec3 inward{-std::cos(a), 0, -std::sin(a)};
    const MoveResult r = w.Move(from, tangent * 0.5 + inward * 0.2 + Vec3{0, -0.02, 0});
    EXPECT_GT(Dot(r.displacement, tangent), 0.4) << i;
    EXPECT_LE(DeepestOverlap(w.set(), CapsuleRH(kRadius, kHalf), r.position), 0.03 + 1e-9);
  }
}

// The character's own collider (apply_to_id or filter.ignore) never blocks it.
TEST(Move, IgnoresOwnCollider) {
  World w;
  w.Add(1, BoxH(20, 0.5, 20), testing::At(0, -0.5, 0));
  w.Add(9, CapsuleRH(kRadius, kHalf), testing::At(0, kStand, 0));
  MoveQuery q = World::Query({0, kStand, 0}, {1, 0, 0});
  q.apply_to_id = 9;
  MoveResult r;
  w.set().Move(q, &r);
  EXPECT_EQ(r.position.x, 1.0);
  q.apply_to_id.reset();
  q.filter.ignore = {9};
  w.set().Move(q, &r);
  EXPECT_EQ(r.position.x, 1.0);
}

// Bad settings are refused, naming the field.
TEST(Move, ValidateNamesTheField) {
  MoveQuery q = World::Query({0, 0, 0}, {1, 0, 0});
  EXPECT_TRUE(ColliderSet::ValidateQuery(q).ok());
  q.settings.max_slope_degrees = 90;
  Status st = ColliderSet::ValidateQuery(q, "queries[3].move");
  EXPECT_NE(st.message().find("queries[3].move.settings.max_slope_degrees"), std::string::npos)
      << st.ToString();
  q = World::Query({0, 0, 0}, {1, 0, 0});
  q.settings.skin_width = 0;
  EXPECT_FALSE(ColliderSet::ValidateQuery(q).ok());
  q = World::Query({0, 0, 0}, {1, 0, NAN});
  EXPECT_FALSE(ColliderSet::ValidateQuery(q).ok());
  q = World::Query({0, 0, 0}, {1, 0, 0});
  q.settings.up = {};
  EXPECT_FALSE(ColliderSet::ValidateQuery(q).ok());
}

bool SameBits(const Vec3& a, const Vec3& b) {
  return std::bit_cast<uint64_t>(a.x) == std::bit_cast<uint64_t>(b.x) &&
         std::bit_cast<uint64_t>(a.y) == std::bit_cast<uint64_t>(b.y) &&
         std::bit_cast<uint64_t>(a.z) == std::bit_cast<uint64_t>(b.z);
}

// A random world of seed `seed`: a wavy mesh floor (even seeds) or a box
// floor, and 3 to 14 random shapes around and above it.
void BuildRandomWorld(uint64_t seed, Random& rng, World* w) {
  if (seed % 2 == 0) {
    const double a = rng.Uniform(0.0, 0.4);
    const double f = rng.Uniform(0.3, 1.5);
    w->AddGrid(1, -6.0, -6.0, 24, 0.5,
               [a, f](double x, double z) { return a * std::sin(f * x) * std::cos(f * z); });
  } else {
    w->Add(1, BoxH(10, 0.5, 10), testing::At(0, -0.5, 0));
  }
  const int n = rng.Int(3, 14);
  for (int k = 0; k < n; ++k) {
    const ShapeKind kind = static_cast<ShapeKind>(rng.Int(0, 3));
    w->Add(
        2 + k, rng.MakeShape(kind, 0.1, 1.2),
        Pose{Vec3{rng.Uniform(-4, 4), rng.Uniform(-0.5, 2.5), rng.Uniform(-4, 4)}, rng.Rotation()});
  }
}

// A random capsule move with random settings from a free start in `w`
// (false when no free start was found in 20 tries).
bool RandomFreeMove(Random& rng, const World& w, MoveQuery* out) {
  MoveQuery q = World::Query({}, {});
  q.shape = CapsuleRH(rng.Uniform(0.2, 0.5), rng.Uniform(0.0, 0.6));
  q.settings.skin_width = rng.Uniform(0.002, 0.03);
  q.settings.step_height = rng.Int(0, 3) == 0 ? 0.0 : rng.Uniform(0.05, 0.5);
  q.settings.max_slope_degrees = rng.Uniform(20, 70);
  q.settings.ground_snap_distance = rng.Uniform(0.0, 0.3);
  q.settings.max_iterations = rng.Int(1, 12);
  // A free start: an inflated copy of the shape touches nothing.
  const Shape fat =
      *Shape::MakeCapsule(q.shape.radius() + q.settings.skin_width, q.shape.half_height());
  bool free = false;
  for (int tries = 0; tries < 20 && !free; ++tries) {
    q.pose.position = {rng.Uniform(-4, 4), rng.Uniform(0.5, 3.0), rng.Uniform(-4, 4)};
    OverlapQuery oq;
    oq.shape = fat;
    oq.pose = q.pose;
    std::vector<OverlapHit> hits;
    w.set().Overlap(oq, &hits);
    free = hits.empty();
  }
  if (!free) return false;
  q.displacement = rng.UnitVector() * rng.Uniform(0.0, 3.0);
  if (rng.Int(0, 1) == 0) q.displacement.y = -std::fabs(q.displacement.y);
  *out = std::move(q);
  return true;
}

// Every field of two move results, bit for bit; "" when equal.
std::string MoveDiff(const MoveResult& a, const MoveResult& b) {
  if (!SameBits(a.position, b.position)) return "position";
  if (!SameBits(a.displacement, b.displacement)) return "displacement";
  if (a.contacts.size() != b.contacts.size()) return "contacts.size";
  for (size_t k = 0; k < a.contacts.size(); ++k) {
    const MoveContact& x = a.contacts[k];
    const MoveContact& y = b.contacts[k];
    if (x.id != y.id || x.sub_shape != y.sub_shape || !SameBits(x.normal, y.normal) ||
        !SameBits(x.point, y.point)) {
      return "contacts[" + std::to_string(k) + "]";
    }
  }
  if (a.on_ground != b.on_ground) return "on_ground";
  if (a.ground_id != b.ground_id || a.ground_sub_shape != b.ground_sub_shape ||
      !SameBits(a.ground_normal, b.ground_normal)) {
    return "ground";
  }
  if (a.stepped != b.stepped) return "stepped";
  if (a.blocked != b.blocked) return "blocked";
  return "";
}

// Thousands of random worlds (boxes, spheres, capsules, hulls, a bumpy mesh
// floor): from a free start, the end overlaps nothing by more than the skin,
// the displacement is never longer than asked plus step and snap, and the
// answer is the same bits alone, again, and in a pooled batch.
TEST(Move, RandomWorldProperties) {
  ThreadPool pool(2);
  int moves = 0;
  int blocked = 0;
  for (uint64_t seed = 1; seed <= 2000; ++seed) {
    Random rng(seed);
    World w;
    BuildRandomWorld(seed, rng, &w);
    std::vector<Query> batch;
    std::vector<MoveResult> alone;
    for (int m = 0; m < 8; ++m) {
      MoveQuery q;
      if (!RandomFreeMove(rng, w, &q)) continue;
      MoveResult r;
      w.set().Move(q, &r);
      ++moves;
      blocked += r.blocked;
      const std::string what = "seed " + std::to_string(seed) + " move " + std::to_string(m);
      ASSERT_TRUE(r.position.IsFinite()) << what;
      EXPECT_LE(DeepestOverlap(w.set(), q.shape, r.position), q.settings.skin_width) << what;
      const double along_ground =
          q.displacement.Length() / std::cos(q.settings.max_slope_degrees * 0.017453292519943295);
      EXPECT_LE(r.displacement.Length(), along_ground + q.settings.step_height +
                                             q.settings.ground_snap_distance + 1e-9)
          << what;
      EXPECT_LE(r.contacts.size(), static_cast<size_t>(2 * q.settings.max_iterations + 4));
      MoveResult again;
      w.set().Move(q, &again);
      EXPECT_TRUE(SameBits(r.position, again.position)) << what;
      batch.push_back(q);
      alone.push_back(r);
    }
    // Mixed into a batch with other kinds, on a pool: the same bits.
    batch.push_back(RayQuery{{0, 5, 0}, {0, -10, 0}, {}, false});
    std::vector<QueryResult> results(batch.size());
    const Status st = w.set().RunBatch(batch, results, &pool, QueryBudget{});
    ASSERT_TRUE(st.ok()) << st.ToString();
    for (size_t i = 0; i < alone.size(); ++i) {
      ASSERT_TRUE(results[i].move.has_value());
      EXPECT_TRUE(SameBits(results[i].move->position, alone[i].position)) << "seed " << seed;
      EXPECT_EQ(results[i].move->contacts.size(), alone[i].contacts.size());
    }
    EXPECT_FALSE(results.back().move.has_value());
    EXPECT_EQ(results.back().hits.size(), 1u);
  }
  EXPECT_GT(moves, 10000);
  EXPECT_GT(blocked, 1000);  // the worlds do get in the way
}

// A move gathers the tree leaves near it once (less those it ignores) and
// tests only those on each sweep: every field of every answer is the one
// the full tree walk on each sweep gives, in random worlds and with other
// players about, with and without colliders ignored (a filter's, its own).
TEST(Move, GatheredLeavesAnswerAsTheTreeWalk) {
  int compared = 0;
  for (uint64_t seed = 1; seed <= 600; ++seed) {
    Random rng(seed);
    World w;
    BuildRandomWorld(seed, rng, &w);
    for (int m = 0; m < 8; ++m) {
      MoveQuery q;
      if (!RandomFreeMove(rng, w, &q)) continue;
      if (m % 2 == 1) q.settings.step_height = rng.Uniform(0.0, 0.6);
      if (m % 4 == 2) q.filter.ignore = {2, 1000};
      if (m % 4 == 3) q.apply_to_id = 3;
      MoveResult gathered, walked;
      w.set().Move(q, &gathered);
      internal::MoveGatherOnThisThread() = false;
      w.set().Move(q, &walked);
      internal::MoveGatherOnThisThread() = true;
      ASSERT_EQ(MoveDiff(gathered, walked), "")
          << "seed " << seed << " move " << m;
      ++compared;
    }
  }
  EXPECT_GT(compared, 3000);
}

// A mesh of walls and a ramp about the origin (a room's corner: two walls
// 3 m high of 1 m cells and a 4 m ramp rising 1 m between them).
Shape CornerMesh() {
  TriangleMeshShape m;
  auto quad = [&m](const Vec3& a, const Vec3& b, const Vec3& c, const Vec3& d) {
    const auto base = static_cast<uint32_t>(m.vertices.size());
    m.vertices.insert(m.vertices.end(), {a, b, c, d});
    m.triangles.push_back({base, base + 1, base + 2});
    m.triangles.push_back({base, base + 2, base + 3});
  };
  for (int i = 0; i < 4; ++i) {
    for (int j = 0; j < 3; ++j) {
      const double x = i, y = j;
      quad({x, y, 0}, {x + 1, y, 0}, {x + 1, y + 1, 0}, {x, y + 1, 0});
      quad({0, y, x}, {0, y + 1, x}, {0, y + 1, x + 1}, {0, y, x + 1});
    }
  }
  quad({1, 0, 1}, {1, 0, 2}, {4, 1, 2}, {4, 1, 1});
  return *Shape::Make(m);
}

// A wavy grid floor (id 1) and CornerMesh (id 2) at a random spot and yaw,
// raised or lowered by up to `lift` (no draw when 0).
void AddWavyFloorAndCorner(Random& rng, double lift, World* w) {
  const double amp = rng.Uniform(0.0, 0.3), f = rng.Uniform(0.3, 1.5);
  const double cell = rng.Uniform(0.3, 2.0);
  w->AddGrid(1, -8.0, -8.0, static_cast<int>(16.0 / cell), cell,
             [amp, f](double x, double z) { return amp * std::sin(f * x) * std::cos(f * z); });
  const double x = rng.Uniform(-3, 0);
  const double y = lift > 0.0 ? rng.Uniform(-lift, lift) : 0.0;
  const double z = rng.Uniform(-3, 0);
  const Quat yaw = Quat::FromAxisAngle({0, 1, 0}, rng.Uniform(0.0, 6.3));
  w->Add(2, CornerMesh(), Pose{Vec3{x, y, z}, yaw});
}

// A move gathers the triangles of the meshes near it once and sweeps only
// those (where their order cannot change the answer): every field of every
// answer is the one of the mesh walk on each sweep and of the tree walk, on
// character-sized moves chained over wavy mesh floors of random cells, with
// mesh walls at random angles, boxes and other capsules about, capsules
// (upright or tilted) and balls moving. Fails when the gather drops
// triangles (checked by dropping one in five).
TEST(Move, GatheredMeshTrianglesAnswerAsTheMeshWalk) {
  int compared = 0;
  const uint64_t gathered_before = internal::MoveCountsOnThisThread().gathered_mesh_sweeps;
  for (uint64_t seed = 1; seed <= 300; ++seed) {
    Random rng(seed);
    World w;
    AddWavyFloorAndCorner(rng, 0.2, &w);
    const int n = rng.Int(2, 8);
    for (int k = 0; k < n; ++k) {
      const ShapeKind kind = static_cast<ShapeKind>(rng.Int(0, 3));
      w.Add(3 + k, rng.MakeShape(kind, 0.1, 1.0),
            Pose{Vec3{rng.Uniform(-4, 4), rng.Uniform(0.0, 1.5), rng.Uniform(-4, 4)},
                 rng.Rotation()});
    }
    for (int m = 0; m < 4; ++m) {
      MoveQuery q;
      if (!RandomFreeMove(rng, w, &q)) continue;
      if (m % 3 == 2) q.shape = *Shape::MakeSphere(rng.Uniform(0.2, 0.5));
      // A tilted capsule against the turned corner.
      if (m % 3 == 1 && seed % 2 == 0) q.pose.rotation = rng.Rotation();
      q.pose.position.y = rng.Uniform(0.4, 1.2);
      const Vec3 walk = rng.UnitVector() * rng.Uniform(0.0, 0.4);
      q.displacement = Vec3{walk.x, -rng.Uniform(0.0, 0.2), walk.z};
      for (int step = 0; step < 6; ++step) {
        MoveResult gathered, mesh_walk, tree_walk;
        w.set().Move(q, &gathered);
        internal::MoveGatherTrianglesOnThisThread() = false;
        w.set().Move(q, &mesh_walk);
        internal::MoveGatherTrianglesOnThisThread() = true;
        internal::MoveGatherOnThisThread() = false;
        w.set().Move(q, &tree_walk);
        internal::MoveGatherOnThisThread() = true;
        ASSERT_EQ(MoveDiff(gathered, mesh_walk), "")
            << "seed " << seed << " move " << m << " step " << step;
        ASSERT_EQ(MoveDiff(gathered, tree_walk), "")
            << "seed " << seed << " move " << m << " step " << step;
        ++compared;
        q.pose.position = gathered.position;
      }
    }
  }
  const uint64_t gathered = internal::MoveCountsOnThisThread().gathered_mesh_sweeps - gathered_before;
  std::printf("moves compared %d, mesh sweeps answered from gathered triangles %llu\n",
              compared, static_cast<unsigned long long>(gathered));
  EXPECT_GT(compared, 4000);
  EXPECT_GT(gathered, 20000u);
}

// A walk over a floor of 1 m cells gathers each move's mesh triangles once,
// around its path: at most the 8 triangles of the 2 x 2 cells a capsule 0.8
// m wide moving 0.1 m reaches (a region grown by the step height or the
// whole displacement all round reaches 3 x 3 cells, 18 triangles).
TEST(Move, GatherFollowsThePath) {
  World w;
  w.AddGrid(1, -20.0, -20.0, 40, 1.0, [](double, double) { return 0.0; });
  Vec3 pos{-15.0, kStand, -14.0};
  const Vec3 d{0.1, -0.02, 0.05};
  const uint64_t gathers_before = internal::MoveCountsOnThisThread().mesh_gathers;
  const uint64_t tris_before = internal::MoveCountsOnThisThread().gathered_triangles;
  uint64_t most = 0;
  constexpr int kMoves = 200;
  for (int i = 0; i < kMoves; ++i) {
    const uint64_t tris = internal::MoveCountsOnThisThread().gathered_triangles;
    const MoveResult r = w.Move(pos, d);
    ASSERT_TRUE(r.on_ground);
    ASSERT_EQ(r.position.x, pos.x + d.x) << "move " << i;
    most = std::max(most, internal::MoveCountsOnThisThread().gathered_triangles - tris);
    pos = r.position;
  }
  EXPECT_EQ(internal::MoveCountsOnThisThread().mesh_gathers - gathers_before, static_cast<uint64_t>(kMoves));
  EXPECT_LE(most, 8u);
  EXPECT_GE(internal::MoveCountsOnThisThread().gathered_triangles - tris_before, 2u * kMoves);
}

// A character's ground probes keep each mesh's answer, which its next move
// (starting where this one ended) asks again: every field of every answer
// is the one of the same moves without kept answers, on walks over wavy
// mesh floors beside a mesh corner at a random yaw, while between moves the
// floor moves up or down (a new mesh version) and a box comes and goes under
// the walker (not a mesh: never kept). The walks do take kept answers.
// Fails when a kept answer is taken for another mesh version or start.
TEST(Move, KeptGroundProbesAnswerAsNewOnes) {
  const uint64_t kept_before = internal::MoveCountsOnThisThread().memo_answers;
  int compared = 0;
  for (uint64_t seed = 1; seed <= 80; ++seed) {
    Random rng(seed);
    World w;
    AddWavyFloorAndCorner(rng, 0.0, &w);
    w.Add(3, BoxH(0.3, 0.1, 0.3), testing::At(0, -50, 0));
    MoveQuery q = World::Query({rng.Uniform(-4, 4), kStand + 0.35, rng.Uniform(-4, 4)}, {});
    const Vec3 walk = rng.UnitVector() * rng.Uniform(0.05, 0.3);
    q.displacement = Vec3{walk.x, -0.02, walk.z};
    for (int step = 0; step < 40; ++step) {
      if (step % 5 == 4) {  // the game changes the world between moves
        const Vec3 at = q.pose.position;
        if (rng.Int(0, 1) == 0) {
          w.Place(1, testing::At(0, rng.Uniform(-0.04, 0.04), 0));
        } else {
          w.Place(3, rng.Int(0, 1) == 0 ? testing::At(0, -50, 0)
                                          : testing::At(at.x + walk.x * 2, 0.0, at.z + walk.z * 2));
        }
      }
      MoveResult kept, fresh;
      w.set().Move(q, &kept);
      internal::MoveMemoOnThisThread() = false;
      w.set().Move(q, &fresh);
      internal::MoveMemoOnThisThread() = true;
      ASSERT_EQ(MoveDiff(kept, fresh), "") << "seed " << seed << " step " << step;
      ++compared;
      q.pose.position = kept.position;
    }
  }
  const uint64_t kept = internal::MoveCountsOnThisThread().memo_answers - kept_before;
  EXPECT_EQ(compared, 3200);
  std::printf("moves compared %d, mesh sweeps answered as kept %llu\n", compared,
              static_cast<unsigned long long>(kept));
  EXPECT_GT(kept, 1500u);
}

// A flat n x n grid of `cell` metres from (-10, y, -10), one mesh.
Shape FlatGrid(double y, int n, double cell) {
  const testing::MeshData d = testing::WavyGrid(n, cell, /*flat=*/true);
  TriangleMeshShape m;
  for (const Vec3& v : d.vertices) m.vertices.push_back(v + Vec3{-10.0, y, -10.0});
  for (const auto& t : d.triangles) m.triangles.push_back({t[0], t[1], t[2]});
  return *Shape::Make(m);
}

// Moves keep the mesh triangles they decode for the next moves: walking a
// path again decodes none. Floors of the same triangles at other heights,
// replacing one another in one set and in sets made one after another (by
// Apply and by AddBulk), are each met where they are, as the mesh walk
// meets them (fails when a set's mesh versions restart from 1, or AddBulk
// leaves them as they were).
TEST(Move, DecodedTrianglesFollowTheMeshes) {
  const Vec3 d{0.1, -0.02, 0.05};
  // Walks 30 moves from (-5, y, -4) standing on ground at height `ground`;
  // each answer is the mesh walk's and stands on that ground.
  auto walk = [&d](const ColliderSet& set, double ground) {
    MoveQuery q = World::Query({-5.0, ground + kStand, -4.0}, d);
    for (int i = 0; i < 30; ++i) {
      MoveResult gathered, mesh_walk;
      set.Move(q, &gathered);
      internal::MoveGatherTrianglesOnThisThread() = false;
      set.Move(q, &mesh_walk);
      internal::MoveGatherTrianglesOnThisThread() = true;
      ASSERT_EQ(MoveDiff(gathered, mesh_walk), "") << "ground " << ground << " move " << i;
      ASSERT_TRUE(gathered.on_ground) << "ground " << ground << " move " << i;
      ASSERT_NEAR(gathered.position.y, ground + kStand, 1e-9) << "ground " << ground;
      q.pose.position = gathered.position;
    }
  };
  Collider floor;
  floor.id = 1;
  for (int round = 0; round < 4; ++round) {  // a new set each round
    const double ground = 0.05 * round;
    floor.shape = FlatGrid(ground, 20, 1.0);
    ColliderSet set;
    if (round % 2 == 0) {
      ASSERT_TRUE(set.AddBulk({&floor, 1}).ok());
    } else {
      const ColliderChange add = ColliderChange::Add(floor);
      ASSERT_TRUE(set.Apply({&add, 1}).ok());
    }
    walk(set, ground);
    const uint64_t decoded = internal::MoveCountsOnThisThread().decoded_triangles;
    walk(set, ground);
    EXPECT_EQ(internal::MoveCountsOnThisThread().decoded_triangles, decoded) << "round " << round;
  }
  ColliderSet set;  // one set, its floor replaced by higher ones
  for (int round = 0; round < 4; ++round) {
    const double ground = 0.03 * round;
    floor.shape = FlatGrid(ground, 20, 1.0);
    const ColliderChange change =
        round == 0 ? ColliderChange::Add(floor) : ColliderChange::Replace(floor);
    ASSERT_TRUE(set.Apply({&change, 1}).ok());
    walk(set, ground);
  }
}

// Moves walk the tree themselves, never its 4-wide copy: batches of moves
// alone, however many, do not make the copy; as many rays do.
TEST(Move, MovesDoNotPayForTheWideCopy) {
  World w;
  for (int i = 0; i < 300; ++i) {
    w.Add(10 + i, BoxH(0.2, 0.2, 0.2),
          testing::At(-15.0 + (i % 20) * 1.5, 0.2, -15.0 + (i / 20) * 2.0));
  }
  std::vector<Query> moves, rays;
  for (int i = 0; i < 100; ++i) {
    moves.push_back(World::Query({-15.0 + i * 0.3, 3.0, 16.0}, {0.1, -0.02, 0.0}));
    rays.push_back(RayQuery{{-15.0 + i * 0.3, 3.0, 0.0}, {0, -5, 0}, {}, false});
  }
  std::vector<QueryResult> results(moves.size());
  for (int batch = 0; batch < 3; ++batch) {
    w.set().RunBatch(moves, results);
    ASSERT_TRUE(results[0].move.has_value());
  }
  EXPECT_EQ(w.set().GetTreeStats().wide_nodes, 0u);
  w.set().RunBatch(rays, results);
  EXPECT_NE(w.set().GetTreeStats().wide_nodes, 0u);
}

// Results reused from move to move and batch to batch (their contacts'
// buffers kept, as a server's tick results are) answer exactly as fresh
// ones, every field: a kept MoveResult last filled by a stepped, grounded
// move with many contacts, and a batch slot that alternates between a move
// and a ray.
TEST(Move, ReusedResultsAnswerAsFreshOnes) {
  MoveResult kept;
  std::vector<QueryResult> kept_batch;
  int compared = 0, stepped = 0;
  // Up a staircase first, so that the kept result was last filled by a step.
  World stairs;
  stairs.Add(1, BoxH(20, 0.5, 20), testing::At(0, -0.5, 0));
  stairs.Add(2, BoxH(10, 0.125, 9), testing::At(0, 0.125, 11));
  Vec3 pos{0, kStand, 1.0};
  for (int i = 0; i < 10 && stepped == 0; ++i) {
    const MoveResult fresh = stairs.Move(pos, {0, -0.1, 0.2});
    MoveQuery q = World::Query(pos, {0, -0.1, 0.2});
    stairs.set().Move(q, &kept);
    ASSERT_EQ(MoveDiff(kept, fresh), "") << "stairs move " << i;
    stepped += fresh.stepped;
    pos = fresh.position;
  }
  ASSERT_GT(stepped, 0);
  for (uint64_t seed = 1; seed <= 300; ++seed) {
    Random rng(seed);
    World w;
    BuildRandomWorld(seed, rng, &w);
    std::vector<Query> batch;
    for (int m = 0; m < 8; ++m) {
      MoveQuery q;
      if (!RandomFreeMove(rng, w, &q)) continue;
      MoveResult fresh;
      w.set().Move(q, &fresh);
      w.set().Move(q, &kept);
      ASSERT_EQ(MoveDiff(kept, fresh), "") << "seed " << seed << " move " << m;
      ++compared;
      stepped += fresh.stepped;
      // Rays between the moves at places that vary with the seed: a kept
      // slot's query changes between a move and a ray from batch to batch.
      if ((seed + static_cast<uint64_t>(m)) % 2 == 0) {
        batch.push_back(RayQuery{{0, 5, 0}, {0, -10, 0}, {}, false});
      }
      batch.push_back(q);
    }
    std::vector<QueryResult> fresh_batch(batch.size());
    w.set().RunBatch(batch, fresh_batch);
    kept_batch.resize(batch.size());
    w.set().RunBatch(batch, kept_batch);
    for (size_t i = 0; i < batch.size(); ++i) {
      ASSERT_EQ(kept_batch[i].move.has_value(), fresh_batch[i].move.has_value())
          << "seed " << seed << " query " << i;
      if (fresh_batch[i].move) {
        ASSERT_EQ(MoveDiff(*kept_batch[i].move, *fresh_batch[i].move), "")
            << "seed " << seed << " query " << i;
      }
      ASSERT_EQ(kept_batch[i].hits.size(), fresh_batch[i].hits.size());
    }
  }
  EXPECT_GT(compared, 1500);
}

// A budgeted batch of moves stops with kResourceExhausted.
TEST(Move, BudgetStopsMoves) {
  World w;
  w.AddGrid(1, -20.0, -20.0, 40, 1.0, [](double, double) { return 0.0; });
  std::vector<Query> batch(16, Query(World::Query({0, kStand, 0}, {3, -1, 2})));
  std::vector<QueryResult> results(batch.size());
  QueryBudget budget;
  budget.max_pair_tests = 20;
  QueryWork work;
  const Status st = w.set().RunBatch(batch, results, nullptr, budget, &work);
  EXPECT_EQ(st.code(), ErrorCode::kResourceExhausted) << st.ToString();
  EXPECT_FALSE(results[0].move.has_value());
  budget.max_pair_tests = 0;
  EXPECT_TRUE(w.set().RunBatch(batch, results, nullptr, budget, &work).ok());
  EXPECT_GT(work.pair_tests, 16u);
}

}  // namespace
}  // namespace hitbox

namespace hitbox {
namespace {

// Lag compensation: a move with at_tick slides through the world as it was
// at that tick (a wall that moved away since still blocks it then).
TEST(Move, AtTickSeesTheWorldThen) {
  ColliderSet set;
  Collider wall;
  wall.id = 1;
  wall.shape = BoxH(0.5, 2, 5);
  wall.pose = Pose{{3, 2, 0}};
  const ColliderChange add = ColliderChange::Add(wall);
  ASSERT_TRUE(set.Apply({&add, 1}, 10).ok());
  const ColliderChange away = ColliderChange::Move(1, Pose{{3, 2, 100}});
  ASSERT_TRUE(set.Apply({&away, 1}, 11).ok());

  MoveQuery q = World::Query({0, kStand, 0}, {5, 0, 0});
  MoveResult now;
  set.Move(q, &now);
  EXPECT_FALSE(now.blocked);
  EXPECT_DOUBLE_EQ(now.position.x, 5.0);

  q.at_tick = 10.0;
  MoveResult then;
  set.Move(q, &then);
  EXPECT_TRUE(then.blocked);
  EXPECT_LT(then.position.x, 3 - 0.5 - kRadius);
  EXPECT_GT(then.position.x, 3 - 0.5 - kRadius - 2 * kSkin);
  ASSERT_FALSE(then.contacts.empty());
  EXPECT_EQ(then.contacts.front().id, 1u);

  q.at_tick = 10.5;  // the wall is at z = 50 then: clear
  MoveResult between;
  set.Move(q, &between);
  EXPECT_FALSE(between.blocked);
  EXPECT_DOUBLE_EQ(between.position.x, 5.0);

  // The same through a batch, and a tick outside the window is refused.
  std::vector<Query> batch = {q};
  std::get<MoveQuery>(batch[0]).at_tick = 10.0;
  EXPECT_TRUE(set.CheckQueryTicks(batch, "queries").ok());
  std::vector<QueryResult> results(1);
  set.RunBatch(batch, results);
  ASSERT_TRUE(results[0].move.has_value());
  EXPECT_EQ(results[0].move->position.x, then.position.x);
  std::get<MoveQuery>(batch[0]).at_tick = 9.0;
  EXPECT_EQ(set.CheckQueryTicks(batch, "queries").code(), ErrorCode::kOutOfRange)
      << set.CheckQueryTicks(batch, "queries").ToString();
}

}  // namespace
}  // namespace hitbox
