// Mesh triangles decoded by moves, kept per thread from move to move: a
// character's next move gathers mostly the triangles its last one did.
#pragma once

#include <cstdint>
#include <vector>

#include "collision/triangles/gathered_triangle.h"

namespace hitbox::internal {

/// Decoded triangles by (set's mesh version, mesh item, triangle index),
/// direct-mapped. A mesh version is never reused, by any set
/// (NextMeshVersion), so an entry found names the triangle it was decoded
/// from whatever sets came and went since.
class TriangleCache {
 public:
  /// Slots (a power of two): a mesh's consecutive triangles take
  /// consecutive slots, so one of up to this many triangles never evicts
  /// its own.
  static constexpr uint32_t kSlots = 2048;

  /// Starts a move: the triangles Slot gives stay where they are until the
  /// next move starts (the move may point at them).
  void BeginMove() { ++move_; }

  /// The slot for triangle k of the mesh at `item` under mesh version
  /// `version` (> 0); *found tells whether it holds that triangle, else the
  /// caller fills it (Fill). Null when it holds another triangle the move
  /// has taken: the caller decodes this one elsewhere.
  GatheredTriangle* Slot(uint64_t version, uint32_t item, uint32_t k, bool* found) {
    if (entries_.empty()) entries_.resize(kSlots);
    Entry& e = entries_[(k + item * 0x9E3779B1u) & (kSlots - 1)];
    *found = e.version == version && e.item == item && e.k == k;
    if (*found) {
      e.move = move_;
    } else if (e.move == move_) {
      return nullptr;
    }
    last_ = &e;
    return &e.tri;
  }
  /// Marks the slot Slot last returned as holding triangle (version, item, k).
  void Fill(uint64_t version, uint32_t item, uint32_t k) {
    last_->version = version;
    last_->item = item;
    last_->k = k;
    last_->move = move_;
  }

 private:
  struct Entry {
    uint64_t version = 0;  ///< 0: empty (mesh versions start at 1)
    uint32_t item = 0;
    uint32_t k = 0;
    /// The last move that took it (0: none; moves count from 1).
    uint64_t move = 0;
    GatheredTriangle tri;
  };
  std::vector<Entry> entries_;
  Entry* last_ = nullptr;
  uint64_t move_ = 1;
};

}  // namespace hitbox::internal
