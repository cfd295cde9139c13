// ColliderSet: the authoritative set of colliders of one game session, with a
// dynamic AABB tree broad phase, batched atomic changes, and overlap / cast /
// raycast world queries (single and batched).
//
// Thread safety: const member functions may run concurrently with each other;
// Apply() must not run concurrently with anything else on the same set (the
// server serializes changes with a reader/writer lock).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <variant>
#include <vector>

#include "hitbox/world/character.h"
#include "hitbox/collision/collide.h"
#include "hitbox/world/history.h"
#include "hitbox/world/watch.h"
#include "hitbox/math/math.h"
#include "hitbox/shape/shapes.h"
#include "hitbox/status.h"

namespace hitbox {

/// Largest valid layer index; layers are 0..31.
inline constexpr uint32_t kMaxLayer = 31;
/// Largest CastQuery::contact_offset, metres (ValidateQuery and the wire).
inline constexpr double kMaxContactOffset = 1e3;
// (kQuatNormTolerance, the tolerance on |q| - 1 of callers' quaternions, is
// in hitbox/shape/shapes.h: compound child poses follow the same rule.)

/// One collider of a set.
struct Collider {
  /// Stable caller-chosen id, unique within the set.
  uint64_t id = 0;
  Shape shape;
  Pose pose;
  /// Collision layer in [0, 31]; a query sees it when mask & (1 << layer).
  uint32_t layer = 0;
  /// Opaque caller data returned with hits.
  uint64_t user_data = 0;
};

/// One entry of a change batch.
struct ColliderChange {
  enum class Kind : uint8_t {
    kAdd,      ///< insert a new collider (id must be unused)
    kReplace,  ///< replace shape, pose, layer and user data of an existing id
    kMove,     ///< set the pose of an existing id (shape, layer, user data kept)
    kRemove,   ///< remove an existing id
    kAddWatch,     ///< add `watch` (its id must be unused among the watches)
    kRemoveWatch,  ///< remove the watch with id collider.id (EXIT for its inside set)
  };
  Kind kind = Kind::kAdd;
  /// For kAdd/kReplace the full collider; kMove uses id + pose; kRemove uses
  /// id; kAddWatch and kRemoveWatch the watch's id.
  Collider collider;
  /// kAddWatch: the watch (shared, so batches copy cheaply).
  std::shared_ptr<const Watch> watch;

  bool IsWatchChange() const { return kind == Kind::kAddWatch || kind == Kind::kRemoveWatch; }

  static ColliderChange Add(const Collider& c) { return {Kind::kAdd, c, nullptr}; }
  static ColliderChange Replace(const Collider& c) { return {Kind::kReplace, c, nullptr}; }
  static ColliderChange Move(uint64_t id, const Pose& pose) {
    ColliderChange ch{Kind::kMove, {}, nullptr};
    ch.collider.id = id;
    ch.collider.pose = pose;
    return ch;
  }
  static ColliderChange Remove(uint64_t id) {
    ColliderChange ch{Kind::kRemove, {}, nullptr};
    ch.collider.id = id;
    return ch;
  }
  static ColliderChange AddWatch(Watch w) {
    ColliderChange ch{Kind::kAddWatch, {}, nullptr};
    ch.collider.id = w.id;
    ch.watch = std::make_shared<const Watch>(std::move(w));
    return ch;
  }
  static ColliderChange RemoveWatch(uint64_t id) {
    ColliderChange ch{Kind::kRemoveWatch, {}, nullptr};
    ch.collider.id = id;
    return ch;
  }
};

/// Which colliders a query may report.
struct QueryFilter {
  /// Bit i set: colliders on layer i are candidates. Default: all layers.
  uint32_t mask = 0xFFFFFFFFu;
  /// Ids never reported (small lists; linear scan).
  std::vector<uint64_t> ignore;
  /// Most hits to report; 0 means no limit of the query's own (in process:
  /// every hit; over the wire the session's max_hits_per_query still
  /// applies). For "all hits" casts and rays the first max_hits in
  /// (fraction, id) order are kept; for overlaps the first max_hits in id
  /// order; a closest-hit query reports one hit whatever it is. When hits
  /// were left out, QueryResult::truncated is set. Queries keep only these
  /// (and one more, to know) as they go (a bounded heap), and candidates
  /// that could not make the cut skip the narrow phase.
  uint32_t max_hits = 0;

