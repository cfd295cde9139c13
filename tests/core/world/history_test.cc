// Rewound queries (lag compensation): every query kind at a past, possibly
// fractional tick equals the same query on a collider set rebuilt from the
// interpolated poses, bit for bit, over random histories (moves, adds,
// removes, replaces, gaps of several ticks, a window that wraps); plus the
// edges (exact ticks, oldest / newest, future tick, before the first,
// decreasing ticks), memory that grows with what moved, and the undo of a
// rolled-back batch.
#include "hitbox/world/history.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <optional>
#include <vector>

#include "hitbox/world/collider_set.h"
#include "test_util.h"

namespace hitbox {
namespace {

using testing::Random;

/// One collider as the world held it after a tick; `serial` changes with
/// every add or replace (a new incarnation).
struct Snap {
  Collider c;
  uint64_t serial = 0;
};
using World = std::map<uint64_t, Snap>;

/// A unit quaternion that normalization leaves bit for bit unchanged, so a
/// set storing it (normalizing) and a set rebuilt from it hold the same pose.
Quat Stable(Random& rng, Quat q) {
  for (;;) {
    for (int i = 0; i < 8; ++i) {
      const Quat n = q.Normalized();
      if (n == q) return q;
      q = n;
    }
    q = rng.Rotation();
  }
}

Collider RandomCollider(Random& rng, uint64_t id, double world) {
  Collider c;
  c.id = id;
  const auto kind = static_cast<ShapeKind>(rng.Int(0, 4));
  c.shape = kind == ShapeKind::kConvexHull ? rng.MakeHull(rng.Int(4, 12), rng.Uniform(0.3, 1.5))
                                           : rng.MakeShape(kind, 0.2, 1.5);
  c.pose = Pose(rng.InBox(world), Stable(rng, rng.Rotation()));
  c.layer = static_cast<uint32_t>(rng.Int(0, 3));
  c.user_data = id * 7 + 3;
  return c;
}

/// The world at real tick t from per-tick snapshots (FORMAT.md "Rewind").
std::vector<Collider> WorldAt(const std::map<uint64_t, World>& ticks, double t) {
  const double kf = std::floor(t);
  const auto at = [&](uint64_t k) -> const World& { return std::prev(ticks.upper_bound(k))->second; };
  const World& w0 = at(static_cast<uint64_t>(kf));
  std::vector<Collider> out;
  if (t == kf) {
    for (const auto& [id, s] : w0) out.push_back(s.c);
    return out;
  }
  const World& w1 = at(static_cast<uint64_t>(kf) + 1);
  for (const auto& [id, s] : w0) {
    const auto it = w1.find(id);
    if (it == w1.end() || it->second.serial != s.serial) continue;
    Collider c = s.c;
    c.pose = InterpolatePose(s.c.pose, it->second.c.pose, t - kf);
    out.push_back(c);
  }
  return out;
}

Query RandomQuery(Random& rng, double world) {
  QueryFilter f;
  if (rng.Int(0, 3) == 0) f.mask = static_cast<uint32_t>(rng.Int(1, 15));
  if (rng.Int(0, 4) == 0) f.max_hits = static_cast<uint32_t>(rng.Int(1, 3));
  if (rng.Int(0, 9) == 0) f.ignore.push_back(static_cast<uint64_t>(rng.Int(1, 120)));
  const Vec3 from = rng.InBox(world);
  const Vec3 d = rng.InBox(world);
  switch (rng.Int(0, 2)) {
    case 0: {
      OverlapQuery q;
      q.shape = rng.MakeShape(static_cast<ShapeKind>(rng.Int(0, 3)), 0.3, 3.0);
      q.pose = Pose(from, rng.Rotation());
      q.filter = f;
      q.want_contact = rng.Int(0, 2) == 0;
      return q;
    }
    case 1: {
      CastQuery q;
      q.shape = rng.MakeShape(static_cast<ShapeKind>(rng.Int(0, 3)), 0.2, 1.0);
      q.pose = Pose(from, rng.Rotation());
      q.translation = d;
      q.filter = f;
      q.all_hits = rng.Int(0, 2) == 0;
      return q;
    }
    default: {
      RayQuery q;
      q.origin = from;
      q.translation = d * 2.0;
      q.filter = f;
      q.all_hits = rng.Int(0, 2) == 0;
      return q;
    }
  }
}

void SetAt(Query* q, std::optional<double> t) {
  std::visit([&](auto& x) { x.at_tick = t; }, *q);
}

bool SameContact(const std::optional<Contact>& a, const std::optional<Contact>& b) {
  if (a.has_value() != b.has_value()) return false;
  if (!a) return true;
  return a->depth == b->depth && a->normal == b->normal && a->point_a == b->point_a &&
         a->point_b == b->point_b;
}

/// Bit-for-bit equality of two results.
::testing::AssertionResult SameResult(const QueryResult& a, const QueryResult& b) {
  if (a.overlaps.size() != b.overlaps.size() || a.hits.size() != b.hits.size()) {
    return ::testing::AssertionFailure()
           << "sizes " << a.overlaps.size() << "/" << a.hits.size() << " vs "
           << b.overlaps.size() << "/" << b.hits.size();
  }
  for (size_t i = 0; i < a.overlaps.size(); ++i) {
    const OverlapHit& x = a.overlaps[i];
    const OverlapHit& y = b.overlaps[i];
    if (x.id != y.id || x.user_data != y.user_data || x.sub_shape != y.sub_shape ||
        !SameContact(x.contact, y.contact)) {
      return ::testing::AssertionFailure()
             << "overlap " << i << ": id " << x.id << " vs " << y.id << " user " << x.user_data
             << " vs " << y.user_data << " contact " << x.contact.has_value() << " "
             << (x.contact ? x.contact->depth : -1) << " vs " << (y.contact ? y.contact->depth : -1);
    }
  }
  for (size_t i = 0; i < a.hits.size(); ++i) {
    const CastHit& x = a.hits[i];
    const CastHit& y = b.hits[i];
    if (x.id != y.id || x.user_data != y.user_data || x.fraction != y.fraction ||
        !(x.normal == y.normal) || !(x.point == y.point) ||
        x.started_overlapping() != y.started_overlapping() || x.depth != y.depth) {
      return ::testing::AssertionFailure() << "hit " << i << ": id " << x.id << " at "
                                           << x.fraction << " vs id " << y.id << " at "
                                           << y.fraction;
    }
  }
  return ::testing::AssertionSuccess();
}

/// A random history: statics, movers that move, appear, vanish and change
/// shape, with ticks that sometimes skip, several batches per tick and
/// untagged batches. Records the world after each tick.
struct RandomHistory {
  ColliderSet set;
  std::map<uint64_t, World> ticks;  ///< world after each tick with changes
  World world;
  uint64_t next_serial = 1;

