// The query jobs of a ColliderSet (one per query kind) and the budget
// control of a batch, shared by the single queries (collider_set_queries.cc)
// and the batch runner (collider_set_batch.cc).
#pragma once

#include <bit>

#include "collision/cast_internal.h"
#include "collision/gathered_cast.h"
#include "collision/triangles/sweep_ties.h"
#include "collision/work_meter.h"
#include "world/collider_set_internal.h"
#include "world/overlap_pair.h"
#include "world/query_hits.h"
#include "world/sweep_memo.h"

namespace hitbox {

// ---------------------------------------------------------------------------
// Queries
//
// Each query kind is a job: set up from the query, fed the candidate leaves
// of a tree traversal (Leaf), then finished (sorting, contacts). Run() drives
// one job with QueryTree / CastTree; RunBatch() steps up to kInterleave jobs
// of one kind in turn with the cursors of dynamic_tree.h so their cache
// misses overlap. Both feed each job the same leaves in the same order.

/// Traversals stepped in turn by RunBatch (enough to cover a memory latency).
constexpr size_t kInterleave = 8;


/// Orders overlap hits by id: the heap of the max_hits lowest ids keeps the
/// highest on top.
inline bool IdLess(const OverlapHit& a, const OverlapHit& b) { return a.id < b.id; }

struct ColliderSet::Impl::OverlapJob {
  const ColliderSet::Impl* m = nullptr;
  const OverlapQuery* q = nullptr;
  std::vector<OverlapHit>* hits = nullptr;
  PairCounter* pairs = nullptr;
  Pose pose;
  FloatAabb box;
  double r_q = 0.0;
  uint32_t cap = 0;
  bool has_ignore = false;
  /// Rewound queries: the set's colliders to pass over (tracked[]), and the
  /// history's colliders placed at the tick (items with kPlacedItem).
  const uint8_t* skip = nullptr;
  const internal::PlacedColliders* placed = nullptr;
  /// The mesh groups this query took (OverlapGroups): the walk passes their
  /// members over.
  const internal::MeshGroups* grouped = nullptr;

