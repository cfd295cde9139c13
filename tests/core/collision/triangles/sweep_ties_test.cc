// SweepTies: a surface sweep's answer from its triangles' hits does not
// depend on the order they come in, and a merged mesh answers per member.
#include "collision/triangles/sweep_ties.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <random>
#include <vector>

namespace hitbox {
namespace {

struct TestHit {
  uint32_t orig;
  CastResult s;
};

// The rule written out: the earliest fraction, then the lowest input index
// among the hits within `tie` of it.
CastResult Reference(const std::vector<TestHit>& hits, double tie) {
  CastResult out;
  if (hits.empty()) return out;
  double earliest = 2.0;
  for (const TestHit& h : hits) earliest = std::min(earliest, h.s.fraction);
  const TestHit* win = nullptr;
  for (const TestHit& h : hits) {
    if (h.s.fraction <= earliest + tie && (win == nullptr || h.orig < win->orig)) win = &h;
  }
  out = win->s;
  out.fraction = earliest;
  if (earliest == 0.0) out.state = CastState::kStartedOverlapping;
  out.sub_shape = win->orig;
  return out;
}

// Feeds the hits in `order` as a walk would: a hit past the limit is not
// swept, a triangle passed over is not swept either.
CastResult Walk(const std::vector<TestHit>& hits, const std::vector<size_t>& order, double tie,
                std::span<const uint32_t> members, uint32_t* member = nullptr) {
  SweepTies ties(tie, members);
  for (size_t i : order) {
    if (ties.PassedOver(hits[i].orig) || hits[i].s.fraction > ties.limit()) continue;
    ties.Add(hits[i].orig, hits[i].s);
  }
  return ties.Result(member);
}

std::vector<TestHit> RandomHits(std::mt19937& rng, double tie, uint32_t triangles) {
  // Fractions bunched within a few ties of each other: chains of ties.
  const double steps[] = {0.0, 0.3, 0.9, 1.0, 1.5, 1.8, 2.5, 4.0};
  const double base = std::uniform_int_distribution<int>(0, 3)(rng) == 0 ? 0.0 : 0.4;
  std::vector<uint32_t> origs(triangles);
  std::iota(origs.begin(), origs.end(), 0u);
  std::shuffle(origs.begin(), origs.end(), rng);
  const int n = std::uniform_int_distribution<int>(1, 9)(rng);
  std::vector<TestHit> hits;
  for (int k = 0; k < n; ++k) {
    TestHit h;
    h.orig = origs[static_cast<size_t>(k)];
    h.s.state = std::uniform_int_distribution<int>(0, 4)(rng) == 0 ? CastState::kStartedOverlapping
                                                                   : CastState::kHit;
    h.s.fraction = base + tie * steps[std::uniform_int_distribution<int>(0, 7)(rng)];
    h.s.normal = Vec3{0, 0, 1.0 + h.orig};  // tells the winner's fields apart
    h.s.point = Vec3{1.0 * h.orig, 0, 0};
    hits.push_back(h);
  }
  return hits;
}

void ExpectSame(const CastResult& want, const CastResult& got, const std::string& where) {
  ASSERT_EQ(want.state, got.state) << where;
  ASSERT_EQ(want.fraction, got.fraction) << where;
  ASSERT_EQ(want.sub_shape, got.sub_shape) << where;
  ASSERT_EQ(want.normal, got.normal) << where;
  ASSERT_EQ(want.point, got.point) << where;
}

// Chains of hits within a tie of each other (where a rule that compares
// each hit with the best so far depends on the order) answer alike in
// every order, as the rule written out.
TEST(SweepTies, AnyOrderGivesTheRule) {
  std::mt19937 rng(7100);
  const double tie = 1e-9 / 3.0;
  int chains = 0;
  for (int trial = 0; trial < 4000; ++trial) {
    const std::vector<TestHit> hits = RandomHits(rng, tie, 40);
    const CastResult want = Reference(hits, tie);
    double lo = 2.0, hi = -1.0;
    for (const TestHit& h : hits) {
      lo = std::min(lo, h.s.fraction);
      if (h.s.fraction <= lo + 2.0 * tie) hi = std::max(hi, h.s.fraction);
    }
    std::vector<size_t> order(hits.size());
    std::iota(order.begin(), order.end(), size_t{0});
    for (int p = 0; p < 12; ++p) {
      std::shuffle(order.begin(), order.end(), rng);
      ExpectSame(want, Walk(hits, order, tie, {}),
                 "trial " + std::to_string(trial) + " order " + std::to_string(p));
    }
    chains += hi > lo + tie;
  }
  EXPECT_GT(chains, 500);
}

// A merged mesh's members (input index ranges) each answer by the rule on
// their own hits; the merged answer is the member with the earliest
// fraction (ties: the lowest member), as the world compares colliders.
TEST(SweepTies, MergedMeshAnswersPerMember) {
  std::mt19937 rng(7200);
  const double tie = 1e-9 / 7.0;
  const std::vector<uint32_t> first = {0, 10, 25, 30};
  const auto member_of = [&](uint32_t orig) {
    return static_cast<uint32_t>(std::upper_bound(first.begin(), first.end(), orig) -
                                 first.begin()) -
           1;
  };
  int across = 0;  // answers another member would win under one mesh's rule
  for (int trial = 0; trial < 4000; ++trial) {
    const std::vector<TestHit> hits = RandomHits(rng, tie, 40);
    // Each member's own answer, then the least (fraction, member).
    CastResult want;
    uint32_t want_member = UINT32_MAX;
    for (uint32_t m = 0; m < first.size(); ++m) {
      std::vector<TestHit> own;
      for (const TestHit& h : hits) {
        if (member_of(h.orig) == m) own.push_back(h);
      }
      if (own.empty()) continue;
      const CastResult r = Reference(own, tie);
      if (want_member == UINT32_MAX || r.fraction < want.fraction) {
        want = r;
        want_member = m;
      }
    }
    across += Reference(hits, tie).sub_shape != want.sub_shape;
    std::vector<size_t> order(hits.size());
    std::iota(order.begin(), order.end(), size_t{0});
    for (int p = 0; p < 12; ++p) {
      std::shuffle(order.begin(), order.end(), rng);
      uint32_t member = UINT32_MAX;
      const std::string where = "trial " + std::to_string(trial) + " order " + std::to_string(p);
      ExpectSame(want, Walk(hits, order, tie, first, &member), where);
      ASSERT_EQ(want_member, member) << where;
    }
  }
  EXPECT_GT(across, 200);
}

}  // namespace
}  // namespace hitbox
