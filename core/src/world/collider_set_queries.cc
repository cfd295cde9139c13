// ColliderSet single queries (overlap, cast, raycast, move), each a job of
// collider_set_jobs.h fed by one tree traversal.
#include <algorithm>

#include "collision/triangles/gathered_triangle.h"
#include "collision/triangles/start_near.h"
#include "geometry/same_bits.h"
#include "geometry/triangle_mesh.h"
#include "geometry/triangle_queries.h"
#include "shape/surface_data.h"
#include "world/collider_set_jobs.h"
#include "world/query_hits.h"
#include "world/sweep_memo.h"
#include "world/triangle_cache.h"

namespace hitbox {

bool QueryFilter::Accepts(uint64_t id, uint32_t layer) const {
  if (layer > kMaxLayer || ((mask >> layer) & 1u) == 0) return false;
  for (uint64_t x : ignore) {
    if (x == id) return false;
  }
  return true;
}

void ColliderSet::Impl::Overlap(const OverlapQuery& q, std::vector<OverlapHit>* hits) const {
  OverlapJob job;
  PairCounter pairs;
  if (q.at_tick) {
    RunRewound<OverlapJob>(q, hits, &pairs);
    return;
  }
  job.pairs = &pairs;
  job.Start(*this, q, hits);
  const auto prefetch = ColliderPrefetch();
  QueryTree(tree, job.box, q.filter.mask, [&](uint32_t item, uint32_t) { job.Leaf(item); },
            prefetch);
  job.Finish();
}

template <typename Job, typename Q>
void ColliderSet::Impl::RunSegmentQuery(const Q& q, std::vector<CastHit>* hits) const {
  PairCounter pairs;
  if (q.at_tick) {
    RunRewound<Job>(q, hits, &pairs);
    return;
  }
  const ScopedStartNear start_near;  // as a batch's (RunRangeImpl)
  Job job;
  job.pairs = &pairs;
  job.Start(*this, q, hits);
  const auto prefetch = ColliderPrefetch();
  CastTree(tree, job.seg, q.filter.mask, 1.0,
           [&](uint32_t item, uint32_t, double max_t) { return job.Leaf(item, max_t); },
           prefetch);
  job.Finish();
}

void ColliderSet::Impl::Cast(const CastQuery& q, std::vector<CastHit>* hits) const {
  RunSegmentQuery<CastJob>(q, hits);
}

void ColliderSet::Impl::Raycast(const RayQuery& q, std::vector<CastHit>* hits) const {
  RunSegmentQuery<RayJob>(q, hits);
}

namespace {
// What a move's sweeps work in, kept per thread from move to move so that a
// move allocates nothing once the buffers have grown (moves do not nest).
// What one set's gathered region holds for a move's sweeps (MoveSweeper::
// Gathered): the leaves, their boxes and their meshes' triangles.
struct GatherLists {
  std::vector<uint32_t> items;
  /// The gathered leaves' boxes (their tree nodes').
  std::vector<Aabb> boxes;
  /// Per gathered leaf, its mesh's triangles near the move (count 0: none
  /// gathered, the mesh walk answers), and the triangles themselves.
  std::vector<GatheredMesh> meshes;
  std::vector<GatheredTriangle> tris;
  /// Where the gathered triangles are (decoded: in the cache, or
  /// in `tris`).
  std::vector<const GatheredTriangle*> refs;
};
struct MoveScratch {
  CastQuery cast;
  std::vector<CastHit> hits;
  std::vector<CastHit> base_hits;
  /// The set's own region and its base's (a static world's).
  GatherLists own;
  GatherLists base;
  /// Mesh triangles decoded by earlier moves.
  internal::TriangleCache decoded;
  /// Mesh sweeps answered by earlier moves.
  internal::SweepMemo memo;
};
MoveScratch& ThreadMoveScratch() {
  thread_local MoveScratch scratch;
  return scratch;
}
}  // namespace

// The world of a move: the set's closest-hit sweeps of the move's shape,
// with the move's filter (plus its own collider), counting the work.
class ColliderSet::Impl::MoveSweeper final : public internal::MoveWorld {
 public:
  MoveSweeper(const Impl& set, const MoveQuery& q, BatchControl* control)
      : set_(set), control_(control), scratch_(ThreadMoveScratch()), cast_(scratch_.cast),
        hits_(scratch_.hits), base_hits_(scratch_.base_hits) {
    // A fresh closest-hit cast of the move's shape; the ignore list keeps its buffer.
    std::vector<uint64_t> ignore = std::move(cast_.filter.ignore);
    ignore.assign(q.filter.ignore.begin(), q.filter.ignore.end());
    if (q.apply_to_id) ignore.push_back(*q.apply_to_id);
    cast_ = CastQuery();
    cast_.shape = q.shape;
    cast_.pose = q.pose;
    cast_.filter.mask = q.filter.mask;
    cast_.filter.ignore = std::move(ignore);
    cast_.filter.max_hits = 0;
    cast_.at_tick = q.at_tick;
    hits_.clear();
    base_hits_.clear();
    // How far a sweep the plan below misses may reach beyond it: the whole
    // displacement, a step up, a snap down and a few skins.
    margin_ = q.displacement.Length() + q.settings.step_height + q.settings.ground_snap_distance +
              4.0 * q.settings.skin_width;
    // What each sweep's job starts from: the rotation normalized once.
    pose_ = Pose(q.pose.position, internal::UnitOf(q.pose.rotation));
    box_ = q.shape.WorldBounds(pose_);
    radius_ = q.shape.BoundingRadius() + kBoxSlack;
    plan_ = PlanRegion(box_, q.displacement, q.settings);
    own_.valid = false;
    base_.valid = false;
    scratch_.decoded.BeginMove();
    // Meshes' triangles near the move serve the closed-form sweeps (a ball
    // or a capsule) without a contact offset.
    gather_meshes_ = (q.shape.kind() == ShapeKind::kSphere ||
                      q.shape.kind() == ShapeKind::kCapsule) &&
                     internal::MoveGatherTrianglesOnThisThread();
  }
  // The scratch keeps no shape (a hull's or mesh's data) past the move.
  ~MoveSweeper() { cast_.shape = Shape(); }
  MoveSweeper(const MoveSweeper&) = delete;
  MoveSweeper& operator=(const MoveSweeper&) = delete;