  void Start(const ColliderSet::Impl& set, const OverlapQuery& query,
             std::vector<OverlapHit>* out) {
    m = &set;
    q = &query;
    hits = out;
    hits->clear();
    grouped = nullptr;
    cap = internal::KeptHits(q->filter.max_hits);
    pose = Normalized(q->pose);
    box = FloatAabb::Outward(q->shape.WorldBounds(pose).Expanded(kBoxSlack));
    r_q = q->shape.BoundingRadius() + kBoxSlack;
    has_ignore = !q->filter.ignore.empty();
  }
  /// The query against the merged meshes of `groups` its mask takes, before
  /// the walk, which then passes their members over: each member answers as
  /// its own mesh (SurfaceOverlapMembers).
  void OverlapGroups(const internal::MeshGroups* groups) {
    if (groups == nullptr || !IsConvexKind(q->shape.kind())) return;
    grouped = groups;
    static thread_local std::vector<std::pair<uint32_t, uint32_t>> touched;
    for (const internal::MeshGroups::Group& g : groups->groups()) {
      if ((q->filter.mask & (1u << g.layer)) == 0) continue;
      ++pairs->count;
      touched.clear();
      internal::SurfaceOverlapMembers(q->shape, pose, g.merged, g.pose, g.first, &touched);
      for (const auto& [member, triangle] : touched) {
        const uint32_t item = g.item[member];
        const Collider& c = m->colliders[item];
        if (Kept(c)) AddHit(c, item, triangle);
      }
    }
  }
  void Leaf(uint32_t item) {
    if (skip != nullptr && skip[item] != 0) return;
    if (grouped != nullptr && grouped->Grouped(item)) return;
    LeafOf(m->colliders[item], m->radius[item], item);
  }
  /// False when c is ignored, or cannot make the cut of max_hits.
  bool Kept(const Collider& c) const {
    if (has_ignore && std::find(q->filter.ignore.begin(), q->filter.ignore.end(), c.id) !=
                          q->filter.ignore.end()) {
      return false;
    }
    // With max_hits, keep only the lowest ids found so far (a max-heap by
    // id): a higher id than the heap's top cannot make the cut.
    return !(cap != 0 && hits->size() == cap && c.id > hits->front().id);
  }
  void LeafOf(const Collider& c, float leaf_radius, uint32_t item) {
    if (!Kept(c)) return;
    bool tested = false;
    const uint32_t sub_shape = internal::OverlapPiece(q->shape, pose, r_q, c, leaf_radius, &tested);
    pairs->count += tested;
    if (sub_shape == internal::kNoOverlap) return;
    AddHit(c, item, sub_shape);
  }
  void AddHit(const Collider& c, uint32_t item, uint32_t sub_shape) {
    const bool full = cap != 0 && hits->size() == cap;
    OverlapHit h;
    h.id = c.id;
    h.sub_shape = sub_shape;
    h.user_data = item;  // index for now; replaced in Finish
    if (cap == 0) {
      hits->push_back(h);
      return;
    }
    if (full) {
      std::pop_heap(hits->begin(), hits->end(), IdLess);
      hits->back() = h;
    } else {
      hits->push_back(h);
    }
    std::push_heap(hits->begin(), hits->end(), IdLess);
  }
  void Finish() {
    std::sort(hits->begin(), hits->end(), IdLess);
    if (q->want_contact) pairs->count += hits->size();
    for (OverlapHit& h : *hits) {
      const auto item = static_cast<uint32_t>(h.user_data);
      const Collider& c = m->ColliderAt(item, placed);
      h.user_data = c.user_data;
      if (q->want_contact) {
        Contact contact;
        if (!ComputeContact(q->shape, pose, c.shape, c.pose, &contact)) {
          // Touching within the narrow phase's tolerance: zero depth.
          contact = Contact{};
          contact.depth = 0.0;
          const Vec3 d = c.pose.position - pose.position;
          contact.normal = d.LengthSq() > 0.0 ? d.Normalized() : Vec3{0, 1, 0};
          contact.point_a = contact.point_b = 0.5 * (pose.position + c.pose.position);
        }
        h.contact = contact;
      }
    }
  }
};

/// State shared by sweeps and rays: the closest hit so far, or all hits.
struct ColliderSet::Impl::HitCollector {
  std::vector<CastHit>* hits = nullptr;
  const QueryFilter* filter = nullptr;
  bool all = false;
  bool have_best = false;
  /// All-hits mode with max_hits: `hits` is a max-heap (by HitLess) of at
  /// most cap hits, the worst on top.
  uint32_t cap = 0;
  CastHit best;

