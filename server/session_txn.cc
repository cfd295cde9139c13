#include "session_txn.h"

#include <algorithm>
#include <bit>
#include <mutex>
#include <shared_mutex>
#include <span>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <variant>

#include <spdlog/spdlog.h>

#include "hitbox/wire/convert.h"
#include "hitbox/wire/packed.h"

namespace hitbox::server {
namespace {

using google::protobuf::RepeatedPtrField;

/// Bytes a hit is assumed to take in a response (a CastHit is ~100 at most,
/// an OverlapHit without contact ~25), for the per-response hit budget.
constexpr uint64_t kBytesPerHit = 64;
/// Most queries run per RunBatch call between checks of the hit budget.
constexpr size_t kQueryChunk = 1024;
/// Most bytes the results of one chunk may hold at worst (every query
/// finding max_hits hits): chunks are cut shorter to stay under it, so the
/// in-flight reservation is never far above what is really held.
constexpr uint64_t kChunkWorstBytes = 16ull << 20;
/// What to do when answers do not fit (the in-flight or the message budget).
constexpr const char* kLowerHitsAdvice =
    "retry later, or lower filter.max_hits or split the batch";
/// Bytes a query's entry in a response message takes besides its hits.
constexpr uint64_t kBytesPerResult = 16;
/// Most bytes one batch's watch update may add (new watches, inside sets,
/// events, undo records), reserved against --max-memory before it applies
/// (less when less is free): the set refuses a batch that would take more.
constexpr uint64_t kWatchGrowthReserve = 64ull << 20;

// Most contacts a move reports (character.h: 2 * max_iterations + 4).
uint64_t MoveContactCap(const MoveQuery& q) {
  return 2 * static_cast<uint64_t>(q.settings.max_iterations) + 4;
}

// Most bytes the hits of one query's result can hold: its vector's capacity
// once it has grown to max_hits + 1 (a query keeps one more to tell whether
// max_hits cut any; 1 for closest-hit queries).
uint64_t WorstResultBytes(const hitbox::Query& q) {
  return std::visit(
      [](const auto& x) -> uint64_t {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, OverlapQuery>) {
          return std::bit_ceil(uint64_t{x.filter.max_hits} + 1) * sizeof(OverlapHit);
        } else if constexpr (std::is_same_v<T, MoveQuery>) {
          return sizeof(MoveResult) + std::bit_ceil(MoveContactCap(x)) * sizeof(MoveContact);
        } else {
          const uint64_t hits = x.all_hits ? uint64_t{x.filter.max_hits} + 1 : 1;
          return std::bit_ceil(hits) * sizeof(CastHit);
        }
      },
      q);
}

}  // namespace

uint64_t HeldBytes(const QueryResult& r) {
  return r.overlaps.capacity() * sizeof(OverlapHit) + r.hits.capacity() * sizeof(CastHit) +
         (r.move ? sizeof(MoveResult) + r.move->contacts.capacity() * sizeof(MoveContact) : 0);
}

