// ColliderSet internals shared by its parts: the storage (Impl: dense
// collider arrays with swap-remove, a compact id index, a dynamic AABB tree,
// the history of poses) and the helpers of validation and queries.
//
// The parts: collider_set.cc (storage, changes), collider_set_validation.cc
// (shapes, poses, queries, the batch policy), collider_set_queries.cc (single
// queries and moves, with the jobs of collider_set_jobs.h) and
// collider_set_batch.cc (the batch runner).
#pragma once

#include "hitbox/world/collider_set.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <utility>

#include "collision/cast_internal.h"
#include "world/character_internal.h"
#include "broad_phase/dynamic_tree.h"
#include "broad_phase/wide_tree.h"
#include "world/history.h"
#include "world/id_index.h"
#include "world/mesh_groups.h"
#include "world/watch_set.h"

namespace hitbox {

/// Leaf boxes are the tight world bounds grown by this much (metres), so
/// that the tree never culls a pair the narrow phase (whose tolerances are
/// ~1e-9 m) would call touching. Also the slack of the bounding-sphere checks.
inline constexpr double kBoxSlack = 1e-4;
/// Extra margin of "fat" leaf boxes for colliders added or moved one by one:
/// moves that stay inside the fat box do not touch the tree.
inline constexpr double kFatMargin = 0.3;
/// The base margin of an attached watch's box (WatchSet::BoxOf).
inline constexpr double kWatchFatMargin = 0.1;
/// Batches with at least this many queries use the thread pool.
inline constexpr size_t kParallelBatchMin = 64;
/// A batch makes the tree's wide copy (WideFor) once the queries since the
/// tree last changed number at least its nodes / kWideQueryShare.
inline constexpr uint64_t kWideQueryShare = 8;
/// A batch merges the meshes that share a frame (MeshGroups) once the
/// closest-hit rays (a sweep counting as two) since the meshes last changed
/// number at least their triangles / kGroupQueryShare.
inline constexpr uint64_t kGroupQueryShare = 2;
/// Queries per ParallelFor task (enough for each kind to fill the
/// interleaved traversals of RunRange).
inline constexpr size_t kParallelChunk = 32;

// Validation (collider_set_validation.cc); errors name `field`.

Status Invalid(const std::string& field, const std::string& what);
/// Re-validates a shape's parameters (a Shape is valid by construction, but
/// may have been copied from memory a caller filled in).
Status CheckShape(const Shape& s, const std::string& field);
/// A query shape: a valid shape of a convex kind.
Status CheckQueryShape(const Shape& s, const std::string& field);
Status CheckVec(const Vec3& v, const std::string& field);
Status CheckRotation(const Quat& q, const std::string& field);
Status CheckPose(const Pose& p, const std::string& field);
/// True when CheckPose would accept `p` (no field name made).
bool ValidPose(const Pose& p);
Status CheckCollider(const Collider& c, const std::string& field);
Status ValidateMoveSettings(const MoveSettings& s, const std::string& field);

inline Pose Normalized(const Pose& p) { return {p.position, p.rotation.Normalized()}; }

// Tight world box plus slack: what the tree must contain for a collider.
inline Aabb SlackBounds(const Shape& s, const Pose& p) {
  return s.WorldBounds(p).Expanded(kBoxSlack);
}

// Entry fraction of a sphere of radius r centred at `from` moving by `d`
// into a sphere of radius `rb` at `b`: a lower bound on the first contact of
// any shapes inside them (Ericson, RTCD 5.3.2, intersecting a ray with a
// sphere). Returns false when they never meet within [0, max_t].
__attribute__((always_inline)) inline bool SphereSweepEntry(const Vec3& from, const Vec3& d,
                                                            double r, const Vec3& b, double max_t,
                                                            double* t) {
  const Vec3 m = from - b;
  const double c = Dot(m, m) - r * r;
  if (c <= 0.0) {
    *t = 0.0;
    return true;
  }
  const double bq = Dot(m, d);
  if (bq >= 0.0) return false;  // outside and moving away (or not moving)
  const double a = Dot(d, d);
  const double disc = bq * bq - a * c;
  if (disc < 0.0) return false;
  const double t0 = (-bq - std::sqrt(disc)) / a;
  if (t0 > max_t) return false;
  *t = t0;
  return true;
}

inline bool HitLess(const CastHit& a, const CastHit& b) {
  if (a.fraction != b.fraction) return a.fraction < b.fraction;
  return a.id < b.id;
}

inline CastHit MakeHit(const Collider& c, const CastResult& r) { return {r, c.id, c.user_data}; }

// Capacity after growing past `cap`: by 1/16 (not 2x), which keeps the bytes
// per collider within budget (<= 256 including tree and index) at the cost of
// ~16 copies per collider over a long run of single adds.
inline size_t GrownCapacity(size_t cap) { return cap + cap / 16 + 64; }

inline const std::optional<double>& AtTickOf(const Query& q) {
  return std::visit([](const auto& x) -> const std::optional<double>& { return x.at_tick; }, q);
}
/// Item bit of the history's colliders placed for a rewound query (the set
/// holds fewer than 2^31 colliders).
inline constexpr uint32_t kPlacedItem = 0x80000000u;

/// A mesh version no set has had before (1, 2, ... across every set of the
/// process): a version names the meshes of one set as they are, so moves
/// may key triangles they decoded on it, whatever set comes and goes.
inline uint64_t NextMeshVersion() {
  static std::atomic<uint64_t> last{0};
  return last.fetch_add(1, std::memory_order_relaxed) + 1;
}

/// Narrow-phase pair tests of a job, counted for budgets (jobs of one
/// RunRange share one counter).
struct PairCounter {
  uint64_t count = 0;
};

struct ColliderSet::Impl {
  /// The base set's (a shared map's) body, for the queries that must see it
  /// from inside (moves); the others merge the two answers (static_world.cc).
  const Impl* base = nullptr;
  std::vector<Collider> colliders;
  /// Tree leaf of colliders[i].
  std::vector<uint32_t> leaf_of;
  /// Bounding radius of colliders[i] (about its position), rounded up.
  std::vector<float> radius;
  DynamicTree tree;
  /// An 8-wide copy of `tree` for query batches (WideFor), made once the
  /// batches since the tree last changed have enough queries to pay for it.
  mutable std::mutex wide_mu;
  mutable std::shared_ptr<const WideTree> wide_copy;
  /// The tree version the queries in wide_queries were counted at.
  mutable uint64_t wide_counted_version = 0;
  mutable uint64_t wide_queries = 0;
  /// True when wide_copy is a copy of the tree as it is (wide_mu held).
  bool WideIsCurrent() const {
    return wide_copy != nullptr && wide_copy->version() == tree.version();
  }
  /// wide_copy without the leaves of mesh_groups' members (RestFor): the
  /// tree that rays and sweeps which took the groups walk. Made from the
  /// tree version rest_version and the groups rest_groups (null when its
  /// bytes were refused).
  mutable std::shared_ptr<const WideTree> wide_rest;
  mutable std::shared_ptr<const internal::MeshGroups> rest_groups;
  mutable uint64_t rest_version = 0;
  /// The mesh colliders merged per frame for ray and sweep batches
  /// (GroupsFor), and the version of the set's meshes they were made from:
  /// mesh_version changes whenever a mesh collider is added, changed, moved
  /// or removed, or takes another item, to a value no set had before
  /// (NextMeshVersion; 0 before the first mesh).
  mutable std::shared_ptr<const internal::MeshGroups> mesh_groups;
  uint64_t mesh_version = 0;
  /// The mesh version the queries in groups_queries were counted at, and
  /// the triangles of its meshes.
  mutable uint64_t groups_counted_version = ~uint64_t{0};
  mutable uint64_t groups_queries = 0;
  mutable uint64_t groups_triangles = 0;
  /// A MeshGroups build on its own thread (SetBackgroundCaches): the next
  /// batch that finds it done adopts it if the meshes are still as it saw
  /// them. result is null when the build failed (out of memory).
  struct GroupsBuild {
    std::thread thread;
    std::atomic<bool> done{false};
    std::shared_ptr<const internal::MeshGroups> result;
  };
  mutable std::unique_ptr<GroupsBuild> groups_build;
  bool background_caches = false;
  /// Waits for a build in flight (it reads only its own copy of the colliders).
  ~Impl() {
    if (groups_build != nullptr && groups_build->thread.joinable()) groups_build->thread.join();
  }
  /// SetCacheReserve's function, and the caches' bytes it last accepted.
  std::function<bool(uint64_t, uint64_t)> cache_reserve;
  mutable uint64_t cache_bytes = 0;
  /// Tells cache_reserve the bytes of wide_copy and mesh_groups as they are,
  /// from cache_bytes (wide_mu held); false when it refuses their growth.
  bool ReserveCaches() const;
  /// Marks a change to the meshes (shape a mesh).
  void TouchMeshes(const Shape& shape) {
    if (shape.kind() != ShapeKind::kMesh) return;
    mesh_version = NextMeshVersion();
    if (mesh_groups != nullptr) DropGroups();
  }
  /// Lets the merged meshes go (wide_mu not held): they hold the meshes
  /// they were made from (MeshParts), which a change may have dropped.
  void DropGroups();
  IdIndex index;
  uint64_t revision = 0;
  /// Heap bytes of the colliders' kind data (hull vertices, planes, ...),
  /// counted per collider (a hull shared by copies is counted by each).
  size_t shape_data_bytes = 0;
  /// Poses of the recent ticks (rewound queries).
  internal::History history;
  /// 1 when colliders[i] is tracked by the history: rewound queries take it
  /// from there, not from here.
  std::vector<uint8_t> tracked;
  /// The standing overlap queries (watch.h) and their per-batch state.
  internal::WatchSet watches;