  void Start(std::vector<CastHit>* out, const QueryFilter& f, bool all_hits) {
    hits = out;
    hits->clear();
    filter = &f;
    all = all_hits;
    cap = all_hits ? internal::KeptHits(f.max_hits) : 0;
    have_best = false;
  }
  /// The hit a new one must beat (HitLess) to be kept, or nullptr when any
  /// hit is kept: the best in closest-hit mode, the heap's worst when full.
  const CastHit* ToBeat() const {
    if (!all) return have_best ? &best : nullptr;
    return cap != 0 && hits->size() == cap ? &hits->front() : nullptr;
  }
  bool Ignored(uint64_t id) const {
    return !filter->ignore.empty() &&
           std::find(filter->ignore.begin(), filter->ignore.end(), id) != filter->ignore.end();
  }
  /// Largest fraction at which a hit on collider `id` could still be kept,
  /// given the traversal's max fraction `max_t` (at most the fraction of the
  /// hit to beat, once there is one); -1 when it cannot be kept. A hit ties
  /// with the one to beat at equal fraction and then wins only with a lower id.
  double WinningBound(uint64_t id, double max_t) const {
    const CastHit* rival = ToBeat();
    if (rival == nullptr || id < rival->id || max_t < rival->fraction) return max_t;
    if (rival->fraction <= 0.0) return -1.0;
    // The next double towards 0 (fractions are finite).
    return std::bit_cast<double>(std::bit_cast<uint64_t>(rival->fraction) - 1);
  }
  /// Records a hit; returns the new max fraction of the traversal.
  double Add(const Collider& c, const CastResult& r, double max_t) {
    CastHit h = MakeHit(c, r);
    if (all) {
      if (cap == 0) {
        hits->push_back(h);
        return max_t;
      }
      if (hits->size() == cap) {
        if (!HitLess(h, hits->front())) return max_t;
        std::pop_heap(hits->begin(), hits->end(), HitLess);
        hits->back() = h;
      } else {
        hits->push_back(h);
      }
      std::push_heap(hits->begin(), hits->end(), HitLess);
      // Once full, nothing entered later than the worst kept hit can be kept.
      return hits->size() == cap ? std::min(max_t, hits->front().fraction) : max_t;
    }
    if (!have_best || HitLess(h, best)) {
      best = h;
      have_best = true;
      return std::min(max_t, h.fraction);
    }
    return max_t;
  }
  void Finish() {
    if (all) {
      std::sort(hits->begin(), hits->end(), HitLess);
    } else if (have_best) {
      hits->push_back(best);
    }
  }
};

/// What sweeps and rays share: one segment walk whose leaves go to the job's
/// LeafOf, unless a rewound query passes the set's collider over.
template <class Job>
struct ColliderSet::Impl::SegmentJob {
  const ColliderSet::Impl* m = nullptr;
  PairCounter* pairs = nullptr;
  SegmentSetup seg;
  HitCollector out;
  const uint8_t* skip = nullptr;  ///< as OverlapJob::skip
  /// The mesh groups whose members (MeshGroups::Grouped) the query answered
  /// before the walk, which passes them over; null when it walks every collider.
  const internal::MeshGroups* grouped = nullptr;

  double Leaf(uint32_t item, double max_t) {
    if (skip != nullptr && skip[item] != 0) return max_t;
    if (grouped != nullptr && grouped->Grouped(item)) return max_t;
    return static_cast<Job*>(this)->LeafOf(m->colliders[item], m->radius[item], max_t);
  }
  /// True when `ignore` names a member of `groups`: a merged mesh's closest
  /// hit could then be that member's, hiding the others' behind it. (A
  /// query ignoring only other colliders, its own player's say, may take
  /// the groups.)
  bool IgnoresAMember(const internal::MeshGroups& groups,
                      const std::vector<uint64_t>& ignore) const {
    for (const uint64_t id : ignore) {
      const uint32_t item = m->IndexOf(id);
      if (item != IdIndex::kEmpty && groups.Grouped(item)) return true;
    }
    return false;
  }
};

/// Triangles of a mesh collider gathered once for a move's sweeps (its
/// frame), for internal::GatheredCast.
struct GatheredMesh {
  /// Where the triangles are (the cache's or the gather's copies).
  const GatheredTriangle* const* refs = nullptr;
  size_t count = 0;
  /// The region they cover: every triangle whose box meets it (mesh frame).
  Aabb region;
  /// The move's shape placed in the mesh's frame for its sweeps there.
  internal::GatheredCast cast;
  /// What a sweep's key (SweepMemo) holds besides its start and translation
  /// (version 0: no key, the sweeps keep no answer).
  internal::MeshSweepKey key;