  bool Probe(const Vec3& from, const Vec3& translation, CastHit* hit) override {
    probe_ = internal::MoveMemoOnThisThread();
    const bool found = Sweep(from, translation, hit);
    probe_ = false;
    return found;
  }

  bool Sweep(const Vec3& from, const Vec3& translation, CastHit* hit) override {
    if (stopped_) return false;
    cast_.pose.position = from;
    cast_.translation = translation;
    if (!SameBits(from, pose_.position)) {  // else the box of the last sweep (or the start)
      pose_.position = from;
      box_ = cast_.shape.WorldBounds(pose_);
    }
    if (cast_.at_tick) {  // the world at a past tick: history's placed colliders too
      set_.RunRewound<CastJob>(cast_, &hits_, &pairs_, /*skip_leaving=*/true);
      ++steps_;  // charged one node, as rewound queries in a batch
    } else {
      SweepIn(set_, &own_, &hits_);
    }
    if (set_.base != nullptr) {  // a shared map: static, swept as it is
      SweepIn(*set_.base, &base_, &base_hits_);
      if (!base_hits_.empty() && (hits_.empty() || HitLess(base_hits_[0], hits_[0]))) {
        hits_.swap(base_hits_);
      }
    }
    return Found(hit);
  }

  /// Where a move's sweeps go as a rule (its gathers' first region): the
  /// shape's box at the start swept by the displacement, up by the step
  /// height and down by the snap and the ground probes, grown by a few
  /// skins. Every answer stays the same whatever this region (a sweep
  /// outside it, as a slide turned along a wall, gathers again); a tight
  /// one gathers fewer mesh triangles.
  static Aabb PlanRegion(const Aabb& start_box, const Vec3& displacement,
                         const MoveSettings& s) {
    const Vec3 up = internal::UnitOf(s.up);
    const double skin = s.skin_width;
    return start_box.Swept(displacement)
        .Swept(up * s.step_height)
        .Swept(up * -(s.ground_snap_distance + 3.0 * skin))
        .Expanded(4.0 * skin + 2.0 * kBoxSlack);
  }

