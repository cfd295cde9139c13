// ColliderSet batch runner: the queries of a batch interleaved per kind with
// the tree cursors, in chunks on the thread pool, under a budget.
#include <new>
#include <optional>
#include <system_error>
#include <thread>
#include <type_traits>

#include "collision/placed_query.h"
#include "collision/triangles/start_near.h"
#include "geometry/triangle_mesh.h"
#include "shape/surface_data.h"
#include "world/collider_set_jobs.h"
#include "world/query_hits.h"

namespace hitbox {

// Runs the queries of kind Q among queries[first, last) with up to
// kInterleave jobs (J) stepped in turn; begin(job, cursor) starts a cursor.
// Returns false when `control` (used only when kBudgeted) stopped it.
template <typename Q, typename J, typename Cursor, bool kBudgeted, typename BeginFn,
          typename StepFn>
bool ColliderSet::Impl::Interleave(std::span<const Query> queries,
                                   std::span<QueryResult> results, size_t first, size_t last,
                                   BatchControl* control, const BeginFn& begin,
                                   const StepFn& step) const {
  const Impl& m = *this;
  // A job with its cursor and flag side by side: the round walks one pointer.
  struct Slot {
    J job;
    Cursor cursor;
    bool live = false;
  };
  Slot slots[kInterleave];
  PairCounter pairs;
  uint64_t steps = 0;
  uint64_t charged_pairs = 0;
  size_t next = first;
  size_t active = 0;
  auto start = [&](Slot& slot) {
    while (next < last) {
      const size_t i = next++;
      const Q* qp = std::get_if<Q>(&queries[i]);
      if (qp == nullptr || qp->at_tick) continue;  // another kind or rewound: own pass
      const Q& q = *qp;
      slot.job.pairs = &pairs;
      if constexpr (std::is_same_v<Q, OverlapQuery>) {
        slot.job.Start(m, q, &results[i].overlaps);
      } else {
        slot.job.Start(m, q, &results[i].hits);
      }
      begin(slot.job, slot.cursor);
      slot.live = true;
      return true;
    }
    slot.live = false;
    return false;
  };
  const auto charge = [&] {
    const bool go = control->Charge(steps, pairs.count - charged_pairs);
    steps = 0;
    charged_pairs = pairs.count;
    return go;
  };
  for (Slot& slot : slots) active += start(slot);
  while (active > 0) {
    // Every live slot steps once per round: count the round, not each step.
    if constexpr (kBudgeted) steps += active;
    for (Slot& slot : slots) {
      if (!slot.live) continue;
      if (step(slot.job, slot.cursor)) continue;
      slot.job.Finish();
      if (!start(slot)) --active;
    }
    if constexpr (kBudgeted) {
      if (steps >= kCheckEvery && !charge()) return false;
    }
  }
  if constexpr (kBudgeted) return charge();
  return true;
}

bool ColliderSet::Impl::RunRange(std::span<const Query> queries, std::span<QueryResult> results,
                                 size_t begin, size_t end, BatchControl* control,
                                 const WideTree* wide, const internal::MeshGroups* groups,
                                 const WideTree* rest) const {
  return control != nullptr
             ? RunRangeImpl<true>(queries, results, begin, end, control, wide, groups, rest)
             : RunRangeImpl<false>(queries, results, begin, end, nullptr, wide, groups, rest);
}

std::shared_ptr<const WideTree> ColliderSet::Impl::WideFor(size_t queries) const {
#if defined(__SSE2__)
  std::lock_guard<std::mutex> lock(wide_mu);
  if (WideIsCurrent()) return wide_copy;
  const uint64_t version = tree.version();
  if (wide_counted_version != version) {
    wide_copy.reset();
    wide_rest.reset();
    rest_groups.reset();
    ReserveCaches();  // fewer bytes: always accepted
    wide_counted_version = version;
    wide_queries = 0;
  }
  wide_queries += queries;
  // Making the copy costs about a visit of each binary node, and a query
  // visits many more than kWideQueryShare of them.
  if (tree.LeafCount() < 2 || wide_queries * kWideQueryShare < tree.NodeCount()) return nullptr;
  wide_copy = std::make_shared<const WideTree>(tree);
  if (!ReserveCaches()) {
    // Refused: tried again once as many queries more have come.
    wide_copy.reset();
    wide_queries = 0;
    return nullptr;
  }
  return wide_copy;
#else
  (void)queries;
  return nullptr;
#endif
}

std::shared_ptr<const internal::MeshGroups> ColliderSet::Impl::GroupsFor(size_t queries) const {
  std::lock_guard<std::mutex> lock(wide_mu);
  if (groups_build != nullptr && groups_build->done.load(std::memory_order_acquire)) {
    if (groups_build->thread.joinable()) groups_build->thread.join();
    std::shared_ptr<const internal::MeshGroups> built = std::move(groups_build->result);
    groups_build.reset();
    if (built != nullptr && built->version() == mesh_version) {
      mesh_groups = std::move(built);
      if (!ReserveCaches()) {
        // Refused: tried again once as many queries more have come.
        mesh_groups.reset();
        groups_queries = 0;
      }
    }
  }
  // Groups made for the meshes as they are, unless none formed.
  const auto current = [&] { return mesh_groups->groups().empty() ? nullptr : mesh_groups; };
  if (mesh_groups != nullptr && mesh_groups->version() == mesh_version) return current();
  if (groups_counted_version != mesh_version) {
    mesh_groups.reset();
    wide_rest.reset();
    rest_groups.reset();
    ReserveCaches();  // fewer bytes: always accepted
    groups_counted_version = mesh_version;
    groups_queries = 0;
    groups_triangles = 0;
    size_t meshes = 0;
    for (const Collider& c : colliders) {
      if (c.shape.kind() != ShapeKind::kMesh) continue;
      ++meshes;
      groups_triangles += c.shape.surface()->mesh()->triangle_count();
    }
    // Fewer than two meshes: nothing to merge while the meshes stay so.
    if (meshes < 2) groups_triangles = ~uint64_t{0};
  }
  groups_queries += queries;
  // Merging costs about a mesh build of the triangles; a ray through the
  // merged meshes saves more than kGroupQueryShare triangles' worth of it.
  if (groups_queries * kGroupQueryShare < groups_triangles) return nullptr;
  if (background_caches) {
    // Built beside the batches, from a copy of the mesh colliders (their
    // shapes shared): no batch waits for it.
    if (groups_build == nullptr) {
      auto build = std::make_unique<GroupsBuild>();
      GroupsBuild* b = build.get();
      try {
        b->thread = std::thread([b, meshes = internal::MeshGroups::MeshesOf(colliders),
                                 version = mesh_version] {
          try {
            b->result = std::make_shared<const internal::MeshGroups>(meshes, version);
          } catch (const std::bad_alloc&) {
            b->result = nullptr;
          }
          b->done.store(true, std::memory_order_release);
        });
        groups_build = std::move(build);
      } catch (const std::system_error&) {
        groups_queries = 0;  // no thread now: tried again later
      }
    }
    return nullptr;
  }
  mesh_groups = std::make_shared<const internal::MeshGroups>(
      internal::MeshGroups::MeshesOf(colliders), mesh_version);
  if (!ReserveCaches()) {
    // Refused: tried again once as many queries more have come.
    mesh_groups.reset();
    groups_queries = 0;
    return nullptr;
  }
  return current();
}

std::shared_ptr<const WideTree> ColliderSet::Impl::RestFor(
    const std::shared_ptr<const WideTree>& wide,
    const std::shared_ptr<const internal::MeshGroups>& groups) const {
  if (wide == nullptr || groups == nullptr) return nullptr;
  std::lock_guard<std::mutex> lock(wide_mu);
  if (rest_groups == groups && rest_version == wide->version()) return wide_rest;
  // (wide is the tree as it is: batches run with the set unchanged.) The
  // tree's own copy less the members, its boxes refit over the rest.
  std::vector<uint8_t> drop(colliders.size());
  for (uint32_t i = 0; i < colliders.size(); ++i) drop[i] = groups->Grouped(i) ? 1 : 0;
  wide_rest = std::make_shared<const WideTree>(tree, drop);
  rest_groups = groups;
  rest_version = wide->version();
  if (!ReserveCaches()) wide_rest.reset();  // refused: not tried again for these
  return wide_rest;
}

void ColliderSet::Impl::DropGroups() {
  std::lock_guard<std::mutex> lock(wide_mu);
  mesh_groups.reset();
  wide_rest.reset();
  rest_groups.reset();
  ReserveCaches();  // fewer bytes: always accepted
}

const internal::MeshGroups* ColliderSet::Impl::RewindGroups(
    const internal::MeshGroups* groups) const {
  if (groups == nullptr) return nullptr;
  for (const internal::MeshGroups::Group& g : groups->groups()) {
    for (const uint32_t item : g.item) {
      if (tracked[item] != 0) return nullptr;
    }
  }
  return groups;
}

bool ColliderSet::Impl::ReserveCaches() const {
  uint64_t total = 0;
  if (wide_copy != nullptr) total += wide_copy->MemoryBytes();
  if (wide_rest != nullptr) total += wide_rest->MemoryBytes();
  if (mesh_groups != nullptr) total += mesh_groups->MemoryBytes();
  if (total == cache_bytes) return true;
  // Growth may be refused; fewer bytes are always taken.
  const bool taken = !cache_reserve || cache_reserve(cache_bytes, total) || total < cache_bytes;
  if (taken) cache_bytes = total;
  return taken;
}

template <bool kBudgeted, typename BoxC, typename SegC, typename Tree>
bool ColliderSet::Impl::RunTreeKinds(const Tree& t, std::span<const Query> queries,
                                     std::span<QueryResult> results, size_t begin, size_t end,
                                     BatchControl* control, const internal::MeshGroups* groups,
                                     const WideTree* rest) const {
  const auto prefetch = ColliderPrefetch();
  // The tree a query walks: without the groups' members once it took them.
  const auto tree_for = [&](const internal::MeshGroups* grouped) -> const Tree& {
    if constexpr (std::is_same_v<Tree, WideTree>) {
      if (rest != nullptr && grouped != nullptr) return *rest;
    }
    return t;
  };
  const bool ok = Interleave<OverlapQuery, OverlapJob, BoxC, kBudgeted>(
      queries, results, begin, end, control,
      [&tree_for, groups](OverlapJob& job, BoxC& cur) {
        job.OverlapGroups(groups);
        cur.Begin(tree_for(job.grouped), job.box, job.q->filter.mask);
      },
      [&](OverlapJob& job, BoxC& cur) {
        return cur.Step([&](uint32_t item, uint32_t) { job.Leaf(item); }, prefetch);
      });
  if (!ok) return false;
  const bool ok2 = Interleave<CastQuery, CastJob, SegC, kBudgeted>(
      queries, results, begin, end, control,
      [&tree_for, groups](CastJob& job, SegC& cur) {
        const double max_t = job.SweepGroups(groups);
        cur.Begin(tree_for(job.grouped), &job.seg, job.q->filter.mask, max_t);
      },
      [&](CastJob& job, SegC& cur) {
        return cur.Step(
            [&](uint32_t item, uint32_t, double max_t) { return job.Leaf(item, max_t); },
            prefetch);
      });
  if (!ok2) return false;
  return Interleave<RayQuery, RayJob, SegC, kBudgeted>(
      queries, results, begin, end, control,
      [&tree_for, groups](RayJob& job, SegC& cur) {
        const double max_t = job.RayGroups(groups);
        cur.Begin(tree_for(job.grouped), &job.seg, job.q->filter.mask, max_t);
      },
      [&](RayJob& job, SegC& cur) {
        return cur.Step(
            [&](uint32_t item, uint32_t, double max_t) { return job.Leaf(item, max_t); },
            prefetch);
      });
}

template <bool kBudgeted>
bool ColliderSet::Impl::RunRangeImpl(std::span<const Query> queries,
                                     std::span<QueryResult> results, size_t begin, size_t end,
                                     BatchControl* control, const WideTree* wide,
                                     const internal::MeshGroups* groups,
                                     const WideTree* rest) const {
  for (size_t i = begin; i < end; ++i) internal::ClearResult(queries[i], &results[i]);
  const internal::ScopedPlacementReuse reuse;
  // A started sweep's winner takes its contact from the sweep's near triangles.
  const ScopedStartNear start_near;
  // Under a budget, the triangles and children tested inside one query count
  // too, and a long one stops with the batch.
  std::optional<BatchControl::Meter> meter;
  std::optional<internal::ScopedWorkMeter> meter_scope;
  if constexpr (kBudgeted) {
    meter.emplace(control);
    meter_scope.emplace(&*meter);
  }
  if (kBudgeted && !control->Poll()) return false;
#if defined(__SSE2__)
  const bool ok = wide != nullptr
                      ? RunTreeKinds<kBudgeted, WideBoxCursor, WideSegmentCursor>(
                            *wide, queries, results, begin, end, control, groups, rest)
                      : RunTreeKinds<kBudgeted, BoxCursor, SegmentCursor>(
                            tree, queries, results, begin, end, control, groups, nullptr);
#else
  (void)wide;
  (void)rest;
  const bool ok = RunTreeKinds<kBudgeted, BoxCursor, SegmentCursor>(
      tree, queries, results, begin, end, control, groups, nullptr);
#endif
  if (!ok) return false;
  // Moves: a chain of dependent sweeps each, run one after another.
  for (size_t i = begin; i < end; ++i) {
    const auto* mq = std::get_if<MoveQuery>(&queries[i]);
    if (mq == nullptr) continue;
    if (!Move(*mq, internal::MoveSlot(&results[i]), control)) return false;
  }
  // Rewound queries, one at a time (they are charged one node each).
  PairCounter pairs;
  // The groups and the tree without their members, for rewound queries
  // (decided at the first one: a batch without any pays nothing).
  std::optional<const internal::MeshGroups*> rewind_groups;
  const WideTree* rewind_rest = nullptr;
  for (size_t i = begin; i < end; ++i) {
    const Query& q = queries[i];
    if (!AtTickOf(q)) continue;
    if (!rewind_groups) {
      rewind_groups = RewindGroups(groups);
      rewind_rest = *rewind_groups != nullptr ? rest : nullptr;
    }
    if (const auto* o = std::get_if<OverlapQuery>(&q); o != nullptr && o->at_tick) {
      RunRewound<OverlapJob>(*o, &results[i].overlaps, &pairs, false, *rewind_groups,
                             rewind_rest);
    } else if (const auto* c = std::get_if<CastQuery>(&q); c != nullptr && c->at_tick) {
      RunRewound<CastJob>(*c, &results[i].hits, &pairs, false, *rewind_groups, rewind_rest);
    } else if (const auto* r = std::get_if<RayQuery>(&q); r != nullptr && r->at_tick) {
      RunRewound<RayJob>(*r, &results[i].hits, &pairs, false, *rewind_groups, rewind_rest);
    } else {
      continue;
    }
    if constexpr (kBudgeted) {
      if (!control->Charge(1, pairs.count)) return false;
      pairs.count = 0;
    }
  }
  return true;
}

// Answers the first n queries, on the calling thread or in chunks on `pool`
// when the batch is large enough; with a control, chunks not yet started
// are skipped once it stopped.
void ColliderSet::Impl::RunChunks(std::span<const Query> queries, std::span<QueryResult> results,
                                  size_t n, ThreadPool* pool, BatchControl* control) const {
  // Moves walk the tree itself (Move), never its wide copy: only the other
  // queries pay for the copy.
  size_t walkers = 0;
  // Overlaps and closest-hit rays and sweeps (rewound ones too) take the
  // groups: they pay for them, a sweep (which saves more than twice what a
  // ray does on a level) as two rays.
  size_t takers = 0;
  for (size_t i = 0; i < n; ++i) {
    walkers += !std::holds_alternative<MoveQuery>(queries[i]);
    if (std::holds_alternative<OverlapQuery>(queries[i])) {
      ++takers;
    } else if (const auto* r = std::get_if<RayQuery>(&queries[i])) {
      takers += !r->all_hits;
    } else if (const auto* c = std::get_if<CastQuery>(&queries[i])) {
      takers += 2 * !c->all_hits;
    }
  }
  const std::shared_ptr<const WideTree> view = WideFor(walkers);
  const WideTree* wide = view.get();
  const std::shared_ptr<const internal::MeshGroups> merged =
      takers != 0 ? GroupsFor(takers) : nullptr;
  const internal::MeshGroups* groups = merged.get();
  const std::shared_ptr<const WideTree> rest_view = RestFor(view, merged);
  const WideTree* rest = rest_view.get();
  if (pool == nullptr || pool->size() <= 1 || n < kParallelBatchMin) {
    RunRange(queries, results, 0, n, control, wide, groups, rest);
    return;
  }
  const size_t chunks = (n + kParallelChunk - 1) / kParallelChunk;
  pool->ParallelFor(chunks, [&](size_t chunk) {
    if (control != nullptr && control->Stopped()) return;
    const size_t end = std::min(n, (chunk + 1) * kParallelChunk);
    RunRange(queries, results, chunk * kParallelChunk, end, control, wide, groups, rest);
  });
}

namespace {
// Every answer of a batch as the caller sees it (internal::FinishResult).
void FinishResults(std::span<const Query> queries, std::span<QueryResult> results) {
  const size_t n = std::min(queries.size(), results.size());
  for (size_t i = 0; i < n; ++i) internal::FinishResult(queries[i], &results[i]);
}
}  // namespace

void ColliderSet::RunBatch(std::span<const Query> queries, std::span<QueryResult> results,
                           ThreadPool* pool) const {
  if (base_ != nullptr) {
    (void)RunBatchLayered(queries, results, pool, nullptr, nullptr);
  } else {
    impl_->RunChunks(queries, results, std::min(queries.size(), results.size()), pool, nullptr);
  }
  FinishResults(queries, results);
}

Status ColliderSet::RunBatch(std::span<const Query> queries, std::span<QueryResult> results,
                             ThreadPool* pool, const QueryBudget& budget, QueryWork* work) const {
  const Status s = base_ != nullptr ? RunBatchLayered(queries, results, pool, &budget, work)
                                    : RunBatchOwn(queries, results, pool, &budget, work);
  if (s.ok()) FinishResults(queries, results);
  return s;
}

Status ColliderSet::RunBatchOwn(std::span<const Query> queries, std::span<QueryResult> results,
                                ThreadPool* pool, const QueryBudget* budget_or_null,
                                QueryWork* work) const {
  const size_t n = std::min(queries.size(), results.size());
  if (Status s = CheckQueryTicks(queries.first(n)); !s.ok()) {
    for (size_t i = 0; i < n; ++i) {
      results[i].overlaps.clear();
      results[i].hits.clear();
    }
    return s;
  }
  if (budget_or_null == nullptr) {
    impl_->RunChunks(queries, results, n, pool, nullptr);
    return Status::Ok();
  }
  const QueryBudget& budget = *budget_or_null;
  Impl::BatchControl control;
  control.budget = &budget;
  impl_->RunChunks(queries, results, n, pool, &control);
  if (work != nullptr) {
    work->nodes = control.nodes.load();
    work->pair_tests = control.pair_tests.load();
  }
  const int stop = control.stop.load();
  if (stop == 0) return Status::Ok();
  for (size_t i = 0; i < n; ++i) {
    // Release the memory too: a stopped batch may have been a huge one.
    std::vector<OverlapHit>().swap(results[i].overlaps);
    std::vector<CastHit>().swap(results[i].hits);
    results[i].move.reset();
  }
  const auto code = static_cast<ErrorCode>(stop - 1);
  switch (code) {
    case ErrorCode::kDeadlineExceeded:
      return Status(code, "queries: the deadline passed after " + std::to_string(control.nodes) +
                              " tree nodes and " + std::to_string(control.pair_tests) +
                              " pair tests");
    case ErrorCode::kCancelled: return Status(code, "queries: cancelled");
    default:
      return Status(code, "queries: the batch needs more than its budget of " +
                              std::to_string(budget.max_nodes) + " tree nodes and " +
                              std::to_string(budget.max_pair_tests) +
                              " pair tests (0: unlimited); it had used " +
                              std::to_string(control.nodes) + " and " +
                              std::to_string(control.pair_tests));
  }
}

}  // namespace hitbox