  bool Accepts(uint64_t id, uint32_t layer) const;
};

/// "What does this shape overlap?"
struct OverlapQuery {
  Shape shape;
  Pose pose;
  QueryFilter filter;
  /// Fill OverlapHit::contact (penetration depth, normal, points).
  bool want_contact = false;
  /// Answer against the world as it was at this tick (lag compensation; a
  /// real number, see ColliderSet::Ticks()); unset: the current world.
  std::optional<double> at_tick = std::nullopt;
  /// Caller's tag, echoed in QueryResult::tag; the query ignores it.
  uint64_t tag = 0;
};

/// "Where does this shape moving by `translation` first hit?"
struct CastQuery {
  Shape shape;
  Pose pose;
  /// World-frame translation in metres; the shape does not rotate.
  Vec3 translation;
  QueryFilter filter;
  /// false: the closest hit only; true: every hit sorted by (fraction, id).
  bool all_hits = false;
  /// Answer against the world as it was at this tick (lag compensation; a
  /// real number, see ColliderSet::Ticks()); unset: the current world.
  std::optional<double> at_tick = std::nullopt;
  /// Contact offset (skin) in metres, >= 0: contacts shallower than it that
  /// the translation does not drive deeper are no hit, so a shape resting on
  /// a floor sweeps along it freely (CastSettings::contact_offset has the
  /// exact rule). 0: every contact counts. At most kMaxContactOffset.
  double contact_offset = 0.0;
  /// A hit the shape starts overlapping (fraction 0) without its contact
  /// (CastSettings::skip_started_contact): depth 0, normal against the
  /// translation, point at the shape's position; cheaper where only the hit
  /// and its fraction matter. False: the deepest contact.
  bool skip_started_contact = false;
  /// Caller's tag, echoed in QueryResult::tag; the query ignores it.
  uint64_t tag = 0;
};

/// "What does this ray hit?"
struct RayQuery {
  Vec3 origin;
  /// The ray's end is origin + translation (metres).
  Vec3 translation;
  QueryFilter filter;
  /// false: the closest hit only; true: every hit sorted by (fraction, id).
  bool all_hits = false;
  /// Answer against the world as it was at this tick (lag compensation; a
  /// real number, see ColliderSet::Ticks()); unset: the current world.
  std::optional<double> at_tick = std::nullopt;
  /// Caller's tag, echoed in QueryResult::tag; the query ignores it.
  uint64_t tag = 0;
};

/// "The character wants to move by `displacement`: where does it end up?"
/// Collide-and-slide with stepping, slope limit and ground snap (character.h).
struct MoveQuery {
  /// The character's convex shape (a capsule usually; not a mesh or heightfield).
  Shape shape;
  /// Start pose; the shape translates only, its rotation is kept.
  Pose pose;
  /// Desired world displacement in metres (walk + gravity for this tick).
  Vec3 displacement;
  /// What the character collides with; put its own collider in `ignore`.
  /// max_hits does not apply (a move reports every contact, at most
  /// 2 * max_iterations + 4).
  QueryFilter filter;
  MoveSettings settings;
  /// The character's own collider: never collided with, and the service
  /// moves it to the final pose after the batch (atomic apply). Core queries
  /// only ignore it.
  std::optional<uint64_t> apply_to_id = std::nullopt;
  /// Lag compensation: the move runs against the world as it was at this
  /// tick (as OverlapQuery::at_tick); the applied pose is set in the present.
  std::optional<double> at_tick = std::nullopt;
  /// Caller's tag, echoed in QueryResult::tag; the query ignores it.
  uint64_t tag = 0;
};

/// A query of any kind, for batches.
using Query = std::variant<OverlapQuery, CastQuery, RayQuery, MoveQuery>;

/// One collider reported by an overlap query.
struct OverlapHit {
  uint64_t id = 0;
  uint64_t user_data = 0;
  /// Set when the query asked for contacts. A = the query shape, B = the
  /// collider: normal is the direction to move the collider to separate.
  std::optional<Contact> contact;
  /// The piece of the collider touched: for a mesh or heightfield the lowest
  /// input triangle index the query touches, for a compound the lowest child
  /// index (one hit per collider, not per piece); 0 for the convex kinds.
  uint32_t sub_shape = 0;
};

/// One collider reported by a cast or raycast: the pair's CastResult, in the
/// world frame, and the collider it names. A kFailed pair (the cast gave up
/// at its iteration cap) is a hit at the lower bound it reached: the query
/// stops there, never passes through.
struct CastHit : CastResult {
  uint64_t id = 0;
  uint64_t user_data = 0;
};

/// Result of one query of a batch: overlaps for an OverlapQuery, hits for
/// casts and rays (empty: nothing hit), `move` for a MoveQuery.
struct QueryResult {
  std::vector<OverlapHit> overlaps;
  std::vector<CastHit> hits;
  /// Set for a MoveQuery only.
  std::optional<MoveResult> move;
  /// True when filter.max_hits left out hits that the query found (there
  /// were more than max_hits); never for closest-hit casts and rays, moves,
  /// or max_hits 0.
  bool truncated = false;
  /// The query's tag (OverlapQuery::tag, ...), echoed.
  uint64_t tag = 0;
};

/// Bounds on the work of one batch, and how to stop it early (RunBatch).
struct QueryBudget {
  /// Most tree nodes all queries of the batch may visit together; 0: no limit.
  uint64_t max_nodes = 0;
  /// Most pair tests of the whole batch (a query against a collider, and each
  /// mesh or heightfield triangle and compound child it tests); 0: no limit.
  uint64_t max_pair_tests = 0;
  /// Past this time the batch stops with kDeadlineExceeded.
  std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
  /// The clock the deadline is read on, at each poll; empty: steady_clock.
  /// Tests inject one. May be called from several threads at once.
  std::function<std::chrono::steady_clock::time_point()> now;
  /// Polled with the deadline (every ~1000 nodes, or 64 triangles or children
  /// inside one query: microseconds of work); true stops the batch with
  /// kCancelled. May be called from several threads at once.
  std::function<bool()> cancelled;
};

/// Work a batch did: tree nodes visited and narrow-phase pair tests.
struct QueryWork {
  uint64_t nodes = 0;
  uint64_t pair_tests = 0;
};

/// What one change batch may do (ColliderSet::CheckBatch): a server's
/// per-session limits. Defaults: no limit.
struct BatchLimits {
  /// Most own colliders the set may hold after the batch.
  uint64_t max_colliders = UINT64_MAX;
  /// Most triangles of one mesh.
  uint64_t max_mesh_triangles = UINT64_MAX;
  /// Most samples (rows * cols) of one heightfield.
  uint64_t max_heightfield_samples = UINT64_MAX;
  /// Most input points of one convex hull (a compound child's too).
  uint64_t max_hull_points = UINT64_MAX;
  /// Most watches the set may hold after the batch.
  uint64_t max_watches = UINT64_MAX;
};

/// What a batch accepted by ColliderSet::CheckBatch will do.
struct BatchPlan {
  /// Own colliders after the batch.
  uint64_t colliders_after = 0;
  /// Every change is an add: ApplyBatch loads them with AddBulk.
  bool all_adds = true;
  /// Watches after the batch.
  uint64_t watches_after = 0;
};

/// Runs tasks on a fixed set of worker threads (created once, reused).
class ThreadPool;

class ColliderSet {
 public:
  ColliderSet();
  ~ColliderSet();
  ColliderSet(ColliderSet&&) noexcept;
  ColliderSet& operator=(ColliderSet&&) noexcept;
  ColliderSet(const ColliderSet&) = delete;
  ColliderSet& operator=(const ColliderSet&) = delete;