  /// Records that the batch changes own collider i (its box before), when
  /// a watch may care.
  void TouchWatches(uint32_t i) {
    if (!watches.recording()) return;
    const Collider& c = colliders[i];
    const Aabb before = SlackBounds(c.shape, c.pose);
    watches.Touch(c.id, &before);
  }

  /// Refreshes tracked[] of `id` (if it is in the set).
  void SyncTracked(uint64_t id) {
    const uint32_t i = IndexOf(id);
    if (i != IdIndex::kEmpty) tracked[i] = history.IsTracked(id) ? 1 : 0;
  }
  void BeginBatch(std::optional<uint64_t> tick) {
    std::vector<uint64_t> untracked;
    history.BeginBatch(tick, revision, &untracked);
    for (uint64_t id : untracked) SyncTracked(id);
  }

  /// The pose of own collider i (normalized when set). Queries in the
  /// present read own poses through here or the Collider handed to a job;
  /// a rewound query reads the history's placed colliders for the ones it
  /// tracks (ColliderAt).
  const Pose& PoseOf(uint32_t i) const { return colliders[i].pose; }
  /// The collider behind a job's tree item: the own colliders[item], or with
  /// kPlacedItem the history's collider placed at a rewound query's tick.
  const Collider& ColliderAt(uint32_t item, const internal::PlacedColliders* placed) const {
    return (item & kPlacedItem) != 0 ? placed->colliders[item & ~kPlacedItem] : colliders[item];
  }

