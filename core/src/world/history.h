// The pose history of a ColliderSet (lag compensation): only colliders that
// changed inside the window are tracked, each with its shape once and a pose
// per tick it changed in, in a small tree of their whole-window boxes; the
// last two batches are logged so that RestoreRevision can undo a tick.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "broad_phase/dynamic_tree.h"
#include "world/pose_samples.h"
#include "hitbox/world/collider_set.h"
#include "hitbox/world/history.h"
#include "hitbox/status.h"

namespace hitbox::internal {

/// Colliders of the history placed at a rewound query's tick, with their
/// bounding radii (about their position).
struct PlacedColliders {
  std::vector<Collider> colliders;
  std::vector<float> radius;
};

class History {
 public:
  /// `died` of an incarnation that still exists.
  static constexpr uint64_t kAlive = UINT64_MAX;

  /// Ticks kept (>= 1; 1 keeps only the newest tick).
  uint32_t window() const { return window_; }
  void set_window(uint32_t ticks) { window_ = ticks < 1 ? 1 : ticks; }
  /// True once a batch carried a tick.
  bool has_ticks() const { return has_ticks_; }
  /// Oldest and newest tick available (meaningful when has_ticks()).
  TickRange Range() const;
  /// INVALID_ARGUMENT when `tick` is lower than the newest tick or above kMaxTick.
  Status CheckTick(uint64_t tick, const std::string& field) const;
  /// OUT_OF_RANGE when no tick is recorded or t lies outside Range().
  Status CheckAt(double t, const std::string& field) const;
  bool InRange(double t) const;

  /// Starts a batch that is applied at `tick` (nullopt: at the newest tick)
  /// on top of revision `revision_before`. On a new tick, first drops what
  /// left the window; ids no longer tracked go to `untracked`.
  void BeginBatch(std::optional<uint64_t> tick, uint64_t revision_before,
                  std::vector<uint64_t>* untracked);
  /// Records an added collider (as stored: normalized pose).
  void OnAdd(const Collider& c);
  /// Records a move of `now` (already at its new pose) from `before`.
  void OnMove(const Collider& now, const Pose& before);
  /// Records the removal of `before` (also the first half of a replace).
  void OnRemove(const Collider& before);
  /// True when the history holds the current incarnation of `id` (rewound
  /// queries take it from here, not from the set).
  bool IsTracked(uint64_t id) const { return live_.count(id) != 0; }

  /// Undoes every logged batch applied on top of a revision >= `revision`;
  /// ids whose tracking may have changed go to `touched`.
  void UndoTo(uint64_t revision, std::vector<uint64_t>* touched);

  /// What a query can reach: the segment from + [0, 1] d (d = 0: a point)
  /// grown by `radius` (the query's bounding radius plus slack). Colliders
  /// whose bounding sphere at t stays out of it are not placed (a
  /// conservative cull: the query's own tests are stricter).
  struct Reach {
    Vec3 from;
    Vec3 d;
    double radius = 0.0;
  };
  /// Appends the incarnations existing at t (in range) whose window box
  /// overlaps `box` (layer in `mask`), placed at t.
  void PlaceInBox(double t, const FloatAabb& box, uint32_t mask, const Reach& reach,
                  PlacedColliders* out) const;
  /// The same for the window boxes a segment reaches by fraction max_t,
  /// nearer boxes first; each placed collider goes at once to
  /// fn(collider, radius, max_t), which returns the new max_t (as CastTree).
  template <typename Fn>
  void PlaceAlong(double t, const SegmentSetup& seg, uint32_t mask, double max_t,
                  const Reach& reach, PlacedColliders* out, Fn&& fn) const {
    CastTree(tree_, seg, mask, max_t, [&](uint32_t slot, uint32_t, double m) {
      const size_t before = out->colliders.size();
      PlaceAt(slot, t, reach, out);
      return out->colliders.size() == before ? m : fn(out->colliders.back(), out->radius.back(), m);
    });
  }

  /// Tracked incarnations and pose samples held (for tests and benchmarks).
  size_t TrackCount() const { return tracks_.size() - free_.size(); }
  size_t SampleCount() const;
  size_t MemoryBytes() const;

 private:
  struct Track {
    Collider collider;  ///< id, shape, layer, user data (pose unused)
    uint64_t born = 0;  ///< exists from this tick on (0: before the window)
    uint64_t died = kAlive;
    PoseSamples samples;  ///< ascending ticks; samples[0].tick <= born
    uint32_t leaf = DynamicTree::kNull;
    float radius = 0.0f;
    uint64_t box_tick = 0;  ///< newest tick when the box was last recomputed
    Aabb box;               ///< holds every pose of the samples (bounding spheres)
    bool in_use = false;
  };
  struct UndoOp {
    enum Kind : uint8_t { kPopSample, kSetSample, kDied, kNewSlot, kLive } kind;
    uint32_t slot = 0;
    uint64_t id = 0;
    uint64_t value = 0;  ///< kDied: old died; kLive: old slot or kNoSlot
    PoseSample sample;   ///< kSetSample: the overwritten sample
  };
  struct BatchLog {
    uint64_t revision_before = 0;
    bool has_ticks = false;
    uint64_t first = 0;
    uint64_t newest = 0;
    std::vector<UndoOp> ops;
  };
  static constexpr uint64_t kNoSlot = UINT64_MAX;

  /// Two or more ticks are queryable: changes must be remembered.
  bool Tracking() const { return has_ticks_ && window_ > 1 && newest_ > first_; }
  uint32_t NewTrack(const Collider& c, uint64_t born, const Pose& first_pose, uint64_t first_tick);
  void FreeTrack(uint32_t slot);
  void SetLive(uint64_t id, uint64_t slot);
  void SetPose(uint32_t slot, const Pose& pose);
  void GrowBox(Track& t, const Pose& pose);
  void RecomputeBox(Track& t);
  void Prune(uint64_t oldest, std::vector<uint64_t>* untracked);
  /// Places track `slot` at `at` into `out` when it exists then and `reach`
  /// may touch its bounding sphere.
  void PlaceAt(uint32_t slot, double at, const Reach& reach, PlacedColliders* out) const;
  void Log(const UndoOp& op) {
    if (!logs_.empty()) logs_.back().ops.push_back(op);
  }

  uint32_t window_ = kDefaultHistoryTicks;
  bool has_ticks_ = false;
  uint64_t first_ = 0;   ///< first tick ever recorded
  uint64_t newest_ = 0;  ///< newest tick recorded
  std::vector<Track> tracks_;
  std::vector<uint32_t> free_;
  std::unordered_map<uint64_t, uint32_t> live_;  ///< id -> its current incarnation
  DynamicTree tree_;
  std::vector<BatchLog> logs_;  ///< the last two batches, oldest first
};

}  // namespace hitbox::internal
