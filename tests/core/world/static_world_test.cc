// A collider set layered over an immutable base (a shared map): every query
// kind answers exactly as one set holding both (seeded random scenes, single
// and batched, budgets), and changes touching base ids are refused.
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "hitbox/world/collider_set.h"
#include "test_util.h"

namespace hitbox {
namespace {

using testing::At;
using testing::Random;
using testing::SphereR;

// A random collider of any kind: the four primitives, a hull, a compound of
// two of them, a small bumpy heightfield, or a bumpy mesh patch.
Collider AnyCollider(Random& rng, uint64_t id, double world) {
  Collider c;
  c.id = id;
  c.user_data = id * 3 + 7;
  c.layer = static_cast<uint32_t>(rng.Int(0, 3));
  c.pose = Pose(rng.InBox(world), rng.Rotation());
  const int kind = rng.Int(0, 7);
  if (kind < 5) {
    c.shape = rng.MakeShape(static_cast<ShapeKind>(kind), 0.2, 2.0);
    return c;
  }
  if (kind == 5) {
    Compound compound;
    for (int i = 0; i < 2; ++i) {
      compound.children.push_back({rng.MakeShape(static_cast<ShapeKind>(rng.Int(0, 4)), 0.2, 1.5),
                                   Pose(rng.InBox(1.5), rng.Rotation())});
    }
    c.shape = *Shape::Make(compound);
    return c;
  }
  if (kind == 6) {
    HeightfieldShape h;
    h.rows = h.cols = 5;
    h.cell_size_x = h.cell_size_z = 1.0;
    for (int i = 0; i < 25; ++i) h.heights.push_back(rng.Uniform(-0.5, 0.5));
    c.shape = *Shape::Make(h);
    return c;
  }
  TriangleMeshShape m;
  const int n = 4;
  for (int z = 0; z <= n; ++z) {
    for (int x = 0; x <= n; ++x) m.vertices.push_back({x * 1.0, rng.Uniform(-0.3, 0.3), z * 1.0});
  }
  for (int z = 0; z < n; ++z) {
    for (int x = 0; x < n; ++x) {
      const uint32_t a = z * (n + 1) + x, b = a + 1, d = a + n + 1, e = d + 1;
      m.triangles.push_back({a, d, b});
      m.triangles.push_back({b, d, e});
    }
  }
  c.shape = *Shape::Make(m);
  return c;
}

QueryFilter AnyFilter(Random& rng, uint64_t max_id) {
  QueryFilter f;
  if (rng.Int(0, 3) == 0) f.mask = static_cast<uint32_t>(rng.Int(1, 15));
  if (rng.Int(0, 3) == 0) f.ignore.push_back(static_cast<uint64_t>(rng.Int(1, static_cast<int>(max_id))));
  if (rng.Int(0, 2) == 0) f.max_hits = static_cast<uint32_t>(rng.Int(1, 4));
  return f;
}

Query AnyQuery(Random& rng, double world, uint64_t max_id) {
  const Shape shape = rng.MakeShape(static_cast<ShapeKind>(rng.Int(0, 4)), 0.3, 3.0);
  const Pose pose(rng.InBox(world), rng.Rotation());
  const Vec3 d = rng.InBox(world * 1.5);
  switch (rng.Int(0, 2)) {
    case 0: return OverlapQuery{shape, pose, AnyFilter(rng, max_id), rng.Int(0, 1) == 1};
    case 1: return CastQuery{shape, pose, d, AnyFilter(rng, max_id), rng.Int(0, 1) == 1};
    default: return RayQuery{pose.position, d, AnyFilter(rng, max_id), rng.Int(0, 1) == 1};
  }
}

void ExpectSame(const QueryResult& a, const QueryResult& b, const std::string& where) {
  ASSERT_EQ(a.overlaps.size(), b.overlaps.size()) << where;
  for (size_t i = 0; i < a.overlaps.size(); ++i) {
    EXPECT_EQ(a.overlaps[i].id, b.overlaps[i].id) << where;
    EXPECT_EQ(a.overlaps[i].user_data, b.overlaps[i].user_data) << where;
    EXPECT_EQ(a.overlaps[i].sub_shape, b.overlaps[i].sub_shape) << where;
    ASSERT_EQ(a.overlaps[i].contact.has_value(), b.overlaps[i].contact.has_value()) << where;
    if (a.overlaps[i].contact) {
      EXPECT_EQ(a.overlaps[i].contact->depth, b.overlaps[i].contact->depth) << where;
    }
  }
  ASSERT_EQ(a.hits.size(), b.hits.size()) << where;
  for (size_t i = 0; i < a.hits.size(); ++i) {
    EXPECT_EQ(a.hits[i].id, b.hits[i].id) << where;
    EXPECT_EQ(a.hits[i].user_data, b.hits[i].user_data) << where;
    EXPECT_NEAR(a.hits[i].fraction, b.hits[i].fraction, 1e-9) << where;
    EXPECT_EQ(a.hits[i].started_overlapping(), b.hits[i].started_overlapping()) << where;
    EXPECT_EQ(a.hits[i].sub_shape, b.hits[i].sub_shape) << where;
  }
}

// Base + own answers every query kind exactly as one set holding all of
// them: single queries, batches on 1 and 4 threads, budgeted batches.
TEST(StaticWorldTest, BasePlusOwnEqualsOneSet) {
  ThreadPool pool(4);
  size_t hits = 0, merged = 0;  // answers with hits; with hits from both sides
  for (int scene = 0; scene < 60; ++scene) {
    Random rng(77000 + scene);
    const double world = 12.0;
    const int n_base = rng.Int(0, 120), n_own = rng.Int(0, 40);
    std::vector<Collider> base_cs, own_cs;
    uint64_t id = 0;
    for (int i = 0; i < n_base; ++i) base_cs.push_back(AnyCollider(rng, ++id, world));
    for (int i = 0; i < n_own; ++i) own_cs.push_back(AnyCollider(rng, ++id, world));
    // Interleave the id ranges so merging by id is exercised.
    for (size_t i = 0; i < own_cs.size() && i < base_cs.size(); i += 2) {
      std::swap(own_cs[i].id, base_cs[i].id);
      std::swap(own_cs[i].user_data, base_cs[i].user_data);
    }
    auto base = std::make_shared<ColliderSet>();
    ASSERT_TRUE(base->AddBulk(base_cs).ok());
    ColliderSet layered;
    ASSERT_TRUE(layered.SetBase(base, "arena").ok());
    // Own colliders half in bulk, half one by one (both paths).
    const size_t half = own_cs.size() / 2;
    ASSERT_TRUE(layered.AddBulk(std::span(own_cs).first(half)).ok());
    for (size_t i = half; i < own_cs.size(); ++i) {
      ASSERT_TRUE(layered.Apply(std::vector{ColliderChange::Add(own_cs[i])}).ok());
    }
    ColliderSet whole;
    std::vector<Collider> all = base_cs;
    all.insert(all.end(), own_cs.begin(), own_cs.end());
    ASSERT_TRUE(whole.AddBulk(all).ok());
    EXPECT_EQ(layered.size(), own_cs.size());

    std::vector<Query> qs;
    for (int i = 0; i < 100; ++i) qs.push_back(AnyQuery(rng, world, id));
    std::vector<QueryResult> expect(qs.size()), got(qs.size()), batch(qs.size());
    whole.RunBatch(qs, expect, nullptr);
    layered.RunBatch(qs, batch, &pool);
    for (size_t i = 0; i < qs.size(); ++i) {
      const std::string where = "scene " + std::to_string(scene) + " query " + std::to_string(i);
      layered.Run(qs[i], &got[i]);
      ExpectSame(expect[i], got[i], where + " (Run)");
      ExpectSame(expect[i], batch[i], where + " (RunBatch)");
      const auto own_id = [&](uint64_t x) { return layered.FindOwn(x) != nullptr; };
      size_t own = 0, answers = expect[i].overlaps.size() + expect[i].hits.size();
      for (const OverlapHit& h : expect[i].overlaps) own += own_id(h.id);
      for (const CastHit& h : expect[i].hits) own += own_id(h.id);
      hits += answers > 0;
      merged += own > 0 && own < answers;
    }
    QueryBudget budget;
    budget.max_nodes = 1u << 30;
    QueryWork work;
    ASSERT_TRUE(layered.RunBatch(qs, batch, &pool, budget, &work).ok());
    EXPECT_GT(work.nodes, 0u);
    for (size_t i = 0; i < qs.size(); ++i) ExpectSame(expect[i], batch[i], "budgeted");
  }
  // The scenes are dense enough that many answers mix map and own hits.
  EXPECT_GT(hits, 2000u);
  EXPECT_GT(merged, 200u);
}

// A budget counts the work on both trees: too small a budget stops the
// batch with every result cleared.
TEST(StaticWorldTest, BudgetCoversBoth) {
  Random rng(5);
  auto base = std::make_shared<ColliderSet>();
  std::vector<Collider> cs;
  for (uint64_t i = 1; i <= 200; ++i) cs.push_back(AnyCollider(rng, i, 10));
  ASSERT_TRUE(base->AddBulk(cs).ok());
  ColliderSet layered;
  ASSERT_TRUE(layered.SetBase(base, "m").ok());
  ASSERT_TRUE(layered.Apply(std::vector{ColliderChange::Add(AnyCollider(rng, 1000, 10))}).ok());
  std::vector<Query> qs(50, Query{RayQuery{{-20, 0, 0}, {40, 0, 0}, {}, true}});
  std::vector<QueryResult> out(qs.size());
  QueryBudget budget;
  budget.max_nodes = 20;
  EXPECT_EQ(layered.RunBatch(qs, out, nullptr, budget).code(), ErrorCode::kResourceExhausted);
  for (const QueryResult& r : out) EXPECT_TRUE(r.hits.empty());
}

// Changes touching a base id are refused whole and name the map; ids of
// either resolve with Find; size, ForEach and memory are the own only.
TEST(StaticWorldTest, BaseIsReadOnly) {
  auto base = std::make_shared<ColliderSet>();
  Collider a;
  a.id = 1;
  a.shape = SphereR(1);
  ASSERT_TRUE(base->Apply(std::vector{ColliderChange::Add(a)}).ok());
  ColliderSet s;
  ASSERT_TRUE(s.SetBase(base, "dust").ok());
  EXPECT_EQ(s.base_name(), "dust");
  Collider b = a;
  b.id = 2;
  const size_t empty_bytes = s.MemoryBytes();
  ASSERT_TRUE(s.Apply(std::vector{ColliderChange::Add(b)}).ok());
  EXPECT_NE(s.Find(1), nullptr);
  EXPECT_EQ(s.FindOwn(1), nullptr);
  EXPECT_EQ(s.size(), 1u);
  int seen = 0;
  s.ForEach([&](const Collider& c) { seen += c.id == 2; });
  EXPECT_EQ(seen, 1);
  EXPECT_LT(s.MemoryBytes() - empty_bytes, base->MemoryBytes() + 4096);

  Status add = s.Apply(std::vector{ColliderChange::Add(a)});
  EXPECT_EQ(add.code(), ErrorCode::kAlreadyExists);
  EXPECT_NE(add.message().find("map 'dust'"), std::string::npos) << add.message();
  EXPECT_EQ(s.AddBulk(std::vector{a}).code(), ErrorCode::kAlreadyExists);
  for (const ColliderChange& ch : std::vector<ColliderChange>
       {ColliderChange::Move(1, At(1, 0, 0)), ColliderChange::Remove(1), ColliderChange::Replace(a)}) {
    // The valid first entry is not applied either.
    Status st = s.Apply(std::vector{ColliderChange::Move(2, At(5, 0, 0)), ch});
    EXPECT_EQ(st.code(), ErrorCode::kFailedPrecondition);
    EXPECT_NE(st.message().find("changes[1].id"), std::string::npos) << st.message();
    EXPECT_NE(st.message().find("map 'dust'"), std::string::npos) << st.message();
    EXPECT_EQ(s.Find(2)->pose.position.x, 0.0);
  }
  EXPECT_EQ(base->Find(1)->pose.position.x, 0.0);
  // A base is set once, on an empty set.
  EXPECT_EQ(s.SetBase(base, "again").code(), ErrorCode::kFailedPrecondition);
  ColliderSet full;
  ASSERT_TRUE(full.Apply(std::vector{ColliderChange::Add(b)}).ok());
  EXPECT_EQ(full.SetBase(base, "x").code(), ErrorCode::kFailedPrecondition);
}

}  // namespace
}  // namespace hitbox