  auto KeyOf() const {
    return [this](uint32_t i) { return colliders[i].id; };
  }
  uint32_t IndexOf(uint64_t id) const { return index.Find(id, KeyOf()); }

  void Add(const Collider& c) {
    TouchMeshes(c.shape);
    const uint32_t i = static_cast<uint32_t>(colliders.size());
    if (colliders.size() == colliders.capacity()) {
      const size_t cap = GrownCapacity(colliders.capacity());
      colliders.reserve(cap);
      leaf_of.reserve(cap);
      radius.reserve(cap);
      tracked.reserve(cap);
      tree.Reserve(cap);
    }
    colliders.push_back(c);
    tracked.push_back(0);
    shape_data_bytes += c.shape.DataBytes();
    radius.push_back(RoundUp(c.shape.BoundingRadius()));
    colliders.back().pose = Normalized(c.pose);
    index.Insert(c.id, i, KeyOf());
    const Collider& s = colliders.back();
    leaf_of.push_back(tree.CreateLeaf(SlackBounds(s.shape, s.pose).Expanded(kFatMargin), i, s.layer));
  }

  void Replace(uint32_t i, const Collider& c) {
    Collider& s = colliders[i];
    TouchMeshes(s.shape);
    TouchMeshes(c.shape);
    shape_data_bytes -= s.shape.DataBytes();
    shape_data_bytes += c.shape.DataBytes();
    s = c;
    s.pose = Normalized(c.pose);
    radius[i] = RoundUp(s.shape.BoundingRadius());
    if (tree.node(leaf_of[i]).child2 != s.layer) tree.SetLeafLayer(leaf_of[i], s.layer);
    tree.MoveLeaf(leaf_of[i], SlackBounds(s.shape, s.pose).Expanded(kFatMargin));
  }

