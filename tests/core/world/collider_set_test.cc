// ColliderSet: batch validation and atomicity, id index and swap-remove,
// memory per collider, and world queries (overlap / cast / raycast, single
// and batched, 1 or N threads) against a brute-force reference that calls
// the narrow phase on every collider, on seeded random scenes with churn.
#include "hitbox/world/collider_set.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <atomic>
#include <map>
#include <tuple>
#include <vector>

#include "collision/cast_internal.h"
#include "collision/work_meter.h"
#include "geometry/triangle_mesh.h"
#include "shape/surface_data.h"
#include "world/collider_set_jobs.h"
#include "world/mesh_groups.h"
#include "mesh_util.h"
#include "test_util.h"

namespace hitbox {
namespace {

using testing::ExpectSameResult;
using testing::Random;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

Collider MakeCollider(uint64_t id, const Shape& shape, const Pose& pose, uint32_t layer = 0) {
  Collider c;
  c.id = id;
  c.shape = shape;
  c.pose = pose;
  c.layer = layer;
  c.user_data = id * 10 + 1;
  return c;
}

Collider RandomCollider(Random& rng, uint64_t id, double world) {
  return MakeCollider(id, rng.MakeShape(static_cast<ShapeKind>(rng.Int(0, 3)), 0.2, 2.0),
                      Pose(rng.InBox(world), rng.Rotation()),
                      static_cast<uint32_t>(rng.Int(0, 31)));
}

// Everything observable about a set, for "unchanged" checks.
std::map<uint64_t, std::tuple<ShapeKind, double, double, double, double, uint32_t, uint64_t>>
Snapshot(const ColliderSet& set) {
  std::map<uint64_t, std::tuple<ShapeKind, double, double, double, double, uint32_t, uint64_t>> m;
  set.ForEach([&](const Collider& c) {
    m[c.id] = {c.shape.kind(), c.shape.radius(), c.pose.position.x, c.pose.position.y,
               c.pose.rotation.w, c.layer, c.user_data};
  });
  return m;
}

// Each bad entry is rejected with its index and field; nothing changes.
TEST(ColliderSetTest, RejectsBadBatchesWhole) {
  ColliderSet set;
  const Shape sphere = *Shape::MakeSphere(1.0);
  ASSERT_TRUE(set.Apply(std::vector{ColliderChange::Add(MakeCollider(1, sphere, Pose({0, 0, 0}))),
                                    ColliderChange::Add(MakeCollider(2, sphere, Pose({5, 0, 0})))})
                  .ok());
  ASSERT_EQ(set.revision(), 1u);
  const auto before = Snapshot(set);

  struct Bad {
    ColliderChange change;
    ErrorCode code;
    std::string message_part;
  };
  Collider bad_quat = MakeCollider(10, sphere, Pose({0, 0, 0}, Quat{0, 0, 0, 1.2}));
  Collider nan_pos = MakeCollider(11, sphere, Pose({kNaN, 0, 0}));
  Collider bad_layer = MakeCollider(12, sphere, Pose({0, 0, 0}), 32);
  const std::vector<Bad> bads = {
      {ColliderChange::Add(bad_quat), ErrorCode::kInvalidArgument,
       "changes[3].pose.rotation: quaternion norm 1.2 is not 1 (tolerance 1e-6)"},
      {ColliderChange::Add(nan_pos), ErrorCode::kInvalidArgument, "changes[3].pose.position"},
      {ColliderChange::Add(bad_layer), ErrorCode::kInvalidArgument, "changes[3].layer"},
      {ColliderChange::Add(MakeCollider(2, sphere, Pose())), ErrorCode::kAlreadyExists,
       "changes[3].id"},
      {ColliderChange::Add(MakeCollider(100, sphere, Pose())), ErrorCode::kAlreadyExists,
       "changes[3].id"},  // 100 is added by entry 0 of the batch
      {ColliderChange::Move(77, Pose()), ErrorCode::kNotFound, "changes[3].id"},
      {ColliderChange::Remove(77), ErrorCode::kNotFound, "changes[3].id"},
      {ColliderChange::Replace(MakeCollider(77, sphere, Pose())), ErrorCode::kNotFound,
       "changes[3].id"},
      {ColliderChange::Move(1, Pose({0, 0, 0}, Quat{0, 0, 0, kNaN})), ErrorCode::kInvalidArgument,
       "changes[3].pose.rotation"},
      {ColliderChange::Move(5, Pose()), ErrorCode::kNotFound, "changes[3].id"},  // removed by [2]
  };
  for (const Bad& bad : bads) {
    std::vector<ColliderChange> batch = {
        ColliderChange::Add(MakeCollider(100, sphere, Pose({9, 9, 9}))),
        ColliderChange::Add(MakeCollider(5, sphere, Pose({1, 9, 9}))),
        ColliderChange::Remove(5),
        bad.change,
        ColliderChange::Move(1, Pose({3, 3, 3})),
    };
    const Status s = set.Apply(batch);
    ASSERT_FALSE(s.ok()) << bad.message_part;
    EXPECT_EQ(s.code(), bad.code) << s.ToString();
    EXPECT_NE(s.message().find(bad.message_part), std::string::npos) << s.ToString();
    EXPECT_EQ(set.revision(), 1u);
    EXPECT_EQ(Snapshot(set), before);
    EXPECT_EQ(set.Find(100), nullptr);
    EXPECT_EQ(set.TreeValidate(), "");
  }
}

// A batch may add then move an id, or add, remove and add it again.
TEST(ColliderSetTest, ValidatesInOrder) {
  ColliderSet set;
  const Shape box = *Shape::MakeBox({1, 2, 3});
  const Shape sphere = *Shape::MakeSphere(0.5);
  const Status s = set.Apply(std::vector{
      ColliderChange::Add(MakeCollider(7, box, Pose({0, 0, 0}))),
      ColliderChange::Move(7, Pose({10, 0, 0})),
      ColliderChange::Add(MakeCollider(8, box, Pose({0, 0, 0}))),
      ColliderChange::Remove(8),
      ColliderChange::Add(MakeCollider(8, sphere, Pose({0, 5, 0}), 3)),
  });
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(set.size(), 2u);
  EXPECT_EQ(set.revision(), 1u);
  ASSERT_NE(set.Find(7), nullptr);
  EXPECT_EQ(set.Find(7)->pose.position, Vec3(10, 0, 0));
  EXPECT_EQ(set.Find(7)->shape.kind(), ShapeKind::kBox);
  ASSERT_NE(set.Find(8), nullptr);
  EXPECT_EQ(set.Find(8)->shape.kind(), ShapeKind::kSphere);
  EXPECT_EQ(set.Find(8)->layer, 3u);
  EXPECT_EQ(set.TreeValidate(), "");
}

// Accepted quaternions are stored normalized.
TEST(ColliderSetTest, NormalizesQuaternions) {
  ColliderSet set;
  const Quat q = Quat{0.1, 0.2, 0.3, 0.9}.Normalized();
  const Quat off{q.x * (1 + 5e-7), q.y * (1 + 5e-7), q.z * (1 + 5e-7), q.w * (1 + 5e-7)};
  ASSERT_TRUE(set.Apply(std::vector{ColliderChange::Add(
                            MakeCollider(1, *Shape::MakeSphere(1), Pose({0, 0, 0}, off)))})
                  .ok());
  EXPECT_NEAR(set.Find(1)->pose.rotation.Length(), 1.0, 1e-15);
}

// Bulk load: validation names the entry; duplicate ids inside the batch too.
TEST(ColliderSetTest, AddBulkValidates) {
  ColliderSet set;
  Random rng(9);
  std::vector<Collider> cs;
  for (uint64_t i = 0; i < 100; ++i) cs.push_back(RandomCollider(rng, i + 1, 50));
  cs[40].id = cs[12].id;
  Status s = set.AddBulk(cs);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), ErrorCode::kAlreadyExists);
  EXPECT_NE(s.message().find("colliders[40].id"), std::string::npos) << s.ToString();
  cs[40].id = 41;
  cs[55].pose.rotation = Quat{0, 0, 0, 2};
  s = set.AddBulk(cs);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("colliders[55].pose.rotation"), std::string::npos) << s.ToString();
  EXPECT_EQ(set.size(), 0u);
  EXPECT_EQ(set.revision(), 0u);
  cs[55].pose.rotation = Quat{};
  ASSERT_TRUE(set.AddBulk(cs).ok());
  EXPECT_EQ(set.size(), 100u);
  EXPECT_EQ(set.revision(), 1u);
  EXPECT_EQ(set.TreeValidate(), "");
  for (const Collider& c : cs) ASSERT_NE(set.Find(c.id), nullptr);
}

// Ids of any 64-bit value; swap-remove keeps the index right.
TEST(ColliderSetTest, IdIndexSurvivesChurn) {
  ColliderSet set;
  Random rng(11);
  std::map<uint64_t, Vec3> model;
  for (int round = 0; round < 200; ++round) {
    std::vector<ColliderChange> batch;
    std::map<uint64_t, Vec3> next = model;
    for (int k = 0; k < 30; ++k) {
      const uint64_t id = (static_cast<uint64_t>(rng.Int(0, 300)) << 40) ^ 0xFFFF000000000001ull;
      if (next.count(id)) {
        if (rng.Int(0, 1)) {
          batch.push_back(ColliderChange::Remove(id));
          next.erase(id);
        } else {
          const Vec3 p = rng.InBox(100);
          batch.push_back(ColliderChange::Move(id, Pose(p)));
          next[id] = p;
        }
      } else {
        const Collider c = RandomCollider(rng, id, 100);
        batch.push_back(ColliderChange::Add(c));
        next[id] = c.pose.position;
      }
    }
    ASSERT_TRUE(set.Apply(batch).ok());
    model = next;
    ASSERT_EQ(set.size(), model.size());
    for (const auto& [id, p] : model) {
      const Collider* c = set.Find(id);
      ASSERT_NE(c, nullptr) << id;
      ASSERT_EQ(c->pose.position, p);
    }
    ASSERT_EQ(set.TreeValidate(), "") << "round " << round;
  }
}