  /// cast.Cast, or `memo`'s answer to the same sweep (if not null and
  /// keyed), where the answer is then kept.
  bool Cast(const Vec3& from, const Vec3& translation, double t_max, internal::SweepMemo* memo,
            CastResult* out) const {
    if (memo == nullptr || key.version == 0) {
      return cast.Cast(from, translation, t_max, refs, count, region, out);
    }
    internal::MeshSweepKey k = key;
    k.from = from;
    k.translation = translation;
    if (memo->Find(k, t_max, out)) {
      ++internal::MoveCountsOnThisThread().memo_answers;
      return true;
    }
    if (!cast.Cast(from, translation, t_max, refs, count, region, out)) return false;
    memo->Put(k, t_max, *out);
    return true;
  }
};

struct ColliderSet::Impl::CastJob : SegmentJob<CastJob> {
  const CastQuery* q = nullptr;
  Pose pose;
  double r_q = 0.0;
  /// Moves: skip a pair that starts touching while the motion leaves it or
  /// runs along it (within rounding: a motion just projected on the pair's
  /// own plane must not be stopped by it again).
  bool skip_leaving = false;
  /// Closest-hit sweeps leave the contact of a pair that starts overlapping
  /// (ComputeContact, often EPA) to the one pair that wins, in Finish().
  /// Off for moves (skip_leaving reads the normal at once) and for rewound
  /// queries (whose placed colliders need not outlive the walk).
  bool defer_contact = true;
  /// The collider of `out.best` when its contact is deferred, else nullptr.
  const Collider* deferred = nullptr;
  /// A move's ground probe: the answers its gathered meshes give are kept
  /// here, and taken from here when asked before (null: neither).
  internal::SweepMemo* memo = nullptr;