  /// The leaves of one set a move's sweeps may reach: gathered once for a
  /// region around the move, then each sweep tests just their boxes, as its
  /// tree walk would, instead of walking the tree again.
  struct Gathered {
    bool valid = false;
    bool walk = false;  ///< too many leaves there: sweeps inside walk the tree
    /// Leaves the region holds, the ignored ones too (each sweep charges
    /// them all, as before they were dropped from `items`).
    size_t found = 0;
    Aabb reach;
    /// items[i], its leaf box boxes[i] (which each sweep tests as the walk
    /// would) and meshes[i], its triangles in the region (a ball or capsule
    /// move).
    GatherLists* lists = nullptr;
  };
  /// Most leaves a gathered region keeps; past it sweeps walk the tree.
  static constexpr size_t kMaxGathered = 64;
  /// Most triangles gathered from one mesh; past it that mesh's sweeps walk
  /// it.
  static constexpr size_t kMaxMeshTriangles = 64;

  /// The triangles of mesh collider `c` (at `item` of a set at mesh version
  /// `version`) whose boxes meet `reach` (world) grown a little, decoded or
  /// from `cache` (if not null), into *out: its region, and its count and
  /// triangles, pointers in lists->refs to where they are (the cache's, or
  /// copies in lists->tris); count 0 when it has more than
  /// kMaxMeshTriangles there.
  static void GatherMesh(const Collider& c, uint64_t version, uint32_t item, const Aabb& reach,
                         internal::TriangleCache* cache, GatherLists* lists, GatheredMesh* out) {
    GatheredMesh& m = *out;
    m.count = 0;
    const TriangleMesh* mesh = c.shape.surface()->mesh();
    // The region in the mesh's frame: the box of reach's corners there, as
    // its centre rotated and its half-extents through |R| (Arvo 1990), grown
    // by more than their rounding.
    const Mat33 rt = c.pose.rotation.ToMatrix();
    const Vec3 centre = rt.TransposeMul(reach.Center() - c.pose.position);
    const Vec3 half = reach.Extents();
    const Vec3 extent = rt.row[0].Abs() * half.x + rt.row[1].Abs() * half.y +
                        rt.row[2].Abs() * half.z;
    const Aabb local(centre - extent, centre + extent);
    m.region = local.Expanded(1e-6 * (1.0 + local.min.Abs().MaxComponent() +
                                      local.max.Abs().MaxComponent()));
    std::vector<GatheredTriangle>& tris = lists->tris;
    std::vector<const GatheredTriangle*>& refs = lists->refs;
    const size_t first = tris.size(), first_ref = refs.size();
    size_t kept = 0;
    bool fits = true;
    TriangleMesh::VertexCache vertex_cache;
    const auto decode = [&](uint32_t k, GatheredTriangle* t) {
      Vec3 v[3];
      mesh->TriangleVertices(k, v, &vertex_cache);
      GatherTriangle(v[0], v[1], v[2], mesh->OriginalIndex(k), mesh->ActiveEdges(k), t);
      ++internal::MoveCountsOnThisThread().decoded_triangles;
    };
    mesh->VisitOverlapping(m.region, [&](uint32_t k) {
      GatheredTriangle* t = nullptr;
      if (cache != nullptr) {
        bool found;
        t = cache->Slot(version, item, k, &found);
        if (t != nullptr && !found) {
          decode(k, t);
          cache->Fill(version, item, k);
        }
      }
      // Without a cache, or its slot taken by the move: decoded into a copy
      // (dropped again unless kept).
      const bool at_end = t == nullptr;
      if (at_end) {
        t = &tris.emplace_back();
        decode(k, t);
      }
      if (!t->box.Overlaps(m.region)) {
        if (at_end) tris.pop_back();
        return true;
      }
      if (kept == kMaxMeshTriangles) {
        fits = false;
        return false;
      }
      ++kept;
      refs.push_back(t);
      return true;
    });
    if (!fits) {
      tris.resize(first);
      refs.resize(first_ref);
      return;
    }
    m.count = kept;
    ++internal::MoveCountsOnThisThread().mesh_gathers;
    internal::MoveCountsOnThisThread().gathered_triangles += m.count;
    // These stay: the caller reserved room for every mesh.
    m.refs = refs.data() + first_ref;
  }