// <= 256 bytes per collider including tree and id index.
TEST(ColliderSetTest, MemoryPerCollider) {
  Random rng(5);
  std::vector<Collider> cs;
  for (uint64_t i = 0; i < 50000; ++i) cs.push_back(RandomCollider(rng, i * 7919 + 3, 150));
  ColliderSet set;
  ASSERT_TRUE(set.AddBulk(cs).ok());
  const double per = static_cast<double>(set.MemoryBytes()) / static_cast<double>(set.size());
  EXPECT_LE(per, 256.0);
  // Moves (some leaving their fat boxes) do not allocate.
  std::vector<ColliderChange> moves;
  for (const Collider& c : cs) moves.push_back(ColliderChange::Move(c.id, Pose(rng.InBox(150))));
  ASSERT_TRUE(set.Apply(moves).ok());
  EXPECT_LE(static_cast<double>(set.MemoryBytes()) / static_cast<double>(set.size()), 256.0);
  EXPECT_EQ(set.TreeValidate(), "");
  // Growing one batch of adds at a time stays within budget at every size.
  ColliderSet grown;
  for (size_t i = 0; i < cs.size(); i += 500) {
    std::vector<ColliderChange> adds;
    for (size_t k = i; k < std::min(cs.size(), i + 500); ++k) adds.push_back(ColliderChange::Add(cs[k]));
    ASSERT_TRUE(grown.Apply(adds).ok());
    if (grown.size() >= 2000) {
      ASSERT_LE(static_cast<double>(grown.MemoryBytes()) / static_cast<double>(grown.size()), 256.0)
          << grown.size() << " colliders";
    }
  }
}

TEST(ColliderSetTest, ValidateQueryNamesField) {
  CastQuery c;
  c.translation = {1, kNaN, 0};
  Status s = ColliderSet::ValidateQuery(c);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("query.translation"), std::string::npos) << s.ToString();
  OverlapQuery o;
  o.pose.rotation = Quat{0, 0, 1, 1};
  s = ColliderSet::ValidateQuery(o, "queries[4]");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("queries[4].pose.rotation: quaternion norm"), std::string::npos)
      << s.ToString();
  RayQuery r;
  r.origin = {0, std::numeric_limits<double>::infinity(), 0};
  EXPECT_FALSE(ColliderSet::ValidateQuery(r).ok());
  r.origin = {};
  EXPECT_TRUE(ColliderSet::ValidateQuery(r).ok());
}

// ---------------------------------------------------------------------------
// Brute-force reference world queries: the narrow phase on every collider.

bool Ignored(const QueryFilter& f, const Collider& c) {
  return !f.Accepts(c.id, c.layer);
}

std::vector<uint64_t> RefOverlap(const std::vector<Collider>& all, const OverlapQuery& q) {
  std::vector<uint64_t> ids;
  const Pose pose(q.pose.position, q.pose.rotation.Normalized());
  for (const Collider& c : all) {
    if (!Ignored(q.filter, c) && Overlap(q.shape, pose, c.shape, c.pose)) ids.push_back(c.id);
  }
  std::sort(ids.begin(), ids.end());
  if (q.filter.max_hits && ids.size() > q.filter.max_hits) ids.resize(q.filter.max_hits);
  return ids;
}

std::vector<std::pair<double, uint64_t>> RefCast(const std::vector<Collider>& all,
                                                 const Query& query) {
  std::vector<std::pair<double, uint64_t>> hits;
  bool all_hits = false;
  uint32_t max_hits = 0;
  for (const Collider& c : all) {
    CastResult r;
    if (const auto* cq = std::get_if<CastQuery>(&query)) {
      if (Ignored(cq->filter, c)) continue;
      r = Cast(cq->shape, Pose(cq->pose.position, cq->pose.rotation.Normalized()), cq->translation,
               c.shape, c.pose);
      all_hits = cq->all_hits;
      max_hits = cq->filter.max_hits;
    } else {
      const auto& rq = std::get<RayQuery>(query);
      if (Ignored(rq.filter, c)) continue;
      r = Raycast(rq.origin, rq.translation, c.shape, c.pose);
      all_hits = rq.all_hits;
      max_hits = rq.filter.max_hits;
    }
    if (r.hit()) hits.push_back({r.fraction, c.id});
  }
  std::sort(hits.begin(), hits.end());
  if (!all_hits && hits.size() > 1) hits.resize(1);
  if (all_hits && max_hits && hits.size() > max_hits) hits.resize(max_hits);
  return hits;
}

QueryFilter RandomFilter(Random& rng, const std::vector<Collider>& all) {
  QueryFilter f;
  if (rng.Int(0, 2) == 0) f.mask = static_cast<uint32_t>(rng.engine()());
  if (rng.Int(0, 2) == 0 && !all.empty()) {
    for (int k = rng.Int(1, 4); k > 0; --k) f.ignore.push_back(all[rng.Int(0, static_cast<int>(all.size()) - 1)].id);
  }
  if (rng.Int(0, 3) == 0) f.max_hits = static_cast<uint32_t>(rng.Int(1, 3));
  return f;
}

std::vector<Query> RandomQueries(Random& rng, const std::vector<Collider>& all, int n,
                                 double world) {
  std::vector<Query> qs;
  for (int i = 0; i < n; ++i) {
    const Shape shape = rng.MakeShape(static_cast<ShapeKind>(rng.Int(0, 3)), 0.2, 3.0);
    Vec3 origin = rng.InBox(world);
    if (!all.empty() && rng.Int(0, 2) == 0) {
      origin = all[rng.Int(0, static_cast<int>(all.size()) - 1)].pose.position + rng.InBox(1.0);  // start inside
    }
    const Pose pose(origin, rng.Rotation());
    Vec3 d = rng.InBox(world);
    if (rng.Int(0, 10) == 0) d = Vec3{};
    switch (rng.Int(0, 2)) {
      case 0: {
        OverlapQuery q{shape, pose, RandomFilter(rng, all), rng.Int(0, 1) == 1};
        qs.push_back(q);
        break;
      }
      case 1: {
        CastQuery q{shape, pose, d, RandomFilter(rng, all), rng.Int(0, 1) == 1};
        qs.push_back(q);
        break;
      }
      default: {
        RayQuery q{origin, d, RandomFilter(rng, all), rng.Int(0, 1) == 1};
        qs.push_back(q);
        break;
      }
    }
  }
  return qs;
}

void CheckAgainstReference(const ColliderSet& set, const std::vector<Query>& qs,
                           const std::vector<QueryResult>& results, const std::string& where) {
  std::vector<Collider> all;
  set.ForEach([&](const Collider& c) { all.push_back(c); });
  for (size_t i = 0; i < qs.size(); ++i) {
    const QueryResult& r = results[i];
    if (const auto* o = std::get_if<OverlapQuery>(&qs[i])) {
      std::vector<uint64_t> got;
      for (const OverlapHit& h : r.overlaps) {
        got.push_back(h.id);
        ASSERT_EQ(h.user_data, set.Find(h.id)->user_data);
        ASSERT_EQ(h.contact.has_value(), o->want_contact);
        if (h.contact) {
          ASSERT_NEAR(h.contact->normal.Length(), 1.0, 1e-9);
        }
      }
      ASSERT_EQ(got, RefOverlap(all, *o))
          << where << " overlap " << i << ": " << o->shape.ToString() << " @ " << ToString(o->pose);
    } else {
      std::vector<std::pair<double, uint64_t>> got;
      for (const CastHit& h : r.hits) got.push_back({h.fraction, h.id});
      ASSERT_EQ(got, RefCast(all, qs[i])) << where << " cast/ray " << i;
      for (const CastHit& h : r.hits) {
        if (h.started_overlapping()) {
          ASSERT_EQ(h.fraction, 0.0);
        }
      }
    }
  }
}

// The tree-backed queries equal brute force on >= 1000 random scenes with
// masks, ignore lists, max hits and churn; RunBatch equals Run on 1 or N threads.
TEST(ColliderSetTest, QueriesMatchBruteForce) {
  ThreadPool pool(3);
  for (int scene = 0; scene < 1000; ++scene) {
    Random rng(20000 + scene);
    const double world = rng.Int(0, 3) == 0 ? 8.0 : 30.0;
    const Vec3 far = rng.Int(0, 5) == 0 ? Vec3{20000, -5000, 12000} : Vec3{};
    ColliderSet set;
    std::vector<Collider> cs;
    const int n = rng.Int(0, 60);
    for (int i = 0; i < n; ++i) {
      Collider c = RandomCollider(rng, static_cast<uint64_t>(rng.engine()()), world);
      c.pose.position += far;
      cs.push_back(c);
    }
    std::sort(cs.begin(), cs.end(), [](auto& a, auto& b) { return a.id < b.id; });
    cs.erase(std::unique(cs.begin(), cs.end(), [](auto& a, auto& b) { return a.id == b.id; }),
             cs.end());
    if (scene % 2) {
      ASSERT_TRUE(set.AddBulk(cs).ok());
    } else {
      std::vector<ColliderChange> adds;
      for (const Collider& c : cs) adds.push_back(ColliderChange::Add(c));
      ASSERT_TRUE(set.Apply(adds).ok());
    }
    const std::string where = "scene seed " + std::to_string(20000 + scene);
    for (int round = 0; round < 2; ++round) {
      std::vector<Collider> all;
      set.ForEach([&](const Collider& c) { all.push_back(c); });
      std::vector<Query> qs = RandomQueries(rng, all, 12, world);
      for (Query& q : qs) {
        std::visit([&](auto& x) {
          if constexpr (requires { x.pose; }) x.pose.position += far;
          else x.origin += far;
        }, q);
      }
      std::vector<QueryResult> results(qs.size());
      set.RunBatch(qs, results);
      CheckAgainstReference(set, qs, results, where + " round " + std::to_string(round));
      if (::testing::Test::HasFatalFailure()) return;
      // Batched on a pool: identical (repeat queries to pass the threshold).
      std::vector<Query> many;
      for (int k = 0; k < 8; ++k) many.insert(many.end(), qs.begin(), qs.end());
      std::vector<QueryResult> par(many.size());
      set.RunBatch(many, par, &pool);
      for (size_t i = 0; i < many.size(); ++i) {
        const QueryResult& a = results[i % qs.size()];
        ASSERT_EQ(a.overlaps.size(), par[i].overlaps.size());
        ASSERT_EQ(a.hits.size(), par[i].hits.size());
        for (size_t k = 0; k < a.hits.size(); ++k) {
          ASSERT_EQ(a.hits[k].id, par[i].hits[k].id);
          ASSERT_EQ(a.hits[k].fraction, par[i].hits[k].fraction);
        }
      }
      // Churn: moves (small and teleports), removes, adds, replaces.
      std::vector<ColliderChange> batch;
      for (const Collider& c : all) {
        switch (rng.Int(0, 5)) {
          case 0: batch.push_back(ColliderChange::Move(c.id, Pose(c.pose.position + rng.InBox(0.05),
                                                                  c.pose.rotation)));
            break;
          case 1: batch.push_back(ColliderChange::Move(c.id, Pose(rng.InBox(world) + far,
                                                                  rng.Rotation())));
            break;
          case 2: batch.push_back(ColliderChange::Remove(c.id)); break;
          case 3: {
            Collider r = RandomCollider(rng, c.id, world);
            r.pose.position += far;
            batch.push_back(ColliderChange::Replace(r));
            break;
          }
          default: break;
        }
      }
      for (int k = rng.Int(0, 10); k > 0; --k) {
        Collider c = RandomCollider(rng, static_cast<uint64_t>(rng.engine()()), world);
        c.pose.position += far;
        batch.push_back(ColliderChange::Add(c));
      }
      ASSERT_TRUE(set.Apply(batch).ok());
      ASSERT_EQ(set.TreeValidate(), "") << where;
      if (round == 0 && scene % 3 == 0) set.RebuildTree();
    }
  }
}