  void Start(const ColliderSet::Impl& set, const CastQuery& query, std::vector<CastHit>* hits) {
    const Pose normalized = Normalized(query.pose);
    const Aabb box = query.shape.WorldBounds(normalized);
    StartAt(set, query, hits, normalized, query.shape.BoundingRadius() + kBoxSlack);
    SetSegment(box);
  }
  /// Start, less the walk's segment (SetSegment), with what it works out of
  /// the query given: the pose normalized and the shape's bounding radius +
  /// kBoxSlack (a move's sweeps share them, or the rotation they come from).
  void StartAt(const ColliderSet::Impl& set, const CastQuery& query, std::vector<CastHit>* hits,
               const Pose& normalized, double bounding_radius) {
    m = &set;
    q = &query;
    deferred = nullptr;
    grouped = nullptr;
    memo = nullptr;
    out.Start(hits, q->filter, q->all_hits);
    pose = normalized;
    r_q = bounding_radius;
  }
  /// The tree walk's segment: `box`, the shape's world box at the start, swept.
  void SetSegment(const Aabb& box) {
    seg = SegmentSetup(box.Center(), q->translation, box.Extents() + Vec3::Splat(kBoxSlack));
  }
  /// A closest-hit sweep (not a move's, ignoring no member) against the merged
  /// meshes of `groups` its mask takes, before the walk, which then passes
  /// their members over; returns the walk's max fraction. Each member
  /// answers as its own mesh (CastMerged) and the members' poses are the
  /// group's to the bit, so the answer is the walk's own.
  double SweepGroups(const internal::MeshGroups* groups) {
    if (groups == nullptr || q->all_hits || skip_leaving ||
        !internal::MergedCastable(q->shape) || IgnoresAMember(*groups, q->filter.ignore)) {
      return 1.0;
    }
    grouped = groups;
    double max_t = 1.0;
    for (const internal::MeshGroups::Group& g : groups->groups()) {
      if ((q->filter.mask & (1u << g.layer)) == 0) continue;
      ++pairs->count;
      MergedSweep sweep{g.first, max_t};
      CastResult r = internal::CastMerged(q->shape, pose, q->translation, g.merged, g.pose,
                                          q->contact_offset, &sweep);
      if (!r.hit()) continue;
      r.sub_shape -= g.first[sweep.member];
      const Collider& c = m->colliders[g.item[sweep.member]];
      // Not deferred (a rewound sweep, or none to make): its contact now, as
      // LeafOf's Cast gives it.
      if (!defer_contact || q->skip_started_contact) StartedContactNow(c, &r);
      max_t = out.Add(c, r, max_t);
      if (defer_contact && out.have_best && out.best.id == c.id) Defer(c, r);
    }
    return max_t;
  }
  /// `mesh`: c's triangles near a move, tried before the mesh walk.
  double LeafOf(const Collider& c, float leaf_radius, double max_t,
                const GatheredMesh* mesh = nullptr) {
    if (out.Ignored(c.id)) return max_t;
    double t;
    if (!SphereSweepEntry(pose.position, q->translation, r_q + leaf_radius, c.pose.position,
                          max_t, &t)) {
      return max_t;
    }
    // The pair may stop as soon as it is known to come later than the hit to
    // beat (the best so far, or the worst of a full all-hits heap), or to tie
    // with it at a higher id (which also skips the contact solver for a
    // second started-overlapping pair).
    CastSettings settings;
    settings.max_iterations = internal::WorldCastIterations();
    const double bound = out.WinningBound(c.id, max_t);
    if (bound < 0.0) return max_t;
    settings.max_fraction = bound;
    settings.contact_offset = q->contact_offset;
    settings.skip_started_contact = q->skip_started_contact;
    ++pairs->count;
    const bool defer = defer_contact && !skip_leaving && !out.all;
    CastResult r;
    const bool gathered = mesh != nullptr && !defer && !(settings.contact_offset > 0.0) &&
                          mesh->Cast(pose.position, q->translation,
                                     internal::FractionBound(settings), memo, &r);
    if (gathered) {
      ++internal::MoveCountsOnThisThread().gathered_mesh_sweeps;
    } else {
      r = defer ? internal::CastWithoutContact(q->shape, pose, q->translation, c.shape, c.pose,
                                               settings)
                : hitbox::Cast(q->shape, pose, q->translation, c.shape, c.pose, settings);
    }
    // A cast that gave up (kFailed) is a hit at its fraction, a lower bound of
    // the time of impact: the query stops there rather than pass through.
    if (!r.hit()) return max_t;
    if (skip_leaving && r.state == CastState::kStartedOverlapping &&
        Dot(r.normal, q->translation) >= -1e-9 * q->translation.Length()) {
      return max_t;
    }
    if (defer && q->skip_started_contact) StartedContactNow(c, &r);
    const double next = out.Add(c, r, max_t);
    if (defer && out.have_best && out.best.id == c.id) Defer(c, r);
    return next;
  }
  /// The contact of `r`, c's cast without it, when it started overlapping
  /// (or its place, when the query skips it).
  void StartedContactNow(const Collider& c, CastResult* r) const {
    internal::FinishStartedCast(q->shape, pose, q->translation, c.shape, c.pose,
                                q->skip_started_contact, r);
  }
  /// c, whose cast `r` is the best so far, has its contact made in Finish()
  /// if it started overlapping and the query wants it.
  void Defer(const Collider& c, const CastResult& r) {
    const bool started = r.state == CastState::kStartedOverlapping;
    deferred = started && !q->skip_started_contact ? &c : nullptr;
  }
  void Finish() {
    if (deferred != nullptr) {
      // The winner started overlapping: its contact, exactly as Cast() gives it.
      internal::AddStartedContact(q->shape, pose, deferred->shape, deferred->pose, &out.best);
      deferred = nullptr;
    }
    out.Finish();
  }
};

struct ColliderSet::Impl::RayJob : SegmentJob<RayJob> {
  const RayQuery* q = nullptr;
  bool finite = true;             ///< the ray's origin and translation are finite

