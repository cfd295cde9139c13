// Dynamic AABB tree against the brute-force broad phase: box queries,
// segment/box casts (all candidates and closest with pruning) on thousands of
// seeded random scenes with insert / move / remove churn and bulk builds.
#include "broad_phase/dynamic_tree.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <vector>

#include "broad_phase/brute_force_broad_phase.h"
#include "broad_phase/wide_tree.h"
#include "test_util.h"

namespace hitbox {
namespace {

using testing::Random;

Aabb RandomBox(Random& rng, double world, double max_size) {
  const Vec3 c = rng.InBox(world);
  const Vec3 e{rng.Uniform(0.0, max_size), rng.Uniform(0.0, max_size), rng.Uniform(0.0, max_size)};
  return Aabb::FromCenterExtents(c, e);
}

uint32_t RandomMask(Random& rng) {
  switch (rng.Int(0, 3)) {
    case 0: return 0xFFFFFFFFu;
    case 1: return 1u << rng.Int(0, 31);
    case 2: return static_cast<uint32_t>(rng.engine()());
    default: return 0x0000000Fu;
  }
}

std::vector<uint32_t> TreeQuery(const DynamicTree& tree, const FloatAabb& box, uint32_t mask) {
  std::vector<uint32_t> out;
  QueryTree(tree, box, mask, [&](uint32_t item, uint32_t) { out.push_back(item); });
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<uint32_t> TreeCastAll(const DynamicTree& tree, const SegmentSetup& seg, uint32_t mask) {
  std::vector<uint32_t> out;
  CastTree(tree, seg, mask, 1.0, [&](uint32_t item, uint32_t, double max_t) {
    out.push_back(item);
    return max_t;
  });
  std::sort(out.begin(), out.end());
  return out;
}

// The leaves a wide box cursor reaches, sorted, each checked to come with
// its own layer.
std::vector<uint32_t> WideQuery(const WideTree& wide, const DynamicTree& tree,
                                const std::vector<uint32_t>& leaf, const FloatAabb& box,
                                uint32_t mask) {
  std::vector<uint32_t> out;
  WideBoxCursor cursor;
  cursor.Begin(wide, box, mask);
  while (cursor.Step(
      [&](uint32_t item, uint32_t layer) {
        EXPECT_EQ(layer, tree.node(leaf[item]).child2) << item;
        out.push_back(item);
      },
      NoItemPrefetch{})) {
  }
  std::sort(out.begin(), out.end());
  return out;
}

// The leaves a wide segment cursor reaches, sorted; with `prune`, each leaf
// lowers the bound to its own entry fraction (closest-first pruning), and
// the closest leaf by (entry, item) is kept in *closest.
std::vector<uint32_t> WideCast(const WideTree& wide, const DynamicTree& tree,
                               const std::vector<uint32_t>& leaf, const SegmentSetup& seg,
                               uint32_t mask, bool prune, uint32_t* closest) {
  std::vector<uint32_t> out;
  double best_t = std::numeric_limits<double>::infinity();
  *closest = DynamicTree::kNull;
  WideSegmentCursor cursor;
  cursor.Begin(wide, &seg, mask, 1.0);
  while (cursor.Step(
      [&](uint32_t item, uint32_t layer, double max_t) {
        EXPECT_EQ(layer, tree.node(leaf[item]).child2) << item;
        out.push_back(item);
        double t;
        if (!seg.Entry(tree.node(leaf[item]), max_t, &t)) return max_t;
        if (t < best_t || (t == best_t && item < *closest)) {
          best_t = t;
          *closest = item;
        }
        return prune ? t : max_t;
      },
      NoItemPrefetch{})) {
  }
  std::sort(out.begin(), out.end());
  return out;
}

// Scene state shared by the tree and the reference.
struct Scene {
  DynamicTree tree;
  BruteForceBroadPhase brute;
  std::vector<uint32_t> leaf;    // per item; kNull when removed
  std::vector<Aabb> box;         // per item
  std::vector<uint32_t> layer;   // per item
};

// Checks every kind of query on the scene against brute force.
void CheckQueries(Scene& s, Random& rng, int queries, const std::string& where) {
  for (int q = 0; q < queries; ++q) {
    const uint32_t mask = RandomMask(rng);
    const FloatAabb qb = FloatAabb::Outward(RandomBox(rng, 60.0, 15.0));
    ASSERT_EQ(TreeQuery(s.tree, qb, mask), s.brute.Query(qb, mask)) << where << " query " << q;

    const Vec3 origin = rng.InBox(70.0);
    Vec3 d = rng.InBox(80.0);
    if (rng.Int(0, 5) == 0) d[rng.Int(0, 2)] = 0.0;  // axis-parallel component
    if (rng.Int(0, 20) == 0) d = Vec3{};             // zero translation
    const Vec3 ext = rng.Int(0, 1) ? Vec3{} : rng.InBox(3.0).Abs();
    const SegmentSetup seg(origin, d, ext);
    ASSERT_EQ(TreeCastAll(s.tree, seg, mask), s.brute.Cast(seg, mask, 1.0))
        << where << " cast " << q << " origin " << ToString(origin) << " d " << ToString(d);

    // Closest by (entry fraction, item) with pruning equals the brute-force minimum.
    double best_t = std::numeric_limits<double>::infinity();
    uint32_t best_item = DynamicTree::kNull;
    for (uint32_t item : s.brute.Cast(seg, mask, 1.0)) {
      double t;
      const TreeNode& n = s.tree.node(s.leaf[item]);
      ASSERT_TRUE(seg.Entry(n, 1.0, &t));
      if (t < best_t || (t == best_t && item < best_item)) {
        best_t = t;
        best_item = item;
      }
    }
    double got_t = std::numeric_limits<double>::infinity();
    uint32_t got_item = DynamicTree::kNull;
    CastTree(s.tree, seg, mask, 1.0, [&](uint32_t item, uint32_t, double max_t) {
      double t;
      if (!seg.Entry(s.tree.node(s.leaf[item]), max_t, &t)) return max_t;
      if (t < got_t || (t == got_t && item < got_item)) {
        got_t = t;
        got_item = item;
        return t;
      }
      return max_t;
    });
    ASSERT_EQ(got_item, best_item) << where << " closest " << q;

    // The wide copy reaches the same leaves (another order), and with
    // pruning finds the same closest one.
    const WideTree wide(s.tree);
    ASSERT_EQ(wide.version(), s.tree.version());
    ASSERT_EQ(WideQuery(wide, s.tree, s.leaf, qb, mask), s.brute.Query(qb, mask))
        << where << " wide query " << q;
    uint32_t wide_closest;
    ASSERT_EQ(WideCast(wide, s.tree, s.leaf, seg, mask, false, &wide_closest),
              s.brute.Cast(seg, mask, 1.0))
        << where << " wide cast " << q;
    ASSERT_EQ(wide_closest, best_item) << where << " wide closest " << q;
    WideCast(wide, s.tree, s.leaf, seg, mask, true, &wide_closest);
    ASSERT_EQ(wide_closest, best_item) << where << " wide pruned closest " << q;

    // The copy without some items (every third, a different third per
    // query; sometimes all) reaches the other leaves the whole copy does,
    // and finds the closest of them.
    std::vector<uint8_t> drop(s.leaf.size());
    for (size_t i = 0; i < drop.size(); ++i) {
      drop[i] = q % 7 == 6 || static_cast<int>(i % 3) == q % 3;
    }
    const auto kept = [&](std::vector<uint32_t> items) {
      std::erase_if(items, [&](uint32_t i) { return drop[i] != 0; });
      return items;
    };
    const WideTree rest(s.tree, drop);
    ASSERT_EQ(WideQuery(rest, s.tree, s.leaf, qb, mask), kept(s.brute.Query(qb, mask)))
        << where << " rest query " << q;
    const std::vector<uint32_t> rest_cast = kept(s.brute.Cast(seg, mask, 1.0));
    uint32_t rest_closest;
    ASSERT_EQ(WideCast(rest, s.tree, s.leaf, seg, mask, false, &rest_closest), rest_cast)
        << where << " rest cast " << q;
    const uint32_t rest_best = rest_closest;
    WideCast(rest, s.tree, s.leaf, seg, mask, true, &rest_closest);
    ASSERT_EQ(rest_closest, rest_best) << where << " rest pruned closest " << q;
    if (std::find(rest_cast.begin(), rest_cast.end(), best_item) != rest_cast.end()) {
      ASSERT_EQ(rest_best, best_item) << where << " rest closest " << q;
    }

    // The cursors of a batch reach the same leaves in the same order as the
    // one-shot walks, with and without pruning by the closest entry.
    std::vector<uint32_t> walked, stepped;
    QueryTree(s.tree, qb, mask, [&](uint32_t item, uint32_t) { walked.push_back(item); });
    BoxCursor box_cursor;
    box_cursor.Begin(s.tree, qb, mask);
    while (box_cursor.Step([&](uint32_t item, uint32_t) { stepped.push_back(item); },
                           NoItemPrefetch{})) {
    }
    ASSERT_EQ(stepped, walked) << where << " box cursor " << q;
    for (const bool prune : {false, true}) {
      const auto leaf_fn = [&](std::vector<uint32_t>* seen) {
        return [&, seen](uint32_t item, uint32_t, double max_t) {
          seen->push_back(item);
          double t;
          if (!prune || !seg.Entry(s.tree.node(s.leaf[item]), max_t, &t)) return max_t;
          return t;
        };
      };
      walked.clear();
      stepped.clear();
      CastTree(s.tree, seg, mask, 1.0, leaf_fn(&walked));
      SegmentCursor seg_cursor;
      seg_cursor.Begin(s.tree, &seg, mask, 1.0);
      while (seg_cursor.Step(leaf_fn(&stepped), NoItemPrefetch{})) {
      }
      ASSERT_EQ(stepped, walked) << where << " segment cursor " << q << " prune " << prune;
    }
  }
}

void AddItem(Scene& s, Random& rng, uint32_t item) {
  if (item >= s.leaf.size()) {
    s.leaf.resize(item + 1, DynamicTree::kNull);
    s.box.resize(item + 1);
    s.layer.resize(item + 1);
  }
  s.box[item] = RandomBox(rng, 50.0, rng.Int(0, 10) == 0 ? 20.0 : 2.0);
  s.layer[item] = static_cast<uint32_t>(rng.Int(0, 31));
  s.leaf[item] = s.tree.CreateLeaf(s.box[item], item, s.layer[item]);
  s.brute.Set(item, s.box[item], s.layer[item]);
}

// Incremental inserts, moves (small and large), removals, layer changes.
TEST(DynamicTreeTest, MatchesBruteForceUnderChurn) {
  for (int scene = 0; scene < 800; ++scene) {
    Random rng(1000 + scene);
    Scene s;
    const int n = rng.Int(0, 120);
    for (int i = 0; i < n; ++i) AddItem(s, rng, static_cast<uint32_t>(i));
    const std::string where = "scene seed " + std::to_string(1000 + scene);
    ASSERT_EQ(s.tree.Validate(), "") << where;
    CheckQueries(s, rng, 8, where);
    for (int round = 0; round < 3; ++round) {
      const int ops = rng.Int(1, 60);
      for (int op = 0; op < ops; ++op) {
        const uint32_t item = static_cast<uint32_t>(rng.Int(0, static_cast<int>(s.leaf.size())));
        if (item >= s.leaf.size() || s.leaf[item] == DynamicTree::kNull) {
          AddItem(s, rng, item);
          continue;
        }
        switch (rng.Int(0, 3)) {
          case 0:  // remove
            s.tree.DestroyLeaf(s.leaf[item]);
            s.brute.Remove(item);
            s.leaf[item] = DynamicTree::kNull;
            break;
          case 1: {  // small move
            const Vec3 off = rng.InBox(0.5);
            s.box[item] = {s.box[item].min + off, s.box[item].max + off};
            s.tree.MoveLeaf(s.leaf[item], s.box[item]);
            s.brute.Set(item, s.box[item], s.layer[item]);
            break;
          }
          case 2:  // teleport
            s.box[item] = RandomBox(rng, 50.0, 3.0);
            s.tree.MoveLeaf(s.leaf[item], s.box[item]);
            s.brute.Set(item, s.box[item], s.layer[item]);
            break;
          default:  // new layer
            s.layer[item] = static_cast<uint32_t>(rng.Int(0, 31));
            s.tree.SetLeafLayer(s.leaf[item], s.layer[item]);
            s.brute.Set(item, s.box[item], s.layer[item]);
            break;
        }
      }
      ASSERT_EQ(s.tree.Validate(), "") << where << " round " << round;
      CheckQueries(s, rng, 6, where + " round " + std::to_string(round));
    }
  }
}

// A bulk top-down build answers like brute force and stays valid under churn.
TEST(DynamicTreeTest, BulkBuildMatchesBruteForce) {
  for (int scene = 0; scene < 300; ++scene) {
    Random rng(5000 + scene);
    Scene s;
    const int n = rng.Int(1, 400);
    std::vector<DynamicTree::BuildItem> items;
    for (int i = 0; i < n; ++i) {
      Aabb b = RandomBox(rng, 50.0, 2.0);
      if (scene % 7 == 0) b = Aabb::FromCenterExtents({1, 2, 3}, {1, 1, 1});  // coincident
      const uint32_t layer = static_cast<uint32_t>(rng.Int(0, 31));
      items.push_back({b, static_cast<uint32_t>(i), layer});
      s.box.push_back(b);
      s.layer.push_back(layer);
      s.brute.Set(static_cast<uint32_t>(i), b, layer);
    }
    s.leaf.assign(n, DynamicTree::kNull);
    s.tree.Build(items, &s.leaf);
    const std::string where = "bulk seed " + std::to_string(5000 + scene);
    ASSERT_EQ(s.tree.Validate(), "") << where;
    ASSERT_EQ(s.tree.LeafCount(), static_cast<uint32_t>(n));
    // Balanced enough: a binned SAH build is far from a list.
    if (scene % 7 != 0 && n > 16) {
      EXPECT_LE(s.tree.Height(), 4 * std::log2(n) + 4) << where;
    }
    CheckQueries(s, rng, 8, where);
    for (int op = 0; op < 40; ++op) {
      const uint32_t item = static_cast<uint32_t>(rng.Int(0, n - 1));
      if (s.leaf[item] == DynamicTree::kNull) {
        AddItem(s, rng, item);
      } else if (rng.Int(0, 1)) {
        s.tree.DestroyLeaf(s.leaf[item]);
        s.brute.Remove(item);
        s.leaf[item] = DynamicTree::kNull;
      } else {
        s.box[item] = RandomBox(rng, 50.0, 2.0);
        s.tree.MoveLeaf(s.leaf[item], s.box[item]);
        s.brute.Set(item, s.box[item], s.layer[item]);
      }
    }
    ASSERT_EQ(s.tree.Validate(), "") << where;
    CheckQueries(s, rng, 6, where + " after churn");
  }
}

// A bulk build over boxes at and beyond the float range (infinite float
// bounds, centres that were NaN) stays valid and finds every item. Found by
// fuzz/collider_set: the SAH binning cast NaN to int (UB under UBSan).
TEST(DynamicTreeTest, BulkBuildAtFloatLimits) {
  const double kHuge = std::numeric_limits<double>::max();
  const std::vector<Aabb> boxes = {
      Aabb::FromCenterExtents({0, 0, 0}, {1e308, 1e308, 1e308}),  // [-inf, inf] as floats
      Aabb::FromCenterExtents({1e300, 0, -1e300}, {1, 1, 1}),
      Aabb::FromCenterExtents({-1e39, 5, 5}, {1, 1, 1}),
      Aabb({kHuge / 2, 0, 0}, {kHuge, 1, 1}),
      Aabb::FromCenterExtents({0, 0, 0}, {1, 1, 1}),
      Aabb::FromCenterExtents({3, 0, 0}, {1e-300, 1e-300, 1e-300}),
      Aabb::FromCenterExtents({3, 0, 0}, {1, 1, 1}),
  };
  std::vector<DynamicTree::BuildItem> items;
  for (size_t i = 0; i < boxes.size(); ++i) items.push_back({boxes[i], static_cast<uint32_t>(i), 0});
  DynamicTree tree;
  std::vector<uint32_t> leaves(boxes.size(), DynamicTree::kNull);
  tree.Build(items, &leaves);
  ASSERT_EQ(tree.Validate(), "");
  ASSERT_EQ(tree.LeafCount(), static_cast<uint32_t>(boxes.size()));
  for (size_t i = 0; i < boxes.size(); ++i) {
    const std::vector<uint32_t> found = TreeQuery(tree, FloatAabb::Outward(boxes[i]), 0xFFFFFFFFu);
    EXPECT_TRUE(std::count(found.begin(), found.end(), static_cast<uint32_t>(i)) == 1) << "item " << i;
  }
}

// Float node boxes always contain the double boxes they were made from.
TEST(DynamicTreeTest, FloatBoxesAreConservative) {
  Random rng(3);
  for (int i = 0; i < 100000; ++i) {
    const double scale = std::pow(10.0, rng.Uniform(-3, 6));
    const Aabb b = RandomBox(rng, scale, scale * 0.01);
    const Aabb f = FloatAabb::Outward(b).ToDouble();
    ASSERT_TRUE(f.Contains(b)) << ToString(b.min) << " " << ToString(b.max);
  }
}

// NextFloatUp / NextFloatDown are std::nextafter towards +inf / -inf,
// across zero, subnormals, the float limits and infinities.
TEST(DynamicTreeTest, NextFloatMatchesNextafter) {
  constexpr float kInf = std::numeric_limits<float>::infinity();
  std::vector<float> values = {0.0f, -0.0f, std::numeric_limits<float>::denorm_min(),
                               -std::numeric_limits<float>::denorm_min(),
                               std::numeric_limits<float>::min(), -std::numeric_limits<float>::min(),
                               std::numeric_limits<float>::max(), -std::numeric_limits<float>::max(),
                               kInf, -kInf, 1.0f, -1.0f};
  Random rng(5);
  for (int i = 0; i < 100000; ++i) {
    values.push_back(static_cast<float>(rng.Uniform(-1, 1) * std::pow(10.0, rng.Uniform(-45, 38))));
  }
  for (float f : values) {
    ASSERT_EQ(std::bit_cast<uint32_t>(NextFloatUp(f)),
              std::bit_cast<uint32_t>(std::nextafter(f, kInf)))
        << f;
    ASSERT_EQ(std::bit_cast<uint32_t>(NextFloatDown(f)),
              std::bit_cast<uint32_t>(std::nextafter(f, -kInf)))
        << f;
  }
}

// Reference slab test in double (the exact test up to 1e-16 relative
// rounding): entry fraction of origin + t d, t in [0, max_t], into the box
// [min - ext, max + ext]; false when it misses.
bool ReferenceEntry(const FloatAabb& box, const Vec3& origin, const Vec3& d, const Vec3& ext,
                    double max_t, double* t_enter) {
  double t0 = 0.0, t1 = max_t;
  for (int i = 0; i < 3; ++i) {
    const double lo = box.min[i] - ext[i] - origin[i];
    const double hi = box.max[i] + ext[i] - origin[i];
    if (d[i] == 0.0) {
      if (lo > 0.0 || hi < 0.0) return false;
      continue;
    }
    double a = lo / d[i], b = hi / d[i];
    if (a > b) std::swap(a, b);
    t0 = std::max(t0, a);
    t1 = std::min(t1, b);
  }
  *t_enter = t0;
  return t0 <= t1;
}

// A segment's planes and inverses are RoundUp(o + e), RoundDown(o - e) and
// 1 / d rounded to float, to the bit (sign of zero included), whether the
// three axes are set at once (every |d| > 1e-30) or one by one (SSE2: the
// float form).
#if defined(__SSE2__)
TEST(DynamicTreeTest, SegmentSetupIsTheRoundedValues) {
  Random rng(17);
  const auto value = [&]() -> double {
    switch (rng.Int(0, 7)) {
      case 0: return 0.0;
      case 1: return -0.0;
      case 2: return rng.Int(0, 1) ? 3.4e38 : -3.5e38;  // near / beyond the float range
      case 3: return rng.Uniform(-1, 1) * 1e-44;        // float subnormals
      default: return rng.Uniform(-1, 1) * std::pow(10.0, rng.Uniform(-40, 37));
    }
  };
  for (int i = 0; i < 200000; ++i) {
    Vec3 o{value(), value(), value()};
    Vec3 e = Vec3{value(), value(), value()}.Abs();
    if (rng.Int(0, 9) == 0) e = o.Abs();  // o - e or o + e exactly zero
    Vec3 d{value(), value(), value()};
    if (rng.Int(0, 3) != 0) {
      for (int k = 0; k < 3; ++k) {
        if (!(std::fabs(d[k]) > 1e-30)) d[k] = rng.Uniform(0.5, 2.0) * (rng.Int(0, 1) ? 1 : -1);
      }
    }
    const SegmentSetup seg(o, d, e);
    for (int k = 0; k < 3; ++k) {
      if (!(std::fabs(d[k]) > 1e-30)) continue;  // the folded-motion case: own test
      ASSERT_EQ(std::bit_cast<uint32_t>(seg.lo[k]), std::bit_cast<uint32_t>(RoundUp(o[k] + e[k])))
          << i << " axis " << k << " o " << o[k] << " e " << e[k];
      ASSERT_EQ(std::bit_cast<uint32_t>(seg.hi[k]), std::bit_cast<uint32_t>(RoundDown(o[k] - e[k])))
          << i << " axis " << k << " o " << o[k] << " e " << e[k];
      ASSERT_EQ(std::bit_cast<uint32_t>(seg.inv[k]),
                std::bit_cast<uint32_t>(static_cast<float>(1.0 / d[k])))
          << i << " axis " << k << " d " << d[k];
    }
  }
}
#endif

// The tree's slab test (single precision) never misses a node the exact test
// enters and never reports a later entry, on random segments and on segments
// built to graze a face, an edge or a corner exactly (at 1 mm and at 20 km
// from the origin, with zero, tiny and ordinary components).
TEST(DynamicTreeTest, SegmentEntryIsConservative) {
  Random rng(11);
  int hits = 0;
  for (int i = 0; i < 200000; ++i) {
    const double scale = std::pow(10.0, rng.Uniform(-3, 4.3));
    const Aabb b = RandomBox(rng, scale, scale * rng.Uniform(0.0, 0.5));
    const FloatAabb fb = FloatAabb::Outward(b);
    TreeNode n{};
    for (int k = 0; k < 3; ++k) {
      n.min[k] = fb.min[k];
      n.max[k] = fb.max[k];
    }
    n.child1 = 0x7FFFFFFFu;  // NaN bits in the lane next to min: must be ignored
    n.child2 = 0xFFFFFFFFu;
    const Vec3 ext = rng.Int(0, 1) ? Vec3{} : rng.InBox(scale * 0.1).Abs();
    Vec3 origin = rng.InBox(scale * 2.0);
    Vec3 d = rng.InBox(scale * 3.0);
    for (int k = 0; k < 3; ++k) {
      switch (rng.Int(0, 7)) {
        case 0: d[k] = 0.0; break;
        case 1: d[k] = rng.Uniform(-1e-30, 1e-30); break;
        case 2: d[k] = 1e-35; break;
        default: break;
      }
    }
    const int graze = rng.Int(0, 3);
    if (graze > 0) {
      // Put the segment's end (t = 1 or a random t) exactly on a plane, edge
      // or corner of the grown box (as far as double allows).
      const double t = rng.Int(0, 1) ? 1.0 : rng.Uniform(0.0, 1.0);
      for (int k = 0; k < graze; ++k) {
        const int axis = rng.Int(0, 2);
        const double plane = rng.Int(0, 1) ? static_cast<double>(fb.max[axis]) + ext[axis]
                                           : static_cast<double>(fb.min[axis]) - ext[axis];
        origin[axis] = plane - d[axis] * t;
      }
    }
    double t_ref;
    if (!ReferenceEntry(fb, origin, d, ext, 1.0, &t_ref)) continue;
    ++hits;
    const SegmentSetup seg(origin, d, ext);
    double t;
    ASSERT_TRUE(seg.Entry(n, 1.0, &t))
        << i << " origin " << ToString(origin) << " d " << ToString(d) << " ext " << ToString(ext)
        << " box " << ToString(fb.ToDouble().min) << " " << ToString(fb.ToDouble().max);
    // The reference itself rounds (relative 1e-16); allow that much.
    ASSERT_LE(t, t_ref * (1.0 + 1e-12) + 1e-300) << i;
  }
  EXPECT_GT(hits, 10000);
}

// The slab test prunes: a segment passing a box at a clear distance (1e-4
// of the scale) misses it, and one clearly inside enters at about the exact
// fraction.
TEST(DynamicTreeTest, SegmentEntryIsTight) {
  Random rng(12);
  for (int i = 0; i < 20000; ++i) {
    const double scale = std::pow(10.0, rng.Uniform(-2, 4));
    const FloatAabb fb = FloatAabb::Outward(Aabb::FromCenterExtents(Vec3{}, Vec3::Splat(scale)));
    TreeNode n{};
    for (int k = 0; k < 3; ++k) {
      n.min[k] = fb.min[k];
      n.max[k] = fb.max[k];
    }
    // Along x towards the box, offset in y by just over / under its face.
    const double y = scale * (1.0 + (rng.Int(0, 1) ? 1e-4 : -1e-4));
    const Vec3 origin{-3.0 * scale, y, 0.0};
    const Vec3 d{4.0 * scale, 0.0, 0.0};
    const SegmentSetup seg(origin, d, Vec3{});
    double t;
    const bool hit = seg.Entry(n, 1.0, &t);
    ASSERT_EQ(hit, y < scale) << i;
    if (hit) {
      ASSERT_NEAR(t, 0.5, 1e-5) << i;
    }
  }
}

// The vector box test is the six comparisons of the float boxes, touching
// faces included, whatever bits (NaN too) the child words next to the
// corners hold.
TEST(DynamicTreeTest, BoxTestIsTheSixComparisons) {
  Random rng(14);
  int overlaps = 0;
  int touching = 0;
  for (int i = 0; i < 100000; ++i) {
    const FloatAabb a = FloatAabb::Outward(RandomBox(rng, 4.0, 3.0));
    FloatAabb b = FloatAabb::Outward(RandomBox(rng, 4.0, 3.0));
    if (rng.Int(0, 3) == 0) {
      // Make b touch a on one axis: a face of b on the opposite face of a.
      const int axis = rng.Int(0, 2);
      const float w = b.max[axis] - b.min[axis];
      if (rng.Int(0, 1)) {
        b.min[axis] = a.max[axis];
        b.max[axis] = a.max[axis] + w;
      } else {
        b.max[axis] = a.min[axis];
        b.min[axis] = a.min[axis] - w;
      }
    }
    TreeNode n{};
    for (int k = 0; k < 3; ++k) {
      n.min[k] = a.min[k];
      n.max[k] = a.max[k];
    }
    n.child1 = rng.Int(0, 1) ? 0x7FC00000u : static_cast<uint32_t>(rng.engine()());
    n.child2 = rng.Int(0, 1) ? 0xFFFFFFFFu : static_cast<uint32_t>(rng.engine()());
    bool expected = true;
    bool touch = false;
    for (int k = 0; k < 3; ++k) {
      expected = expected && a.min[k] <= b.max[k] && b.min[k] <= a.max[k];
      touch = touch || a.min[k] == b.max[k] || b.min[k] == a.max[k];
    }
    ASSERT_EQ(BoxesOverlap(n, BoxSetup(b)), expected) << i;
    overlaps += expected;
    touching += expected && touch;
  }
  EXPECT_GT(overlaps, 10000);
  EXPECT_GT(touching, 1000);
}

// The bound of a traversal is compared in float (FractionBound): for any
// max fraction, Entry says "entered by max_t" exactly when the entry
// fraction found with no bound is <= max_t in double, also for bounds
// between two floats, on them, and one float step to either side.
TEST(DynamicTreeTest, FloatBoundIsTheDoubleComparison) {
  Random rng(13);
  int near_misses = 0;
  for (int i = 0; i < 50000; ++i) {
    const Aabb b = RandomBox(rng, 10.0, 3.0);
    const FloatAabb fb = FloatAabb::Outward(b);
    TreeNode n{};
    for (int k = 0; k < 3; ++k) {
      n.min[k] = fb.min[k];
      n.max[k] = fb.max[k];
    }
    const SegmentSetup seg(rng.InBox(20.0), rng.InBox(40.0), Vec3{});
    double t_free;
    if (!seg.Entry(n, std::numeric_limits<double>::max(), &t_free)) continue;
    // The entry fraction is a float widened exactly.
    ASSERT_EQ(t_free, static_cast<double>(static_cast<float>(t_free))) << i;
    const float tf = static_cast<float>(t_free);
    const double bounds[] = {t_free,
                             static_cast<double>(NextFloatUp(tf)),
                             static_cast<double>(NextFloatDown(tf)),
                             std::nextafter(t_free, 2.0),
                             std::nextafter(t_free, -1.0),
                             rng.Uniform(0.0, 1.0)};
    for (const double max_t : bounds) {
      double t;
      const bool entered = seg.Entry(n, max_t, &t);
      ASSERT_EQ(entered, t_free <= max_t) << i << " t " << t_free << " max_t " << max_t;
      if (entered) {
        ASSERT_EQ(t, t_free) << i;
      }
      near_misses += !entered && max_t >= static_cast<double>(NextFloatDown(tf));
    }
    // The traversal's pop test agrees too.
    ASSERT_EQ(tf > FractionBound(std::nextafter(t_free, -1.0)), true) << i;
    ASSERT_EQ(tf > FractionBound(t_free), false) << i;
  }
  EXPECT_GT(near_misses, 300);
}

// Entry2 tests two different nodes at once: each one's bit (bit 0, bit
// kEntered2) and entry fraction are Entry()'s for that node alone, for
// bounds on, above and below the entry fraction, 0, and beyond the float
// range; a NaN bound enters nothing (the test takes min(exit, bound)).
TEST(DynamicTreeTest, Entry2IsEntryOfEachNode) {
  Random rng(17);
  const auto random_node = [&] {
    const FloatAabb fb = FloatAabb::Outward(RandomBox(rng, 10.0, 3.0));
    TreeNode n{};
    for (int k = 0; k < 3; ++k) {
      n.min[k] = fb.min[k];
      n.max[k] = fb.max[k];
    }
    n.child1 = 0x7FFFFFFFu;  // NaN bits in the lanes next to min and max
    n.child2 = 0xFFFFFFFFu;
    return n;
  };
  int entered[2] = {0, 0};
  int differ = 0;
  for (int i = 0; i < 50000; ++i) {
    const TreeNode n[2] = {random_node(), random_node()};
    const Vec3 ext = rng.Int(0, 1) ? Vec3{} : rng.InBox(0.5).Abs();
    // Aimed at (about) one of the two, so that each is often entered.
    const TreeNode& aim = n[rng.Int(0, 1)];
    const Vec3 target{0.5 * (aim.min[0] + aim.max[0]), 0.5 * (aim.min[1] + aim.max[1]),
                      0.5 * (aim.min[2] + aim.max[2])};
    const Vec3 origin = rng.InBox(20.0);
    const SegmentSetup seg(origin, (target + rng.InBox(2.0) - origin) * rng.Uniform(0.5, 2.0),
                           ext);
    double t_free[2];
    bool in_free[2];
    for (int j = 0; j < 2; ++j) {
      in_free[j] = seg.Entry(n[j], std::numeric_limits<double>::max(), &t_free[j]);
    }
    const double pick = in_free[rng.Int(0, 1)] ? t_free[rng.Int(0, 1)] : rng.Uniform(0.0, 1.0);
    const float bounds[] = {FractionBound(pick), NextFloatUp(FractionBound(pick)),
                            NextFloatDown(FractionBound(pick)), 0.0f, 1.0f,
                            std::numeric_limits<float>::max(),
                            std::numeric_limits<float>::infinity()};
    for (const float bound : bounds) {
      float t[2];
      const unsigned got = seg.Entry2(n[0], n[1], EntryBound(bound), &t[0], &t[1]);
      const bool got_in[2] = {(got & 1u) != 0, (got & SegmentSetup::kEntered2) != 0};
      for (int j = 0; j < 2; ++j) {
        double t_want;
        const bool want = seg.Entry(n[j], bound, &t_want);
        ASSERT_EQ(got_in[j], want) << i << " node " << j << " bound " << bound;
        if (want) {
          ASSERT_EQ(t[j], t_want) << i << " node " << j;
        }
        entered[j] += want;
      }
      differ += got_in[0] != got_in[1];
    }
    float t[2];
    ASSERT_EQ(seg.Entry2(n[0], n[1], EntryBound(std::numeric_limits<float>::quiet_NaN()), &t[0],
                         &t[1]),
              0u)
        << i;
  }
  EXPECT_GT(entered[0], 5000);
  EXPECT_GT(entered[1], 5000);
  EXPECT_GT(differ, 5000);
}

// A tree of one leaf: the cursors start at the root (no first step to pop
// it) and report the leaf exactly when the one-shot walks do.
TEST(DynamicTreeTest, CursorsOnALoneLeaf) {
  DynamicTree tree;
  tree.CreateLeaf(Aabb::FromCenterExtents({5, 0, 0}, {1, 1, 1}), 7, 3);
  for (const double x : {-20.0, 0.0, 5.0, 30.0}) {
    const FloatAabb box = FloatAabb::Outward(Aabb::FromCenterExtents({x, 0, 0}, {2, 2, 2}));
    const SegmentSetup seg({x, 0, 0}, {8, 0, 0}, Vec3{});
    for (const uint32_t mask : {0xFFFFFFFFu, 1u << 3, 1u << 4}) {
      std::vector<uint32_t> walked, stepped;
      QueryTree(tree, box, mask, [&](uint32_t item, uint32_t) { walked.push_back(item); });
      BoxCursor box_cursor;
      box_cursor.Begin(tree, box, mask);
      while (box_cursor.Step([&](uint32_t item, uint32_t) { stepped.push_back(item); },
                             NoItemPrefetch{})) {
      }
      ASSERT_EQ(stepped, walked) << x << " " << mask;
      ASSERT_EQ(walked.size(), (std::fabs(x - 5.0) <= 3.0 && mask != (1u << 4)) ? 1u : 0u) << x;
      walked.clear();
      stepped.clear();
      const auto leaf_fn = [](std::vector<uint32_t>* seen) {
        return [seen](uint32_t item, uint32_t, double max_t) {
          seen->push_back(item);
          return max_t;
        };
      };
      CastTree(tree, seg, mask, 1.0, leaf_fn(&walked));
      SegmentCursor seg_cursor;
      seg_cursor.Begin(tree, &seg, mask, 1.0);
      while (seg_cursor.Step(leaf_fn(&stepped), NoItemPrefetch{})) {
      }
      ASSERT_EQ(stepped, walked) << x << " " << mask;
      ASSERT_EQ(walked.size(), (x <= 6.0 && x >= -4.0 && mask != (1u << 4)) ? 1u : 0u) << x;
    }
  }
}

// The wide copy of an empty tree and of a lone leaf (the root a leaf), and
// its version: every change to the tree gives the tree a version no copy of
// it was made at.
TEST(DynamicTreeTest, WideCopyOfEmptyAndLoneLeaf) {
  DynamicTree tree;
  const std::vector<uint32_t> no_leaves;
  const FloatAabb all = FloatAabb::Outward(Aabb::FromCenterExtents({0, 0, 0}, {50, 50, 50}));
  const SegmentSetup seg({-20, 0, 0}, {40, 0, 0}, Vec3{});
  uint32_t closest;
  {
    const WideTree wide(tree);
    EXPECT_TRUE(wide.empty());
    EXPECT_TRUE(WideQuery(wide, tree, no_leaves, all, ~0u).empty());
    EXPECT_TRUE(WideCast(wide, tree, no_leaves, seg, ~0u, false, &closest).empty());
  }
  std::vector<uint32_t> leaf(8, DynamicTree::kNull);
  leaf[7] = tree.CreateLeaf(Aabb::FromCenterExtents({5, 0, 0}, {1, 1, 1}), 7, 3);
  const WideTree wide(tree);
  EXPECT_EQ(wide.node_count(), 1u);
  for (const uint32_t mask : {0xFFFFFFFFu, 1u << 3, 1u << 4}) {
    const std::vector<uint32_t> want = mask == (1u << 4) ? no_leaves : std::vector<uint32_t>{7};
    EXPECT_EQ(WideQuery(wide, tree, leaf, all, mask), want) << mask;
    EXPECT_EQ(WideCast(wide, tree, leaf, seg, mask, false, &closest), want) << mask;
  }
  const SegmentSetup away({-20, 5, 0}, {40, 0, 0}, Vec3{});
  EXPECT_TRUE(WideCast(wide, tree, leaf, away, ~0u, false, &closest).empty());
  // Each change moves the version on.
  std::vector<uint64_t> versions{tree.version()};
  tree.MoveLeaf(leaf[7], Aabb::FromCenterExtents({6, 0, 0}, {1, 1, 1}));
  versions.push_back(tree.version());
  tree.SetLeafLayer(leaf[7], 5);
  versions.push_back(tree.version());
  tree.SetLeafItem(leaf[7], 6);
  versions.push_back(tree.version());
  leaf[5] = tree.CreateLeaf(Aabb::FromCenterExtents({0, 0, 0}, {1, 1, 1}), 5, 0);
  versions.push_back(tree.version());
  tree.DestroyLeaf(leaf[5]);
  versions.push_back(tree.version());
  tree.Clear();
  versions.push_back(tree.version());
  std::sort(versions.begin(), versions.end());
  EXPECT_EQ(std::adjacent_find(versions.begin(), versions.end()), versions.end());
  EXPECT_NE(wide.version(), tree.version());
}

// A negative max fraction from the leaf function stops a segment walk at
// once: the cursor reports done on that step and on every later one, having
// called the function for the same leaves as CastTree (the k-th leaf reached
// stops both), however many nodes were still stacked.
TEST(DynamicTreeTest, NegativeFractionStopsTheSegmentWalks) {
  DynamicTree tree;
  for (uint32_t i = 0; i < 200; ++i) {
    tree.CreateLeaf(Aabb::FromCenterExtents({i * 1.0, (i % 7) * 0.3, 0}, {0.8, 0.8, 0.8}), i,
                    0);
  }
  const SegmentSetup seg({-5, 0.9, 0}, {220, 0, 0}, Vec3{0.2, 0.2, 0.2});
  for (const size_t stop_at : {size_t{1}, size_t{2}, size_t{17}, size_t{150}}) {
    const auto leaf_fn = [stop_at](std::vector<uint32_t>* seen) {
      return [seen, stop_at](uint32_t item, uint32_t, double max_t) {
        seen->push_back(item);
        return seen->size() == stop_at ? -1.0 : max_t;
      };
    };
    std::vector<uint32_t> walked, stepped;
    CastTree(tree, seg, 0xFFFFFFFFu, 1.0, leaf_fn(&walked));
    SegmentCursor cursor;
    cursor.Begin(tree, &seg, 0xFFFFFFFFu, 1.0);
    const auto fn = leaf_fn(&stepped);
    while (cursor.Step(fn, NoItemPrefetch{})) {
    }
    ASSERT_EQ(walked.size(), stop_at);
    ASSERT_EQ(stepped, walked) << stop_at;
    for (int again = 0; again < 3; ++again) {
      EXPECT_FALSE(cursor.Step(fn, NoItemPrefetch{})) << stop_at;
    }
    EXPECT_EQ(stepped.size(), stop_at);
  }
}

// Insertion with SAH and rotations keeps a sorted insertion order shallow.
TEST(DynamicTreeTest, SortedInsertsStayShallow) {
  DynamicTree tree;
  for (uint32_t i = 0; i < 4096; ++i) {
    tree.CreateLeaf(Aabb::FromCenterExtents({i * 2.0, 0, 0}, {0.5, 0.5, 0.5}), i, 0);
  }
  EXPECT_EQ(tree.Validate(), "");
  EXPECT_LE(tree.Height(), 40);
}

}  // namespace
}  // namespace hitbox