// RunBatch interleaves the traversals of same-kind queries; every field of
// every answer must equal the one-query path (Run), bit for bit, for batches
// of mixed kinds larger than the interleave width, with masks, ignore lists,
// max hits, all_hits and contacts.
TEST(ColliderSetTest, InterleavedBatchEqualsSingleQueries) {
  for (int scene = 0; scene < 60; ++scene) {
    Random rng(31000 + scene);
    const double world = scene % 3 == 0 ? 6.0 : 25.0;
    std::vector<Collider> cs;
    const int n = rng.Int(0, 400);
    for (int i = 0; i < n; ++i) cs.push_back(RandomCollider(rng, static_cast<uint64_t>(i + 1), world));
    ColliderSet set;
    ASSERT_TRUE(set.AddBulk(cs).ok());
    const std::vector<Query> qs = RandomQueries(rng, cs, rng.Int(0, 90), world);
    std::vector<QueryResult> batch(qs.size());
    set.RunBatch(qs, batch);
    for (size_t i = 0; i < qs.size(); ++i) {
      QueryResult one;
      set.Run(qs[i], &one);
      ExpectSameResult(one, batch[i], "scene seed " + std::to_string(31000 + scene) + " query " +
                                          std::to_string(i));
    }
  }
}

// A collider added or moved one at a time keeps a fat leaf box: a player
// running at 6 m/s steps 0.1 m a 60 Hz tick and stays in its leaf for the
// next two ticks, so the tree (and the 4-wide copy batches made of it) is
// left as it is; a step past the margin changes it.
TEST(ColliderSetTest, PlayerStepsStayInTheirFatLeaves) {
  Random rng(4401);
  std::vector<Collider> cs;
  ColliderSet set;
  for (int i = 0; i < 200; ++i) {
    cs.push_back(RandomCollider(rng, static_cast<uint64_t>(i + 1), 20.0));
    ASSERT_TRUE(set.Apply(std::vector<ColliderChange>{ColliderChange::Add(cs.back())}).ok());
  }
  const auto run = [&] {
    for (int b = 0; b < 3; ++b) {
      const std::vector<Query> qs = RandomQueries(rng, cs, 120, 20.0);
      std::vector<QueryResult> out(qs.size());
      set.RunBatch(qs, out);
    }
  };
  const auto step = [&](double dx) {
    Collider& c = cs[7];
    c.pose.position.x += dx;
    ASSERT_TRUE(set.Apply(std::vector<ColliderChange>{ColliderChange::Move(c.id, c.pose)}).ok());
  };
  run();
  ASSERT_NE(set.GetTreeStats().wide_nodes, 0u);
  step(0.1);
  EXPECT_NE(set.GetTreeStats().wide_nodes, 0u) << "one tick's step left the leaf";
  step(0.1);
  EXPECT_NE(set.GetTreeStats().wide_nodes, 0u) << "two ticks' steps left the leaf";
  step(0.2);
  EXPECT_EQ(set.GetTreeStats().wide_nodes, 0u) << "0.4 m stayed in the leaf";
  EXPECT_EQ(set.TreeValidate(), "");
}

// A collider moved on in steady steps gets a leaf that also reaches ahead of
// its last step (four steps, at most a metre): 0.12 m steps leave the
// 0.3 m margin on the third, and then the new leaf holds six more, so
// twenty steps change the tree three times (six without the reach ahead).
TEST(ColliderSetTest, SteadyStepsLeaveTheirFatLeavesLessOften) {
  Random rng(4402);
  std::vector<Collider> cs;
  for (int i = 0; i < 200; ++i) {
    cs.push_back(RandomCollider(rng, static_cast<uint64_t>(i + 1), 20.0));
  }
  ColliderSet set;
  for (const Collider& c : cs) {
    ASSERT_TRUE(set.Apply(std::vector<ColliderChange>{ColliderChange::Add(c)}).ok());
  }
  const auto run = [&] {
    for (int b = 0; b < 3; ++b) {
      const std::vector<Query> qs = RandomQueries(rng, cs, 120, 20.0);
      std::vector<QueryResult> out(qs.size());
      set.RunBatch(qs, out);
    }
    ASSERT_NE(set.GetTreeStats().wide_nodes, 0u);
  };
  const auto steps = [&](double dx, int count) {
    std::vector<int> left;
    for (int k = 1; k <= count; ++k) {
      run();
      Collider& c = cs[7];
      c.pose.position.x += dx;
      EXPECT_TRUE(set.Apply(std::vector<ColliderChange>{ColliderChange::Move(c.id, c.pose)}).ok());
      if (set.GetTreeStats().wide_nodes == 0) left.push_back(k);
    }
    return left;
  };
  EXPECT_EQ(steps(0.12, 20), (std::vector<int>{3, 10, 17}));
  // A jump (a teleport) reaches at most a metre ahead: the steps after it
  // leave the leaf on the eleventh (0.3 + 1 m), not after 200 m.
  EXPECT_EQ(steps(50.0, 1), (std::vector<int>{1}));
  EXPECT_EQ(steps(0.12, 12), (std::vector<int>{11}));
  EXPECT_EQ(set.TreeValidate(), "");
}

// Batches walk the tree's 4-wide copy once enough queries ran since the tree
// last changed, and the binary tree before: both answer as single queries
// (which walk the binary tree), and a change makes the copy stale at once.
TEST(ColliderSetTest, WideCopyAnswersAsTheTree) {
  int wide_batches = 0, binary_batches = 0;
  for (int scene = 0; scene < 12; ++scene) {
    Random rng(52000 + scene);
    const double world = scene % 2 == 0 ? 8.0 : 25.0;
    std::vector<Collider> cs;
    for (int i = 0; i < 300; ++i) cs.push_back(RandomCollider(rng, static_cast<uint64_t>(i + 1), world));
    ColliderSet set;
    ASSERT_TRUE(set.AddBulk(cs).ok());
    for (int round = 0; round < 4; ++round) {
      const std::string where =
          "scene seed " + std::to_string(52000 + scene) + " round " + std::to_string(round);
      // A short batch first (the copy is not worth making for it), then long ones.
      for (const int count : {3, 120, 120}) {
        const bool had_copy = set.GetTreeStats().wide_nodes != 0;
        const std::vector<Query> qs = RandomQueries(rng, cs, count, world);
        std::vector<QueryResult> batch(qs.size());
        set.RunBatch(qs, batch);
        (had_copy ? wide_batches : binary_batches) += 1;
        for (size_t i = 0; i < qs.size(); ++i) {
          QueryResult one;
          set.Run(qs[i], &one);
          ExpectSameResult(one, batch[i], where + " count " + std::to_string(count) + " query " +
                                              std::to_string(i));
        }
      }
      ASSERT_NE(set.GetTreeStats().wide_nodes, 0u) << where;
      // Move a tenth of the colliders far: a stale copy would miss them.
      std::vector<ColliderChange> moves;
      for (int k = 0; k < 30; ++k) {
        Collider& c = cs[static_cast<size_t>(k * 10 + round)];
        c.pose.position = rng.InBox(world);
        moves.push_back(ColliderChange::Move(c.id, c.pose));
      }
      ASSERT_TRUE(set.Apply(moves).ok()) << where;
      ASSERT_EQ(set.GetTreeStats().wide_nodes, 0u) << where;
    }
  }
  EXPECT_GT(wide_batches, 40);
  EXPECT_GT(binary_batches, 40);
}