  void Run(Random& rng, uint32_t window, int tick_count, double size) {
    set.SetHistoryTicks(window);
    std::vector<Collider> statics;
    for (uint64_t id = 1; id <= 40; ++id) statics.push_back(RandomCollider(rng, id, size));
    ASSERT_TRUE(set.AddBulk(statics, 1000).ok());
    for (uint64_t id = 41; id <= 70; ++id) {
      ASSERT_TRUE(set.Apply(std::vector{ColliderChange::Add(RandomCollider(rng, id, size))}).ok());
    }
    Record(1000);
    uint64_t tick = 1000;
    for (int n = 0; n < tick_count; ++n) {
      tick += rng.Int(0, 5) == 0 ? static_cast<uint64_t>(rng.Int(2, 5)) : 1;
      const int batches = rng.Int(0, 6) == 0 ? 2 : 1;
      for (int b = 0; b < batches; ++b) {
        std::vector<ColliderChange> changes;
        for (uint64_t id = 41; id <= 100; ++id) {
          const Collider* now = set.Find(id);
          const bool here = now != nullptr;
          const int r = rng.Int(0, 99);
          if (here && r < 55) {
            Pose p = now->pose;
            p.position = p.position + rng.InBox(0.8);
            if (rng.Int(0, 2) == 0) {
              p.rotation = Stable(rng, p.rotation * Quat::FromAxisAngle(rng.UnitVector(),
                                                                         rng.Uniform(0.1, 0.5)));
            }
            if (rng.Int(0, 20) == 0) p.rotation = Quat{-p.rotation.x, -p.rotation.y, -p.rotation.z, -p.rotation.w};
            changes.push_back(ColliderChange::Move(id, p));
          } else if (here && r < 58) {
            changes.push_back(ColliderChange::Remove(id));
          } else if (here && r < 60) {
            Collider c = RandomCollider(rng, id, size);
            changes.push_back(ColliderChange::Replace(c));
          } else if (!here && r < 6) {
            changes.push_back(ColliderChange::Add(RandomCollider(rng, id, size)));
          }
        }
        const bool untagged = b == 1 && rng.Int(0, 1) == 0;
        ASSERT_TRUE(set.Apply(changes, untagged ? std::nullopt : std::optional<uint64_t>(tick)).ok());
        for (const ColliderChange& ch : changes) {
          if (ch.kind == ColliderChange::Kind::kAdd || ch.kind == ColliderChange::Kind::kReplace) {
            world[ch.collider.id].serial = next_serial++;
          }
        }
      }
      Record(tick);
    }
  }
  /// Reads the set back (stored, normalized poses) as the world after `tick`.
  void Record(uint64_t tick) {
    World w;
    set.ForEach([&](const Collider& c) {
      const auto it = world.find(c.id);
      w[c.id] = {c, it != world.end() ? it->second.serial : 0};
    });
    world = w;
    ticks[tick] = w;
  }
};

// The property: thousands of rewound queries of every kind, at exact and
// fractional ticks across the window, answer exactly what a set rebuilt at
// that moment answers; the batch path (with a pool, mixed with present-time
// queries) gives the same results.
TEST(HistoryTest, RewoundQueriesEqualRebuiltWorld) {
  ThreadPool pool(2);
  size_t checked = 0, nonempty = 0;
  for (uint64_t seed = 1; seed <= 6; ++seed) {
    Random rng(seed);
    RandomHistory h;
    h.Run(rng, seed % 2 == 0 ? 8 : 24, 60, 8.0);
    const std::optional<TickRange> range = h.set.Ticks();
    ASSERT_TRUE(range.has_value());
    ASSERT_EQ(range->newest, h.ticks.rbegin()->first);
    const uint32_t window = h.set.history_ticks();
    ASSERT_EQ(range->oldest, range->newest - window + 1);
    for (int moment = 0; moment < 40; ++moment) {
      double t;
      switch (moment % 4) {
        case 0: t = static_cast<double>(range->oldest + rng.Int(0, window - 1)); break;
        case 1: t = moment == 1 ? static_cast<double>(range->oldest) : static_cast<double>(range->newest); break;
        default: t = static_cast<double>(range->oldest) + rng.Uniform(0.0, window - 1.0); break;
      }
      ColliderSet ref;
      ASSERT_TRUE(ref.AddBulk(WorldAt(h.ticks, t)).ok());
      std::vector<Query> batch;
      std::vector<QueryResult> want;
      for (int i = 0; i < 25; ++i) {
        Query q = RandomQuery(rng, 8.0);
        QueryResult expected;
        ref.Run(q, &expected);
        QueryResult got;
        SetAt(&q, t);
        h.set.Run(q, &got);
        ASSERT_TRUE(SameResult(got, expected)) << "seed " << seed << " t " << t << " query " << i;
        nonempty += !expected.hits.empty() || !expected.overlaps.empty();
        ++checked;
        batch.push_back(q);
        want.push_back(expected);
        if (i % 3 == 0) {  // a present-time query in the same batch
          Query p = RandomQuery(rng, 8.0);
          QueryResult present;
          h.set.Run(p, &present);
          batch.push_back(p);
          want.push_back(present);
        }
      }
      std::vector<QueryResult> results(batch.size());
      ASSERT_TRUE(h.set.RunBatch(batch, results, &pool, QueryBudget{}).ok());
      for (size_t i = 0; i < batch.size(); ++i) {
        ASSERT_TRUE(SameResult(results[i], want[i])) << "batch seed " << seed << " t " << t;
      }
    }
  }
  EXPECT_GE(checked, 6000u);
  EXPECT_GE(nonempty, checked / 4);
}

// ForEachAtTick lists the world of any real tick in the window exactly as
// rebuilt from the recorded ticks (ids, shapes' kinds, layers, poses), and
// refuses ticks outside it naming the window.
TEST(HistoryTest, ForEachAtTickEqualsRebuiltWorld) {
  size_t checked = 0;
  for (uint64_t seed = 1; seed <= 6; ++seed) {
    Random rng(seed);
    RandomHistory h;
    h.Run(rng, seed % 2 == 0 ? 8 : 24, 60, 8.0);
    const TickRange range = *h.set.Ticks();
    const auto oldest = static_cast<double>(range.oldest);
    const auto newest = static_cast<double>(range.newest);
    const int span = static_cast<int>(range.newest - range.oldest);
    for (int moment = 0; moment < 30; ++moment) {
      const double t = moment % 2 == 0 ? oldest + rng.Int(0, span) : rng.Uniform(oldest, newest);
      std::map<uint64_t, Collider> want;
      for (const Collider& c : WorldAt(h.ticks, t)) want[c.id] = c;
      std::map<uint64_t, Collider> got;
      ASSERT_TRUE(h.set.ForEachAtTick(t, [&](const Collider& c) {
                         EXPECT_TRUE(got.emplace(c.id, c).second) << "id " << c.id << " twice";
                       }).ok());
      ASSERT_EQ(got.size(), want.size()) << "seed " << seed << " t " << t;
      for (const auto& [id, c] : want) {
        const Collider& g = got.at(id);
        EXPECT_EQ(g.layer, c.layer);
        EXPECT_EQ(g.shape.kind(), c.shape.kind());
        EXPECT_LT(Distance(g.pose.position, c.pose.position), 1e-9) << "seed " << seed << " t " << t;
        const Quat& a = g.pose.rotation;
        const Quat& b = c.pose.rotation;
        EXPECT_NEAR(std::abs(a.x * b.x + a.y * b.y + a.z * b.z + a.w * b.w), 1.0, 1e-9);
        ++checked;
      }
    }
    const Status before = h.set.ForEachAtTick(oldest - 0.5, [](const Collider&) {});
    EXPECT_EQ(before.code(), ErrorCode::kOutOfRange);
    EXPECT_NE(before.message().find("ticks " + std::to_string(range.oldest) + ".." +
                                          std::to_string(range.newest)),
              std::string::npos)
        << before.message();
    EXPECT_FALSE(h.set.ForEachAtTick(newest + 1.0, [](const Collider&) {}).ok());
  }
  EXPECT_GE(checked, 1000u);
  ColliderSet empty;
  EXPECT_EQ(empty.ForEachAtTick(0, [](const Collider&) {}).code(), ErrorCode::kOutOfRange);
}

// The newest tick is the present world; oldest and newest bound the window;
// a future tick, one before the window and one before the first tick are
// OUT_OF_RANGE naming both ends; lower ticks are refused naming both.
TEST(HistoryTest, Edges) {
  ColliderSet set;
  set.SetHistoryTicks(4);
  RayQuery ray;
  ray.origin = {-10, 0, 0};
  ray.translation = {20, 0, 0};
  ray.at_tick = 10;
  EXPECT_EQ(set.CheckQueryTicks(std::vector<Query>{ray}).code(), ErrorCode::kOutOfRange);
  Collider c;
  c.id = 1;
  c.shape = testing::SphereR(1.0);
  ASSERT_TRUE(set.Apply(std::vector{ColliderChange::Add(c)}, 10).ok());
  for (uint64_t t = 11; t <= 20; ++t) {
    ASSERT_TRUE(set.Apply(std::vector{ColliderChange::Move(1, testing::At(0, (static_cast<double>(t) - 10.0), 0))}, t).ok());
  }
  ASSERT_EQ(set.Ticks()->oldest, 17u);
  ASSERT_EQ(set.Ticks()->newest, 20u);
  // Exactly at the ticks: the sphere at y = tick - 10.
  for (double t : {17.0, 18.0, 20.0}) {
    RayQuery r = ray;
    r.origin = {-10, t - 10.0, 0};
    r.at_tick = t;
    std::vector<CastHit> hits;
    set.Raycast(r, &hits);
    ASSERT_EQ(hits.size(), 1u) << t;
    EXPECT_EQ(hits[0].fraction, 9.0 / 20.0);
    r.origin.y += 1.5;  // above it at that tick
    set.Raycast(r, &hits);
    EXPECT_TRUE(hits.empty()) << t;
  }
  // Halfway between 18 and 19: at y = 8.5.
  {
    RayQuery r = ray;
    r.origin = {-10, 8.5, 0};
    r.at_tick = 18.5;
    std::vector<CastHit> hits;
    set.Raycast(r, &hits);
    ASSERT_EQ(hits.size(), 1u);
    EXPECT_EQ(hits[0].fraction, 9.0 / 20.0);
  }
  for (double t : {16.0, 16.99, 20.01, 21.0, 5.0}) {
    RayQuery r = ray;
    r.at_tick = t;
    const Status s = set.CheckQueryTicks(std::vector<Query>{r});
    EXPECT_EQ(s.code(), ErrorCode::kOutOfRange) << t;
    EXPECT_NE(s.message().find("queries[0].at_tick"), std::string::npos) << s.message();
    EXPECT_NE(s.message().find("17"), std::string::npos) << s.message();
    EXPECT_NE(s.message().find("20"), std::string::npos) << s.message();
    std::vector<QueryResult> results(1);
    EXPECT_EQ(set.RunBatch(std::vector<Query>{r}, results, nullptr, QueryBudget{}).code(),
              ErrorCode::kOutOfRange);
  }
  // Ticks only increase: equal is fine, lower is refused naming both.
  EXPECT_TRUE(set.Apply(std::vector{ColliderChange::Move(1, testing::At(0, 10, 0))}, 20).ok());
  const Status low = set.Apply(std::vector{ColliderChange::Move(1, testing::At(0, 0, 0))}, 19);
  EXPECT_EQ(low.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(low.message().find("19"), std::string::npos);
  EXPECT_NE(low.message().find("20"), std::string::npos);
  EXPECT_EQ(set.Find(1)->pose.position.y, 10.0);
  // A NaN tick is a bad query, not an out-of-range one.
  RayQuery bad = ray;
  bad.at_tick = std::nan("");
  EXPECT_EQ(ColliderSet::ValidateQuery(bad).code(), ErrorCode::kInvalidArgument);
}

// 50 statics and 8 movers over 100 ticks (window 16): the history holds the
// movers only, and at most a window (+ the base pose) of samples each.
TEST(HistoryTest, MemoryGrowsWithWhatMoved) {
  Random rng(7);
  ColliderSet set;
  set.SetHistoryTicks(16);
  std::vector<Collider> all;
  for (uint64_t id = 1; id <= 58; ++id) all.push_back(RandomCollider(rng, id, 50.0));
  ASSERT_TRUE(set.AddBulk(all, 1).ok());
  for (uint64_t t = 2; t <= 100; ++t) {
    std::vector<ColliderChange> moves;
    for (uint64_t id = 51; id <= 58; ++id) moves.push_back(ColliderChange::Move(id, Pose(rng.InBox(50.0), rng.Rotation())));
    ASSERT_TRUE(set.Apply(moves, t).ok());
  }
  const ColliderSet::HistoryStats stats = set.GetHistoryStats();
  EXPECT_EQ(stats.tracked, 8u);
  EXPECT_LE(stats.samples, 8u * 18u);
  EXPECT_GE(stats.samples, 8u * 16u);
  EXPECT_EQ(set.TreeValidate(), "");
}

// A batch undone as the server's tick rollback does it (its inverse, then
// RestoreRevision) leaves the history as before: ticks and rewound answers.
TEST(HistoryTest, RollbackRestoresHistory) {
  Random rng(11);
  RandomHistory h;
  h.Run(rng, 8, 20, 8.0);
  const TickRange before = *h.set.Ticks();
  std::vector<Query> queries;
  for (int i = 0; i < 300; ++i) {
    Query q = RandomQuery(rng, 8.0);
    SetAt(&q, static_cast<double>(before.oldest) + rng.Uniform(0.0, static_cast<double>(before.newest - before.oldest)));
    queries.push_back(q);
  }
  std::vector<QueryResult> want(queries.size());
  h.set.RunBatch(queries, want);
  const uint64_t revision = h.set.revision();
  // A tick far ahead that moves, removes, adds and replaces.
  std::vector<ColliderChange> changes;
  std::map<uint64_t, std::optional<Collider>> old;
  for (const auto& [id, s] : h.world) {
    if (id % 3 == 0) changes.push_back(ColliderChange::Move(id, Pose(rng.InBox(8.0), rng.Rotation())));
    if (id % 7 == 1) changes.push_back(ColliderChange::Remove(id));
    if (id % 11 == 2 && id % 3 != 0) changes.push_back(ColliderChange::Replace(RandomCollider(rng, id, 8.0)));
  }
  changes.push_back(ColliderChange::Add(RandomCollider(rng, 500, 8.0)));
  for (const ColliderChange& c : changes) {
    const Collider* f = h.set.Find(c.collider.id);
    old.emplace(c.collider.id, f ? std::optional<Collider>(*f) : std::nullopt);
  }
  ASSERT_TRUE(h.set.Apply(changes, before.newest + 30).ok());
  std::vector<ColliderChange> undo;
  for (const auto& [id, o] : old) {
    const bool now = h.set.Find(id) != nullptr;
    if (o && now) undo.push_back(ColliderChange::Replace(*o));
    if (o && !now) undo.push_back(ColliderChange::Add(*o));
    if (!o && now) undo.push_back(ColliderChange::Remove(id));
  }
  ASSERT_TRUE(h.set.Apply(undo).ok());
  h.set.RestoreRevision(revision);
  EXPECT_EQ(h.set.Ticks()->oldest, before.oldest);
  EXPECT_EQ(h.set.Ticks()->newest, before.newest);
  std::vector<QueryResult> got(queries.size());
  h.set.RunBatch(queries, got);
  for (size_t i = 0; i < queries.size(); ++i) ASSERT_TRUE(SameResult(got[i], want[i])) << i;
  EXPECT_EQ(h.set.TreeValidate(), "");
}

// FORMAT.md's slerp: the shorter arc (q and -q alike), nlerp when close.
TEST(HistoryTest, SlerpShorterArc) {
  const Quat a = Quat::FromAxisAngle({0, 0, 1}, 0.0);
  const Quat b = Quat::FromAxisAngle({0, 0, 1}, 0.5);
  const Quat mid = Slerp(a, b, 0.5);
  EXPECT_TRUE(testing::PoseNear(Pose({}, mid), Pose({}, Quat::FromAxisAngle({0, 0, 1}, 0.25)), 1e-15));
  const Quat neg{-b.x, -b.y, -b.z, -b.w};
  const Quat mid2 = Slerp(a, neg, 0.5);
  EXPECT_TRUE(testing::PoseNear(Pose({}, mid2), Pose({}, mid), 1e-15));
  EXPECT_EQ(Slerp(a, b, 0.0), a);
  const Quat close = Slerp(a, Quat::FromAxisAngle({0, 0, 1}, 1e-3), 0.5);
  EXPECT_NEAR(close.Length(), 1.0, 1e-15);
}

}  // namespace
}  // namespace hitbox