namespace {

// Entries of a result counted against the hit budget: hits, overlaps, and a
// move's contacts plus one for its position and ground.
uint64_t HitsOf(const QueryResult& r) {
  return r.overlaps.size() + r.hits.size() + (r.move ? r.move->contacts.size() + 1 : 0);
}

// The moves of a batch that name their character's collider (atomic
// apply), by query index; a collider named twice is refused. No heap work
// once warm (a sorted scratch list instead of a hash map).
Status CollectApplies(const std::vector<hitbox::Query>& queries, std::vector<size_t>* out) {
  out->clear();
  thread_local std::vector<std::pair<uint64_t, size_t>> named;  // (id, query index)
  named.clear();
  for (size_t i = 0; i < queries.size(); ++i) {
    const auto* m = std::get_if<MoveQuery>(&queries[i]);
    if (m == nullptr || !m->apply_to_id) continue;
    named.emplace_back(*m->apply_to_id, i);
    out->push_back(i);
  }
  std::sort(named.begin(), named.end());
  // The first query (in order) that names an id named before it.
  size_t bad = SIZE_MAX, first = 0;
  for (size_t k = 1; k < named.size(); ++k) {
    if (named[k].first == named[k - 1].first) {
      // named[k - 1] is the earliest query of this id seen so far in the run.
      size_t j = k - 1;
      while (j > 0 && named[j - 1].first == named[k].first) --j;
      if (named[k].second < bad) {
        bad = named[k].second;
        first = named[j].second;
      }
    }
  }
  if (bad != SIZE_MAX) {
    const uint64_t id = *std::get<MoveQuery>(queries[bad]).apply_to_id;
    return Status(ErrorCode::kInvalidArgument,
                  "queries[" + std::to_string(bad) + "].move.apply_to_id: collider " +
                      std::to_string(id) + " is already moved by queries[" + std::to_string(first) +
                      "]");
  }
  return Status::Ok();
}

// NOT_FOUND naming the first move whose apply_to_id is not in the set.
Status CheckApplies(const ColliderSet& set, const std::vector<hitbox::Query>& queries,
                    const std::vector<size_t>& applies) {
  for (size_t i : applies) {
    const uint64_t id = *std::get<MoveQuery>(queries[i]).apply_to_id;
    if (set.Find(id) == nullptr) {
      return Status(ErrorCode::kNotFound, "queries[" + std::to_string(i) +
                                              "].move.apply_to_id: collider " + std::to_string(id) +
                                              " not found");
    }
  }
  return Status::Ok();
}

// The change batch that puts each applied move's collider at its final pose
// (the result's position, the query pose's rotation), into `moves`.
void AppliedMoves(const std::vector<hitbox::Query>& queries,
                  const std::vector<QueryResult>& results, const std::vector<size_t>& applies,
                  std::vector<ColliderChange>* moves) {
  moves->clear();
  moves->reserve(applies.size());
  for (size_t i : applies) {
    const MoveQuery& q = std::get<MoveQuery>(queries[i]);
    moves->push_back(
        ColliderChange::Move(*q.apply_to_id, Pose{results[i].move->position, q.pose.rotation}));
  }
}

// Undoes an applied change batch: every id it touched gets back its state
// from `before` (the first entry per id is its state before the batch), and
// the set its revision.
void RollBack(ColliderSet& set, const std::vector<std::pair<uint64_t, std::optional<Collider>>>& before,
              uint64_t revision) {
  std::vector<ColliderChange> undo;
  std::unordered_set<uint64_t> seen;
  for (const auto& [id, old] : before) {
    if (!seen.insert(id).second) continue;
    const bool now = set.Find(id) != nullptr;
    if (old && now) undo.push_back(ColliderChange::Replace(*old));
    if (old && !now) undo.push_back(ColliderChange::Add(*old));
    if (!old && now) undo.push_back(ColliderChange::Remove(id));
  }
  // Taking a batch back is never refused: its watch update is unbounded.
  const WatchBudget bounds = set.watch_budget();
  set.SetWatchBudget({});
  const Status st = set.Apply(undo);
  set.SetWatchBudget(bounds);
  if (!st.ok()) spdlog::error("tick rollback failed (a bug): {}", st.ToString());
  set.RestoreRevision(revision);
}

// Sweep by collider id (Query.shape_from_collider): each such query takes its
// collider's shape and pose, and ignores the collider. NOT_FOUND naming the
// first unknown id; INVALID_ARGUMENT for a collider-only shape (mesh,
// heightfield, compound). The caller holds the session lock (either mode).
Status ShapesFromColliders(const ColliderSet& set,
                           const std::vector<std::pair<size_t, uint64_t>>& shapes_from,
                           std::vector<hitbox::Query>* queries) {
  for (const std::pair<size_t, uint64_t>& entry : shapes_from) {
    // Named copies, not a structured binding: clang's C++20 lambdas cannot
    // capture one.
    const size_t i = entry.first;
    const uint64_t id = entry.second;
    const Collider* c = set.Find(id);
    const auto field = [&] {
      return "queries[" + std::to_string(i) + "].shape_from_collider: collider " +
             std::to_string(id);
    };
    if (c == nullptr) return Status(ErrorCode::kNotFound, field() + " not found");
    const ShapeKind kind = c->shape.kind();
    if (kind == ShapeKind::kMesh || kind == ShapeKind::kHeightfield ||
        kind == ShapeKind::kCompound) {
      return Status(ErrorCode::kInvalidArgument,
                    field() +
                        " has a collider-only shape (mesh, heightfield or "
                        "compound), not a query shape");
    }
    std::visit(
        [&](auto& x) {
          if constexpr (!std::is_same_v<std::decay_t<decltype(x)>, RayQuery>) {
            x.shape = c->shape;
            x.pose = c->pose;
            x.filter.ignore.push_back(id);
          }
        },
        (*queries)[i]);
  }
  return Status::Ok();
}

// The state before a batch of every id it touches, for RollBack.
std::vector<std::pair<uint64_t, std::optional<Collider>>> Capture(
    const ColliderSet& set, const std::vector<ColliderChange>& changes) {
  std::vector<std::pair<uint64_t, std::optional<Collider>>> before;
  before.reserve(changes.size());
  for (const ColliderChange& c : changes) {
    if (c.IsWatchChange()) continue;  // RestoreRevision takes watches back
    const Collider* old = set.Find(c.collider.id);
    before.emplace_back(c.collider.id, old ? std::optional<Collider>(*old) : std::nullopt);
  }
  return before;
}

// The session limits a change batch is checked against (ColliderSet::CheckBatch).
BatchLimits BatchLimitsOf(const SessionLimits& l) {
  BatchLimits b;
  b.max_colliders = l.max_colliders;
  b.max_mesh_triangles = l.max_mesh_triangles;
  b.max_heightfield_samples = l.max_heightfield_samples;
  b.max_hull_points = l.max_hull_points;
  b.max_watches = l.max_watches;
  return b;
}

// Frees the results' memory (not only their sizes).
void Release(std::vector<QueryResult>* results) { std::vector<QueryResult>().swap(*results); }

QueryFilter* FilterOf(hitbox::Query& q) {
  return std::visit([](auto& x) { return &x.filter; }, q);
}

}  // namespace