// Meshes in two frames and two layers (MeshGroups merges those sharing
// both), some twice at one pose (ties between meshes), each with a dropped
// zero-area triangle; a mesh alone in its frame, and primitives.
std::vector<Collider> GroupedMeshScene(Random& rng) {
  const Pose frame_a({0, 0, 0});
  const Pose frame_b(Vec3{3.5, -1.25, 2.0}, rng.Rotation());
  const auto mesh_shape = [](const testing::MeshData& d) {
    TriangleMeshShape ms;
    ms.vertices = d.vertices;
    for (const auto& t : d.triangles) ms.triangles.push_back({t[0], t[1], t[2]});
    return *Shape::Make(ms);
  };
  std::vector<Collider> cs;
  uint64_t id = 1;
  for (int i = 0; i < 14; ++i) {
    testing::MeshData d;
    switch (i % 3) {
      case 0: {
        d = testing::WavyGrid(6, 0.75, i % 2 == 0);
        for (Vec3& v : d.vertices) v += Vec3{-4.5 + 2.0 * (i % 4), -1.0, -4.0 + i % 5};
        break;
      }
      case 1: d = testing::IcoSphere(rng.Uniform(0.5, 1.5), 1, rng.InBox(4.0)); break;
      default: d = testing::BoxMesh(rng.Uniform(0.3, 1.2), rng.InBox(4.0)); break;
    }
    // A zero-area triangle: dropped by the mesh, counted in its input.
    d.triangles.insert(d.triangles.begin() + static_cast<long>(i % 3), {0, 0, 1});
    const Shape shape = mesh_shape(d);
    const Pose& pose = i % 4 == 3 ? frame_b : frame_a;
    cs.push_back(MakeCollider(id++, shape, pose, i % 5 == 4 ? 1 : 0));
    // Every third mesh twice at the same pose: rays tie between the two.
    if (i % 3 == 0) cs.push_back(MakeCollider(id++, shape, pose, i % 5 == 4 ? 1 : 0));
  }
  // A mesh alone in its frame, and primitives the walk still meets.
  cs.push_back(MakeCollider(id++, mesh_shape(testing::IcoSphere(1.0, 1)), Pose(rng.InBox(4.0))));
  for (int i = 0; i < 20; ++i) cs.push_back(RandomCollider(rng, id++, 5.0));
  return cs;
}

// Runs `qs` as one batch and each alone (which walks every mesh): the
// answers must be equal, the triangles (sub_shape) included. Returns the
// single answers.
std::vector<QueryResult> ExpectBatchAsSingles(const ColliderSet& set, const std::vector<Query>& qs,
                                              const std::string& where) {
  std::vector<QueryResult> batch(qs.size()), ones(qs.size());
  set.RunBatch(qs, batch);
  for (size_t i = 0; i < qs.size(); ++i) {
    set.Run(qs[i], &ones[i]);
    const std::string at = where + " query " + std::to_string(i);
    ExpectSameResult(ones[i], batch[i], at);
  }
  return ones;
}

// A point above GroupedMeshScene's grids at height y, on their vertices and
// edges (queries straight down there tie between triangles).
Vec3 OverTheGrids(Random& rng, double y) {
  return {-4.5 + 0.375 * rng.Int(0, 24), y, -4.0 + 0.375 * rng.Int(0, 24)};
}

// Query k's filter and all-hits flag: a layer mask every 17th, an ignored
// mesh id every 23rd (most are grouped), an ignored id of any collider
// every 7th (mostly others: the queries may still take the groups), all
// hits every 29th, else the defaults.
void VaryFilter(int k, Random& rng, QueryFilter* filter, bool* all_hits) {
  if (k % 17 == 0) filter->mask = 1u << rng.Int(0, 1);
  if (k % 7 == 0) filter->ignore = {static_cast<uint64_t>(rng.Int(1, 40))};
  if (k % 23 == 0) filter->ignore = {static_cast<uint64_t>(rng.Int(1, 10))};
  *all_hits = k % 29 == 0;
}

// Moves one grouped mesh and removes another: stale groups would answer
// with the old ones; they are dropped.
void StaleTheGroups(ColliderSet& set, const std::vector<Collider>& cs, int round, Random& rng,
                    const std::string& where) {
  ASSERT_NE(set.GetTreeStats().merged_triangles, 0u) << where;
  std::vector<ColliderChange> changes;
  changes.push_back(ColliderChange::Move(cs[round].id, Pose(rng.InBox(3.0))));
  changes.push_back(ColliderChange::Remove(cs[4 + round].id));
  ASSERT_TRUE(set.Apply(changes).ok()) << where;
  ASSERT_EQ(set.GetTreeStats().merged_triangles, 0u) << where;
}

// `n` rays across GroupedMeshScene's meshes.
std::vector<Query> RaysAcrossTheScene(Random& rng, int n) {
  std::vector<Query> qs;
  for (int k = 0; k < n; ++k) {
    RayQuery r;
    r.origin = rng.InBox(6.0);
    r.translation = rng.InBox(12.0);
    qs.push_back(r);
  }
  return qs;
}

// Ray batches merge the meshes that share a pose and layer (MeshGroups) once
// the batches pay for it: every answer (id, fraction, normal, point, triangle)
// equals the single query's, which walks each mesh, across ties between
// meshes (a mesh twice, at one pose), dropped triangles, layers, masks,
// ignore lists, all-hits rays, and changes that make the groups stale.
TEST(ColliderSetTest, MeshGroupsAnswerAsEachMesh) {
  int grouped_batches = 0, hits = 0;
  for (int scene = 0; scene < 6; ++scene) {
    Random rng(61000 + scene);
    const std::vector<Collider> cs = GroupedMeshScene(rng);
    ColliderSet set;
    ASSERT_TRUE(set.AddBulk(cs).ok());
    for (int round = 0; round < 3; ++round) {
      const std::string where =
          "scene seed " + std::to_string(61000 + scene) + " round " + std::to_string(round);
      for (int batch_no = 0; batch_no < 3; ++batch_no) {
        const bool had_groups = set.GetTreeStats().merged_triangles != 0;
        std::vector<Query> qs;
        for (int k = 0; k < 500; ++k) {
          RayQuery r;
          if (k % 4 == 0) {
            r.origin = OverTheGrids(rng, 3.0);
            r.translation = {0, -8.0, 0};
          } else {
            r.origin = rng.InBox(6.0);
            r.translation = rng.InBox(12.0);
          }
          VaryFilter(k, rng, &r.filter, &r.all_hits);
          qs.push_back(r);
        }
        const std::vector<QueryResult> ones =
            ExpectBatchAsSingles(set, qs, where + " batch " + std::to_string(batch_no));
        grouped_batches += had_groups;
        for (const QueryResult& one : ones) hits += !one.hits.empty();
      }
      StaleTheGroups(set, cs, round, rng, where);
    }
  }
  EXPECT_GT(grouped_batches, 15);
  EXPECT_GT(hits, 3000);
}

// Sweep batches take the merged meshes as ray batches do, each member
// answering as its own mesh (ties within a nanometre of travel by its
// lowest triangle, members by collider id): every answer equals the single
// query's, which sweeps each mesh, for every convex query kind, onto grid
// vertices and edges (ties), from inside meshes (contacts), with contact
// offsets, layers, masks, ignore lists and all-hits sweeps.
TEST(ColliderSetTest, MeshGroupsSweepAsEachMesh) {
  int grouped_batches = 0, hits = 0, started = 0;
  for (int scene = 0; scene < 4; ++scene) {
    Random rng(62000 + scene);
    const std::vector<Collider> cs = GroupedMeshScene(rng);
    ColliderSet set;
    ASSERT_TRUE(set.AddBulk(cs).ok());
    for (int round = 0; round < 2; ++round) {
      const std::string where =
          "scene seed " + std::to_string(62000 + scene) + " round " + std::to_string(round);
      for (int batch_no = 0; batch_no < 5; ++batch_no) {
        std::vector<Query> qs;
        for (int k = 0; k < 300; ++k) {
          CastQuery c;
          c.shape = rng.MakeShape(static_cast<ShapeKind>(k % kConvexKindCount), 0.05, 0.6);
          if (k % 3 == 0) {
            c.pose = Pose(OverTheGrids(rng, 2.5));
            c.translation = {0, -7.0, 0};
          } else {
            c.pose = Pose(rng.InBox(5.0), rng.Rotation());
            c.translation = rng.InBox(8.0);
          }
          if (k % 7 == 0) c.contact_offset = 0.02;
          VaryFilter(k, rng, &c.filter, &c.all_hits);
          qs.push_back(c);
        }
        const std::vector<QueryResult> ones =
            ExpectBatchAsSingles(set, qs, where + " batch " + std::to_string(batch_no));
        // Made, if at all, before the batch's first query.
        grouped_batches += set.GetTreeStats().merged_triangles != 0;
        for (const QueryResult& one : ones) {
          if (one.hits.empty()) continue;
          ++hits;
          started += one.hits[0].started_overlapping();
        }
      }
      StaleTheGroups(set, cs, round, rng, where);
    }
  }
  EXPECT_GT(grouped_batches, 16);
  EXPECT_GT(hits, 2000);
  EXPECT_GT(started, 100);
  std::printf("%d grouped batches, %d hits, %d started inside\n", grouped_batches, hits, started);
}