  /// Validates every change (in order, so a batch may add then move an id),
  /// then applies all of them and bumps the revision; or rejects the whole
  /// batch with an error naming the entry index and field and changes
  /// nothing. Codes: kInvalidArgument (bad shape, non-finite pose, non-unit
  /// quaternion, layer > 31), kAlreadyExists (add of an existing id),
  /// kNotFound (replace/move/remove of an unknown id).
  ///
  /// With a `tick` (history, see Ticks()): the batch's changes belong to that
  /// tick; kInvalidArgument (naming both) when it is lower than the newest
  /// tick. Without one, they belong to the newest tick (if any).
  Status Apply(std::span<const ColliderChange> changes,
               std::optional<uint64_t> tick = std::nullopt);

  /// The batch policy of a server, checked without changing anything: the
  /// expected revision (kFailedPrecondition), the tick and the base's ids (as
  /// Apply), then every entry in order against the ids the batch leaves
  /// (kAlreadyExists / kNotFound naming changes[i].add.id, .replace.id,
  /// .move.id or .remove) and the geometry limits (kResourceExhausted naming
  /// changes[i].add|replace.shape and the limit), then the collider count
  /// (kResourceExhausted naming limits.max_colliders). An empty batch is Ok
  /// after the revision check. *plan says what ApplyBatch will do.
  Status CheckBatch(std::span<const ColliderChange> changes, std::optional<uint64_t> tick,
                    std::optional<uint64_t> expected_revision, const BatchLimits& limits,
                    BatchPlan* plan) const;
  /// Applies a batch CheckBatch accepted with `plan`: nothing when empty,
  /// AddBulk when every change is an add, else Apply.
  Status ApplyBatch(std::span<const ColliderChange> changes, std::optional<uint64_t> tick,
                    const BatchPlan& plan);

