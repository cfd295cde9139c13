// Watches of a ColliderSet: events equal the difference of the watches'
// full overlap queries between consecutive batches, exactly, over thousands
// of random batches (moves, adds, replaces, removes, fixed and attached
// watches, masks, every collider kind, with and without a shared map);
// rollback restores them; the checks and limits; the work stays incremental.
#include <gtest/gtest.h>

#include <chrono>

#include <algorithm>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <tuple>
#include <unordered_set>
#include <vector>

#include "hitbox/world/collider_set.h"
#include "test_util.h"

namespace hitbox {
namespace {

using testing::Random;

// A convex collider, a compound of two, a small bumpy heightfield or a bumpy
// mesh patch (as static_world_test.cc).
Shape AnyShape(Random& rng) {
  const int kind = rng.Int(0, 7);
  if (kind < 5) return rng.MakeShape(static_cast<ShapeKind>(kind), 0.2, 2.0);
  if (kind == 5) {
    Compound compound;
    for (int i = 0; i < 2; ++i) {
      compound.children.push_back({rng.MakeShape(static_cast<ShapeKind>(rng.Int(0, 4)), 0.2, 1.5),
                                   Pose(rng.InBox(1.5), rng.Rotation())});
    }
    return *Shape::Make(compound);
  }
  if (kind == 6) {
    HeightfieldShape h;
    h.rows = h.cols = 5;
    h.cell_size_x = h.cell_size_z = 1.0;
    for (int i = 0; i < 25; ++i) h.heights.push_back(rng.Uniform(-0.5, 0.5));
    return *Shape::Make(h);
  }
  TriangleMeshShape m;
  const uint32_t n = 4;
  for (uint32_t z = 0; z <= n; ++z) {
    for (uint32_t x = 0; x <= n; ++x) m.vertices.push_back({x * 1.0, rng.Uniform(-0.3, 0.3), z * 1.0});
  }
  for (uint32_t z = 0; z < n; ++z) {
    for (uint32_t x = 0; x < n; ++x) {
      const uint32_t a = z * (n + 1) + x, b = a + 1, d = a + n + 1, e = d + 1;
      m.triangles.push_back({a, d, b});
      m.triangles.push_back({b, d, e});
    }
  }
  return *Shape::Make(m);
}

Collider AnyCollider(Random& rng, uint64_t id, double world) {
  Collider c;
  c.id = id;
  c.shape = AnyShape(rng);
  c.pose = Pose(rng.InBox(world), rng.Rotation());
  c.layer = static_cast<uint32_t>(rng.Int(0, 3));
  c.user_data = id;
  return c;
}

Watch AnyWatch(Random& rng, uint64_t id, std::optional<uint64_t> attach, double world) {
  Watch w;
  w.id = id;
  w.shape = rng.MakeShape(static_cast<ShapeKind>(rng.Int(0, 4)), 0.5, 3.0);
  w.attach_to = attach;
  w.pose = attach ? Pose(rng.InBox(1.0), rng.Rotation()) : Pose(rng.InBox(world), rng.Rotation());
  if (rng.Int(0, 2) == 0) w.mask = static_cast<uint32_t>(rng.Int(0, 15));
  if (rng.Int(0, 3) == 0) w.ignore.push_back(static_cast<uint64_t>(rng.Int(1, 60)));
  return w;
}

Pose Normalized(const Pose& p) { return {p.position, p.rotation.Normalized()}; }

using Members = std::map<uint64_t, uint32_t>;  // collider id -> sub_shape

// The inside set of every watch as a fresh overlap query answers it now.
std::map<uint64_t, Members> FullQueries(const ColliderSet& set) {
  std::map<uint64_t, Members> out;
  set.ForEachWatch([&](const WatchState& s) {
    const Watch& w = s.watch;
    OverlapQuery q;
    q.shape = w.shape;
    q.pose = w.attach_to ? Normalized(set.Find(*w.attach_to)->pose * w.pose) : Normalized(w.pose);
    q.filter.mask = w.mask;
    q.filter.ignore = w.ignore;
    if (w.attach_to) q.filter.ignore.push_back(*w.attach_to);
    std::vector<OverlapHit> hits;
    set.Overlap(q, &hits);
    Members& m = out[w.id];
    for (const OverlapHit& h : hits) m[h.id] = h.sub_shape;
  });
  return out;
}

std::map<uint64_t, Members> Held(const ColliderSet& set) {
  std::map<uint64_t, Members> out;
  set.ForEachWatch([&](const WatchState& s) {
    Members& m = out[s.watch.id];
    for (const WatchMember& x : s.inside) m[x.id] = x.sub_shape;
  });
  return out;
}

// ENTER and EXIT between two states of the watches, sorted as the set sorts them.
std::vector<WatchEvent> Diff(const std::map<uint64_t, Members>& before,
                             const std::map<uint64_t, Members>& after, uint64_t tick) {
  std::vector<WatchEvent> out;
  std::set<uint64_t> watches;
  for (const auto& [id, m] : before) watches.insert(id);
  for (const auto& [id, m] : after) watches.insert(id);
  static const Members kNone;
  for (uint64_t w : watches) {
    const Members& b = before.count(w) ? before.at(w) : kNone;
    const Members& a = after.count(w) ? after.at(w) : kNone;
    std::set<uint64_t> ids;
    for (const auto& [id, sub] : b) ids.insert(id);
    for (const auto& [id, sub] : a) ids.insert(id);
    for (uint64_t id : ids) {
      const bool in_b = b.count(id) != 0, in_a = a.count(id) != 0;
      if (in_b && !in_a) out.push_back({w, id, WatchEvent::Kind::kExit, b.at(id), tick});
      if (!in_b && in_a) out.push_back({w, id, WatchEvent::Kind::kEnter, a.at(id), tick});
    }
  }
  return out;
}

// The inverse of an applied batch's collider changes, as the service's tick
// rollback builds it from the states before.
std::vector<ColliderChange> Inverse(const ColliderSet& set,
                                    const std::map<uint64_t, std::optional<Collider>>& before) {
  std::vector<ColliderChange> undo;
  for (const auto& [id, old] : before) {
    const bool now = set.Find(id) != nullptr;
    if (old && now) undo.push_back(ColliderChange::Replace(*old));
    if (old && !now) undo.push_back(ColliderChange::Add(*old));
    if (!old && now) undo.push_back(ColliderChange::Remove(id));
  }
  return undo;
}

// One random batch against `set`: moves (mostly small), adds, replaces,
// removes, watch adds (fixed or attached) and removes. `before` gets the
// state of each collider id it touches.
std::vector<ColliderChange> RandomBatch(Random& rng, const ColliderSet& set, uint64_t* next_id,
                                        uint64_t* next_watch, double world,
                                        std::map<uint64_t, std::optional<Collider>>* before) {
  std::vector<ColliderChange> batch;
  std::vector<uint64_t> ids;
  set.ForEach([&](const Collider& c) { ids.push_back(c.id); });
  std::sort(ids.begin(), ids.end());
  std::vector<uint64_t> watches;
  set.ForEachWatch([&](const WatchState& s) { watches.push_back(s.watch.id); });
  std::unordered_set<uint64_t> gone, watch_gone;
  auto note = [&](uint64_t id) {
    if (before->count(id) == 0) {
      const Collider* c = set.Find(id);
      (*before)[id] = c ? std::optional<Collider>(*c) : std::nullopt;
    }
  };
  const int n = rng.Int(1, 6);
  for (int k = 0; k < n; ++k) {
    const int what = rng.Int(0, 15);
    const bool have = !ids.empty();
    const uint64_t id = have ? ids[static_cast<size_t>(rng.Int(0, static_cast<int>(ids.size()) - 1))] : 0;
    if (have && gone.count(id) != 0) continue;
    if (what <= 6 && have) {  // a move: a step, or a jump anywhere
      const Collider* c = set.Find(id);
      const Pose p = rng.Int(0, 3) == 0 ? Pose(rng.InBox(world), rng.Rotation())
                                        : Pose(c->pose.position + rng.InBox(0.7), rng.Rotation());
      note(id);
      batch.push_back(ColliderChange::Move(id, p));
    } else if (what <= 8) {
      const uint64_t nid = (*next_id)++;
      note(nid);
      batch.push_back(ColliderChange::Add(AnyCollider(rng, nid, world)));
    } else if (what == 9 && have) {
      note(id);
      Collider c = AnyCollider(rng, id, world);
      batch.push_back(ColliderChange::Replace(c));
    } else if (what == 10 && have && ids.size() > 10) {
      note(id);
      gone.insert(id);
      batch.push_back(ColliderChange::Remove(id));
    } else if (what <= 13) {
      std::optional<uint64_t> attach;
      if (have && rng.Int(0, 1) == 0) attach = id;
      batch.push_back(ColliderChange::AddWatch(AnyWatch(rng, (*next_watch)++, attach, world)));
    } else if (!watches.empty()) {
      const uint64_t w = watches[static_cast<size_t>(rng.Int(0, static_cast<int>(watches.size()) - 1))];
      if (watch_gone.insert(w).second) batch.push_back(ColliderChange::RemoveWatch(w));
    }
  }
  return batch;
}

// The property, over a set alone or over a shared map: after every batch the
// watches hold their full queries' answers, the events are the difference,
// and a rolled-back batch leaves the watches as they were.
// Events seen, and those naming a triangle or a child (sub_shape > 0).
struct Seen {
  size_t events = 0;
  size_t pieces = 0;
};

void RunProperty(uint64_t seed, int ticks, bool with_map, Seen* seen) {
  Random rng(seed);
  const double world = 8.0;
  ColliderSet set;
  uint64_t next_id = 1, next_watch = 1;
  if (with_map) {
    auto map = std::make_shared<ColliderSet>();
    std::vector<Collider> statics;
    for (int i = 0; i < 15; ++i) statics.push_back(AnyCollider(rng, 10000 + i, world));
    ASSERT_TRUE(map->AddBulk(statics).ok());
    ASSERT_TRUE(set.SetBase(map, "map").ok());
  }
  std::vector<Collider> start;
  for (int i = 0; i < 30; ++i) start.push_back(AnyCollider(rng, next_id++, world));
  ASSERT_TRUE(set.AddBulk(start).ok());
  std::map<uint64_t, Members> expected = FullQueries(set);
  uint64_t tick = 1;
  for (int t = 0; t < ticks; ++t, ++tick) {
    SCOPED_TRACE("seed " + std::to_string(seed) + " tick " + std::to_string(t));
    std::map<uint64_t, std::optional<Collider>> before;
    const std::vector<ColliderChange> batch =
        RandomBatch(rng, set, &next_id, &next_watch, world, &before);
    const uint64_t revision = set.revision();
    const auto held_before = Held(set);
    ASSERT_TRUE(set.Apply(batch, tick).ok());
    const std::map<uint64_t, Members> now = FullQueries(set);
    ASSERT_EQ(Held(set), now);
    ASSERT_EQ(set.watch_events(), Diff(expected, now, tick));
    ASSERT_FALSE(set.watch_events_truncated());
    seen->events += set.watch_events().size();
    for (const WatchEvent& e : set.watch_events()) seen->pieces += e.sub_shape > 0;
    if (t % 7 == 3) {
      // The service's rollback: the inverse batch, then the revision back.
      ASSERT_TRUE(set.Apply(Inverse(set, before)).ok());
      set.RestoreRevision(revision);
      ASSERT_EQ(Held(set), held_before);
      ASSERT_TRUE(set.watch_events().empty());
      ASSERT_EQ(set.WatchValidate(), "");
      // Applied again: the same answer.
      ASSERT_TRUE(set.Apply(batch, tick).ok());
      ASSERT_EQ(Held(set), now);
      ASSERT_EQ(set.watch_events(), Diff(expected, now, tick));
    }
    if (t % 50 == 0) {
      ASSERT_EQ(set.WatchValidate(), "");
    }
    expected = now;
  }
}

// Thousands of random batches: the events are exactly the difference of the
// full overlap queries of consecutive batches.
TEST(WatchTest, EventsAreTheDifferenceOfFullQueries) {
  Seen seen;
  for (uint64_t seed = 1; seed <= 3; ++seed) RunProperty(seed, 600, false, &seen);
  // The scenes are busy enough to show something (not a vacuous pass).
  EXPECT_GT(seen.events, 1000u);
  EXPECT_GT(seen.pieces, 50u);
}

// The same over a shared map (its colliders are inside watches too).
TEST(WatchTest, EventsOverASharedMap) {
  Seen seen;
  for (uint64_t seed = 11; seed <= 12; ++seed) RunProperty(seed, 400, true, &seen);
  EXPECT_GT(seen.events, 500u);
}

Collider Ball(uint64_t id, const Vec3& at, double r = 0.5, uint32_t layer = 0) {
  Collider c;
  c.id = id;
  c.shape = *Shape::MakeSphere(r);
  c.pose = Pose(at);
  c.layer = layer;
  return c;
}

Watch SphereWatch(uint64_t id, double r, const Pose& pose, std::optional<uint64_t> attach = {}) {
  Watch w;
  w.id = id;
  w.shape = *Shape::MakeSphere(r);
  w.pose = pose;
  w.attach_to = attach;
  return w;
}

std::vector<std::pair<uint64_t, WatchEvent::Kind>> Brief(const ColliderSet& set) {
  std::vector<std::pair<uint64_t, WatchEvent::Kind>> out;
  for (const WatchEvent& e : set.watch_events()) out.emplace_back(e.collider_id, e.kind);
  return out;
}

constexpr auto kEnter = WatchEvent::Kind::kEnter;
constexpr auto kExit = WatchEvent::Kind::kExit;

// A new watch reports ENTER at once; moves in and out, a removed collider
// and a removed watch report EXIT; each event carries the batch's tick.
TEST(WatchTest, EnterAndExit) {
  ColliderSet set;
  ASSERT_TRUE(set.Apply(std::vector{ColliderChange::Add(Ball(1, {0, 0, 0})),
                                    ColliderChange::Add(Ball(2, {10, 0, 0}))},
                        1)
                  .ok());
  ASSERT_TRUE(set.Apply(std::vector{ColliderChange::AddWatch(SphereWatch(7, 2.0, Pose({0, 0, 0})))}, 2).ok());
  EXPECT_EQ(Brief(set), (std::vector<std::pair<uint64_t, WatchEvent::Kind>>{{1, kEnter}}));
  EXPECT_EQ(set.watch_events()[0].tick, 2u);
  EXPECT_EQ(set.watch_events()[0].watch_id, 7u);
  ASSERT_TRUE(set.Apply(std::vector{ColliderChange::Move(2, Pose({1, 0, 0})),
                                    ColliderChange::Move(1, Pose({-9, 0, 0}))},
                        3)
                  .ok());
  EXPECT_EQ(Brief(set), (std::vector<std::pair<uint64_t, WatchEvent::Kind>>{{1, kExit}, {2, kEnter}}));
  // A batch that changes nothing near the watch has no events.
  ASSERT_TRUE(set.Apply(std::vector{ColliderChange::Move(1, Pose({-8, 0, 0}))}, 4).ok());
  EXPECT_TRUE(set.watch_events().empty());
  ASSERT_TRUE(set.Apply(std::vector{ColliderChange::Remove(2)}, 5).ok());
  EXPECT_EQ(Brief(set), (std::vector<std::pair<uint64_t, WatchEvent::Kind>>{{2, kExit}}));
  ASSERT_TRUE(set.Apply(std::vector{ColliderChange::Add(Ball(3, {0.5, 0, 0}))}, 6).ok());
  ASSERT_TRUE(set.Apply(std::vector{ColliderChange::RemoveWatch(7)}, 7).ok());
  EXPECT_EQ(Brief(set), (std::vector<std::pair<uint64_t, WatchEvent::Kind>>{{3, kExit}}));
  EXPECT_EQ(set.watch_count(), 0u);
}

// An attached watch follows its collider, never holds it, and goes with it.
TEST(WatchTest, AttachedWatchFollowsItsCollider) {
  ColliderSet set;
  ASSERT_TRUE(set.Apply(std::vector{ColliderChange::Add(Ball(1, {0, 0, 0})),
                                    ColliderChange::Add(Ball(2, {10, 0, 0})),
                                    ColliderChange::AddWatch(SphereWatch(5, 3.0, Pose({1, 0, 0}), 1))})
                  .ok());
  EXPECT_TRUE(set.watch_events().empty());  // its own collider is not inside
  ASSERT_TRUE(set.Apply(std::vector{ColliderChange::Move(1, Pose({8, 0, 0}))}).ok());
  EXPECT_EQ(Brief(set), (std::vector<std::pair<uint64_t, WatchEvent::Kind>>{{2, kEnter}}));
  EXPECT_EQ(set.FindWatch(5)->world_pose.position.x, 9.0);
  ASSERT_TRUE(set.Apply(std::vector{ColliderChange::Remove(1)}).ok());
  EXPECT_EQ(Brief(set), (std::vector<std::pair<uint64_t, WatchEvent::Kind>>{{2, kExit}}));
  EXPECT_EQ(set.FindWatch(5), nullptr);
  EXPECT_EQ(set.WatchValidate(), "");
}

// Masks and ignore ids filter as the overlap query's do.
TEST(WatchTest, MaskAndIgnore) {
  ColliderSet set;
  Watch w = SphereWatch(1, 5.0, Pose({0, 0, 0}));
  w.mask = 1u << 2;
  w.ignore = {3};
  ASSERT_TRUE(set.Apply(std::vector{ColliderChange::Add(Ball(1, {0, 0, 0}, 0.5, 0)),
                                    ColliderChange::Add(Ball(2, {1, 0, 0}, 0.5, 2)),
                                    ColliderChange::Add(Ball(3, {2, 0, 0}, 0.5, 2)),
                                    ColliderChange::AddWatch(w)})
                  .ok());
  EXPECT_EQ(Brief(set), (std::vector<std::pair<uint64_t, WatchEvent::Kind>>{{2, kEnter}}));
}

// Over the event limit the first events are kept and `truncated` is set;
// the inside set is whole.
TEST(WatchTest, EventLimitTruncates) {
  ColliderSet set;
  set.SetMaxWatchEvents(3);
  std::vector<ColliderChange> batch;
  for (uint64_t i = 1; i <= 10; ++i) batch.push_back(ColliderChange::Add(Ball(i, {0.1 * static_cast<double>(i), 0, 0})));
  batch.push_back(ColliderChange::AddWatch(SphereWatch(1, 5.0, Pose({0, 0, 0}))));
  ASSERT_TRUE(set.Apply(batch).ok());
  EXPECT_TRUE(set.watch_events_truncated());
  ASSERT_EQ(set.watch_events().size(), 3u);
  EXPECT_EQ(set.watch_events()[2].collider_id, 3u);
  EXPECT_EQ(set.FindWatch(1)->inside.size(), 10u);
  ASSERT_TRUE(set.Apply(std::vector{ColliderChange::Move(1, Pose({0.2, 0, 0}))}).ok());
  EXPECT_FALSE(set.watch_events_truncated());
}

// Bad watch changes are refused whole, naming the entry, and change nothing.
TEST(WatchTest, RejectsBadWatchChanges) {
  ColliderSet set;
  ASSERT_TRUE(set.Apply(std::vector{ColliderChange::Add(Ball(1, {0, 0, 0})),
                                    ColliderChange::AddWatch(SphereWatch(1, 1.0, Pose({0, 0, 0})))})
                  .ok());
  const uint64_t revision = set.revision();
  Watch nan_pose = SphereWatch(2, 1.0, Pose({std::numeric_limits<double>::quiet_NaN(), 0, 0}));
  Watch mesh = SphereWatch(3, 1.0, Pose({0, 0, 0}));
  TriangleMeshShape m;
  m.vertices = {{0, 0, 0}, {1, 0, 0}, {0, 0, 1}};
  m.triangles = {{0, 1, 2}};
  mesh.shape = *Shape::Make(m);
  Watch lost = SphereWatch(4, 1.0, Pose({0, 0, 0}), 99);
  Watch many = SphereWatch(5, 1.0, Pose({0, 0, 0}));
  many.ignore.assign(kMaxWatchIgnore + 1, 7);
  struct Bad {
    std::vector<ColliderChange> batch;
    ErrorCode code;
    std::string part;
  };
  const std::vector<Bad> bads = {
      {{ColliderChange::AddWatch(nan_pose)}, ErrorCode::kInvalidArgument, "changes[0].add_watch.pose.position"},
      {{ColliderChange::AddWatch(mesh)}, ErrorCode::kInvalidArgument, "changes[0].add_watch.shape"},
      {{ColliderChange::AddWatch(lost)}, ErrorCode::kNotFound, "changes[0].add_watch.attach_to: collider 99"},
      {{ColliderChange::AddWatch(many)}, ErrorCode::kInvalidArgument, "changes[0].add_watch.ignore_ids"},
      {{ColliderChange::AddWatch(SphereWatch(1, 1.0, Pose({0, 0, 0})))}, ErrorCode::kAlreadyExists,
       "changes[0].add_watch.id: watch 1 already exists"},
      {{ColliderChange::RemoveWatch(8)}, ErrorCode::kNotFound, "changes[0].remove_watch: watch 8"},
      {{ColliderChange::RemoveWatch(1), ColliderChange::AddWatch(SphereWatch(1, 1.0, Pose({0, 0, 0})))},
       ErrorCode::kInvalidArgument, "changes[1].add_watch.id"},
      {{ColliderChange::Remove(1), ColliderChange::AddWatch(SphereWatch(6, 1.0, Pose({0, 0, 0}), 1))},
       ErrorCode::kNotFound, "changes[1].add_watch.attach_to"},
  };
  for (const Bad& b : bads) {
    const Status st = set.Apply(b.batch);
    EXPECT_EQ(st.code(), b.code) << st.ToString();
    EXPECT_NE(st.message().find(b.part), std::string::npos) << st.ToString();
    BatchPlan plan;
    const Status checked = set.CheckBatch(b.batch, std::nullopt, std::nullopt, {}, &plan);
    EXPECT_EQ(checked.code(), b.code) << checked.ToString();
    EXPECT_NE(checked.message().find(b.part), std::string::npos) << checked.ToString();
  }
  EXPECT_EQ(set.revision(), revision);
  EXPECT_EQ(set.watch_count(), 1u);
  EXPECT_EQ(set.FindWatch(1)->inside.size(), 1u);
}

// CheckBatch counts watches against limits.max_watches.
TEST(WatchTest, WatchLimit) {
  ColliderSet set;
  BatchLimits limits;
  limits.max_watches = 2;
  std::vector<ColliderChange> batch;
  for (uint64_t i = 1; i <= 3; ++i) batch.push_back(ColliderChange::AddWatch(SphereWatch(i, 1.0, Pose({0, 0, 0}))));
  BatchPlan plan;
  const Status st = set.CheckBatch(batch, std::nullopt, std::nullopt, limits, &plan);
  EXPECT_EQ(st.code(), ErrorCode::kResourceExhausted);
  EXPECT_NE(st.message().find("limits.max_watches"), std::string::npos) << st.ToString();
  batch.pop_back();
  ASSERT_TRUE(set.CheckBatch(batch, std::nullopt, std::nullopt, limits, &plan).ok());
  EXPECT_EQ(plan.watches_after, 2u);
  EXPECT_FALSE(plan.all_adds);
}

// The work of a batch follows what changed: moving one collider far from
// every watch of a large set runs no watch query and no pair test, and one
// near a fixed watch tests that pair alone.
TEST(WatchTest, WorkIsIncremental) {
  ColliderSet set;
  std::vector<ColliderChange> batch;
  for (uint64_t i = 1; i <= 2000; ++i) {
    const auto x = static_cast<double>(i % 50), z = static_cast<double>(i / 50);
    batch.push_back(ColliderChange::Add(Ball(i, {x * 4, 0, z * 4})));
  }
  for (uint64_t w = 1; w <= 500; ++w) {
    const auto x = static_cast<double>(w % 25), z = static_cast<double>(w / 25);
    batch.push_back(ColliderChange::AddWatch(SphereWatch(w, 1.0, Pose({x * 8, 0, z * 8}))));
  }
  ASSERT_TRUE(set.Apply(batch).ok());
  EXPECT_EQ(set.last_watch_work().full_queries, 500u);
  ASSERT_TRUE(set.Apply(std::vector{ColliderChange::Move(1, Pose({500, 0, 500}))}).ok());
  EXPECT_EQ(set.last_watch_work().full_queries, 0u);
  EXPECT_LE(set.last_watch_work().pair_tests, 2u);  // where it was, if a watch was there
  ASSERT_TRUE(set.Apply(std::vector{ColliderChange::Move(1, Pose({8.2, 0, 0}))}).ok());
  EXPECT_EQ(set.last_watch_work().full_queries, 0u);
  EXPECT_EQ(set.last_watch_work().pair_tests, 1u);
  EXPECT_EQ(Brief(set), (std::vector<std::pair<uint64_t, WatchEvent::Kind>>{{1, kEnter}}));
}


// Every own collider as stored (id -> pose bits, layer, shape kind, radius).
std::map<uint64_t, std::tuple<Vec3, Quat, uint32_t, int, double>> Colliders(const ColliderSet& set) {
  std::map<uint64_t, std::tuple<Vec3, Quat, uint32_t, int, double>> out;
  set.ForEach([&](const Collider& c) {
    out[c.id] = {c.pose.position, c.pose.rotation, c.layer, static_cast<int>(c.shape.kind()),
                 c.shape.BoundingRadius()};
  });
  return out;
}

// A batch moving a collider that carries 10,000 watches passes a small watch
// budget: it is refused naming the budget, and the set is exactly as before
// (colliders, watches and inside sets, revision, ticks); unbounded, the same
// batch applies with the events of the full queries.
TEST(WatchBudgetTest, AttachedWatchesOverBudgetRefuseTheBatchWhole) {
  ColliderSet set;
  std::vector<ColliderChange> batch;
  batch.push_back(ColliderChange::Add(Ball(1, {0, 0, 0})));
  for (uint64_t i = 2; i <= 40; ++i) {
    batch.push_back(ColliderChange::Add(Ball(i, {static_cast<double>(i % 7), 0, static_cast<double>(i / 7)})));
  }
  for (uint64_t w = 1; w <= 10'000; ++w) {
    const auto x = static_cast<double>(w % 100), z = static_cast<double>(w / 100);
    batch.push_back(ColliderChange::AddWatch(SphereWatch(w, 2.0, Pose({0.05 * x, 0, 0.05 * z}), 1)));
  }
  ASSERT_TRUE(set.Apply(batch, 1).ok());
  WatchBudget budget;
  budget.max_nodes = 100'000;
  budget.max_pair_tests = 20'000;
  budget.work_limits = "test limits";
  set.SetWatchBudget(budget);
  const uint64_t revision = set.revision();
  const auto held = Held(set);
  const auto colliders = Colliders(set);
  const std::vector move{ColliderChange::Move(1, Pose({3, 0, 2})), ColliderChange::Move(5, Pose({9, 0, 9}))};
  const Status st = set.Apply(move, 2);
  ASSERT_EQ(st.code(), ErrorCode::kResourceExhausted) << st.ToString();
  EXPECT_NE(st.message().find("updating the watches after this batch"), std::string::npos) << st.ToString();
  EXPECT_NE(st.message().find("20000 pair tests (test limits)"), std::string::npos) << st.ToString();
  EXPECT_NE(st.message().find("not applied"), std::string::npos) << st.ToString();
  EXPECT_EQ(set.revision(), revision);
  EXPECT_EQ(Held(set), held);
  EXPECT_EQ(Colliders(set), colliders);
  EXPECT_EQ(set.Ticks()->newest, 1u);
  EXPECT_TRUE(set.watch_events().empty());
  EXPECT_EQ(set.WatchValidate(), "");
  EXPECT_EQ(set.TreeValidate(), "");
  EXPECT_EQ(FullQueries(set), held);
  // The budget counted the reruns it ran before it stopped, no more.
  EXPECT_GT(set.last_watch_work().query_pair_tests, 0u);
  EXPECT_LE(set.last_watch_work().query_pair_tests, budget.max_pair_tests + 10'000);
  // Without the bound the batch applies, as if the refusal never happened.
  set.SetWatchBudget({});
  ASSERT_TRUE(set.Apply(move, 2).ok());
  const auto now = FullQueries(set);
  EXPECT_EQ(Held(set), now);
  EXPECT_EQ(set.watch_events(), Diff(held, now, 2));
  EXPECT_FALSE(set.watch_events().empty());
  EXPECT_EQ(set.last_watch_work().full_queries, 10'000u);
}

// A collider swept through many fixed watches counts each watch it meets.
TEST(WatchBudgetTest, ChangedColliderNearManyWatchesIsBounded) {
  ColliderSet set;
  std::vector<ColliderChange> batch;
  batch.push_back(ColliderChange::Add(Ball(1, {-50, 0, 0})));
  for (uint64_t w = 1; w <= 3'000; ++w) {
    batch.push_back(ColliderChange::AddWatch(SphereWatch(w, 1.0, Pose({0.01 * static_cast<double>(w), 0, 0}))));
  }
  ASSERT_TRUE(set.Apply(batch).ok());
  Collider big = Ball(1, {15, 0, 0}, 20.0);
  WatchBudget budget;
  budget.max_pair_tests = 1'000;
  set.SetWatchBudget(budget);
  const auto held = Held(set);
  const Status st = set.Apply(std::vector{ColliderChange::Replace(big)});
  ASSERT_EQ(st.code(), ErrorCode::kResourceExhausted) << st.ToString();
  EXPECT_EQ(Held(set), held);
  EXPECT_EQ(set.Find(1)->pose.position.x, -50.0);
  EXPECT_EQ(set.Find(1)->shape.BoundingRadius(), 0.5);
  EXPECT_EQ(set.TreeValidate(), "");
  budget.max_pair_tests = 3'000;
  set.SetWatchBudget(budget);
  ASSERT_TRUE(set.Apply(std::vector{ColliderChange::Replace(big)}).ok());
  EXPECT_EQ(set.watch_events().size(), 3'000u);
  EXPECT_EQ(set.last_watch_work().candidates, 3'000u);
}

// The call's deadline and cancellation stop a long watch update: the batch
// is refused with kDeadlineExceeded or kCancelled and the set is exactly as
// before; the clock is injected and read while the update runs, in both of
// its parts (the attached watches' full queries, and a changed collider's
// candidates), and a deadline still ahead lets the same batch apply.
TEST(WatchBudgetTest, DeadlineAndCancellationStopTheUpdate) {
  ColliderSet set;
  std::vector<ColliderChange> batch;
  batch.push_back(ColliderChange::Add(Ball(1, {0, 0, 0})));
  batch.push_back(ColliderChange::Add(Ball(2, {-50, 0, 0})));
  for (uint64_t w = 1; w <= 4'000; ++w) {
    const auto x = static_cast<double>(w % 100), z = static_cast<double>(w / 100);
    batch.push_back(ColliderChange::AddWatch(SphereWatch(w, 2.0, Pose({0.05 * x, 0, 0.05 * z}), 1)));
  }
  for (uint64_t w = 5'001; w <= 8'000; ++w) {  // fixed, along x
    batch.push_back(ColliderChange::AddWatch(SphereWatch(w, 1.0, Pose({0.01 * static_cast<double>(w - 5'000), 0, 0}))));
  }
  ASSERT_TRUE(set.Apply(batch, 1).ok());
  const auto held = Held(set);
  const auto colliders = Colliders(set);
  const uint64_t revision = set.revision();
  const std::chrono::steady_clock::time_point start{};
  // A clock that advances a millisecond per read: the deadline passes during the update.
  int reads = 0;
  WatchBudget budget;
  budget.now = [&] { return start + std::chrono::milliseconds(++reads); };
  budget.deadline = start + std::chrono::milliseconds(3);
  set.SetWatchBudget(budget);
  const std::vector carried{ColliderChange::Move(1, Pose({3, 0, 2}))};   // 4,000 full queries
  const std::vector swept{ColliderChange::Replace(Ball(2, {15, 0, 0}, 20.0))};  // 3,000 candidates
  for (const auto* change : {&carried, &swept}) {
    reads = 0;
    const Status st = set.Apply(*change, 2);
    ASSERT_EQ(st.code(), ErrorCode::kDeadlineExceeded)
        << st.ToString() << " reads " << reads << (change == &carried ? " carried" : " swept");
    EXPECT_NE(st.message().find("deadline passed while the watches were updated"), std::string::npos)
        << st.ToString();
    EXPECT_GE(reads, 3);
    EXPECT_EQ(set.revision(), revision);
    EXPECT_EQ(Held(set), held);
    EXPECT_EQ(Colliders(set), colliders);
    EXPECT_TRUE(set.watch_events().empty());
    EXPECT_EQ(set.WatchValidate(), "");
    EXPECT_EQ(set.TreeValidate(), "");
  }
  // Cancelled on the third poll.
  budget = WatchBudget();
  int polls = 0;
  budget.cancelled = [&] { return ++polls >= 3; };
  set.SetWatchBudget(budget);
  for (const auto* change : {&carried, &swept}) {
    polls = 0;
    const Status st = set.Apply(*change, 2);
    ASSERT_EQ(st.code(), ErrorCode::kCancelled) << st.ToString();
    EXPECT_EQ(Held(set), held);
    EXPECT_EQ(Colliders(set), colliders);
  }
  // A deadline far ahead: both apply.
  budget = WatchBudget();
  budget.now = [&] { return start; };
  budget.deadline = start + std::chrono::hours(1);
  set.SetWatchBudget(budget);
  ASSERT_TRUE(set.Apply(carried, 2).ok());
  ASSERT_TRUE(set.Apply(swept, 3).ok());
  EXPECT_EQ(set.FindWatch(5'001)->inside.size(), 1u);
}

// The growth bound: a batch whose watches would take more bytes than it may
// is refused whole; one that fits applies and reports what it took.
TEST(WatchBudgetTest, GrowthOverTheBoundRefusesTheBatch) {
  ColliderSet set;
  std::vector<Collider> balls;
  for (uint64_t i = 1; i <= 500; ++i) balls.push_back(Ball(i, {0.01 * static_cast<double>(i), 0, 0}));
  ASSERT_TRUE(set.AddBulk(balls).ok());
  WatchBudget budget;
  budget.max_growth_bytes = 4'096;
  budget.memory_limit = "--max-memory";
  set.SetWatchBudget(budget);
  const uint64_t revision = set.revision();
  // A watch holding all 500 needs ~8 KB of inside set and ~12 KB of events.
  Status st = set.Apply(std::vector{ColliderChange::AddWatch(SphereWatch(1, 10.0, Pose({0, 0, 0})))});
  ASSERT_EQ(st.code(), ErrorCode::kResourceExhausted) << st.ToString();
  EXPECT_NE(st.message().find("4096 bytes it may take (--max-memory)"), std::string::npos) << st.ToString();
  EXPECT_EQ(set.watch_count(), 0u);
  EXPECT_EQ(set.revision(), revision);
  // Colliders added next to a watch grow its set: bounded the same way.
  ASSERT_TRUE(set.Apply(std::vector{ColliderChange::AddWatch(SphereWatch(1, 1.0, Pose({100, 0, 0})))}).ok());
  EXPECT_GT(set.last_watch_work().growth_bytes, 0u);
  std::vector<Collider> more;
  for (uint64_t i = 1001; i <= 1300; ++i) more.push_back(Ball(i, {100, 0, 0}));
  st = set.AddBulk(more);
  ASSERT_EQ(st.code(), ErrorCode::kResourceExhausted) << st.ToString();
  EXPECT_EQ(set.size(), 500u);
  EXPECT_EQ(set.Find(1001), nullptr);
  EXPECT_TRUE(set.FindWatch(1)->inside.empty());
  EXPECT_EQ(set.TreeValidate(), "");
  more.resize(20);
  ASSERT_TRUE(set.AddBulk(more).ok());
  EXPECT_EQ(set.FindWatch(1)->inside.size(), 20u);
}

// Random batches under random small budgets: each is applied with the
// events of the full queries, or refused leaving the set exactly as it was.
TEST(WatchBudgetTest, RandomBatchesApplyOrLeaveTheSetAsItWas) {
  Random rng(77);
  const double world = 8.0;
  ColliderSet set;
  uint64_t next_id = 1, next_watch = 1;
  std::vector<Collider> start;
  for (int i = 0; i < 30; ++i) start.push_back(AnyCollider(rng, next_id++, world));
  ASSERT_TRUE(set.AddBulk(start).ok());
  std::map<uint64_t, Members> expected = FullQueries(set);
  size_t refused = 0, applied = 0;
  for (uint64_t tick = 1; tick <= 800; ++tick) {
    SCOPED_TRACE("tick " + std::to_string(tick));
    std::map<uint64_t, std::optional<Collider>> before;
    const std::vector<ColliderChange> batch = RandomBatch(rng, set, &next_id, &next_watch, world, &before);
    WatchBudget budget;
    const uint64_t pairs[] = {0, 3, 20, 100};
    const uint64_t bytes[] = {UINT64_MAX, 300, 3'000};
    budget.max_pair_tests = pairs[rng.Int(0, 3)];
    budget.max_nodes = rng.Int(0, 3) == 0 ? 10 : 0;
    budget.max_growth_bytes = bytes[rng.Int(0, 2)];
    set.SetWatchBudget(budget);
    const uint64_t revision = set.revision();
    const auto colliders = Colliders(set);
    const Status st = set.Apply(batch, tick);
    if (!st.ok()) {
      ASSERT_EQ(st.code(), ErrorCode::kResourceExhausted) << st.ToString();
      ++refused;
      ASSERT_EQ(set.revision(), revision);
      ASSERT_EQ(Held(set), expected);
      ASSERT_EQ(Colliders(set), colliders);
      ASSERT_TRUE(set.watch_events().empty());
      ASSERT_EQ(set.WatchValidate(), "");
      ASSERT_EQ(set.TreeValidate(), "");
      set.SetWatchBudget({});
      ASSERT_TRUE(set.Apply(batch, tick).ok());
    } else {
      ++applied;
    }
    const std::map<uint64_t, Members> now = FullQueries(set);
    ASSERT_EQ(Held(set), now);
    ASSERT_EQ(set.watch_events(), Diff(expected, now, tick));
    expected = now;
  }
  // Both outcomes happen often (not a vacuous pass).
  EXPECT_GT(refused, 100u);
  EXPECT_GT(applied, 100u);
}

}  // namespace
}  // namespace hitbox