// A sweep that skips its started contact (CastQuery::skip_started_contact)
// answers as one that makes it, but for a hit at its start: the same
// colliders, pieces, fractions and states, with depth 0, the normal against
// the translation (+y for none) and the point at the shape's position;
// in batches (merged meshes included) and alone, closest and all hits,
// present and rewound; and the pair's Cast (CastSettings) likewise.
TEST(ColliderSetTest, SkipStartedContactKeepsTheHits) {
  Random rng(63000);
  const std::vector<Collider> cs = GroupedMeshScene(rng);
  ColliderSet set;
  ASSERT_TRUE(set.AddBulk(cs).ok());
  ASSERT_TRUE(set.Apply({}, 1).ok());
  ASSERT_TRUE(set.Apply({}, 2).ok());
  int started = 0, deep = 0, hits = 0, pairs = 0;
  const auto expect_skipped = [&](const CastResult& full, const CastResult& skip,
                                  const CastQuery& c, const std::string& at) {
    ASSERT_EQ(skip.state, full.state) << at;
    EXPECT_EQ(skip.fraction, full.fraction) << at;
    EXPECT_EQ(skip.sub_shape, full.sub_shape) << at;
    if (!full.started_overlapping()) {
      EXPECT_TRUE(full.normal == skip.normal && full.point == skip.point &&
                  full.depth == skip.depth)
          << at;
      return;
    }
    ++started;
    deep += full.depth > 0.0;
    const double len = c.translation.Length();
    const Vec3 against = len > 0.0 ? c.translation * (-1.0 / len) : Vec3{0, 1, 0};
    EXPECT_EQ(skip.depth, 0.0) << at;
    EXPECT_TRUE(skip.normal == against) << at;
    EXPECT_TRUE(skip.point == c.pose.position) << at;
  };
  for (int batch_no = 0; batch_no < 6; ++batch_no) {
    std::vector<Query> full, skip;
    for (int k = 0; k < 300; ++k) {
      CastQuery c;
      c.shape = rng.MakeShape(static_cast<ShapeKind>(k % kConvexKindCount), 0.05, 0.6);
      c.pose = Pose(rng.InBox(5.0), rng.Rotation());
      c.translation = k % 10 == 0 ? Vec3::Zero() : rng.InBox(8.0);
      VaryFilter(k, rng, &c.filter, &c.all_hits);
      if (k % 13 == 0) c.at_tick = 1.5;
      full.push_back(c);
      c.skip_started_contact = true;
      skip.push_back(c);
    }
    const std::string where = "batch " + std::to_string(batch_no);
    std::vector<QueryResult> a(full.size());
    set.RunBatch(full, a);
    const std::vector<QueryResult> b = ExpectBatchAsSingles(set, skip, where);
    for (size_t i = 0; i < full.size(); ++i) {
      const CastQuery& c = std::get<CastQuery>(full[i]);
      const std::string at = where + " query " + std::to_string(i);
      ASSERT_EQ(a[i].hits.size(), b[i].hits.size()) << at;
      for (size_t j = 0; j < a[i].hits.size(); ++j) {
        EXPECT_EQ(a[i].hits[j].id, b[i].hits[j].id) << at;
        expect_skipped(a[i].hits[j], b[i].hits[j], c, at + " hit " + std::to_string(j));
        ++hits;
      }
      // The pair's own Cast, with the first collider this query hits.
      if (a[i].hits.empty() || c.at_tick) continue;
      const Collider* hit = set.Find(a[i].hits[0].id);
      ASSERT_NE(hit, nullptr) << at;
      CastSettings settings;
      const CastResult pair_full =
          Cast(c.shape, c.pose, c.translation, hit->shape, hit->pose, settings);
      settings.skip_started_contact = true;
      const CastResult pair_skip =
          Cast(c.shape, c.pose, c.translation, hit->shape, hit->pose, settings);
      expect_skipped(pair_full, pair_skip, c, at + " pair");
      ++pairs;
    }
  }
  EXPECT_NE(set.GetTreeStats().merged_triangles, 0u);
  EXPECT_GT(hits, 500);
  EXPECT_GT(pairs, 300);
  EXPECT_GT(deep, 100);
  std::printf("%d hits, %d started inside (%d with depth), %d pairs\n", hits, started, deep, pairs);
}

// Overlap batches take the merged meshes too: each member answers as its
// own mesh (the lowest input triangle touched, as sub_shape), with shapes
// resting on the grids' vertices and edges (touching counts), layers,
// masks, ignore lists, max_hits, contacts, and groups made stale.
TEST(ColliderSetTest, MeshGroupsOverlapAsEachMesh) {
  int grouped_batches = 0, member_hits = 0;
  for (int scene = 0; scene < 4; ++scene) {
    Random rng(65000 + scene);
    const std::vector<Collider> cs = GroupedMeshScene(rng);
    const uint64_t first_primitive = cs[cs.size() - 21].id;
    ColliderSet set;
    ASSERT_TRUE(set.AddBulk(cs).ok());
    for (int round = 0; round < 2; ++round) {
      const std::string where =
          "scene seed " + std::to_string(65000 + scene) + " round " + std::to_string(round);
      for (int batch_no = 0; batch_no < 12; ++batch_no) {
        std::vector<Query> qs;
        for (int k = 0; k < 400; ++k) {
          OverlapQuery o;
          o.shape = rng.MakeShape(static_cast<ShapeKind>(k % kConvexKindCount), 0.05, 0.8);
          o.pose = k % 3 == 0 ? Pose(OverTheGrids(rng, -1.0)) : Pose(rng.InBox(5.0), rng.Rotation());
          bool all_hits = false;
          VaryFilter(k, rng, &o.filter, &all_hits);
          if (k % 13 == 0) o.filter.max_hits = static_cast<uint32_t>(rng.Int(1, 3));
          o.want_contact = k % 11 == 0;
          qs.push_back(o);
        }
        const bool had_groups = set.GetTreeStats().merged_triangles != 0;
        const std::vector<QueryResult> ones =
            ExpectBatchAsSingles(set, qs, where + " batch " + std::to_string(batch_no));
        grouped_batches += had_groups;
        for (const QueryResult& one : ones) {
          for (const OverlapHit& h : one.overlaps) member_hits += had_groups && h.id < first_primitive;
        }
      }
      StaleTheGroups(set, cs, round, rng, where);
    }
  }
  EXPECT_GT(grouped_batches, 40);
  EXPECT_GT(member_hits, 5000);
  std::printf("%d grouped batches, %d member hits\n", grouped_batches, member_hits);
}

// Rewound overlaps, rays and sweeps take the merged meshes while no member is
// tracked by the history (each member is then where it is now at every
// tick in the window), and walk each mesh once one is: every answer equals
// the single query's, with primitives moving every tick and a mesh moved
// into a group mid-way (tracked for the window: earlier ticks have it
// elsewhere).
TEST(ColliderSetTest, RewoundQueriesTakeTheGroupsWhileNoMemberMoved) {
  int grouped_batches = 0, member_hits = 0, started = 0;
  for (int scene = 0; scene < 3; ++scene) {
    Random rng(66000 + scene);
    const std::vector<Collider> cs = GroupedMeshScene(rng);
    ColliderSet set;
    set.SetHistoryTicks(16);
    uint64_t tick = 100;
    ASSERT_TRUE(set.AddBulk(cs, tick).ok());
    // A batch of rays that pays for the groups at once.
    const auto make_groups = [&] {
      const std::vector<Query> present = RaysAcrossTheScene(rng, 4000);
      std::vector<QueryResult> out(present.size());
      set.RunBatch(present, out);
    };
    make_groups();
    for (int step = 0; step < 10; ++step) {
      const std::string where =
          "scene seed " + std::to_string(66000 + scene) + " step " + std::to_string(step);
      // The primitives move every tick; at step 5 a grid of the second frame
      // moves into the first, whose group it joins while the history still
      // has it in the second.
      std::vector<ColliderChange> changes;
      for (size_t i = cs.size() - 20; i < cs.size(); i += 3) {
        changes.push_back(ColliderChange::Move(cs[i].id, Pose(rng.InBox(4.0), rng.Rotation())));
      }
      if (step == 5) changes.push_back(ColliderChange::Move(cs[4].id, cs[0].pose));
      ASSERT_TRUE(set.Apply(changes, ++tick).ok()) << where;
      if (step == 5) make_groups();
      std::vector<Query> qs;
      for (int k = 0; k < 600; ++k) {
        const double at = rng.Uniform(100.0, static_cast<double>(tick));
        if (k % 3 == 0) {
          OverlapQuery o;
          o.shape = rng.MakeShape(static_cast<ShapeKind>(k % kConvexKindCount), 0.05, 0.8);
          o.pose = Pose(k % 2 == 0 ? OverTheGrids(rng, -1.0) : rng.InBox(5.0), rng.Rotation());
          if (k % 4 != 0) o.at_tick = at;
          qs.push_back(o);
        } else if (k % 3 == 1) {
          RayQuery r;
          r.origin = k % 2 == 0 ? OverTheGrids(rng, 3.0) : rng.InBox(6.0);
          r.translation = k % 2 == 0 ? Vec3{0, -8.0, 0} : rng.InBox(12.0);
          if (k % 4 != 0) r.at_tick = at;
          if (k % 7 == 0) r.filter.ignore = {static_cast<uint64_t>(rng.Int(1, 40))};
          qs.push_back(r);
        } else {
          // Sweeps, some from inside meshes (their contact is not deferred).
          CastQuery c;
          c.shape = rng.MakeShape(static_cast<ShapeKind>(k % kConvexKindCount), 0.05, 0.6);
          c.pose = Pose(k % 2 == 0 ? OverTheGrids(rng, 1.0) : rng.InBox(5.0), rng.Rotation());
          c.translation = k % 2 == 0 ? Vec3{0, -6.0, 0} : rng.InBox(8.0);
          if (k % 4 != 0) c.at_tick = at;
          if (k % 7 == 0) c.filter.ignore = {static_cast<uint64_t>(rng.Int(1, 40))};
          if (k % 11 == 0) c.contact_offset = 0.02;
          qs.push_back(c);
        }
      }
      const bool had_groups = set.GetTreeStats().merged_triangles != 0;
      const std::vector<QueryResult> ones = ExpectBatchAsSingles(set, qs, where);
      grouped_batches += had_groups;
      for (const QueryResult& one : ones) {
        for (const OverlapHit& h : one.overlaps) member_hits += h.id == cs[4].id;
        for (const CastHit& h : one.hits) {
          member_hits += h.id == cs[4].id;
          started += h.started_overlapping();
        }
      }
    }
  }
  EXPECT_GT(grouped_batches, 15);
  EXPECT_GT(member_hits, 100);
  EXPECT_GT(started, 100);
  std::printf("%d grouped batches, %d hits on the grid that moves, %d started inside\n",
              grouped_batches, member_hits, started);
}