  /// Bulk load of many new colliders into an empty or non-empty set: same
  /// validation and atomicity as Apply() with kAdd entries, but builds the
  /// tree top-down when the set was empty.
  Status AddBulk(std::span<const Collider> colliders,
                 std::optional<uint64_t> tick = std::nullopt);

  /// Ticks of history kept (>= 1; default kDefaultHistoryTicks): rewound
  /// queries may ask for any real t in [newest - ticks + 1, newest] (not
  /// before the first tick). Set it before the first tick.
  void SetHistoryTicks(uint32_t ticks);
  uint32_t history_ticks() const;
  /// OK when a batch may carry `tick` (not lower than the newest tick, at
  /// most kMaxTick); else kInvalidArgument naming both ticks (as Apply does).
  Status CheckTick(uint64_t tick, const std::string& field = "tick") const;
  /// Oldest and newest tick available to rewound queries; nullopt before the
  /// first batch with a tick.
  std::optional<TickRange> Ticks() const;
  /// OK when every query's at_tick (if set) is available; else kOutOfRange
  /// naming the query (`field`[i].at_tick) and the oldest and newest tick.
  Status CheckQueryTicks(std::span<const Query> queries,
                         const std::string& field = "queries") const;
  /// What the history holds: tracked collider incarnations (those that
  /// changed inside the window), pose samples, heap bytes (in MemoryBytes()).
  struct HistoryStats {
    size_t tracked = 0;
    size_t samples = 0;
    size_t bytes = 0;
  };
  HistoryStats GetHistoryStats() const;