CallControl CallControl::Of(grpc::ServerContextBase* ctx) {
  CallControl c;
  const std::chrono::system_clock::time_point deadline = ctx->deadline();
  const auto now = std::chrono::system_clock::now();
  // No deadline reads as a time centuries away: keep max() then.
  if (deadline < now + std::chrono::hours(24 * 365)) {
    c.deadline = std::chrono::steady_clock::now() +
                 std::chrono::duration_cast<std::chrono::steady_clock::duration>(deadline - now);
  }
  c.cancelled = [ctx] { return ctx->IsCancelled(); };
  return c;
}

Status SessionTxn::ConvertQueries(const Session& s, const TxnRequest& req,
                                  TxnScratch* scratch) const {
  std::vector<hitbox::Query>* out = &scratch->queries;
  const size_t count = req.packed ? wire::PackedQueryCount(*req.packed)
                                  : static_cast<size_t>(req.queries.size());
  const uint32_t max = s.limits().max_queries_per_message;
  if (count > max) {
    return Status(ErrorCode::kResourceExhausted,
                  std::string(req.packed ? "packed.kinds: " : "queries: ") +
                      std::to_string(count) + " queries, at most " + std::to_string(max) +
                      " per message (limits.max_queries_per_message)");
  }
  if (req.packed) {
    if (Status st = wire::FromPacked(*req.packed, req.queries, out, &scratch->shapes_from,
                                         &scratch->packed);
        !st.ok()) {
      return st;
    }
  } else {
    if (Status st = wire::FromProto(req.queries, out, "queries"); !st.ok()) return st;
    wire::ShapesFromMessages(req.queries, &scratch->shapes_from);
  }
  const uint32_t cap = s.limits().max_hits_per_query;
  for (hitbox::Query& q : *out) {
    QueryFilter* f = FilterOf(q);
    if (f->max_hits == 0 || f->max_hits > cap) f->max_hits = cap;
  }
  return Status::Ok();
}

namespace {

// Bytes a batch adds to a session in colliders (moves, replaces and removes
// never grow the set): bytes_per_collider per new collider, less the room
// the session already holds (capacity left by removes).
uint64_t ColliderGrowth(const Session& s, uint64_t colliders_after, uint64_t bytes_per_collider) {
  const uint64_t now = s.set().size();
  if (colliders_after <= now) return 0;
  const uint64_t added = colliders_after - now;
  const uint64_t after = kSessionOverheadBytes + colliders_after * bytes_per_collider;
  return std::min(added * bytes_per_collider,
                  after > s.memory_bytes() ? after - s.memory_bytes() : 0);
}

// RESOURCE_EXHAUSTED naming changes[i]'s shape and the geometry limit it passes.
Status OverGeometryLimit(int i, const v1::ColliderChange& c, const char* what, uint64_t n,
                         uint64_t max, const char* limit) {
  return Status(ErrorCode::kResourceExhausted,
                "changes[" + std::to_string(i) + "]." + (c.has_add() ? "add" : "replace") +
                    ".shape: " + what + " has " + std::to_string(n) + ", at most " +
                    std::to_string(max) + " (limits." + limit + ")");
}

}  // namespace

