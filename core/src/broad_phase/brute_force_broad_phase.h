// Brute-force broad phase: the reference the dynamic tree is tested against
// (after Jolt's BroadPhaseBruteForce). Every query visits every item. Used by
// tests only.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "broad_phase/dynamic_tree.h"
#include "hitbox/math/math.h"

namespace hitbox {

class BruteForceBroadPhase {
 public:
  /// Adds or replaces the box of `item`.
  void Set(uint32_t item, const Aabb& box, uint32_t layer) {
    if (item >= entries_.size()) entries_.resize(item + 1);
    entries_[item] = {FloatAabb::Outward(box), layer, true};
  }
  void Remove(uint32_t item) { entries_[item].live = false; }

  /// Items whose (float, outward-rounded) box overlaps `box`, ascending.
  std::vector<uint32_t> Query(const FloatAabb& box, uint32_t mask) const {
    std::vector<uint32_t> out;
    for (uint32_t i = 0; i < entries_.size(); ++i) {
      const Entry& e = entries_[i];
      if (!e.live || ((mask >> e.layer) & 1u) == 0) continue;
      bool overlap = true;
      for (int k = 0; k < 3; ++k) {
        overlap = overlap && e.box.min[k] <= box.max[k] && box.min[k] <= e.box.max[k];
      }
      if (overlap) out.push_back(i);
    }
    return out;
  }

  /// Items whose box grown by the segment's extent the segment enters within
  /// [0, max_t], ascending.
  std::vector<uint32_t> Cast(const SegmentSetup& seg, uint32_t mask, double max_t) const {
    std::vector<uint32_t> out;
    for (uint32_t i = 0; i < entries_.size(); ++i) {
      const Entry& e = entries_[i];
      if (!e.live || ((mask >> e.layer) & 1u) == 0) continue;
      TreeNode n{};
      for (int k = 0; k < 3; ++k) {
        n.min[k] = e.box.min[k];
        n.max[k] = e.box.max[k];
      }
      double t;
      if (seg.Entry(n, max_t, &t)) out.push_back(i);
    }
    return out;
  }

 private:
  struct Entry {
    FloatAabb box;
    uint32_t layer = 0;
    bool live = false;
  };
  std::vector<Entry> entries_;
};

}  // namespace hitbox