  /// Number of applied batches since construction (starts at 0).
  uint64_t revision() const;
  /// Sets the revision counter back after a batch was undone by applying its
  /// inverse (the service's tick rollback); answers do not depend on it. The
  /// history of the batches applied since `revision` (the last two at most:
  /// the batch and its inverse) is undone exactly, ticks included.
  void RestoreRevision(uint64_t revision);
  /// Sets the revision counter of a set just loaded from storage, after
  /// batches that rebuilt it (a snapshot's colliders, then its watches):
  /// those batches can no longer be taken back by RestoreRevision.
  void SetLoadedRevision(uint64_t revision);
  /// Number of the set's own colliders (a base set's are not counted).
  size_t size() const;
  /// The collider with `id`, the set's own or its base's, or nullptr.
  const Collider* Find(uint64_t id) const;
  /// Union of the world bounds of the own colliders (empty box when none).
  Aabb Bounds() const;
  /// Calls fn for every own collider, in unspecified order.
  void ForEach(const std::function<void(const Collider&)>& fn) const;
  /// Calls fn for every own collider as it was at tick `t` (a real tick in
  /// Ticks(), placed as a rewound query sees it), in unspecified order;
  /// kOutOfRange naming the oldest and newest tick when `t` is outside them.
  Status ForEachAtTick(double t, const std::function<void(const Collider&)>& fn) const;
  /// Bytes of heap used by the own colliders, tree and id index, and the
  /// caches query batches made (a base set is shared and counted where it
  /// is owned, not here). A shape's data shared by several colliders (one
  /// mesh placed by several nodes of a level) counts once a collider: an
  /// upper bound.
  size_t MemoryBytes() const;
  /// Query batches make caches when the queries pay for them (the tree's
  /// 4-wide copy, merged meshes: TreeStats). With `reserve`, a batch calls
  /// reserve(from, to) whenever the caches' bytes are to go from `from` (as
  /// last accepted) to `to`, more or fewer; a cache whose growth reserve
  /// refuses (false) is dropped and the batch answers without it, alike.
  /// Called from query threads, one call at a time per set. Empty: no bound
  /// (the default).
  void SetCacheReserve(std::function<bool(uint64_t from, uint64_t to)> reserve);
  /// With true, the merged meshes are built on a thread of their own from a
  /// copy of the colliders, and the batches go on without them until one
  /// finds the build done (a level's merge takes about a mesh build of its
  /// triangles: no batch, nor its deadline, waits for it). False (the
  /// default): the batch that makes them pays for them, as tests expect.
  void SetBackgroundCaches(bool background);
  /// Waits until a background build in flight is done (the next batch
  /// adopts it); at once when there is none.
  void WaitForCaches() const;

  /// Layers this set over an immutable `base` (a shared map) named `name`:
  /// from then on every query answers over the base's colliders and the
  /// own ones as if they were one set (same sorting, max_hits and closest
  /// hit rules), Find() resolves ids of either, and Apply()/AddBulk() refuse
  /// changes touching a base id: kFailedPrecondition naming the map for
  /// replace, move and remove, kAlreadyExists for an add. Errors:
  /// kFailedPrecondition when this set already has colliders or a base, or
  /// `base` has a base itself. The base must outlive no one: it is shared.
  Status SetBase(std::shared_ptr<const ColliderSet> base, std::string name);
  /// Frees everything the set holds of its own (colliders and their shape
  /// data, tree, id index, history), leaving it as just made with the same
  /// history window; the base stays, so base() may still be read without a
  /// lock (a deleted session's set, dropped at once).
  void Drop();
  /// The base set, or nullptr when none.
  const ColliderSet* base() const { return base_.get(); }
  /// The name given with the base ("" when none).
  const std::string& base_name() const { return base_name_; }
  /// The own collider with `id` (never the base's), or nullptr.
  const Collider* FindOwn(uint64_t id) const;
  /// The error Apply() gives for the first change touching a base id
  /// (kAlreadyExists for an add, kFailedPrecondition otherwise, naming the
  /// entry and the map); Ok when none does or there is no base.
  Status CheckBaseIds(std::span<const ColliderChange> changes) const;