  /// The first hit of the current sweep against `impl`'s tree, into `hits`.
  void SweepIn(const Impl& impl, Gathered* g, std::vector<CastHit>* hits) {
    GatherLists& l = *g->lists;
    CastJob job;
    job.pairs = &pairs_;
    job.skip_leaving = true;
    job.StartAt(impl, cast_, hits, pose_, radius_);
    if (probe_) job.memo = &scratch_.memo;
    // The region the sweep's tree walk could reach: its swept box grown by
    // more than the walk's own slack.
    const Aabb swept = box_.Swept(cast_.translation).Expanded(2.0 * kBoxSlack);
    if (!g->valid || !g->reach.Contains(swept)) {
      // The plan first; a sweep it misses adds its box grown by the margin.
      Aabb reach = g->valid ? g->reach : plan_;
      if (!reach.Contains(swept)) reach = reach.Union(swept.Expanded(margin_));
      g->valid = true;
      g->reach = reach;
      l.items.clear();
      QueryTree(impl.tree, FloatAabb::Outward(g->reach), cast_.filter.mask,
                [&](uint32_t item, uint32_t) { l.items.push_back(item); });
      g->found = l.items.size();
      steps_ += g->found + 1;
      g->walk = g->found > kMaxGathered;
      // The colliders the move ignores (its own) never stop it: dropped
      // here, not tested by every sweep only for LeafOf to pass them over.
      const std::vector<uint64_t>& ignore = cast_.filter.ignore;
      if (!ignore.empty()) {
        std::erase_if(l.items, [&](uint32_t item) {
          return std::find(ignore.begin(), ignore.end(), impl.colliders[item].id) != ignore.end();
        });
      }
      l.boxes.clear();
      for (const uint32_t item : l.items) {
        const TreeNode& leaf = impl.tree.node(impl.leaf_of[item]);
        l.boxes.push_back(Aabb({leaf.min[0], leaf.min[1], leaf.min[2]},
                                 {leaf.max[0], leaf.max[1], leaf.max[2]}));
      }
      // No triangles gathered yet (the meshes' placements are set when gathered).
      l.meshes.resize(l.items.size());
      for (GatheredMesh& m : l.meshes) m.count = 0;
      l.tris.clear();
      l.refs.clear();
      if (!g->walk && gather_meshes_) {
        size_t meshes = 0;
        for (const uint32_t item : l.items) {
          meshes += impl.colliders[item].shape.kind() == ShapeKind::kMesh;
        }
        // No reallocation while gathering (one more for a triangle decoded
        // at the end and then dropped).
        l.tris.reserve(meshes * kMaxMeshTriangles + 1);
        l.refs.reserve(meshes * kMaxMeshTriangles);
        // Decoded triangles keyed on the set's mesh version (0 never: a set
        // holding a mesh has a version from NextMeshVersion).
        internal::TriangleCache* cache = impl.mesh_version != 0 ? &scratch_.decoded : nullptr;
        for (size_t i = 0; i < l.items.size(); ++i) {
          const Collider& c = impl.colliders[l.items[i]];
          if (c.shape.kind() != ShapeKind::kMesh) continue;
          GatheredMesh& m = l.meshes[i];
          if (!m.cast.Prepare(cast_.shape, pose_.rotation, c.shape, c.pose)) continue;
          GatherMesh(c, impl.mesh_version, l.items[i], g->reach, cache, &l, &m);
          m.key.version = 0;
          if (m.count != 0 && cache != nullptr) {  // the key's parts for every sweep of this move
            const Shape& a = cast_.shape;
            m.key.version = impl.mesh_version;
            m.key.item = l.items[i];
            m.key.kind = static_cast<uint32_t>(a.kind());
            m.key.radius = a.radius();
            m.key.half_height = a.kind() == ShapeKind::kCapsule ? a.half_height() : 0.0;
            m.key.rotation = pose_.rotation;
          }
        }
      }
    }
    if (!g->walk && internal::MoveGatherOnThisThread()) {
      // Each gathered leaf whose box meets the swept box: every leaf the
      // walk's segment test passes that the shape could touch (the box holds
      // the shape all along, with more than that test's slack), and a few
      // it passes over, which the job finds missed (its answer does not
      // depend on the leaves' order). No segment to set up, no node to read.
      double max_t = 1.0;
      for (size_t i = 0; i < l.items.size(); ++i) {
        if (!swept.Overlaps(l.boxes[i])) continue;
        const uint32_t item = l.items[i];
        const GatheredMesh& mesh = l.meshes[i];
        max_t = job.LeafOf(impl.colliders[item], impl.radius[item], max_t,
                           mesh.count != 0 ? &mesh : nullptr);
      }
      steps_ += g->found;
      job.Finish();
      return;
    }
    job.SetSegment(box_);
    SegmentCursor cursor;
    cursor.Begin(impl.tree, &job.seg, cast_.filter.mask, 1.0);
    const auto prefetch = impl.ColliderPrefetch();
    while (cursor.Step(
        [&](uint32_t item, uint32_t, double max_t) { return job.Leaf(item, max_t); }, prefetch)) {
      ++steps_;
    }
    ++steps_;
    job.Finish();
  }

