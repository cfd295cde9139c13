// Sessions of hitboxd: one authoritative ColliderSet each, with its limits and
// a reader/writer lock, and the registry that maps session ids to them.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <vector>

#include "hitbox/collider_set.h"
#include "hitbox/status.h"

namespace hitbox::server {

/// Limits that apply per session (a session may lower the server's, never raise them).
struct SessionLimits {
  /// Most colliders the session may hold.
  uint64_t max_colliders = 1'000'000;
  /// Most changes in one ApplyChanges request or tick.
  uint32_t max_changes_per_message = 65'536;
  /// Most queries in one Query request or tick.
  uint32_t max_queries_per_message = 65'536;
  /// Most hits reported per query (QueryFilter.max_hits is clamped to it).
  uint32_t max_hits_per_query = 1'024;
  /// Work budget of one Query request or tick: tree nodes all its queries
  /// may visit together. The default is ~0.25-0.5 s of one core, and ~400
  /// nodes for each of 65,536 queries (ordinary queries visit 10-100).
  uint64_t max_nodes_per_message = 25'000'000;
  /// Work budget of one Query request or tick: narrow-phase pair tests
  /// (the default: ~0.2-0.5 s of one core, ~75 per query of a full message).
  uint64_t max_pair_tests_per_message = 5'000'000;
};

/// Server-wide limits: the per-session maxima plus the global ones.
struct ServerLimits {
  /// Most sessions at once.
  uint64_t max_sessions = 256;
  /// Largest request message accepted, bytes (gRPC max receive message size).
  uint64_t max_message_bytes = 64ull << 20;
  /// Largest ListColliders page (colliders per message).
  uint32_t max_page_size = 4'096;
  /// Bytes that the answers of all calls in flight may hold together (query
  /// results and their response messages); a call that would pass it is
  /// RESOURCE_EXHAUSTED, to be retried.
  uint64_t max_inflight_bytes = 1ull << 30;
  /// Defaults and maxima of every session.
  SessionLimits session;
};

/// One game session. Queries take `mutex()` shared, changes take it
/// exclusively, so queries never see half a batch and run concurrently with
/// each other; sessions never share a lock.
class Session {
 public:
  Session(std::string id, const SessionLimits& limits, int64_t created_unix_ms,
          std::string token = {})
      : id_(std::move(id)), limits_(limits), created_unix_ms_(created_unix_ms),
        token_(std::move(token)) {}

  /// The session id (1..128 of [A-Za-z0-9._:-]).
  const std::string& id() const { return id_; }
  /// The limits in force.
  const SessionLimits& limits() const { return limits_; }
  /// Creation time, milliseconds since the Unix epoch.
  int64_t created_unix_ms() const { return created_unix_ms_; }
  /// The secret a caller presents to use this session (auth.h); empty: none
  /// (only the admin token may use it).
  const std::string& token() const { return token_; }
  /// Guards set(): shared for reads and queries, exclusive for changes.
  std::shared_mutex& mutex() const { return mutex_; }
  /// The collider set; hold mutex() while using it.
  ColliderSet& set() { return set_; }
  const ColliderSet& set() const { return set_; }
  /// True once DeleteSession removed it; set under the exclusive lock.
  bool deleted() const { return deleted_.load(std::memory_order_acquire); }
  void MarkDeleted() { deleted_.store(true, std::memory_order_release); }

 private:
  const std::string id_;
  const SessionLimits limits_;
  const int64_t created_unix_ms_;
  const std::string token_;
  mutable std::shared_mutex mutex_;
  ColliderSet set_;
  std::atomic<bool> deleted_{false};
};

/// The sessions of one server, by id. Thread-safe; the map lock is held only
/// for lookups and inserts, never while a session is used.
class SessionRegistry {
 public:
  explicit SessionRegistry(uint64_t max_sessions) : max_sessions_(max_sessions) {}

  /// Creates a session. Empty id: a fresh unique one is picked. Errors:
  /// kInvalidArgument (bad id), kAlreadyExists, kResourceExhausted (max sessions).
  /// `token` is the session's secret (Session::token()).
  Result<std::shared_ptr<Session>> Create(const std::string& id, const SessionLimits& limits,
                                          std::string token = {});
  /// The session, or nullptr.
  std::shared_ptr<Session> Find(std::string_view id) const;
  /// Removes and returns the session (nullptr when unknown); marks it deleted.
  std::shared_ptr<Session> Remove(std::string_view id);
  /// Every session, sorted by id.
  std::vector<std::shared_ptr<Session>> List() const;
  /// Number of sessions.
  size_t size() const;

 private:
  const uint64_t max_sessions_;
  mutable std::mutex mu_;
  std::map<std::string, std::shared_ptr<Session>, std::less<>> sessions_;
  uint64_t next_auto_id_ = 1;
};

}  // namespace hitbox::server