  /// Single queries: a query whose at_tick is outside Ticks() answers
  /// nothing (check with CheckQueryTicks()).
  /// Overlap query; hits sorted by id. With a base set, queries answer over
  /// the base and the own colliders together (a rewound query or a move sees
  /// the base, which never moves, as it is). `truncated` (may be null):
  /// QueryResult::truncated.
  void Overlap(const OverlapQuery& q, std::vector<OverlapHit>* hits,
               bool* truncated = nullptr) const;
  /// Cast query; hits sorted by (fraction, id); one hit unless all_hits.
  void Cast(const CastQuery& q, std::vector<CastHit>* hits, bool* truncated = nullptr) const;
  /// Raycast query; hits sorted by (fraction, id); one hit unless all_hits.
  void Raycast(const RayQuery& q, std::vector<CastHit>* hits, bool* truncated = nullptr) const;
  /// Move query (collide-and-slide): the final position, contacts, ground.
  void Move(const MoveQuery& q, MoveResult* result) const;
  /// Runs one query of any kind.
  void Run(const Query& q, QueryResult* result) const;
  /// Runs a batch; results[i] answers queries[i] (its tag and truncated
  /// set). Uses `pool` (may be null) when the batch is large enough to pay
  /// for it; results are identical whatever the thread count.
  void RunBatch(std::span<const Query> queries, std::span<QueryResult> results,
                ThreadPool* pool = nullptr) const;
  /// RunBatch under a budget: Ok with every result filled; or kOutOfRange
  /// (CheckQueryTicks); or
  /// kResourceExhausted (max_nodes or max_pair_tests would be passed: `work`
  /// tells which), kDeadlineExceeded or kCancelled, with the results cleared.
  /// Stops within a few microseconds of work of the deadline or the
  /// cancellation, also inside one long query. `work` (may be null) receives
  /// the work done.
  Status RunBatch(std::span<const Query> queries, std::span<QueryResult> results,
                  ThreadPool* pool, const QueryBudget& budget, QueryWork* work = nullptr) const;

  /// Checks a query's shape/pose/translation for NaN, infinities and
  /// non-unit quaternions; the error names the field (prefixed by `field`).
  static Status ValidateQuery(const Query& q, const std::string& field = "query");

  /// Watches (watch.h). Added and removed in change batches (kAddWatch,
  /// kRemoveWatch); after each applied batch every watch's inside set equals
  /// its overlap query's answer, found incrementally: only watches that moved
  /// (or are new) run their query, and only colliders the batch changed are
  /// tested against the other watches (found in the watches' own tree).
  /// The ENTER / EXIT events of the last applied batch (Apply, AddBulk,
  /// ApplyBatch), sorted by (watch id, collider id); at most
  /// max_watch_events() of them (see watch_events_truncated()). Cleared by a
  /// batch without watch changes or events, and by RestoreRevision.
  const std::vector<WatchEvent>& watch_events() const;
  /// True when the last batch had more events than max_watch_events(): the
  /// first ones in order are kept, the inside sets are whole all the same.
  bool watch_events_truncated() const;
  /// Events kept per batch (0: no limit; the default).
  void SetMaxWatchEvents(uint64_t max);
  uint64_t max_watch_events() const;
  /// The watch with `id`, or nullptr.
  const WatchState* FindWatch(uint64_t id) const;
  /// Calls fn for every watch, in id order.
  void ForEachWatch(const std::function<void(const WatchState&)>& fn) const;
  size_t watch_count() const;
  /// What the last batch's watch update did (also a refused one's, up to
  /// where it stopped).
  WatchWork last_watch_work() const;
  /// Bounds every later batch's watch update (watch.h): a batch whose update
  /// passes one is refused (kResourceExhausted naming it) and undone whole.
  void SetWatchBudget(const WatchBudget& budget);
  const WatchBudget& watch_budget() const;
  /// Checks the watches' internals (tree, index, attachments, sorted inside
  /// sets); "" when valid. For tests.
  std::string WatchValidate() const;

