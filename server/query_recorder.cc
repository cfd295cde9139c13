#include "query_recorder.h"

#include <algorithm>
#include <type_traits>
#include <variant>

namespace hitbox::server {
namespace {

// The recorded form of one query and its answer; its hits (capped) are
// appended to `hits`.
RecordedQuery Recorded(const Query& query, const QueryResult& result,
                       std::vector<RecordedHit>* hits) {
  RecordedQuery r;
  r.tag = result.tag;
  r.hit_begin = static_cast<uint32_t>(hits->size());
  std::visit(
      [&](const auto& q) {
        using Q = std::decay_t<decltype(q)>;
        if constexpr (std::is_same_v<Q, OverlapQuery>) {
          r.kind = "overlap";
          r.shape = q.shape;
          r.pose = q.pose;
        } else if constexpr (std::is_same_v<Q, CastQuery>) {
          r.kind = "cast";
          r.shape = q.shape;
          r.pose = q.pose;
          r.translation = q.translation;
        } else if constexpr (std::is_same_v<Q, RayQuery>) {
          r.kind = "ray";
          r.pose = Pose(q.origin);
          r.translation = q.translation;
        } else {
          r.kind = "move";
          r.shape = q.shape;
          r.pose = q.pose;
          r.translation = q.displacement;
        }
      },
      query);
  for (const OverlapHit& h : result.overlaps) {
    if (r.hit_count == kMaxRecordedHits) break;
    ++r.hit_count;
    RecordedHit hit{h.id, r.pose.position, Vec3{}, 0.0};
    if (h.contact) {
      hit.point = h.contact->point_b;
      hit.normal = h.contact->normal;
    }
    hits->push_back(hit);
  }
  for (const CastHit& h : result.hits) {
    if (r.hit_count == kMaxRecordedHits) break;
    ++r.hit_count;
    hits->push_back({h.id, h.point, h.normal, h.fraction});
  }
  if (result.move) {
    r.end = result.move->position;
    for (const MoveContact& c : result.move->contacts) {
      if (r.hit_count == kMaxRecordedHits) break;
      ++r.hit_count;
      hits->push_back({c.id, c.point, c.normal, 0.0});
    }
  }
  return r;
}

}  // namespace

void QueryRecorder::Record(uint32_t capacity, std::optional<uint64_t> tick, uint64_t revision,
                           std::span<const Query> queries, std::span<const QueryResult> results) {
  if (capacity == 0) return;
  // Built outside the lock: a reader waits only for the push.
  auto entry = std::make_shared<RecordedTick>();
  entry->tick = tick;
  entry->revision = revision;
  entry->query_count = queries.size();
  const size_t kept = std::min({queries.size(), results.size(), kMaxRecordedQueries});
  entry->queries.reserve(kept);
  size_t hits = 0;
  for (size_t i = 0; i < kept; ++i) {
    hits += std::min(kMaxRecordedHits, results[i].overlaps.size() + results[i].hits.size() +
                                           (results[i].move ? results[i].move->contacts.size() : 0));
  }
  entry->hits.reserve(hits);
  for (size_t i = 0; i < kept; ++i) {
    entry->queries.push_back(Recorded(queries[i], results[i], &entry->hits));
  }
  std::shared_ptr<const RecordedTick> dropped;  // freed after the lock is released
  std::lock_guard<std::mutex> lock(mu_);
  ring_.push_back(std::move(entry));
  if (ring_.size() > capacity) {
    dropped = std::move(ring_.front());
    ring_.pop_front();
  }
}

std::vector<std::shared_ptr<const RecordedTick>> QueryRecorder::Snapshot() const {
  std::lock_guard<std::mutex> lock(mu_);
  return {ring_.begin(), ring_.end()};
}

std::shared_ptr<const RecordedTick> QueryRecorder::Newest() const {
  std::lock_guard<std::mutex> lock(mu_);
  return ring_.empty() ? nullptr : ring_.back();
}

size_t QueryRecorder::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return ring_.size();
}

}  // namespace hitbox::server
