// Tests of what max_hits keeps and how a result says so (core/src/world/query_hits.h):
// QueryResult::truncated is set exactly when hits were left out, through
// every entry point (Run, RunBatch with and without a budget, the single
// queries, rewound queries, a set over a shared base), and every query's tag
// comes back on its result.
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "hitbox/world/collider_set.h"
#include "test_util.h"

namespace hitbox {
namespace {

// Spheres first_id.. of radius 0.5, sphere k at x = 2k on y = 0.
std::vector<ColliderChange> Row(int n, uint64_t first_id = 1) {
  std::vector<ColliderChange> out;
  for (int i = 0; i < n; ++i) {
    const uint64_t id = first_id + i;
    out.push_back(ColliderChange::Add(
        {id, *Shape::MakeSphere(0.5), Pose({2.0 * static_cast<double>(id), 0, 0}), 0, 100 + id}));
  }
  return out;
}

OverlapQuery OverlapAll(uint32_t max_hits) {
  OverlapQuery q;
  q.shape = *Shape::MakeBox({100, 1, 1});
  q.filter.max_hits = max_hits;
  return q;
}
RayQuery RayAll(uint32_t max_hits, bool all = true) {
  RayQuery q;
  q.origin = {0, 0, 0};
  q.translation = {100, 0, 0};
  q.filter.max_hits = max_hits;
  q.all_hits = all;
  return q;
}
CastQuery CastAll(uint32_t max_hits, bool all = true) {
  CastQuery q;
  q.shape = *Shape::MakeSphere(0.25);
  q.translation = {100, 0, 0};
  q.filter.max_hits = max_hits;
  q.all_hits = all;
  return q;
}

// Expected answer for a row of 10: how many are listed and whether cut.
struct Case {
  uint32_t max_hits;
  size_t listed;
  bool truncated;
};
constexpr Case kCases[] = {{0, 10, false}, {1, 1, true},   {3, 3, true},
                           {9, 9, true},   {10, 10, false}, {11, 10, false},
                           {UINT32_MAX, 10, false}};

void ExpectRow(const QueryResult& r, bool overlap, const Case& c) {
  const size_t n = overlap ? r.overlaps.size() : r.hits.size();
  EXPECT_EQ(n, c.listed) << "max_hits " << c.max_hits;
  EXPECT_EQ(r.truncated, c.truncated) << "max_hits " << c.max_hits;
  // The first ones in the query's order: ids 1, 2, ... (by id or by fraction).
  for (size_t i = 0; i < n; ++i) {
    EXPECT_EQ(overlap ? r.overlaps[i].id : r.hits[i].id, i + 1) << "max_hits " << c.max_hits;
  }
}

// Run and the single-query calls: truncated exactly when more were found.
TEST(QueryHitsTest, TruncatedOnlyWhenHitsWereLeftOut) {
  ColliderSet set;
  ASSERT_TRUE(set.Apply(Row(10)).ok());
  for (const Case& c : kCases) {
    QueryResult r;
    set.Run(OverlapAll(c.max_hits), &r);
    ExpectRow(r, true, c);
    set.Run(RayAll(c.max_hits), &r);
    ExpectRow(r, false, c);
    set.Run(CastAll(c.max_hits), &r);
    ExpectRow(r, false, c);

    bool cut = !c.truncated;
    std::vector<OverlapHit> overlaps;
    set.Overlap(OverlapAll(c.max_hits), &overlaps, &cut);
    EXPECT_EQ(overlaps.size(), c.listed);
    EXPECT_EQ(cut, c.truncated);
    std::vector<CastHit> hits;
    cut = !c.truncated;
    set.Raycast(RayAll(c.max_hits), &hits, &cut);
    EXPECT_EQ(hits.size(), c.listed);
    EXPECT_EQ(cut, c.truncated);
    cut = !c.truncated;
    set.Cast(CastAll(c.max_hits), &hits, &cut);
    EXPECT_EQ(hits.size(), c.listed);
    EXPECT_EQ(cut, c.truncated);
  }
  // Closest-hit queries list one hit and are never cut, whatever max_hits.
  for (uint32_t m : {0u, 1u, 3u}) {
    QueryResult r;
    set.Run(RayAll(m, false), &r);
    ASSERT_EQ(r.hits.size(), 1u);
    EXPECT_FALSE(r.truncated);
    set.Run(CastAll(m, false), &r);
    ASSERT_EQ(r.hits.size(), 1u);
    EXPECT_FALSE(r.truncated);
  }
}

// Batches (plain, budgeted, on a pool), rewound queries and a set layered
// over a shared base (5 of the 10 in the base) answer the same, tags echoed.
TEST(QueryHitsTest, BatchesRewoundAndLayeredSetsAgreeAndEchoTags) {
  ColliderSet plain;
  ASSERT_TRUE(plain.Apply(Row(10), 1).ok());
  ASSERT_TRUE(plain.Apply(std::vector<ColliderChange>{ColliderChange::Move(1, Pose({2, 0, 0}))}, 2)
                  .ok());
  auto base = std::make_shared<ColliderSet>();
  ASSERT_TRUE(base->Apply(Row(5)).ok());
  ColliderSet layered;
  ASSERT_TRUE(layered.SetBase(base, "row").ok());
  ASSERT_TRUE(layered.Apply(Row(5, 6)).ok());
  ThreadPool pool(2);

  std::vector<Query> queries;
  std::vector<const Case*> cases;
  std::vector<bool> is_overlap;
  uint64_t tag = 1000;
  for (const Case& c : kCases) {
    for (int kind = 0; kind < 3; ++kind) {
      Query q = kind == 0 ? Query(OverlapAll(c.max_hits))
                          : kind == 1 ? Query(RayAll(c.max_hits)) : Query(CastAll(c.max_hits));
      std::visit([&tag](auto& x) { x.tag = ++tag; }, q);
      queries.push_back(q);
      cases.push_back(&c);
      is_overlap.push_back(kind == 0);
    }
  }
  // Many copies so that the pool splits the batch.
  const size_t unique = queries.size();
  for (int copy = 0; copy < 6; ++copy) {
    for (size_t i = 0; i < unique; ++i) queries.push_back(queries[i]);
  }
  const auto check = [&](const std::vector<QueryResult>& results, const char* what) {
    ASSERT_EQ(results.size(), queries.size()) << what;
    for (size_t i = 0; i < queries.size(); ++i) {
      SCOPED_TRACE(what);
      ExpectRow(results[i], is_overlap[i % unique], *cases[i % unique]);
      EXPECT_EQ(results[i].tag, std::visit([](const auto& x) { return x.tag; }, queries[i]));
    }
  };
  for (const ColliderSet* set : {&plain, &layered}) {
    const char* name = set == &plain ? "plain" : "layered";
    std::vector<QueryResult> results(queries.size());
    set->RunBatch(queries, results, nullptr);
    check(results, name);
    std::vector<QueryResult> pooled(queries.size());
    set->RunBatch(queries, pooled, &pool);
    check(pooled, name);
    std::vector<QueryResult> budgeted(queries.size());
    ASSERT_TRUE(set->RunBatch(queries, budgeted, &pool, QueryBudget{}).ok());
    check(budgeted, name);
  }
  // Rewound: the same answers at tick 1.5 (collider 1 did not really move).
  std::vector<Query> rewound = queries;
  for (Query& q : rewound) std::visit([](auto& x) { x.at_tick = 1.5; }, q);
  std::vector<QueryResult> results(rewound.size());
  ASSERT_TRUE(plain.RunBatch(rewound, results, nullptr, QueryBudget{}).ok());
  check(results, "rewound");
}

// A move's result carries its tag (max_hits does not apply to moves).
TEST(QueryHitsTest, MoveEchoesTag) {
  ColliderSet set;
  ASSERT_TRUE(set.Apply(Row(3)).ok());
  MoveQuery m;
  m.shape = *Shape::MakeCapsule(0.3, 0.5);
  m.pose = Pose({0, 5, 0});
  m.displacement = {0, -0.1, 0};
  m.tag = 77;
  QueryResult r;
  set.Run(m, &r);
  EXPECT_EQ(r.tag, 77u);
  EXPECT_FALSE(r.truncated);
  ASSERT_TRUE(r.move.has_value());
}

}  // namespace
}  // namespace hitbox