  /// Broad-phase statistics, for benchmarks and tests.
  struct TreeStats {
    /// Tree height (a single leaf: 0).
    int height = 0;
    /// Allocated tree nodes (2 * size() - 1 when not empty).
    size_t nodes = 0;
    /// Sum of internal node surface areas / root area (SAH cost; lower is better).
    double area_ratio = 0.0;
    /// Nodes of the 4-wide copy that query batches walk, 0 while there is
    /// none for the tree as it is (a batch makes it once the queries since
    /// the last change pay for it).
    size_t wide_nodes = 0;
    /// Triangles of the merged meshes that ray and sweep batches walk
    /// (meshes sharing a pose and layer, merged once the batches since their
    /// last change pay for it), 0 while there are none for the meshes as
    /// they are.
    uint64_t merged_triangles = 0;
    /// Nodes of the wide copy without the merged meshes' members, which the
    /// rays and sweeps that take the merged meshes walk; 0 while there is
    /// none for the tree and meshes as they are.
    size_t rest_nodes = 0;
  };
  TreeStats GetTreeStats() const;
  /// Rebuilds the tree top-down over the current colliders (tight boxes); the
  /// answers of queries do not change. Does not bump the revision.
  void RebuildTree();
  /// Checks the internal structure (tree links, heights, boxes contain the
  /// colliders, id index); "" when valid, else the first problem. For tests.
  std::string TreeValidate() const;

 private:
  struct Impl;
  // The own colliders only (no base): the bodies of RunBatch.
  Status RunBatchOwn(std::span<const Query> queries, std::span<QueryResult> results,
                     ThreadPool* pool, const QueryBudget* budget, QueryWork* work) const;
  // With a base (static_world.cc): the base's answers merged with the own.
  Status RunBatchLayered(std::span<const Query> queries, std::span<QueryResult> results,
                         ThreadPool* pool, const QueryBudget* budget, QueryWork* work) const;
  void RunOneLayered(const Query& q, QueryResult* result) const;
  Status CheckBaseIds(std::span<const Collider> colliders) const;
  // Lets the own queries that must see the base themselves (a move's chain
  // of sweeps) reach the base's colliders.
  void LinkBase();
  // The watches' part of a batch (collider_set_watches.cc), after its
  // changes: moved watches rerun their query, changed colliders are tested
  // against the watches they may reach; the events and the undo record.
  // kResourceExhausted when it passes the watch budget (stopped there).
  Status FinishWatchBatch(std::optional<uint64_t> tick);
  // Takes back the open batch of Apply / AddBulk after a refused watch
  // update: `before` holds each changed id's collider before it (first
  // entry per id; none: it did not exist), then its history and watches.
  void UndoOpenBatch(const std::vector<std::pair<uint64_t, std::optional<Collider>>>& before);
  // A batch's watch change as it is applied: the watch is added (its query
  // runs in FinishWatchBatch), or removed with EXIT for its inside set.
  void AddWatchNow(const Watch& w);
  void RemoveWatchNow(uint64_t id, std::optional<uint64_t> tick);
  // Checks watch change changes[i] against the watches and the colliders
  // the batch leaves so far: `collider_exists` says whether an id exists
  // then, `watches` holds the watch ids the batch touched so far (true:
  // exists, false: removed by it), `count` the watches so far (updated).
  Status CheckWatchChange(const ColliderChange& c, size_t i,
                          const std::function<bool(uint64_t)>& collider_exists,
                          std::unordered_map<uint64_t, bool>* watches, int64_t* count) const;

  std::unique_ptr<Impl> impl_;
  std::shared_ptr<const ColliderSet> base_;
  std::string base_name_;
};

/// A fixed pool of worker threads for RunBatch.
class ThreadPool {
 public:
  /// `threads` workers; 0 means std::thread::hardware_concurrency().
  explicit ThreadPool(size_t threads = 0);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  size_t size() const;
  /// Runs fn(i) for i in [0, count), split across the workers and the
  /// calling thread; returns when all are done.
  void ParallelFor(size_t count, const std::function<void(size_t)>& fn);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace hitbox
