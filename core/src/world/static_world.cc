// A collider set layered over an immutable base set (a shared map): the
// queries answer over both as over one set, and changes may not touch the
// base. The base is queried with its own prebuilt tree, the own colliders
// with theirs, and the two answers are merged by the rules of one set:
// overlap hits by id, cast and ray hits by (fraction, id), max_hits applied
// to the merged list, the closest hit the first of both. Ids are disjoint
// (Apply refuses an id of the base), so the merge never sees a tie of ids.
#include <algorithm>
#include <iterator>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "hitbox/world/collider_set.h"
#include "world/query_hits.h"

namespace hitbox {
namespace {

bool HitOrder(const CastHit& a, const CastHit& b) {
  if (a.fraction != b.fraction) return a.fraction < b.fraction;
  return a.id < b.id;
}

bool OverlapOrder(const OverlapHit& a, const OverlapHit& b) { return a.id < b.id; }

// Merges two sorted lists into `base` (which holds the first), keeping the
// first `cap` (0: all): internal::KeptHits(max_hits), so that the caller can
// tell whether max_hits cut any.
template <typename T, typename Less>
void MergeSorted(std::vector<T>* base, std::vector<T>* own, uint32_t cap, Less less) {
  if (!own->empty()) {
    std::vector<T> merged;
    merged.reserve(base->size() + own->size());
    std::merge(std::make_move_iterator(base->begin()), std::make_move_iterator(base->end()),
               std::make_move_iterator(own->begin()), std::make_move_iterator(own->end()),
               std::back_inserter(merged), less);
    *base = std::move(merged);
  }
  if (cap != 0 && base->size() > cap) base->resize(cap);
}

// Folds the own answer of query q into the base's answer in `into`.
void MergeResult(const Query& q, QueryResult* into, QueryResult* own) {
  if (std::holds_alternative<MoveQuery>(q)) {  // the own run saw the base too
    *into = std::move(*own);
    return;
  }
  if (const auto* o = std::get_if<OverlapQuery>(&q)) {
    MergeSorted(&into->overlaps, &own->overlaps, internal::KeptHits(o->filter.max_hits),
                OverlapOrder);
    return;
  }
  bool all_hits = false;
  uint32_t cap = 0;
  if (const auto* c = std::get_if<CastQuery>(&q)) {
    all_hits = c->all_hits;
    cap = internal::KeptHits(c->filter.max_hits);
  } else if (const auto* r = std::get_if<RayQuery>(&q)) {
    all_hits = r->all_hits;
    cap = internal::KeptHits(r->filter.max_hits);
  }
  if (all_hits) {
    MergeSorted(&into->hits, &own->hits, cap, HitOrder);
    return;
  }
  // Closest hit: at most one from each side; the first of the two wins.
  if (!own->hits.empty() && (into->hits.empty() || HitOrder(own->hits[0], into->hits[0]))) {
    into->hits = std::move(own->hits);
  }
}

// What is left of a budget limit after `used` (0 stays "no limit"; an
// exhausted limit leaves the least non-zero one).
uint64_t Rest(uint64_t limit, uint64_t used) {
  if (limit == 0) return 0;
  return used >= limit ? 1 : limit - used;
}

}  // namespace

Status ColliderSet::SetBase(std::shared_ptr<const ColliderSet> base, std::string name) {
  if (base == nullptr) return Status(ErrorCode::kInvalidArgument, "base: null");
  if (base_ != nullptr) {
    return Status(ErrorCode::kFailedPrecondition,
                  "base: the set is already on map '" + base_name_ + "'");
  }
  if (size() != 0) {
    return Status(ErrorCode::kFailedPrecondition, "base: the set already has colliders");
  }
  if (base->base() != nullptr) {
    return Status(ErrorCode::kFailedPrecondition, "base: map '" + name + "' has a base itself");
  }
  base_ = std::move(base);
  base_name_ = std::move(name);
  LinkBase();
  return Status::Ok();
}

Status ColliderSet::CheckBaseIds(std::span<const ColliderChange> changes) const {
  if (base_ == nullptr) return Status::Ok();
  for (size_t i = 0; i < changes.size(); ++i) {
    const uint64_t id = changes[i].collider.id;
    if (changes[i].IsWatchChange() || base_->FindOwn(id) == nullptr) continue;
    const std::string field = "changes[" + std::to_string(i) + "].id";
    if (changes[i].kind == ColliderChange::Kind::kAdd) {
      return Status(ErrorCode::kAlreadyExists, field + ": collider " + std::to_string(id) +
                                                   " already exists in map '" + base_name_ + "'");
    }
    return Status(ErrorCode::kFailedPrecondition,
                  field + ": collider " + std::to_string(id) + " belongs to map '" + base_name_ +
                      "', which is read-only");
  }
  return Status::Ok();
}

Status ColliderSet::CheckBaseIds(std::span<const Collider> colliders) const {
  if (base_ == nullptr) return Status::Ok();
  for (size_t i = 0; i < colliders.size(); ++i) {
    if (base_->FindOwn(colliders[i].id) == nullptr) continue;
    return Status(ErrorCode::kAlreadyExists,
                  "colliders[" + std::to_string(i) + "].id: collider " +
                      std::to_string(colliders[i].id) + " already exists in map '" + base_name_ +
                      "'");
  }
  return Status::Ok();
}

Status ColliderSet::RunBatchLayered(std::span<const Query> queries,
                                    std::span<QueryResult> results, ThreadPool* pool,
                                    const QueryBudget* budget, QueryWork* work) const {
  const size_t n = std::min(queries.size(), results.size());
  // The base never moves: a rewound query sees it as it is (at_tick
  // dropped). A move runs once, in the own run, whose sweeps see the base
  // too: here it is a ray that reports nothing (mask 0).
  std::span<const Query> base_queries = queries.first(n);
  std::vector<Query> stripped;
  bool own_needed = size() != 0;
  for (size_t i = 0; i < n; ++i) {
    const bool rewound =
        std::visit([](const auto& x) { return x.at_tick.has_value(); }, queries[i]);
    const bool move = std::holds_alternative<MoveQuery>(queries[i]);
    if (!rewound && !move) continue;
    own_needed = true;  // ticks are checked and moves run there
    if (stripped.empty()) stripped.assign(base_queries.begin(), base_queries.end());
    if (move) {
      RayQuery nothing;
      nothing.filter.mask = 0;
      stripped[i] = nothing;
    } else {
      std::visit([](auto& x) { x.at_tick.reset(); }, stripped[i]);
    }
  }
  if (!stripped.empty()) base_queries = stripped;
  QueryWork base_work;
  Status s = budget != nullptr
                 ? base_->RunBatchOwn(base_queries, results, pool, budget, &base_work)
                 : base_->RunBatchOwn(base_queries, results, pool, nullptr, nullptr);
  if (work != nullptr) *work = base_work;
  if (!s.ok() || !own_needed) return s;
  std::vector<QueryResult> own(n);
  QueryWork own_work;
  if (budget != nullptr) {
    QueryBudget rest = *budget;
    rest.max_nodes = Rest(budget->max_nodes, base_work.nodes);
    rest.max_pair_tests = Rest(budget->max_pair_tests, base_work.pair_tests);
    s = RunBatchOwn(queries.first(n), own, pool, &rest, &own_work);
  } else {
    s = RunBatchOwn(queries.first(n), own, pool, nullptr, nullptr);
  }
  if (work != nullptr) {
    work->nodes += own_work.nodes;
    work->pair_tests += own_work.pair_tests;
  }
  if (!s.ok()) {
    for (size_t i = 0; i < n; ++i) {
      std::vector<OverlapHit>().swap(results[i].overlaps);
      std::vector<CastHit>().swap(results[i].hits);
    }
    return s;
  }
  for (size_t i = 0; i < n; ++i) MergeResult(queries[i], &results[i], &own[i]);
  return Status::Ok();
}

void ColliderSet::RunOneLayered(const Query& q, QueryResult* result) const {
  (void)RunBatchLayered(std::span<const Query>(&q, 1), std::span<QueryResult>(result, 1),
                        nullptr, nullptr, nullptr);
}

}  // namespace hitbox