Status SessionTxn::Prepare(const Session& s, const RepeatedPtrField<v1::ColliderChange>& in,
                           std::optional<uint64_t> tick, std::optional<uint64_t> expected_revision,
                           const CallControl& call, std::vector<ColliderChange>* out,
                           BatchReservation* held) {
  const SessionLimits& limits = s.limits();
  if (static_cast<uint64_t>(in.size()) > limits.max_changes_per_message) {
    return Status(ErrorCode::kResourceExhausted,
                  "changes: " + std::to_string(in.size()) + " changes, at most " +
                      std::to_string(limits.max_changes_per_message) +
                      " per message (limits.max_changes_per_message)");
  }
  // Primitives, moves and removes: nothing to build, converted at once.
  if (!wire::NeedsBuild(in)) return wire::FromProto(in, out, "changes");

  // The parsed request's big arrays, freed after the call whatever happens.
  for (const v1::ColliderChange& c : in) {
    const v1::Collider& col = c.has_add() ? c.add() : c.replace();
    if (col.shape().has_mesh()) {
      held->request_bytes += static_cast<uint64_t>(col.shape().mesh().indices_size()) * 4 +
                             static_cast<uint64_t>(col.shape().mesh().vertices_size()) * 48;
    } else if (col.shape().has_heightfield()) {
      held->request_bytes += static_cast<uint64_t>(col.shape().heightfield().heights_size()) * 8;
    }
  }
  // 1. The whole batch checked, and priced, without building anything.
  std::vector<ColliderChange> skeletons;
  std::vector<wire::ChangeCost> costs;
  if (Status st = wire::CheckChanges(in, &skeletons, &costs); !st.ok()) {
    return st;
  }
  // 2. Its geometry against the session's limits, its build work against its budget.
  uint64_t work = 0, shape_bytes = 0;
  for (int i = 0; i < in.size(); ++i) {
    const wire::ChangeCost& c = costs[static_cast<size_t>(i)];
    if (c.mesh_triangles > limits.max_mesh_triangles) {
      return OverGeometryLimit(i, in.Get(i), "the mesh", c.mesh_triangles,
                               limits.max_mesh_triangles, "max_mesh_triangles");
    }
    if (c.heightfield_samples > limits.max_heightfield_samples) {
      return OverGeometryLimit(i, in.Get(i), "the heightfield", c.heightfield_samples,
                               limits.max_heightfield_samples, "max_heightfield_samples");
    }
    if (c.hull_points > limits.max_hull_points) {
      return OverGeometryLimit(i, in.Get(i), "a convex hull", c.hull_points,
                               limits.max_hull_points, "max_hull_points");
    }
    work += c.build_work;
    shape_bytes += c.shape_bytes;
  }
  if (limits.max_build_work_per_message != 0 && work > limits.max_build_work_per_message) {
    return Status(ErrorCode::kResourceExhausted,
                  "changes: building this batch's shapes takes " + std::to_string(work) +
                      " units of work (mesh triangles + hull points + compound children + "
                      "heightfield samples / 16), more than its budget of " +
                      std::to_string(limits.max_build_work_per_message) +
                      " (limits.max_build_work_per_message): split it over several requests");
  }
  // 3. Ids, revision, tick and collider count against the set as it is now
  // (checked again when the batch is applied), and the batch's growth.
  uint64_t growth = 0;
  {
    std::shared_lock<std::shared_mutex> lock(s.mutex());
    if (s.deleted()) {
      return Status(ErrorCode::kNotFound, "session_id: session '" + s.id() + "' was deleted");
    }
    BatchPlan plan;
    if (Status st = s.set().CheckBatch(skeletons, tick, expected_revision, BatchLimitsOf(limits),
                                       &plan);
        !st.ok()) {
      return st;
    }
    // The shapes it replaces or removes give their bytes back.
    uint64_t freed = 0;
    std::unordered_set<uint64_t> seen;
    for (const ColliderChange& c : skeletons) {
      if (c.kind != ColliderChange::Kind::kReplace && c.kind != ColliderChange::Kind::kRemove) {
        continue;
      }
      const Collider* old = s.set().Find(c.collider.id);
      if (old != nullptr && seen.insert(c.collider.id).second) freed += old->shape.DataBytes();
    }
    growth = ColliderGrowth(s, plan.colliders_after, env_.bytes_per_collider) +
             (shape_bytes > freed ? shape_bytes - freed : 0);
  }
  // 4. Reserved against --max-memory and the build budget before any build.
  if (Status st = env_.sessions->ReserveMemory(growth); !st.ok()) return st;
  held->priced = true;
  held->memory = growth;
  held->shape_bytes = shape_bytes;
  if (!held->building.Resize(shape_bytes)) {
    held->ReleaseMemory();
    return Status(ErrorCode::kResourceExhausted,
                  "changes: building this batch's shapes needs about " +
                      std::to_string(shape_bytes) + " bytes; the batches being built hold " +
                      std::to_string(env_.build_memory->used()) + " of " +
                      std::to_string(env_.build_memory->cap()) +
                      " bytes (--max-build-bytes): retry later, or split the batch");
  }
  // 5. The builds, one shape at a time; the call may stop them in between.
  const auto before_build = [&](int i) -> Status {
    if (call.cancelled && call.cancelled()) {
      return Status(ErrorCode::kCancelled, "changes: the call was cancelled before changes[" +
                                               std::to_string(i) + "] was built");
    }
    if (std::chrono::steady_clock::now() >= call.deadline) {
      return Status(ErrorCode::kDeadlineExceeded,
                    "changes: the call's deadline passed before changes[" + std::to_string(i) +
                        "] was built");
    }
    shapes_built_.fetch_add(1, std::memory_order_relaxed);
    return Status::Ok();
  };
  if (Status st = wire::FromProto(in, out, "changes", before_build); !st.ok()) {
    std::vector<ColliderChange>().swap(*out);  // what was built goes now
    return st;
  }
  return Status::Ok();
}