  void Start(const ColliderSet::Impl& set, const RayQuery& query, std::vector<CastHit>* hits) {
    m = &set;
    q = &query;
    out.Start(hits, q->filter, q->all_hits);
    seg = SegmentSetup(q->origin, q->translation, Vec3::Splat(kBoxSlack));
    finite = q->origin.IsFinite() && q->translation.IsFinite();
    grouped = nullptr;
  }
  /// A closest-hit ray (ignoring no member) against the merged meshes of
  /// `groups` its mask takes, before the walk, which then passes their
  /// members over; returns the walk's max fraction. Each group's closest
  /// hit is its members' (MeshGroups), and the members' poses are the
  /// group's to the bit, so the answer is the walk's own.
  double RayGroups(const internal::MeshGroups* groups) {
    if (groups == nullptr || !finite || q->all_hits ||
        IgnoresAMember(*groups, q->filter.ignore)) {
      return 1.0;
    }
    grouped = groups;
    double max_t = 1.0;
    for (const internal::MeshGroups::Group& g : groups->groups()) {
      if ((q->filter.mask & (1u << g.layer)) == 0) continue;
      ++pairs->count;
      CastResult r = internal::RaycastFinite(q->origin, q->translation, g.merged, g.pose, max_t);
      if (!r.hit()) continue;
      uint32_t local;
      const uint32_t item = groups->Member(g, r.sub_shape, &local);
      r.sub_shape = local;
      max_t = out.Add(m->colliders[item], r, max_t);
    }
    return max_t;
  }
  double LeafOf(const Collider& c, float leaf_radius, double max_t) {
    // A ray that is not finite hits nothing (as Raycast answers it).
    if (!finite || out.Ignored(c.id)) return max_t;
    double t;
    const double bound = out.WinningBound(c.id, max_t);
    if (bound < 0.0) return max_t;
    if (!SphereSweepEntry(q->origin, q->translation, leaf_radius + kBoxSlack,
                          c.pose.position, max_t, &t)) {
      return max_t;
    }
    ++pairs->count;
    // Poses in a set are finite (checked on every change).
    const CastResult r = internal::RaycastFinite(q->origin, q->translation, c.shape, c.pose, bound);
    if (!r.hit()) return max_t;
    return out.Add(c, r, max_t);
  }
  void Finish() { out.Finish(); }
};

template <typename J, typename Q, typename Hits>
void ColliderSet::Impl::RunRewound(const Q& q, Hits* hits, PairCounter* pairs,
                                   bool skip_leaving, const internal::MeshGroups* groups,
                                   const WideTree* rest) const {
  J job;
  job.pairs = pairs;
  if constexpr (std::is_same_v<J, CastJob>) {
    job.skip_leaving = skip_leaving;
    job.defer_contact = false;
  }
  job.Start(*this, q, hits);
  const double t = *q.at_tick;
  if (!history.InRange(t)) {
    hits->clear();
    return;
  }
  thread_local internal::PlacedColliders placed;
  placed.colliders.clear();
  placed.radius.clear();
  job.skip = tracked.data();
  const auto prefetch = ColliderPrefetch();
  // Once the query took the groups, the tree without their members (rest)
  // when there is one.
  [[maybe_unused]] const auto walk_rest = [&] {
    return rest != nullptr && job.grouped != nullptr;
  };
  if constexpr (std::is_same_v<Q, OverlapQuery>) {
    job.OverlapGroups(groups);
    const auto leaf = [&](uint32_t item, uint32_t) { job.Leaf(item); };
#if defined(__SSE2__)
    if (walk_rest()) {
      WideBoxCursor cursor;
      cursor.Begin(*rest, job.box, q.filter.mask);
      while (cursor.Step(leaf, prefetch)) {
      }
    } else {
      QueryTree(tree, job.box, q.filter.mask, leaf, prefetch);
    }
#else
    QueryTree(tree, job.box, q.filter.mask, leaf, prefetch);
#endif
    history.PlaceInBox(t, job.box, q.filter.mask, {job.pose.position, Vec3{}, job.r_q}, &placed);
    for (size_t i = 0; i < placed.colliders.size(); ++i) {
      job.LeafOf(placed.colliders[i], placed.radius[i], kPlacedItem | static_cast<uint32_t>(i));
    }
    job.placed = &placed;
  } else {
    // The set's tree first (most hits end on static colliders, which then
    // shorten the history's walk), then the history's boxes, nearer first.
    double max_t = 1.0;
    if constexpr (std::is_same_v<J, RayJob>) {
      max_t = job.RayGroups(groups);
    } else {
      max_t = job.SweepGroups(groups);
    }
    const auto leaf = [&](uint32_t item, uint32_t, double mt) {
      return max_t = job.Leaf(item, mt);
    };
#if defined(__SSE2__)
    if (walk_rest()) {
      WideSegmentCursor cursor;
      cursor.Begin(*rest, &job.seg, q.filter.mask, max_t);
      while (cursor.Step(leaf, prefetch)) {
      }
    } else {
      CastTree(tree, job.seg, q.filter.mask, max_t, leaf, prefetch);
    }
#else
    CastTree(tree, job.seg, q.filter.mask, max_t, leaf, prefetch);
#endif
    internal::History::Reach reach;
    if constexpr (std::is_same_v<Q, CastQuery>) {
      reach = {job.pose.position, q.translation, job.r_q};
    } else {
      reach = {q.origin, q.translation, kBoxSlack};
    }
    history.PlaceAlong(t, job.seg, q.filter.mask, max_t, reach, &placed,
                       [&](const Collider& c, float leaf_radius, double mt) {
                         return job.LeafOf(c, leaf_radius, mt);
                       });
  }
  job.Finish();
}

/// Work between two checks of a batch's budget, deadline and cancellation:
/// tree steps (a few microseconds of work).
constexpr uint64_t kCheckEvery = 1024;

/// The shared state of one budgeted batch: work so far (all threads), and
/// why it stopped, if it did.
struct ColliderSet::Impl::BatchControl {
  const QueryBudget* budget = nullptr;
  std::atomic<uint64_t> nodes{0};
  std::atomic<uint64_t> pair_tests{0};
  /// 0 while running; else 1 + the ErrorCode that stopped it.
  std::atomic<int> stop{0};