  /// Charges the work when due; the first hit of the last sweep, if any.
  bool Found(CastHit* hit) {
    if (control_ != nullptr && steps_ >= kCheckEvery && !Charge()) return false;
    if (hits_.empty()) return false;
    *hit = hits_.front();  // user_data set by MakeHit (a rewound hit may be gone now)
    return true;
  }

  /// Charges the work not yet charged; false when the batch must stop.
  bool Charge() {
    if (control_ == nullptr) return true;
    stopped_ = !control_->Charge(steps_, pairs_.count - charged_pairs_);
    steps_ = 0;
    charged_pairs_ = pairs_.count;
    return !stopped_;
  }

 private:
  const Impl& set_;
  BatchControl* control_;
  MoveScratch& scratch_;
  CastQuery& cast_;
  std::vector<CastHit>& hits_;
  std::vector<CastHit>& base_hits_;
  PairCounter pairs_;
  double margin_ = 0.0;
  Aabb plan_;
  /// The current sweep's pose (the query's, normalized) and world box (the
  /// start's before the first), and the shape's bounding radius +
  /// kBoxSlack: CastJob::StartAt's.
  Pose pose_;
  Aabb box_;
  double radius_ = 0.0;
  Gathered own_{false, false, 0, Aabb(), &scratch_.own};
  Gathered base_{false, false, 0, Aabb(), &scratch_.base};
  bool gather_meshes_ = false;
  /// The sweep under way is a ground probe (Probe).
  bool probe_ = false;
  uint64_t steps_ = 0;
  uint64_t charged_pairs_ = 0;
  bool stopped_ = false;
};

bool ColliderSet::Impl::Move(const MoveQuery& q, MoveResult* result,
                             BatchControl* control) const {
  MoveSweeper world(*this, q, control);
  internal::RunMove(q, world, result);
  return world.Charge();
}

void ColliderSet::Overlap(const OverlapQuery& q, std::vector<OverlapHit>* hits,
                          bool* truncated) const {
  if (base_ != nullptr) {
    QueryResult r;
    RunOneLayered(q, &r);
    *hits = std::move(r.overlaps);
  } else {
    impl_->Overlap(q, hits);
  }
  const bool cut = internal::TrimHits(hits, q.filter.max_hits);
  if (truncated != nullptr) *truncated = cut;
}
void ColliderSet::Cast(const CastQuery& q, std::vector<CastHit>* hits, bool* truncated) const {
  if (base_ != nullptr) {
    QueryResult r;
    RunOneLayered(q, &r);
    *hits = std::move(r.hits);
  } else {
    impl_->Cast(q, hits);
  }
  const bool cut = q.all_hits && internal::TrimHits(hits, q.filter.max_hits);
  if (truncated != nullptr) *truncated = cut;
}
void ColliderSet::Raycast(const RayQuery& q, std::vector<CastHit>* hits,
                          bool* truncated) const {
  if (base_ != nullptr) {
    QueryResult r;
    RunOneLayered(q, &r);
    *hits = std::move(r.hits);
  } else {
    impl_->Raycast(q, hits);
  }
  const bool cut = q.all_hits && internal::TrimHits(hits, q.filter.max_hits);
  if (truncated != nullptr) *truncated = cut;
}

void ColliderSet::LinkBase() { impl_->base = base_ != nullptr ? base_->impl_.get() : nullptr; }

void ColliderSet::Move(const MoveQuery& q, MoveResult* result) const {
  impl_->Move(q, result, nullptr);
}

void ColliderSet::Run(const Query& q, QueryResult* result) const {
  if (base_ != nullptr) {
    RunOneLayered(q, result);
    internal::FinishResult(q, result);
    return;
  }
  internal::ClearResult(q, result);
  if (const auto* m = std::get_if<MoveQuery>(&q)) {
    impl_->Move(*m, internal::MoveSlot(result), nullptr);
  } else if (const auto* o = std::get_if<OverlapQuery>(&q)) {
    impl_->Overlap(*o, &result->overlaps);
  } else if (const auto* c = std::get_if<CastQuery>(&q)) {
    impl_->Cast(*c, &result->hits);
  } else if (const auto* r = std::get_if<RayQuery>(&q)) {
    impl_->Raycast(*r, &result->hits);
  }
  internal::FinishResult(q, result);
}

}  // namespace hitbox