  void Move(uint32_t i, const Pose& pose) {
    Collider& s = colliders[i];
    TouchMeshes(s.shape);
    const Vec3 from = s.pose.position;
    s.pose = Normalized(pose);
    const Aabb box = SlackBounds(s.shape, s.pose);
    if (!tree.LeafContains(leaf_of[i], box)) {
      tree.MoveLeaf(leaf_of[i], FatBoxAhead(box, kFatMargin, s.pose.position - from));
    }
  }

  void Remove(uint32_t i) {
    // The last collider takes item i: a mesh's item changes.
    TouchMeshes(colliders[i].shape);
    TouchMeshes(colliders.back().shape);
    tree.DestroyLeaf(leaf_of[i]);
    index.Erase(colliders[i].id, KeyOf());
    shape_data_bytes -= colliders[i].shape.DataBytes();
    const uint32_t last = static_cast<uint32_t>(colliders.size() - 1);
    if (i != last) {
      colliders[i] = colliders[last];
      leaf_of[i] = leaf_of[last];
      radius[i] = radius[last];
      tracked[i] = tracked[last];
      tree.SetLeafItem(leaf_of[i], i);
      index.Update(colliders[i].id, i, KeyOf());
    }
    colliders.pop_back();
    leaf_of.pop_back();
    radius.pop_back();
    tracked.pop_back();
  }

  void RebuildTree() {
    std::vector<DynamicTree::BuildItem> items(colliders.size());
    for (size_t i = 0; i < colliders.size(); ++i) {
      const Collider& c = colliders[i];
      items[i] = {SlackBounds(c.shape, c.pose), static_cast<uint32_t>(i), c.layer};
    }
    leaf_of.resize(colliders.size());
    tree.Build(items, &leaf_of);
  }

  /// Starts loading what a leaf test reads (the collider, 2-3 lines, and its radius).
  /// Always inlined, as the tree's PrefetchNext and for the same reason: gcc's
  /// IPA analyses find a function of prefetches alone free of side effects
  /// and delete the calls to it.
  __attribute__((always_inline)) void PrefetchCollider(uint32_t item) const {
    const char* c = reinterpret_cast<const char*>(&colliders[item]);
    __builtin_prefetch(c);
    __builtin_prefetch(c + 64);
    __builtin_prefetch(c + sizeof(Collider) - 1);
    __builtin_prefetch(&radius[item]);
  }

  /// PrefetchCollider as a tree walk's item prefetch (the lambda always
  /// inlined too, for the same reason).
  auto ColliderPrefetch() const {
    return [this](uint32_t item) __attribute__((always_inline)) { PrefetchCollider(item); };
  }