Status SessionTxn::ApplyLocked(Session& s, const std::vector<ColliderChange>& changes,
                               std::optional<uint64_t> tick,
                               std::optional<uint64_t> expected_revision, const CallControl& call,
                               BatchReservation* held) {
  ColliderSet& set = s.set();
  // The batch policy (revision, tick, ids by entry, geometry and collider
  // limits) is core's: ColliderSet::CheckBatch.
  BatchPlan plan;
  if (Status st = set.CheckBatch(changes, tick, expected_revision, BatchLimitsOf(s.limits()),
                                 &plan);
      !st.ok()) {
    return st;
  }
  if (changes.empty()) return Status::Ok();
  // A priced batch reserved its growth (colliders and shapes) before its
  // builds; otherwise its growth in colliders is reserved now.
  uint64_t growth = 0;
  if (held != nullptr && held->priced) {
    growth = held->memory;
    held->memory = 0;  // settled below
  } else {
    growth = ColliderGrowth(s, plan.colliders_after, env_.bytes_per_collider);
    if (Status reserved = env_.sessions->ReserveMemory(growth); !reserved.ok()) {
      return reserved;
    }
  }
  // The watches' growth is unknown until their update runs: a share of
  // --max-memory is reserved for it, and the set refuses (undoing the batch)
  // an update that would pass it. Settled below to what the set then holds.
  uint64_t watch_reserve = 0;
  const uint64_t cap = env_.sessions->max_memory_bytes();
  const bool watched = set.watch_count() > 0 || plan.watches_after > 0;
  if (watched) {
    WatchBudget budget = WatchBudgetOf(s.limits());
    if (cap != 0) {
      watch_reserve = env_.sessions->ReserveUpTo(kWatchGrowthReserve);
      budget.max_growth_bytes = watch_reserve;
      budget.memory_limit = "--max-memory: all sessions hold " +
                            std::to_string(env_.sessions->memory_bytes() - watch_reserve) +
                            " of " + std::to_string(cap) + " bytes";
    }
    budget.deadline = call.deadline;
    budget.cancelled = call.cancelled;
    set.SetWatchBudget(budget);
  }
  const Status st = set.ApplyBatch(changes, tick, plan);
  if (watched) set.SetWatchBudget(WatchBudgetOf(s.limits()));
  env_.sessions->SettleMemory(s, growth + watch_reserve);
  return st;
}

Status SessionTxn::PersistLocked(
    Session& s, const RepeatedPtrField<v1::ColliderChange>& changes,
    const std::vector<ColliderChange>& moved, std::optional<uint64_t> tick,
    const std::vector<std::pair<uint64_t, std::optional<Collider>>>& before, uint64_t revision) {
  if (env_.store == nullptr || (changes.empty() && moved.empty())) return Status::Ok();
  Status st;
  if (moved.empty()) {
    st = env_.store->Append(s, changes, tick, revision);
  } else {  // one record, as the batch was one revision: the changes, then the applied moves
    RepeatedPtrField<v1::ColliderChange> all = changes;
    for (const ColliderChange& c : moved) wire::ToProto(c, all.Add());
    st = env_.store->Append(s, all, tick, revision);
  }
  if (!st.ok()) {
    RollBack(s.set(), before, revision);
    env_.sessions->SettleMemory(s, 0);
  }
  return st;
}

