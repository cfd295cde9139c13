// The arrays of a TriangleMesh while it is built (Build, BuildOverParts),
// copied into the mesh's one block at the end (Seal), and the node making
// the two builds share.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <utility>
#include <vector>

#include "geometry/sah_split.h"
#include "geometry/triangle_mesh.h"

namespace hitbox {

struct TriangleMesh::Staging {
  /// Leaves SplitLeaf may still split (a node each).
  uint32_t leaf_splits_left = 0;
  std::vector<Node> nodes;
  std::vector<BottomNode> bottom;
  std::vector<Vec3> dvertices;
  std::vector<std::pair<uint32_t, Indices>> dropped;
  std::vector<uint32_t> obase;
  std::vector<uint32_t> fcodes;
  std::vector<float> fvertices;
  std::vector<uint8_t> vpacked;
  std::vector<uint8_t> fpacked;
  /// Triangle records and escape entries as the block keeps them (Build:
  /// staged, then put in leaf order before Seal copies them); empty for a
  /// mesh over parts.
  std::vector<uint8_t> records;
};

/// Sets bits [bit, bit + count) of `bytes` to the low bits of r, whatever
/// they held; the 8 bytes from bit / 8 lie within `bytes` when count <= 57
/// (every packed array keeps 16 bytes of padding).
inline void StoreBits(uint8_t* bytes, uint64_t bit, uint32_t count, PackedRecord r) {
  if (count <= 57) {
    const uint64_t mask = ((uint64_t{1} << count) - 1) << (bit & 7);
    uint64_t x;
    std::memcpy(&x, bytes + (bit >> 3), sizeof(x));
    x = (x & ~mask) | ((static_cast<uint64_t>(r) << (bit & 7)) & mask);
    std::memcpy(bytes + (bit >> 3), &x, sizeof(x));
    return;
  }
  for (uint32_t i = 0; i < count; ++i) {
    const auto m = static_cast<uint8_t>(1u << ((bit + i) & 7));
    uint8_t& b = bytes[(bit + i) >> 3];
    b = ((r >> i) & 1u) ? static_cast<uint8_t>(b | m) : static_cast<uint8_t>(b & ~m);
  }
}

/// The staged position of kept input triangle t: t less the dropped
/// triangles (`dropped`, by input index) before it.
inline uint32_t StagedPosition(
    const std::vector<std::pair<uint32_t, TriangleMesh::Indices>>& dropped, uint32_t t) {
  const auto before = std::lower_bound(
      dropped.begin(), dropped.end(), t,
      [](const std::pair<uint32_t, TriangleMesh::Indices>& d, uint32_t x) { return d.first < x; });
  return t - static_cast<uint32_t>(before - dropped.begin());
}

template <typename ChildWord>
uint32_t TriangleMesh::AddNode(const BuildBoxes& boxes, const std::vector<uint32_t>& order,
                               const uint32_t* bounds, uint32_t parts, Staging* st,
                               ChildWord&& child_word) const {
  const auto self = static_cast<uint32_t>(st->nodes.size());
  st->nodes.emplace_back();
  for (uint32_t i = 0; i < kMeshNodeWidth; ++i) {
    Node& node = st->nodes[self];
    if (i >= parts) {
      ClearChild(&node, i);
      continue;
    }
    Aabb box;
    for (uint32_t k = bounds[i]; k < bounds[i + 1]; ++k) box = box.Union(boxes[order[k]]);
    SetChildBox(&node, i, box);
    const uint32_t word = child_word(i);
    st->nodes[self].child[i] = BottomWord(self, i, word, st);  // st->nodes may have grown
  }
  return self;
}

}  // namespace hitbox