// Rays and sweeps that take the merged meshes walk a copy of the tree
// without their members: every other collider is reached as in the whole
// tree (each answer equals the single query's), also after one of them
// moves while the groups stay (the copy is made again for the tree as it is).
TEST(ColliderSetTest, GroupedQueriesWalkTheTreeWithoutTheMembers) {
  int with_rest = 0, primitive_hits = 0;
  for (int scene = 0; scene < 3; ++scene) {
    Random rng(64000 + scene);
    const std::vector<Collider> cs = GroupedMeshScene(rng);
    const uint64_t first_primitive = cs[cs.size() - 20].id;
    ColliderSet set;
    ASSERT_TRUE(set.AddBulk(cs).ok());
    for (int batch_no = 0; batch_no < 8; ++batch_no) {
      const std::string where = "scene seed " + std::to_string(64000 + scene) + " batch " +
                                std::to_string(batch_no);
      std::vector<Query> qs;
      for (int k = 0; k < 400; ++k) {
        if (k % 2 == 0) {
          RayQuery r;
          r.origin = rng.InBox(6.0);
          r.translation = rng.InBox(12.0);
          qs.push_back(r);
        } else {
          CastQuery c;
          c.shape = rng.MakeShape(static_cast<ShapeKind>(k / 2 % kConvexKindCount), 0.05, 0.6);
          c.pose = Pose(rng.InBox(5.0), rng.Rotation());
          c.translation = rng.InBox(8.0);
          qs.push_back(c);
        }
      }
      const std::vector<QueryResult> ones = ExpectBatchAsSingles(set, qs, where);
      const ColliderSet::TreeStats stats = set.GetTreeStats();
      if (stats.rest_nodes != 0) {
        ++with_rest;
        EXPECT_NE(stats.merged_triangles, 0u) << where;
        EXPECT_LT(stats.rest_nodes, stats.wide_nodes) << where;
      }
      for (const QueryResult& one : ones) {
        primitive_hits += !one.hits.empty() && one.hits[0].id >= first_primitive;
      }
      // A primitive moves: the groups stay, the tree changes.
      const std::vector<ColliderChange> move = {ColliderChange::Move(
          cs[cs.size() - 1 - batch_no].id, Pose(rng.InBox(4.0), rng.Rotation()))};
      ASSERT_TRUE(set.Apply(move).ok()) << where;
      EXPECT_EQ(set.GetTreeStats().rest_nodes, 0u) << where;
    }
  }
  EXPECT_GT(with_rest, 12);
  EXPECT_GT(primitive_hits, 400);
  std::printf("%d batches over the rest, %d primitive hits\n", with_rest, primitive_hits);
}

// With SetBackgroundCaches, the merged meshes are built beside the batches:
// the batch that calls for them goes on without (same answers), the first
// batch after the build adopts them, a change made meanwhile makes the
// build stale (dropped), and a set destroyed mid-build waits for it.
// Each merged mesh keeps its members' triangles in leaves of their own
// (the members' leaves, MakeMeshOverParts), members side by side and
// overlapping alike.
TEST(ColliderSetTest, MeshGroupsKeepEachMemberInItsOwnLeaves) {
  int groups = 0;
  for (int scene = 0; scene < 4; ++scene) {
    Random rng(64000 + scene);
    const std::vector<Collider> cs = GroupedMeshScene(rng);
    const internal::MeshGroups built(internal::MeshGroups::MeshesOf(cs), 1);
    for (const internal::MeshGroups::Group& g : built.groups()) {
      ++groups;
      EXPECT_TRUE(g.merged.surface()->mesh()->LeavesWithinParts(g.first)) << "scene " << scene;
    }
  }
  EXPECT_GE(groups, 4);
}

// A merged mesh reads its vertices and triangles from its members' meshes
// (MeshParts), which its group holds: with every other holder of
// the members gone, its input is still the members' inputs end to end.
TEST(ColliderSetTest, MeshGroupsHoldTheMembersTheyRead) {
  Random rng(64100);
  std::vector<Collider> cs = GroupedMeshScene(rng);
  std::map<uint32_t, TriangleMeshShape> inputs;  // by item
  std::vector<internal::MeshGroups::Mesh> meshes = internal::MeshGroups::MeshesOf(cs);
  for (const internal::MeshGroups::Mesh& m : meshes) inputs[m.item] = *m.collider.shape.mesh_input();
  const internal::MeshGroups built(meshes, 1);
  meshes.clear();
  cs.clear();
  // Memory freed by now would be handed out again and overwritten here.
  std::vector<std::vector<uint8_t>> churn;
  for (size_t n = 64; n <= (size_t{1} << 20); n += n / 8 + 64) churn.emplace_back(n, 0x7f);
  for (size_t n = 64; n <= (size_t{1} << 20); n += n / 8 + 64) churn.emplace_back(n, 0x7f);
  ASSERT_FALSE(built.groups().empty());
  for (const internal::MeshGroups::Group& g : built.groups()) {
    EXPECT_TRUE(g.merged.surface()->mesh()->part_vertices());
    EXPECT_TRUE(g.merged.surface()->mesh()->part_triangles());
    const TriangleMeshShape merged = *g.merged.mesh_input();
    size_t at = 0;
    for (uint32_t item : g.item) {
      const TriangleMeshShape& in = inputs[item];
      ASSERT_LE(at + in.vertices.size(), merged.vertices.size());
      EXPECT_TRUE(std::equal(in.vertices.begin(), in.vertices.end(), merged.vertices.begin() + at))
          << "item " << item;
      at += in.vertices.size();
    }
    EXPECT_EQ(at, merged.vertices.size());
  }
}

// A change to the meshes lets the merged meshes go at once, with the
// members they hold (a removed member among them), rather than at the next
// batch: the set's bytes fall by at least the groups' own.
TEST(ColliderSetTest, MeshChangeDropsTheMergedMeshes) {
  Random rng(64200);
  const std::vector<Collider> cs = GroupedMeshScene(rng);
  const internal::MeshGroups alone(internal::MeshGroups::MeshesOf(cs), 1);
  ColliderSet set;
  ASSERT_TRUE(set.AddBulk(cs).ok());
  const std::vector<Query> qs = RaysAcrossTheScene(rng, 1000);
  std::vector<QueryResult> results(qs.size());
  for (int i = 0; i < 20 && set.GetTreeStats().merged_triangles == 0; ++i) set.RunBatch(qs, results);
  ASSERT_NE(set.GetTreeStats().merged_triangles, 0u);
  const size_t merged = set.MemoryBytes();
  ASSERT_GT(alone.MemoryBytes(), 0u);
  const Collider& member = cs[alone.groups()[0].item[0]];
  ASSERT_TRUE(set.Apply(std::vector<ColliderChange>{ColliderChange::Remove(member.id)}).ok());
  EXPECT_LE(set.MemoryBytes() + alone.MemoryBytes(), merged);
}

TEST(ColliderSetTest, MeshGroupsBuildInTheBackground) {
  Random rng(63000);
  const std::vector<Collider> cs = GroupedMeshScene(rng);
  const std::vector<Query> qs = RaysAcrossTheScene(rng, 3000);
  const auto check = [&](const ColliderSet& set, const std::string& where) {
    ExpectBatchAsSingles(set, qs, where);
  };
  ColliderSet set;
  set.SetBackgroundCaches(true);
  ASSERT_TRUE(set.AddBulk(cs).ok());
  check(set, "calling batch");  // enough rays: the build starts
  EXPECT_EQ(set.GetTreeStats().merged_triangles, 0u);
  set.WaitForCaches();
  check(set, "adopting batch");
  const uint64_t merged = set.GetTreeStats().merged_triangles;
  EXPECT_GT(merged, 0u);
  // A change while a build is in flight: the build is stale, not adopted.
  const std::vector<ColliderChange> move = {ColliderChange::Move(cs[0].id, Pose(Vec3{0.5, 0, 0}))};
  ASSERT_TRUE(set.Apply(move).ok());
  check(set, "after a move");  // starts a build over the moved meshes
  const std::vector<ColliderChange> remove = {ColliderChange::Remove(cs[1].id)};
  ASSERT_TRUE(set.Apply(remove).ok());
  set.WaitForCaches();
  check(set, "stale build");
  EXPECT_EQ(set.GetTreeStats().merged_triangles, 0u);
  set.WaitForCaches();
  check(set, "fresh build");
  EXPECT_GT(set.GetTreeStats().merged_triangles, 0u);
  // Destroyed with a build in flight.
  {
    ColliderSet other;
    other.SetBackgroundCaches(true);
    ASSERT_TRUE(other.AddBulk(cs).ok());
    std::vector<QueryResult> batch(qs.size());
    other.RunBatch(qs, batch);
  }
}

// A closest sweep computes the penetration contact only for the pair that
// wins (CastWithoutContact, then AddStartedContact in the job's Finish): on
// packed scenes where sweeps start inside several colliders of every kind
// (cylinders: EPA), the hit equals Cast() against the winner bit for bit
// (normal, point, depth), single and batched.
TEST(ColliderSetTest, StartedOverlappingSweepHasTheWinnersContact) {
  int started = 0, contested = 0;  // winners with a contact; queries inside >= 2
  for (int scene = 0; scene < 40; ++scene) {
    Random rng(47000 + scene);
    std::vector<Collider> cs;
    for (int i = 0; i < 60; ++i) cs.push_back(RandomCollider(rng, static_cast<uint64_t>(i + 1), 4.0));
    ColliderSet set;
    ASSERT_TRUE(set.AddBulk(cs).ok());
    std::vector<Query> qs;
    for (int i = 0; i < 40; ++i) {
      const Shape shape = rng.MakeShape(static_cast<ShapeKind>(rng.Int(0, 3)), 0.2, 1.5);
      const Vec3 origin = cs[rng.Int(0, static_cast<int>(cs.size()) - 1)].pose.position +
                          rng.InBox(0.5);
      qs.push_back(CastQuery{shape, Pose(origin, rng.Rotation()), rng.InBox(3.0), {}, false});
    }
    std::vector<QueryResult> batch(qs.size());
    set.RunBatch(qs, batch);
    for (size_t i = 0; i < qs.size(); ++i) {
      const CastQuery& q = std::get<CastQuery>(qs[i]);
      const Pose pose(q.pose.position, q.pose.rotation.Normalized());
      int inside = 0;
      for (const Collider& c : cs) {
        inside += Cast(q.shape, pose, q.translation, c.shape, c.pose).state ==
                  CastState::kStartedOverlapping;
      }
      contested += inside >= 2;
      QueryResult one;
      set.Run(qs[i], &one);
      const std::string where =
          "scene seed " + std::to_string(47000 + scene) + " query " + std::to_string(i);
      for (const QueryResult* got : {&one, &batch[i]}) {
        ASSERT_EQ(got->hits.size(), RefCast(cs, qs[i]).size()) << where;
        if (got->hits.empty()) continue;
        const CastHit& h = got->hits[0];
        const Collider& c = *set.Find(h.id);
        const CastResult r = Cast(q.shape, pose, q.translation, c.shape, c.pose);
        ASSERT_EQ(h.fraction, r.fraction) << where;
        ASSERT_EQ(h.started_overlapping(), r.state == CastState::kStartedOverlapping) << where;
        ASSERT_EQ(h.normal, r.normal) << where;
        ASSERT_EQ(h.point, r.point) << where;
        ASSERT_EQ(h.depth, r.depth) << where;
        // Real contacts (depth > 0), not the cast's placeholder (depth 0).
        if (got == &one && h.started_overlapping()) started += h.depth > 0.0;
      }
    }
  }
  EXPECT_GT(started, 600);
  EXPECT_GT(contested, 300);
}