uint64_t SessionTxn::HitBudget() const {
  return std::max<uint64_t>(1, env_.max_message_bytes / kBytesPerHit);
}

Status SessionTxn::RunLocked(const Session& s, const std::vector<hitbox::Query>& queries,
                             std::vector<QueryResult>* results, const CallControl& call,
                             MemoryReservation* mem) const {
  // Results reused from an earlier tick keep their capacity (RunBatch clears
  // them, and a move's result keeps its contacts' buffer): count it.
  results->resize(queries.size());
  uint64_t held = 0;
  for (QueryResult& r : *results) {
    r.overlaps.clear();
    r.hits.clear();
    held += HeldBytes(r);
  }
  if (Status st = s.set().CheckQueryTicks(queries); !st.ok()) {
    Release(results);
    mem->Reset();
    return st;
  }
  const SessionLimits& limits = s.limits();
  QueryBudget budget;
  budget.deadline = call.deadline;
  budget.cancelled = call.cancelled;
  QueryWork used;
  const uint64_t hit_budget = HitBudget();
  uint64_t hits = 0;
  auto fail = [&](Status st) {
    Release(results);
    mem->Reset();
    return st;
  };
  for (size_t start = 0; start < queries.size();) {
    // A chunk: up to kQueryChunk queries whose worst-case answers fit in
    // kChunkWorstBytes (at least one query).
    size_t end = start;
    uint64_t worst = 0;
    while (end < queries.size() && end - start < kQueryChunk) {
      const uint64_t w = WorstResultBytes(queries[end]) + sizeof(QueryResult);
      if (end > start && worst + w > kChunkWorstBytes) break;
      worst += w;
      ++end;
    }
    // Named only in errors (built then: a tick that succeeds allocates no string).
    const auto range = [start, end] {
      return "queries[" + std::to_string(start) + ".." + std::to_string(end - 1) + "]";
    };
    if (!mem->Resize(held + worst)) {
      return fail(AnswerMemoryFull(*env_.answer_memory, "queries", range() + " could need", worst,
                                   kLowerHitsAdvice));
    }
    budget.max_nodes = limits.max_nodes_per_message == 0
                           ? 0
                           : limits.max_nodes_per_message - used.nodes;
    budget.max_pair_tests = limits.max_pair_tests_per_message == 0
                                ? 0
                                : limits.max_pair_tests_per_message - used.pair_tests;
    uint64_t held_before = 0;
    for (size_t i = start; i < end; ++i) held_before += HeldBytes((*results)[i]);
    QueryWork work;
    const Status st =
        s.set().RunBatch(std::span<const hitbox::Query>(queries).subspan(start, end - start),
                         std::span<QueryResult>(*results).subspan(start, end - start),
                         env_.pool, budget, &work);
    used.nodes += work.nodes;
    used.pair_tests += work.pair_tests;
    env_.metrics->AddPairTests(work.pair_tests);
    if (!st.ok()) {
      switch (st.code()) {
        case ErrorCode::kDeadlineExceeded:
          return fail(Status(ErrorCode::kDeadlineExceeded,
                             "queries: the call's deadline passed while answering " + range()));
        case ErrorCode::kCancelled:
          return fail(Status(ErrorCode::kCancelled,
                             "queries: the call was cancelled while answering " + range()));
        default: break;
      }
      const bool nodes_out = budget.max_nodes != 0 && work.nodes > budget.max_nodes;
      return fail(Status(
          ErrorCode::kResourceExhausted,
          nodes_out
              ? "queries: the request needs more than its work budget of " +
                    std::to_string(limits.max_nodes_per_message) +
                    " tree nodes (limits.max_nodes_per_message), passed while answering " + range() +
                    ": use smaller query shapes or shorter casts, a narrower filter.mask, "
                    "or fewer queries per request"
              : "queries: the request needs more than its work budget of " +
                    std::to_string(limits.max_pair_tests_per_message) +
                    " pair tests (limits.max_pair_tests_per_message), passed while answering " +
                    range() +
                    ": lower filter.max_hits, use smaller query shapes or a narrower "
                    "filter.mask, or send fewer queries per request"));
    }
    uint64_t held_after = 0;
    for (size_t i = start; i < end; ++i) {
      held_after += HeldBytes((*results)[i]);
      hits += HitsOf((*results)[i]);
    }
    held = held - held_before + held_after;
    mem->Resize(held);  // never grows: the chunk's worst case was reserved
    if (hits > hit_budget) {
      return fail(Status(ErrorCode::kResourceExhausted,
                         "queries: the answers to queries[0.." + std::to_string(end - 1) +
                             "] already hold " + std::to_string(hits) + " hits, more than the " +
                             std::to_string(hit_budget) +
                             " that fit in one message (--max-message-bytes); lower "
                             "filter.max_hits or split the batch"));
    }
    start = end;
  }
  return Status::Ok();
}