  void Overlap(const OverlapQuery& q, std::vector<OverlapHit>* hits) const;
  void Cast(const CastQuery& q, std::vector<CastHit>* hits) const;
  void Raycast(const RayQuery& q, std::vector<CastHit>* hits) const;
  struct BatchControl;
  /// The wide copy of the tree for a batch of `queries` queries, or null
  /// when the tree has none yet and these queries do not pay for one.
  /// Answers are the same either way; the work counted is in the nodes of
  /// the tree walked.
  std::shared_ptr<const WideTree> WideFor(size_t queries) const;
  /// The mesh groups for a batch of `queries` closest-hit rays and sweeps,
  /// or null when there are none yet for the meshes as they are and these
  /// queries do not pay for making them (or no two meshes share a frame).
  /// Answers are the same either way.
  std::shared_ptr<const internal::MeshGroups> GroupsFor(size_t queries) const;
  /// The wide copy `wide` without the leaves of `groups`' members, for the
  /// queries that take the groups (they pass those leaves over); null when
  /// either is null. Answers are the same either way.
  std::shared_ptr<const WideTree> RestFor(
      const std::shared_ptr<const WideTree>& wide,
      const std::shared_ptr<const internal::MeshGroups>& groups) const;
  /// Answers queries[begin, end) into results[begin, end), interleaving the
  /// traversals of queries of the same kind, over `wide` when it is not
  /// null. With a control (may be null), charges the work to it and returns
  /// false as soon as it says stop.
  bool RunRange(std::span<const Query> queries, std::span<QueryResult> results, size_t begin,
                size_t end, BatchControl* control, const WideTree* wide,
                const internal::MeshGroups* groups, const WideTree* rest) const;
  /// RunRange with (kBudgeted) or without a control: without one, the
  /// traversal loops carry no accounting at all.
  void RunChunks(std::span<const Query> queries, std::span<QueryResult> results, size_t n,
                 ThreadPool* pool, BatchControl* control) const;
  template <bool kBudgeted>
  bool RunRangeImpl(std::span<const Query> queries, std::span<QueryResult> results, size_t begin,
                    size_t end, BatchControl* control, const WideTree* wide,
                    const internal::MeshGroups* groups, const WideTree* rest) const;
  /// RunRangeImpl's overlap, cast and ray queries over `t` (the tree or its
  /// wide copy) with cursors BoxC and SegC; rays and sweeps that take
  /// `groups` walk `rest` instead when it is not null (t is the wide copy).
  template <bool kBudgeted, typename BoxC, typename SegC, typename Tree>
  bool RunTreeKinds(const Tree& t, std::span<const Query> queries,
                    std::span<QueryResult> results, size_t begin, size_t end,
                    BatchControl* control, const internal::MeshGroups* groups,
                    const WideTree* rest) const;

  struct OverlapJob;
  struct HitCollector;
  template <class Job>
  struct SegmentJob;
  struct CastJob;
  struct RayJob;
  class MoveSweeper;
  /// Runs a move; with a control, charges its work and returns false once it
  /// says stop.
  bool Move(const MoveQuery& q, MoveResult* result, BatchControl* control) const;
  /// Answers a query with at_tick (nothing when the tick is not available):
  /// the set's untracked colliders through its tree, then the history's
  /// colliders whose window box the query reaches, placed at the tick.
  /// Overlaps and closest-hit rays and sweeps take `groups` first
  /// (RewindGroups), and then walk `rest` (RestFor) when it is not null.
  template <typename J, typename Q, typename Hits>
  void RunRewound(const Q& q, Hits* hits, PairCounter* pairs, bool skip_leaving = false,
                  const internal::MeshGroups* groups = nullptr,
                  const WideTree* rest = nullptr) const;
  /// `groups` when no member is tracked by the history (each is then where
  /// it is now at every tick a rewound query may ask for), else null.
  const internal::MeshGroups* RewindGroups(const internal::MeshGroups* groups) const;
  /// A cast or ray query (Job CastJob or RayJob): its job fed by one segment
  /// traversal of the tree, or by the history's candidates at q.at_tick.
  template <typename Job, typename Q>
  void RunSegmentQuery(const Q& q, std::vector<CastHit>* hits) const;
  template <typename Q, typename J, typename Cursor, bool kBudgeted, typename BeginFn,
            typename StepFn>
  bool Interleave(std::span<const Query> queries, std::span<QueryResult> results,
                  size_t first, size_t last, BatchControl* control, const BeginFn& begin,
                  const StepFn& step) const;
};

}  // namespace hitbox