// A pair cast that gives up (CastState::kFailed, forced here by an iteration
// cap of 1) stops the world sweep at its lower bound, never passes through:
// the hit is there, no later than the exact one, and the query is still
// clear of the collider at it. (A box's corners as a hull: a box against a
// cylinder is answered here in closed form, a hull by the GJK ray cast.)
TEST(ColliderSetTest, FailedPairCastStopsTheSweep) {
  ColliderSet set;
  const Shape cyl = *Shape::MakeCylinder(0.8, 1.2);
  const Pose pb({0.2, -0.1, 0.3}, Quat::FromAxisAngle(Vec3{1, 2, 3}.Normalized(), 0.7));
  ASSERT_TRUE(set.Apply(std::vector{ColliderChange::Add(MakeCollider(7, cyl, pb))}).ok());
  CastQuery q;
  ConvexHull corners;
  for (int i = 0; i < 8; ++i) {
    corners.points.push_back({(i & 1) ? 0.7 : -0.7, (i & 2) ? 0.4 : -0.4, (i & 4) ? 0.9 : -0.9});
  }
  q.shape = *Shape::Make(corners);
  q.pose = Pose({-5, 2.5, 1.5}, Quat::FromAxisAngle(Vec3{-2, 1, 1}.Normalized(), 1.1));
  q.translation = {9, -4.5, -2.4};
  std::vector<CastHit> exact, capped;
  set.Cast(q, &exact);
  ASSERT_EQ(exact.size(), 1u);
  internal::SetWorldCastIterationsForTesting(1);
  set.Cast(q, &capped);
  QueryResult batch;
  set.Run(Query{q}, &batch);
  internal::SetWorldCastIterationsForTesting(0);  // the default again
  ASSERT_EQ(capped.size(), 1u);
  EXPECT_EQ(capped[0].id, 7u);
  EXPECT_FALSE(capped[0].started_overlapping());
  EXPECT_GT(capped[0].fraction, 0.0);
  EXPECT_LT(capped[0].fraction, exact[0].fraction);
  EXPECT_FALSE(Overlap(q.shape,
                       Pose(q.pose.position + q.translation * (capped[0].fraction * (1 - 1e-9)),
                            q.pose.rotation),
                       cyl, pb));
  ASSERT_EQ(batch.hits.size(), 1u);
  EXPECT_EQ(batch.hits[0].fraction, capped[0].fraction);
  std::vector<CastHit> again;
  set.Cast(q, &again);
  ASSERT_EQ(again.size(), 1u);
  EXPECT_EQ(again[0].fraction, exact[0].fraction);
}

// The batch policy of a server (CheckBatch): entries named by index, counted
// against the collider limit and the geometry limits; nothing changes until
// ApplyBatch, which loads an all-adds batch in bulk.
TEST(ColliderSetTest, CheckBatchNamesEntriesAndLimits) {
  ColliderSet set;
  const Shape ball = *Shape::MakeSphere(0.5);
  ASSERT_TRUE(set.Apply(std::vector{ColliderChange::Add(MakeCollider(1, ball, Pose()))}).ok());
  BatchLimits limits;
  limits.max_colliders = 3;
  BatchPlan plan;
  // An empty batch passes; a stale expected revision does not.
  EXPECT_TRUE(set.CheckBatch({}, std::nullopt, std::nullopt, limits, &plan).ok());
  EXPECT_EQ(plan.colliders_after, 1u);
  Status st = set.CheckBatch({}, std::nullopt, uint64_t{7}, limits, &plan);
  EXPECT_EQ(st.code(), ErrorCode::kFailedPrecondition);
  // Ids replayed in order: a remove then an add of the same id is fine, a
  // second add is not, and the entry is named.
  std::vector<ColliderChange> batch = {ColliderChange::Remove(1),
                                       ColliderChange::Add(MakeCollider(1, ball, Pose())),
                                       ColliderChange::Add(MakeCollider(1, ball, Pose()))};
  st = set.CheckBatch(batch, std::nullopt, std::nullopt, limits, &plan);
  EXPECT_EQ(st.code(), ErrorCode::kAlreadyExists);
  EXPECT_EQ(st.message(), "changes[2].add.id: collider 1 already exists");
  batch = {ColliderChange::Move(9, Pose())};
  st = set.CheckBatch(batch, std::nullopt, std::nullopt, limits, &plan);
  EXPECT_EQ(st.code(), ErrorCode::kNotFound);
  EXPECT_EQ(st.message(), "changes[0].move.id: collider 9 not found");
  // Three more colliders would make four.
  batch = {ColliderChange::Add(MakeCollider(2, ball, Pose())),
           ColliderChange::Add(MakeCollider(3, ball, Pose())),
           ColliderChange::Add(MakeCollider(4, ball, Pose()))};
  st = set.CheckBatch(batch, std::nullopt, std::nullopt, limits, &plan);
  EXPECT_EQ(st.code(), ErrorCode::kResourceExhausted);
  EXPECT_NE(st.message().find("limits.max_colliders"), std::string::npos) << st.message();
  // A hull over the point limit, named by entry.
  limits.max_hull_points = 4;
  const Shape hull =
      *Shape::Make(ConvexHull{{{0, 0, 0}, {1, 0, 0}, {0, 1, 0}, {0, 0, 1}, {1, 1, 1}}});
  batch = {ColliderChange::Replace(MakeCollider(1, hull, Pose()))};
  st = set.CheckBatch(batch, std::nullopt, std::nullopt, limits, &plan);
  EXPECT_EQ(st.code(), ErrorCode::kResourceExhausted);
  EXPECT_EQ(st.message().rfind("changes[0].replace.shape: a convex hull has 5", 0), 0u) << st.message();
  EXPECT_EQ(set.size(), 1u);
  EXPECT_EQ(set.revision(), 1u);
  // Two adds fit: planned as a bulk load, applied once.
  batch = {ColliderChange::Add(MakeCollider(2, ball, Pose())),
           ColliderChange::Add(MakeCollider(3, ball, Pose({2, 0, 0})))};
  ASSERT_TRUE(set.CheckBatch(batch, std::nullopt, std::nullopt, limits, &plan).ok());
  EXPECT_TRUE(plan.all_adds);
  EXPECT_EQ(plan.colliders_after, 3u);
  ASSERT_TRUE(set.ApplyBatch(batch, std::nullopt, plan).ok());
  EXPECT_EQ(set.size(), 3u);
  EXPECT_EQ(set.revision(), 2u);
  EXPECT_EQ(set.TreeValidate(), "");
}

TEST(ThreadPoolTest, RunsEveryIndexOnce) {
  for (size_t threads : {1, 2, 4}) {
    ThreadPool pool(threads);
    EXPECT_EQ(pool.size(), threads);
    for (int rep = 0; rep < 50; ++rep) {
      std::vector<std::atomic<int>> hits(1000);
      pool.ParallelFor(hits.size(), [&](size_t i) { hits[i]++; });
      for (auto& h : hits) ASSERT_EQ(h.load(), 1);
    }
  }
}

}  // namespace
}  // namespace hitbox

namespace hitbox {
namespace {

// A flat grid of n x n unit spheres 2 m apart (ids 1..n*n), the shape of the
// world in which one huge overlap used to gather every collider first.
ColliderSet SphereGrid(int n) {
  std::vector<Collider> cs;
  cs.reserve(static_cast<size_t>(n) * n);
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < n; ++j) {
      cs.push_back(MakeCollider(static_cast<uint64_t>(i * n + j + 1), *Shape::MakeSphere(1.0),
                                Pose({2.0 * i, 0, 2.0 * j})));
    }
  }
  ColliderSet set;
  EXPECT_TRUE(set.AddBulk(cs).ok());
  return set;
}

