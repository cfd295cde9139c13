// hitbox_loadgen: drives a running hitboxd over gRPC and measures it.
//
//   - GenerateScene / GenerateQueries: seeded synthetic worlds and query mixes
//     (the same numbers for the service and the in-process baseline).
//   - LoadScene: creates a session and fills it in batches under the limits.
//   - RunTicks: K concurrent Tick streams, each tick N moves + M queries;
//     reports ticks/s, queries/s and tick round-trip latency percentiles.
//   - RunUnary: single Query rpcs back to back; round-trip percentiles.
//   - RunInProcess: ColliderSet::RunBatch on the same scene, the baseline the
//     service is compared with.
// Every run is bounded by a count and by a wall-clock duration. Used by the
// hitbox-loadgen program and by `hitboxctl bench`.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <grpcpp/channel.h>

#include "hitbox/world/collider_set.h"
#include "hitbox/status.h"

namespace hitbox::loadgen {

/// A synthetic world: colliders of all four kinds, uniformly placed and
/// randomly rotated in the cube [-half_size, half_size]^3.
struct SceneOptions {
  /// Number of colliders (ids 1..colliders).
  size_t colliders = 50000;
  /// Half-size of the world cube, metres.
  double half_size = 150.0;
  /// Range of radii / half-extents, metres.
  double min_size = 0.1;
  double max_size = 3.0;
  /// Layers used: 0..layers-1 (1..32).
  uint32_t layers = 4;
  uint64_t seed = 1;
};

/// The relative share of each query kind and their reach.
struct QueryMix {
  /// Relative weights (need not sum to 1; all 0 means overlaps only).
  double overlap = 1.0;
  double cast = 1.0;
  double raycast = 1.0;
  /// Longest cast translation, metres.
  double cast_length = 30.0;
  /// Longest ray, metres.
  double ray_length = 60.0;
  /// Largest query shape radius / half-extent, metres.
  double max_query_size = 2.0;
};

/// Parses "overlap=1,cast=1,raycast=1" (any subset, any order).
Result<QueryMix> ParseQueryMix(const std::string& text);

/// Colliders of a generated scene.
std::vector<Collider> GenerateScene(const SceneOptions& options);
/// Union of the world bounds of `scene` (a 20 m cube about the origin when empty).
Aabb SceneBounds(const std::vector<Collider>& scene);
/// `count` seeded queries spread over `bounds` with the given mix.
std::vector<Query> GenerateQueries(const Aabb& bounds, const QueryMix& mix, size_t count,
                                   uint64_t seed);

/// The 64-player arena (arena.cc): the tick workload of a game server. A
/// walled 60 m square floor (one mesh of 2 m cells, 1800 triangles), pillars,
/// crates, a staircase of 0.2 m steps and two ramps (20 and 50 degrees), and
/// one capsule collider per player standing on the floor.
struct ArenaOptions {
  size_t players = 64;
  /// Capsule sweeps per tick (one per player, cycling: its own capsule from
  /// where it stands, 2 m along its walk direction, itself ignored).
  size_t casts_per_tick = 64;
  /// Hitscan rays (one per shooter, from its eyes, 50 m), explosions (area
  /// overlaps: spheres of 3 m about a player, players only) and ground checks
  /// (a ray 0.2 m below a player's feet, itself ignored) per tick, besides
  /// the moves. The defaults are the tick of issue 14: 64 moves, 64 capsule
  /// sweeps, 200 rays, 5 explosions, 64 ground checks.
  size_t rays_per_tick = 200;
  size_t overlaps_per_tick = 5;
  size_t ground_checks_per_tick = 64;
  uint64_t seed = 1;
};

/// Player i's collider id.
inline constexpr uint64_t kArenaPlayerBase = 1000000;

struct Arena {
  /// The world, then the players (ids kArenaPlayerBase + i, layer 1).
  std::vector<Collider> colliders;
  /// The players' shape: a capsule of radius 0.4 m, half-height 0.5 m.
  Shape player_shape;
  /// Player i's start position (the capsule's centre), on free floor.
  std::vector<Vec3> spawn;
};

/// The arena of `options` (seeded: the same options give the same arena).
Arena GenerateArena(const ArenaOptions& options);

/// The moves of tick `tick`: ArenaTickQueries's first positions.size()
/// queries, without the rest.
std::vector<Query> ArenaMoveQueries(const Arena& arena, const ArenaOptions& options,
                                    const std::vector<Vec3>& positions, uint64_t tick);

/// The queries of tick `tick`, in this order: one move per player from
/// positions[i] (walk at 6 m/s for 1/60 s in a direction that changes every
/// second, plus gravity; apply_to_id = its collider), then the capsule
/// sweeps, the rays, the explosions and the ground checks.
std::vector<Query> ArenaTickQueries(const Arena& arena, const ArenaOptions& options,
                                    const std::vector<Vec3>& positions, uint64_t tick);

/// The player whose capsule the k-th sweep of a tick casts (player
/// k % players): its collider is kArenaPlayerBase + that, the sweep's
/// shape and start pose are the collider's (a sweep by collider id).
inline size_t ArenaSweepPlayer(const ArenaOptions& options, size_t k) {
  return options.players == 0 ? 0 : k % options.players;
}

/// Latency percentiles of a run, microseconds.
struct Latency {
  uint64_t count = 0;
  double mean_us = 0;
  double p50_us = 0;
  double p99_us = 0;
  double p999_us = 0;
  double max_us = 0;
};
/// Percentiles of `samples_us` (sorted in place); zeros when empty.
Latency Summarize(std::vector<double>* samples_us);

/// Creates session `session_id` (deleting an existing one first when
/// `replace`), then adds `colliders` in ApplyChanges batches of `batch`.
/// `token`, when given: a token it holds on entry (e.g. the admin token) is
/// sent on the calls before the create; on success it receives the new
/// session's token (TickOptions/UnaryOptions::token).
Status LoadScene(const std::shared_ptr<grpc::Channel>& channel, const std::string& session_id,
                 const std::vector<Collider>& colliders, size_t batch = 4096,
                 bool replace = true, std::string* token = nullptr);

/// Options of a tick-stream run.
struct TickOptions {
  std::string session_id = "loadgen";
  /// The session's token (LoadScene), sent as `authorization: Bearer` metadata; empty: none.
  std::string token;
  /// Concurrent Tick streams (one thread each).
  size_t streams = 4;
  /// Ticks per stream; the run also stops at `duration`.
  uint64_t ticks = 1000;
  std::chrono::milliseconds duration{10000};
  /// Moves of existing colliders per tick (stream s moves ids s+1, s+1+K, ...).
  size_t moves_per_tick = 16;
  /// Queries per tick.
  size_t queries_per_tick = 16;
  QueryMix mix;
  /// When not empty, ticks cycle through these queries instead of generated ones.
  std::vector<Query> queries;
  uint64_t seed = 7;
  /// Ticks per stream not measured at the start (connection warm-up).
  uint64_t warmup_ticks = 20;
};

/// What a tick run measured.
struct TickReport {
  uint64_t ticks = 0;
  uint64_t queries = 0;
  uint64_t hits = 0;
  /// Ticks answered with TickResponse.error, or streams that failed.
  uint64_t errors = 0;
  std::string first_error;
  double seconds = 0;
  double ticks_per_s = 0;
  double queries_per_s = 0;
  /// Tick round trip (write request to response read).
  Latency latency;
  /// CPU seconds this (client) process used during the run: on a shared
  /// machine, what the load generator took away from the server.
  double client_cpu_seconds = 0;
};

/// Runs K concurrent Tick streams against a session holding `scene`
/// (LoadScene first). Fails only when no stream could be opened.
Result<TickReport> RunTicks(const std::shared_ptr<grpc::Channel>& channel,
                            const std::vector<Collider>& scene, const TickOptions& options);

/// Options of a unary run: single Query rpcs, one at a time.
struct UnaryOptions {
  std::string session_id = "loadgen";
  /// The session's token (LoadScene), sent as `authorization: Bearer` metadata; empty: none.
  std::string token;
  /// Calls; the run also stops at `duration`.
  uint64_t calls = 20000;
  std::chrono::milliseconds duration{10000};
  /// Queries per call (1 = single-query round trip).
  size_t queries_per_call = 1;
  QueryMix mix;
  /// When not empty, calls cycle through these queries instead of generated ones.
  std::vector<Query> queries;
  uint64_t seed = 11;
  uint64_t warmup_calls = 200;
};

struct UnaryReport {
  uint64_t calls = 0;
  uint64_t errors = 0;
  std::string first_error;
  double seconds = 0;
  double calls_per_s = 0;
  double queries_per_s = 0;
  Latency latency;
};

Result<UnaryReport> RunUnary(const std::shared_ptr<grpc::Channel>& channel,
                             const std::vector<Collider>& scene, const UnaryOptions& options);

/// In-process baseline: ColliderSet::RunBatch over batches of `batch` queries.
struct InProcessReport {
  uint64_t queries = 0;
  double seconds = 0;
  double queries_per_s = 0;
};
/// Builds a ColliderSet of `scene` and runs batches of `batch` generated
/// queries (same generator as RunTicks) until `max_queries` or `duration`.
/// `threads` > 1 uses a ThreadPool, as hitboxd does.
Result<InProcessReport> RunInProcess(const std::vector<Collider>& scene, const QueryMix& mix,
                                     size_t batch, uint64_t max_queries,
                                     std::chrono::milliseconds duration, size_t threads,
                                     uint64_t seed = 7);

/// The same over given queries (cycled), e.g. a case file's.
Result<InProcessReport> RunInProcess(const std::vector<Collider>& scene,
                                     const std::vector<Query>& queries, size_t batch,
                                     uint64_t max_queries, std::chrono::milliseconds duration,
                                     size_t threads);

/// A scene and its queries read from a conformance case file (hitbox_cases).
struct CaseScene {
  std::vector<Collider> colliders;
  std::vector<Query> queries;
};
Result<CaseScene> LoadCaseScene(const std::string& path);

/// One-line human-readable summaries.
std::string ToString(const Latency& l);
std::string ToString(const TickReport& r);
std::string ToString(const UnaryReport& r);
std::string ToString(const InProcessReport& r);

}  // namespace hitbox::loadgen