namespace hitbox {
namespace {

// A move's chain of sweeps and a rewound query see the map too: the map never
// moves, so at any tick it is where it is.
TEST(StaticWorldTest, MovesAndRewoundQueriesSeeTheBase) {
  auto map = std::make_shared<ColliderSet>();
  Collider wall;
  wall.id = 1;
  wall.shape = *Shape::MakeBox({0.5, 2, 5});
  wall.pose = Pose(Vec3{3, 2, 0});
  const ColliderChange add_wall = ColliderChange::Add(wall);
  ASSERT_TRUE(map->Apply({&add_wall, 1}).ok());

  ColliderSet session;
  ASSERT_TRUE(session.SetBase(map, "arena").ok());
  Collider player;
  player.id = 100;
  player.shape = SphereR(0.5);
  player.pose = Pose(Vec3{0, 1, -10});
  const ColliderChange add_player = ColliderChange::Add(player);
  ASSERT_TRUE(session.Apply({&add_player, 1}, 10).ok());
  const ColliderChange step = ColliderChange::Move(100, Pose(Vec3{0, 1, 10}));
  ASSERT_TRUE(session.Apply({&step, 1}, 11).ok());

  // A capsule walking +x stops at the map's wall, as a batch and alone.
  MoveQuery mq;
  mq.shape = *Shape::MakeCapsule(0.4, 0.5);
  mq.pose = Pose(Vec3{0, 1, 0});
  mq.displacement = {5, 0, 0};
  mq.settings.ground_snap_distance = 0;
  MoveResult alone;
  session.Move(mq, &alone);
  EXPECT_TRUE(alone.blocked);
  EXPECT_LT(alone.position.x, 3 - 0.5 - 0.4);
  ASSERT_FALSE(alone.contacts.empty());
  EXPECT_EQ(alone.contacts.front().id, 1u);
  std::vector<Query> batch = {mq};
  RayQuery then;  // at tick 10 the player was at z = -10, on this ray's path
  then.origin = {0, 1, -20};
  then.translation = {0, 0, 40};
  then.filter.max_hits = 0;
  then.all_hits = true;
  then.at_tick = 10.0;
  batch.push_back(then);
  RayQuery across = then;  // at tick 10.5 the player is at z = 0; the wall stays
  across.origin = {-5, 1, 0};
  across.translation = {10, 0, 0};
  across.at_tick = 10.5;
  batch.push_back(across);
  std::vector<QueryResult> results(batch.size());
  session.RunBatch(batch, results);
  ASSERT_TRUE(results[0].move.has_value());
  EXPECT_EQ(results[0].move->position.x, alone.position.x);
  ASSERT_EQ(results[1].hits.size(), 1u);  // the wall is at x = 3, off this ray
  EXPECT_EQ(results[1].hits[0].id, 100u);
  EXPECT_NEAR(results[1].hits[0].fraction, (10 - 0.5) / 40.0, 1e-12);
  ASSERT_EQ(results[2].hits.size(), 2u);
  EXPECT_EQ(results[2].hits[0].id, 100u);
  EXPECT_EQ(results[2].hits[1].id, 1u);
}

}  // namespace
}  // namespace hitbox