  bool Stopped() const { return stop.load(std::memory_order_relaxed) != 0; }
  void Stop(ErrorCode code) {
    int expected = 0;
    stop.compare_exchange_strong(expected, 1 + static_cast<int>(code));
  }
  /// Adds work done by one thread; false when the batch must stop.
  bool Charge(uint64_t n, uint64_t p) {
    const uint64_t total_nodes = nodes.fetch_add(n, std::memory_order_relaxed) + n;
    const uint64_t total_pairs = pair_tests.fetch_add(p, std::memory_order_relaxed) + p;
    if (Stopped()) return false;
    if ((budget->max_nodes != 0 && total_nodes > budget->max_nodes) ||
        (budget->max_pair_tests != 0 && total_pairs > budget->max_pair_tests)) {
      Stop(ErrorCode::kResourceExhausted);
      return false;
    }
    return Poll();
  }
  /// Adds pair tests counted inside one narrow-phase query (the triangles of
  /// a mesh or heightfield, the children of a compound: work_meter.h); with
  /// `poll`, checks the deadline and the cancellation too. False when the
  /// batch must stop.
  bool ChargeTests(uint64_t p, bool poll) {
    const uint64_t total_pairs = pair_tests.fetch_add(p, std::memory_order_relaxed) + p;
    if (Stopped()) return false;
    if (budget->max_pair_tests != 0 && total_pairs > budget->max_pair_tests) {
      Stop(ErrorCode::kResourceExhausted);
      return false;
    }
    return !poll || Poll();
  }
  /// The WorkMeter (work_meter.h) of this batch on one thread: the tests
  /// inside long surface and compound queries go to the batch's pair-test
  /// count, and the deadline and cancellation are checked between them, so
  /// one long query stops as a batch does.
  class Meter final : public internal::WorkMeter {
   public:
    explicit Meter(BatchControl* control) : control_(control) {}
    bool Charge(uint64_t tests, bool poll) override { return control_->ChargeTests(tests, poll); }

   private:
    BatchControl* control_;
  };
  /// Checks the deadline and the cancellation only.
  bool Poll() {
    if (budget->deadline != std::chrono::steady_clock::time_point::max() &&
        (budget->now ? budget->now() : std::chrono::steady_clock::now()) >= budget->deadline) {
      Stop(ErrorCode::kDeadlineExceeded);
      return false;
    }
    if (budget->cancelled && budget->cancelled()) {
      Stop(ErrorCode::kCancelled);
      return false;
    }
    return !Stopped();
  }
};

}  // namespace hitbox
