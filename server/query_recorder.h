// The queries of a session's last ticks and their hits, kept for the
// inspector (--record-queries N, or while an inspector watches the session):
// a bounded ring of ticks, each with at most
// kMaxRecordedQueries queries of kMaxRecordedHits hits, filled after each
// transaction and read by the HTTP API under its own small lock.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <vector>

#include "hitbox/world/collider_set.h"

namespace hitbox::server {

/// Queries kept per recorded tick (the rest are counted, not kept).
inline constexpr size_t kMaxRecordedQueries = 256;
/// Hits kept per recorded query.
inline constexpr size_t kMaxRecordedHits = 16;
/// Transactions a session records while an inspector watches it, when
/// --record-queries asks for none.
inline constexpr uint32_t kWatchedRecordTicks = 64;
/// How long one read of the inspector counts as watching, nanoseconds (the
/// page reads 10 times a second).
inline constexpr int64_t kWatchHoldNs = 2'000'000'000;

/// One hit of a recorded query, world frame, metres.
struct RecordedHit {
  uint64_t id = 0;
  /// Contact point (casts, rays, move contacts; overlaps: the collider's
  /// contact point when asked, else the query's position).
  Vec3 point;
  /// Unit normal at the hit (zero for overlaps without contact).
  Vec3 normal;
  /// Fraction of the translation in [0, 1] (0 for overlaps and moves).
  double fraction = 0.0;
};

/// One recorded query: what it was and what it hit.
struct RecordedQuery {
  /// "overlap", "cast", "ray" or "move".
  const char* kind = "ray";
  /// The query shape (overlap, cast, move; a ray has none) at `pose`.
  std::optional<Shape> shape;
  /// Start pose (a ray: its origin, identity rotation).
  Pose pose;
  /// Translation (cast, ray, move's wanted motion); zero for overlaps.
  Vec3 translation;
  /// Where the move ended (moves only).
  std::optional<Vec3> end;
  uint64_t tag = 0;
  /// Its hits: RecordedTick::hits[hit_begin, hit_begin + hit_count).
  uint32_t hit_begin = 0;
  uint32_t hit_count = 0;
};

/// The queries of one transaction (a tick, or a Query call) of a session.
struct RecordedTick {
  /// The tick it was applied at (Tick), or the newest tick then (Query).
  std::optional<uint64_t> tick;
  /// The session's revision after it.
  uint64_t revision = 0;
  /// Queries it ran (may be more than queries.size()).
  uint64_t query_count = 0;
  std::vector<RecordedQuery> queries;
  /// The hits of all its queries, in query order (one allocation per tick).
  std::vector<RecordedHit> hits;
};

/// A session's ring of recorded transactions. Thread-safe.
class QueryRecorder {
 public:
  /// Records `queries` and their `results` (same length) as the newest
  /// entry, dropping the oldest beyond `capacity` entries (0: records nothing).
  void Record(uint32_t capacity, std::optional<uint64_t> tick, uint64_t revision,
              std::span<const Query> queries, std::span<const QueryResult> results);
  /// The entries, oldest first: shared, so the lock is held only to copy
  /// pointers and a tick never waits for a reader's copy.
  std::vector<std::shared_ptr<const RecordedTick>> Snapshot() const;
  /// The newest entry, or nullptr.
  std::shared_ptr<const RecordedTick> Newest() const;
  /// Entries held now.
  size_t size() const;
  /// Counts `n` queries run on the session (every transaction, recorded or not).
  void CountQueries(uint64_t n) { queries_run_.fetch_add(n, std::memory_order_relaxed); }
  /// Queries run on the session so far.
  uint64_t queries_run() const { return queries_run_.load(std::memory_order_relaxed); }
  /// An inspector watches until `until_ns` (SteadyNowNs() clock).
  void Watch(int64_t until_ns) { watched_until_ns_.store(until_ns, std::memory_order_relaxed); }
  /// True once an inspector watched (one relaxed load).
  bool ever_watched() const { return watched_until_ns_.load(std::memory_order_relaxed) != 0; }
  /// True while watched as of `now_ns`.
  bool Watched(int64_t now_ns) const {
    const int64_t until = watched_until_ns_.load(std::memory_order_relaxed);
    return until != 0 && now_ns < until;
  }
  /// Entries kept: `configured` (--record-queries) when not 0, else
  /// kWatchedRecordTicks while watched as of `now_ns`, else 0.
  uint32_t Capacity(uint32_t configured, int64_t now_ns) const {
    if (configured != 0) return configured;
    return Watched(now_ns) ? kWatchedRecordTicks : 0;
  }

 private:
  std::atomic<uint64_t> queries_run_{0};
  std::atomic<int64_t> watched_until_ns_{0};
  mutable std::mutex mu_;
  std::deque<std::shared_ptr<const RecordedTick>> ring_;  // guarded by mu_
};

}  // namespace hitbox::server