Status SessionTxn::ReserveResponse(const std::vector<QueryResult>& results,
                                   MemoryReservation* mem) const {
  uint64_t bytes = results.size() * kBytesPerResult;
  for (const QueryResult& r : results) {
    bytes += HitsOf(r) * kBytesPerHit;
  }
  if (mem->Resize(mem->bytes() + bytes)) return Status::Ok();
  return AnswerMemoryFull(*env_.answer_memory, "queries", "the response needs", bytes,
                          kLowerHitsAdvice);
}

namespace {

// Asks for a trim when a big batch, applied or refused, is done: it frees big
// buffers (its request, its builds' scratch, what it refused or replaced).
// `changes` (may be null) is a scratch list that must keep no shapes then.
struct TrimAfter {
  MemoryTrimmer& trimmer;
  const BatchReservation& held;
  std::vector<ColliderChange>* changes = nullptr;
  ~TrimAfter() {
    if (!held.WorthTrimming()) return;
    if (changes != nullptr) std::vector<ColliderChange>().swap(*changes);
    trimmer.Request();
  }
};

// A committed batch's watch events: into the answer, and to the session's
// WatchEvents streams (the exclusive lock held).
void DeliverWatchEvents(Session& s, TxnOutcome* out) {
  const ColliderSet& set = s.set();
  out->events = set.watch_events();
  out->events_truncated = set.watch_events_truncated();
  s.PublishWatchEvents(out->events, out->events_truncated, set.revision());
}

Status Deleted(const Session& s) {
  return Status(ErrorCode::kNotFound, "session_id: session '" + s.id() + "' was deleted");
}

}  // namespace

Status SessionTxn::Apply(Session& s, const RepeatedPtrField<v1::ColliderChange>& in,
                         std::optional<uint64_t> tick, std::optional<uint64_t> expected_revision,
                         const CallControl& call, TxnOutcome* out) {
  std::vector<ColliderChange> changes;
  BatchReservation held(env_.sessions, env_.build_memory);
  const TrimAfter trim_after{*env_.trimmer, held};
  if (Status st = Prepare(s, in, tick, expected_revision, call, &changes, &held); !st.ok()) {
    return st;
  }
  std::unique_lock<std::shared_mutex> lock(s.mutex());
  if (s.deleted()) {
    out->session_gone = true;
    return Deleted(s);
  }
  const uint64_t revision = s.set().revision();
  std::vector<std::pair<uint64_t, std::optional<Collider>>> before;
  if (env_.store != nullptr) before = Capture(s.set(), changes);
  if (Status st = ApplyLocked(s, changes, tick, expected_revision, call, &held); !st.ok()) {
    return st;
  }
  if (Status st = PersistLocked(s, in, {}, tick, before, revision); !st.ok()) return st;
  out->revision = s.set().revision();
  out->collider_count = s.set().size();
  if (!changes.empty()) DeliverWatchEvents(s, out);
  return Status::Ok();
}