// max_hits bounds what a query keeps while it runs, not only what it
// returns: a huge overlap keeps the lowest ids and skips the narrow phase
// for the rest; casts and rays keep the first hits in (fraction, id) order.
TEST(QueryBudgetTest, MaxHitsKeepsTheBestAsItGoes) {
  const ColliderSet set = SphereGrid(60);
  OverlapQuery big;
  big.shape = *Shape::MakeSphere(1000.0);
  big.filter.max_hits = 5;
  CastQuery sweep;
  sweep.shape = *Shape::MakeSphere(0.5);
  sweep.pose = Pose({-10, 0, 0.3});
  sweep.translation = {200, 0, 0};
  sweep.all_hits = true;
  sweep.filter.max_hits = 7;
  RayQuery ray;
  ray.origin = {-10, 0.2, 2.1};
  ray.translation = {200, 0, 0};
  ray.all_hits = true;
  ray.filter.max_hits = 3;
  const std::vector<Query> qs = {big, sweep, ray};
  std::vector<QueryResult> bounded(3);
  QueryWork work;
  ASSERT_TRUE(set.RunBatch(qs, bounded, nullptr, QueryBudget{}, &work).ok());
  ASSERT_EQ(bounded[0].overlaps.size(), 5u);
  for (size_t k = 0; k < 5; ++k) EXPECT_EQ(bounded[0].overlaps[k].id, k + 1);
  // Far fewer pair tests than the 3600 candidates of the overlap alone.
  EXPECT_LT(work.pair_tests, 1000u);
  EXPECT_GT(work.nodes, 3600u);

  // The same answers as keeping every hit and cutting afterwards.
  std::vector<Query> unbounded_qs = qs;
  std::get<CastQuery>(unbounded_qs[1]).filter.max_hits = 0;
  std::get<RayQuery>(unbounded_qs[2]).filter.max_hits = 0;
  std::vector<QueryResult> all(3);
  set.RunBatch(unbounded_qs, all);
  ASSERT_EQ(bounded[1].hits.size(), 7u);
  ASSERT_EQ(bounded[2].hits.size(), 3u);
  ASSERT_GE(all[1].hits.size(), 30u);
  for (size_t k = 0; k < 7; ++k) {
    EXPECT_EQ(bounded[1].hits[k].id, all[1].hits[k].id);
    EXPECT_EQ(bounded[1].hits[k].fraction, all[1].hits[k].fraction);
  }
  for (size_t k = 0; k < 3; ++k) EXPECT_EQ(bounded[2].hits[k].id, all[2].hits[k].id);
  // The single-query path agrees.
  std::vector<OverlapHit> one;
  set.Overlap(big, &one);
  ASSERT_EQ(one.size(), 5u);
  EXPECT_EQ(one[4].id, 5u);
}

// A batch that needs more nodes or pair tests than its budget stops with
// RESOURCE_EXHAUSTED, its results cleared; within budget it answers exactly
// as without one. The pooled path stops too.
TEST(QueryBudgetTest, WorkBudgetStopsRunawayBatches) {
  const ColliderSet set = SphereGrid(100);
  ThreadPool pool(2);
  OverlapQuery big;
  big.shape = *Shape::MakeSphere(1000.0);
  big.filter.max_hits = 1024;
  RayQuery ray;
  ray.origin = {-5, 0, 0};
  ray.translation = {10, 0, 0};
  for (ThreadPool* p : {static_cast<ThreadPool*>(nullptr), &pool}) {
    std::vector<Query> qs(100, big);
    std::vector<QueryResult> results(qs.size());
    QueryBudget budget;
    budget.max_nodes = 50'000;
    QueryWork work;
    const Status st = set.RunBatch(qs, results, p, budget, &work);
    ASSERT_EQ(st.code(), ErrorCode::kResourceExhausted) << st.ToString();
    EXPECT_NE(st.message().find("50000 tree nodes"), std::string::npos) << st.message();
    EXPECT_GT(work.nodes, 50'000u);
    EXPECT_LT(work.nodes, 50'000u + 2 * 8 * 1024 + 4096) << "stops soon after the limit";
    for (const QueryResult& r : results) EXPECT_TRUE(r.overlaps.empty());

    budget = QueryBudget{};
    budget.max_pair_tests = 100;
    EXPECT_EQ(set.RunBatch(qs, results, p, budget, &work).code(), ErrorCode::kResourceExhausted);

    // Small queries under a budget: the same answers as the plain batch.
    std::vector<Query> small(200, ray);
    std::vector<QueryResult> a(small.size()), b(small.size());
    set.RunBatch(small, a, p);
    budget = QueryBudget{};
    budget.max_nodes = 1'000'000;
    budget.max_pair_tests = 1'000'000;
    ASSERT_TRUE(set.RunBatch(small, b, p, budget, &work).ok());
    EXPECT_GT(work.pair_tests, 0u);
    for (size_t i = 0; i < small.size(); ++i) {
      ASSERT_EQ(a[i].hits.size(), 1u);
      ASSERT_EQ(b[i].hits.size(), 1u);
      EXPECT_EQ(a[i].hits[0].id, b[i].hits[0].id);
      EXPECT_EQ(a[i].hits[0].fraction, b[i].hits[0].fraction);
    }
  }
}

// Deadlines and cancellation stop a batch, also inside one long query, at
// the first check after they pass. On a clock that advances 1 ms a reading,
// a deadline 30 ms on stops the batch at its 30th reading, with the work of
// a cancellation at the 30th poll (to the node on one thread). How soon
// that is in wall time: BM_SetOverlapBatchPastDeadline in
// bench/broad_phase_bench.cc.
TEST(QueryBudgetTest, DeadlineAndCancellationStopInsideLongQueries) {
  const ColliderSet set = SphereGrid(300);
  OverlapQuery big;
  big.shape = *Shape::MakeSphere(1000.0);  // 90k candidates, no max_hits: all tested
  const std::vector<Query> qs(400, big);
  std::vector<QueryResult> results(qs.size());
  ThreadPool pool(2);
  for (ThreadPool* p : {static_cast<ThreadPool*>(nullptr), &pool}) {
    const int threads = p ? 2 : 1;
    QueryBudget budget;
    budget.deadline = std::chrono::steady_clock::now() - std::chrono::milliseconds(1);
    EXPECT_EQ(set.RunBatch(qs, results, p, budget).code(), ErrorCode::kDeadlineExceeded);

    const std::chrono::steady_clock::time_point t0{};
    std::atomic<int> readings{0};
    budget = QueryBudget{};
    budget.now = [&] { return t0 + std::chrono::milliseconds(readings.fetch_add(1) + 1); };
    budget.deadline = t0 + std::chrono::milliseconds(30);
    QueryWork late;
    const Status st = set.RunBatch(qs, results, p, budget, &late);
    EXPECT_EQ(st.code(), ErrorCode::kDeadlineExceeded) << st.ToString();
    EXPECT_GE(readings.load(), 30);
    EXPECT_LE(readings.load(), 30 + threads) << "no reading after the stop but in flight";
    // Stopped inside the first queries: 30 checks of work, not 400 x 90k tests.
    EXPECT_LE(late.nodes, (30u + threads) * kCheckEvery * 2);
    EXPECT_LT(late.pair_tests, 2u * 90'000u);
    for (const QueryResult& r : results) EXPECT_TRUE(r.overlaps.empty());

    std::atomic<int> polls{0};
    budget = QueryBudget{};
    budget.cancelled = [&] { return polls.fetch_add(1) + 1 >= 30; };
    QueryWork cancelled;
    EXPECT_EQ(set.RunBatch(qs, results, p, budget, &cancelled).code(), ErrorCode::kCancelled);
    EXPECT_GE(polls.load(), 30);
    EXPECT_LE(polls.load(), 30 + threads);
    if (p == nullptr) {
      EXPECT_EQ(cancelled.nodes, late.nodes);
      EXPECT_EQ(cancelled.pair_tests, late.pair_tests);
    }
  }
}

// Inside one query against a mesh every triangle tested is a pair test: one
// overlap with contacts of a 20,000-triangle mesh under a budget of 1,000
// pair tests stops with RESOURCE_EXHAUSTED soon after 1,000; a cancellation
// or a passed deadline stops it inside the mesh, long before its last
// triangle (the checks are reachable inside one long surface query).
TEST(QueryBudgetTest, SurfaceQueriesCountTrianglesAndStopInside) {
  const testing::MeshData grid = testing::WavyGrid(100, 0.5);  // 20,000 triangles
  TriangleMeshShape ms;
  ms.vertices = grid.vertices;
  for (const auto& t : grid.triangles) ms.triangles.push_back({t[0], t[1], t[2]});
  const Result<Shape> mesh = Shape::Make(ms);
  ASSERT_TRUE(mesh.ok()) << mesh.error().message;
  ColliderSet set;
  const std::vector<Collider> colliders = {MakeCollider(1, *mesh, Pose({0, 0, 0}))};
  ASSERT_TRUE(set.AddBulk(colliders).ok());
  OverlapQuery big;
  big.shape = *Shape::MakeBox({100, 100, 100});
  big.want_contact = true;
  const std::vector<Query> qs = {big};
  std::vector<QueryResult> results(1);
  ThreadPool pool(2);
  for (ThreadPool* p : {static_cast<ThreadPool*>(nullptr), &pool}) {
    QueryWork work;
    ASSERT_TRUE(set.RunBatch(qs, results, p, QueryBudget{}, &work).ok());
    ASSERT_EQ(results[0].overlaps.size(), 1u);
    EXPECT_GE(work.pair_tests, 20'000u) << "each triangle counts";

    QueryBudget budget;
    budget.max_pair_tests = 1000;
    const Status st = set.RunBatch(qs, results, p, budget, &work);
    ASSERT_EQ(st.code(), ErrorCode::kResourceExhausted) << st.ToString();
    EXPECT_NE(st.message().find("1000 pair tests"), std::string::npos) << st.message();
    EXPECT_GT(work.pair_tests, 1000u);
    // The overlap stops at its first check past 1000, the contact at its first check.
    EXPECT_LE(work.pair_tests, 1000u + 2 * internal::kWorkCheckEvery + 2) << "stops at a check";
    EXPECT_TRUE(results[0].overlaps.empty());

    std::atomic<int> polls{0};
    budget = QueryBudget{};
    budget.cancelled = [&] { return polls.fetch_add(1) >= 3; };
    EXPECT_EQ(set.RunBatch(qs, results, p, budget, &work).code(), ErrorCode::kCancelled);
    EXPECT_LE(work.pair_tests, 5u * internal::kWorkCheckEvery) << "stopped inside the mesh";

    budget = QueryBudget{};
    budget.deadline = std::chrono::steady_clock::now() - std::chrono::milliseconds(1);
    EXPECT_EQ(set.RunBatch(qs, results, p, budget, &work).code(), ErrorCode::kDeadlineExceeded);
    EXPECT_LT(work.pair_tests, 20'000u);
  }
}

}  // namespace
}  // namespace hitbox