Status SessionTxn::Run(Session& s, const TxnRequest& req, const CallControl& call,
                       TxnScratch* scratch, MemoryReservation* mem, TxnOutcome* out) {
  std::vector<ColliderChange>& changes = scratch->changes;
  std::vector<hitbox::Query>& queries = scratch->queries;
  std::vector<size_t>& applies = scratch->applies;
  std::vector<QueryResult>& results = scratch->results;
  std::vector<ColliderChange>& moved = scratch->moved;  // applied character moves
  BatchReservation held(env_.sessions, env_.build_memory);
  const TrimAfter trim_after{*env_.trimmer, held, &changes};
  if (Status st = Prepare(s, req.changes, req.tick, std::nullopt, call, &changes, &held);
      !st.ok()) {
    return st;
  }
  if (Status st = ConvertQueries(s, req, scratch); !st.ok()) return st;
  if (Status st = CollectApplies(queries, &applies); !st.ok()) return st;
  moved.clear();
  // Once the queries ran, a failure frees their answers and gives back their bytes.
  const auto drop_answers = [&](const Status& st) {
    Release(&results);
    mem->Reset();
    return st;
  };
  std::optional<uint64_t> tick = req.tick;  // recorded with the queries
  if (changes.empty() && applies.empty()) {  // nothing to change: a shared lock
    {
      std::shared_lock<std::shared_mutex> lock(s.mutex());
      if (s.deleted()) {
        out->session_gone = true;
        return Deleted(s);
      }
      if (Status st = ShapesFromColliders(s.set(), scratch->shapes_from, &queries); !st.ok()) {
        return st;
      }
      if (Status st = RunLocked(s, queries, &results, call, mem); !st.ok()) return st;
      out->revision = s.set().revision();
      if (!req.tick) {  // recorded with the newest tick
        if (const std::optional<TickRange> ticks = s.set().Ticks()) tick = ticks->newest;
      }
    }
    if (Status st = ReserveResponse(results, mem); !st.ok()) return drop_answers(st);
    Record(s, tick, out->revision, *scratch);
    return Status::Ok();
  }
  // The queries run after the changes are applied, under the same lock; a
  // later failure (applies, work budget, deadline, memory, the log) takes the
  // changes back, history included (RollBack restores the revision).
  std::unique_lock<std::shared_mutex> lock(s.mutex());
  if (s.deleted()) {
    out->session_gone = true;
    return Deleted(s);
  }
  const uint64_t revision = s.set().revision();
  std::vector<std::pair<uint64_t, std::optional<Collider>>> before;
  if (!queries.empty() || env_.store != nullptr) before = Capture(s.set(), changes);
  if (Status st = ApplyLocked(s, changes, req.tick, std::nullopt, call, &held); !st.ok()) {
    return st;
  }
  const auto undo = [&](const Status& st) {
    if (!changes.empty()) {
      RollBack(s.set(), before, revision);
      env_.sessions->SettleMemory(s, 0);  // back to what the set holds now
    }
    return st;
  };
  if (Status st = CheckApplies(s.set(), queries, applies); !st.ok()) return undo(st);
  if (Status st = ShapesFromColliders(s.set(), scratch->shapes_from, &queries); !st.ok()) {
    return undo(st);
  }
  if (Status st = RunLocked(s, queries, &results, call, mem); !st.ok()) return undo(st);
  if (Status st = ReserveResponse(results, mem); !st.ok()) return drop_answers(undo(st));
  if (!applies.empty()) {
    AppliedMoves(queries, results, applies, &moved);
    // One batch (one revision, one step of history): the changes are taken
    // back and applied again followed by the applied moves.
    std::vector<ColliderChange>* batch = &moved;
    std::vector<ColliderChange> with_changes;
    if (!changes.empty()) {
      RollBack(s.set(), before, revision);
      with_changes = changes;
      with_changes.insert(with_changes.end(), moved.begin(), moved.end());
      batch = &with_changes;
    }
    if (env_.store != nullptr) {  // a failed log write undoes all
      std::vector<std::pair<uint64_t, std::optional<Collider>>> more = Capture(s.set(), moved);
      before.insert(before.end(), more.begin(), more.end());
    }
    if (Status st = ApplyLocked(s, *batch, req.tick, std::nullopt, call); !st.ok()) {
      env_.sessions->SettleMemory(s, 0);
      return drop_answers(st);
    }
  }
  // Committed: logged before the response is sent (or undone on a write failure).
  if (Status st = PersistLocked(s, req.changes, moved, req.tick, before, revision); !st.ok()) {
    return drop_answers(st);
  }
  out->revision = s.set().revision();
  DeliverWatchEvents(s, out);
  if (!tick) {  // recorded with the newest tick
    if (const std::optional<TickRange> ticks = s.set().Ticks()) tick = ticks->newest;
  }
  lock.unlock();
  Record(s, tick, out->revision, *scratch);
  return Status::Ok();
}

void SessionTxn::Record(const Session& s, std::optional<uint64_t> tick, uint64_t revision,
                        const TxnScratch& scratch) const {
  if (scratch.queries.empty()) return;
  s.recorder().CountQueries(scratch.queries.size());
  // Without --record-queries: only while an inspector watches (a relaxed
  // load, and a clock read once the session was ever watched).
  const QueryRecorder& r = s.recorder();
  uint32_t capacity = env_.record_query_ticks;
  if (capacity == 0 && r.ever_watched()) capacity = r.Capacity(0, SteadyNowNs());
  if (capacity == 0) return;
  s.recorder().Record(capacity, tick, revision, scratch.queries, scratch.results);
}

}  // namespace hitbox::server
