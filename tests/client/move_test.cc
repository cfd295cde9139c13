// Character movement through hitboxd as a game server uses it: the 64-player
// arena (loadgen.h) on a Tick stream, each tick 64 moves applied to the
// players' colliders plus rays and overlaps, against the hitboxd binary on a
// loopback port and an in-process server. The answers equal core's on a
// mirror of the session bit for bit; every tick is one revision; refused
// ticks change nothing; hitboxctl-style unary moves apply too.
#include <gtest/gtest.h>

#include <bit>
#include <future>
#include <string>

#include "hitbox/client.h"
#include "hitbox/loadgen.h"
#include "process.h"

#include <spdlog/spdlog.h>

#include "server.h"

namespace hitbox {
namespace {

using loadgen::kArenaPlayerBase;

bool SameBits(const Vec3& a, const Vec3& b) {
  return std::bit_cast<uint64_t>(a.x) == std::bit_cast<uint64_t>(b.x) &&
         std::bit_cast<uint64_t>(a.y) == std::bit_cast<uint64_t>(b.y) &&
         std::bit_cast<uint64_t>(a.z) == std::bit_cast<uint64_t>(b.z);
}

// 120 ticks (two seconds of play) of the arena on a stream.
void PlayArena(Client& client, const std::string& session) {
  const loadgen::ArenaOptions options;
  const loadgen::Arena arena = loadgen::GenerateArena(options);
  ASSERT_EQ(arena.spawn.size(), 64u);
  ASSERT_TRUE(client.CreateSession(session).ok());
  RpcResult<ApplyResult> added = client.AddColliders(session, arena.colliders);
  ASSERT_TRUE(added.ok()) << added.status().ToString();
  ColliderSet mirror;
  ASSERT_TRUE(mirror.AddBulk(arena.colliders).ok());

  std::unique_ptr<TickStream> stream = client.OpenTickStream(session);
  std::vector<Vec3> positions = arena.spawn;
  uint64_t revision = added->revision;
  int stepped = 0, blocked = 0, grounded = 0;
  for (uint64_t tick = 1; tick <= 120; ++tick) {
    const std::vector<Query> queries =
        loadgen::ArenaTickQueries(arena, options, positions, tick);
    // Every other tick sends its capsule sweeps by collider id (shape and
    // pose from the player's collider): the answers must not change.
    std::vector<ShapeFromCollider> by_id;
    for (size_t k = 0; tick % 2 == 0 && k < options.casts_per_tick; ++k) {
      by_id.push_back({positions.size() + k,
                       kArenaPlayerBase + loadgen::ArenaSweepPlayer(options, k)});
    }
    RpcResult<TickResult> r = stream->Tick({}, queries, by_id).get();
    ASSERT_TRUE(r.ok()) << "tick " << tick << ": " << r.status().ToString();
    EXPECT_EQ(r->revision, ++revision) << "one revision per tick";
    ASSERT_EQ(r->results.size(), queries.size());
    std::vector<QueryResult> expected(queries.size());
    mirror.RunBatch(queries, expected);
    std::vector<ColliderChange> applied;
    for (size_t i = 0; i < queries.size(); ++i) {
      const QueryResult& got = r->results[i];
      if (i < positions.size()) {
        ASSERT_TRUE(got.move.has_value()) << i;
        const MoveResult& m = *got.move;
        ASSERT_TRUE(SameBits(m.position, expected[i].move->position))
            << "tick " << tick << " player " << i;
        EXPECT_EQ(m.contacts.size(), expected[i].move->contacts.size());
        EXPECT_EQ(m.on_ground, expected[i].move->on_ground);
        stepped += m.stepped;
        blocked += m.blocked;
        grounded += m.on_ground;
        positions[i] = m.position;
        applied.push_back(ColliderChange::Move(kArenaPlayerBase + i, Pose(m.position)));
      } else {
        EXPECT_FALSE(got.move.has_value());
        ASSERT_EQ(got.hits.size(), expected[i].hits.size()) << "tick " << tick << " query " << i;
        for (size_t k = 0; k < got.hits.size(); ++k) {
          EXPECT_EQ(got.hits[k].id, expected[i].hits[k].id);
          EXPECT_EQ(got.hits[k].fraction, expected[i].hits[k].fraction);
        }
        ASSERT_EQ(got.overlaps.size(), expected[i].overlaps.size());
      }
    }
    ASSERT_TRUE(mirror.Apply(applied).ok());
  }
  // The players did walk into things, climb the stairs' steps and stay on the floor.
  EXPECT_GT(blocked, 0);
  EXPECT_GT(grounded, 64 * 120 * 9 / 10);
  std::printf("[  INFO    ] arena: %d moves on ground, %d blocked, %d stepped of %d\n", grounded,
              blocked, stepped, 64 * 120);

  // The session's colliders are where the moves ended.
  std::vector<uint64_t> ids;
  for (size_t i = 0; i < positions.size(); ++i) ids.push_back(kArenaPlayerBase + i);
  RpcResult<ColliderSnapshot> players = client.GetColliders(session, ids);
  ASSERT_TRUE(players.ok()) << players.status().ToString();
  for (size_t i = 0; i < positions.size(); ++i) {
    EXPECT_TRUE(SameBits(players->colliders[i].pose.position, positions[i])) << i;
  }

  // Refused ticks change nothing: the same collider moved twice ...
  MoveQuery m;
  m.shape = arena.player_shape;
  m.pose = Pose(positions[0]);
  m.displacement = {0.1, 0, 0};
  m.apply_to_id = kArenaPlayerBase;
  const std::vector<Query> twice = {m, m};
  RpcResult<TickResult> dup = stream->Tick({}, twice).get();
  EXPECT_EQ(dup.code(), RpcCode::kInvalidArgument);
  EXPECT_NE(dup.status().message().find("queries[1].move.apply_to_id"), std::string::npos)
      << dup.status().message();
  // ... an unknown collider, with a change in the same tick (rolled back) ...
  MoveQuery ghost = m;
  ghost.apply_to_id = 424242;
  const std::vector<ColliderChange> lift = {
      ColliderChange::Move(kArenaPlayerBase + 1, Pose(positions[1] + Vec3{0, 5, 0}))};
  const std::vector<Query> ghost_q = {ghost};
  RpcResult<TickResult> unknown = stream->Tick(lift, ghost_q).get();
  EXPECT_EQ(unknown.code(), RpcCode::kNotFound);
  EXPECT_NE(unknown.status().message().find("queries[0].move.apply_to_id: collider 424242"),
            std::string::npos)
      << unknown.status().message();
  // ... bad settings, named by their field path.
  MoveQuery steep = m;
  steep.settings.max_slope_degrees = 95;
  const std::vector<Query> steep_q = {RayQuery{}, steep};
  RpcResult<TickResult> bad = stream->Tick({}, steep_q).get();
  EXPECT_EQ(bad.code(), RpcCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("queries[1].move.settings.max_slope_degrees"),
            std::string::npos)
      << bad.status().message();
  // Sweeps by collider id: an unknown id is NOT_FOUND by its field, a
  // raycast or a mesh collider INVALID_ARGUMENT, an index past the queries
  // is refused by the client.
  CastQuery sweep;
  sweep.translation = {1, 0, 0};
  const std::vector<Query> sweep_q = {RayQuery{}, sweep};
  const std::vector<ShapeFromCollider> ghost_id = {{1, 424242}};
  RpcResult<TickResult> no_such = stream->Tick({}, sweep_q, ghost_id).get();
  EXPECT_EQ(no_such.code(), RpcCode::kNotFound);
  EXPECT_NE(no_such.status().message().find(
                "queries[1].shape_from_collider: collider 424242 not found"),
            std::string::npos)
      << no_such.status().message();
  const std::vector<ShapeFromCollider> ray_id = {{0, kArenaPlayerBase}};
  RpcResult<TickResult> ray = stream->Tick({}, sweep_q, ray_id).get();
  EXPECT_EQ(ray.code(), RpcCode::kInvalidArgument);
  EXPECT_NE(ray.status().message().find("queries[0].shape_from_collider"), std::string::npos)
      << ray.status().message();
  const std::vector<ShapeFromCollider> floor_id = {{1, arena.colliders[0].id}};
  RpcResult<TickResult> floor = stream->Tick({}, sweep_q, floor_id).get();
  EXPECT_EQ(floor.code(), RpcCode::kInvalidArgument);
  EXPECT_NE(floor.status().message().find("collider-only shape"), std::string::npos)
      << floor.status().message();
  const std::vector<ShapeFromCollider> past = {{2, kArenaPlayerBase}};
  RpcResult<TickResult> beyond = stream->Tick({}, sweep_q, past).get();
  EXPECT_EQ(beyond.code(), RpcCode::kInvalidArgument);
  EXPECT_NE(beyond.status().message().find("shapes_from[0].query_index: 2"), std::string::npos)
      << beyond.status().message();
  // A unary sweep by id is the explicit sweep of that collider, ignoring it.
  CastQuery down;
  down.translation = {0, -5, 0};
  const std::vector<Query> down_q = {down};
  const std::vector<ShapeFromCollider> player0 = {{0, kArenaPlayerBase}};
  RpcResult<QueryBatchResult> by_id = client.Query(session, down_q, player0);
  ASSERT_TRUE(by_id.ok()) << by_id.status().ToString();
  CastQuery explicit_down;
  explicit_down.shape = arena.player_shape;
  explicit_down.pose = Pose(positions[0]);
  explicit_down.translation = {0, -5, 0};
  explicit_down.filter.ignore = {kArenaPlayerBase};
  const std::vector<Query> explicit_q = {explicit_down};
  RpcResult<QueryBatchResult> plain = client.Query(session, explicit_q);
  ASSERT_TRUE(plain.ok()) << plain.status().ToString();
  ASSERT_EQ(by_id->results[0].hits.size(), 1u) << "the floor is below";
  ASSERT_EQ(plain->results[0].hits.size(), 1u);
  EXPECT_EQ(by_id->results[0].hits[0].id, plain->results[0].hits[0].id);
  EXPECT_EQ(by_id->results[0].hits[0].fraction, plain->results[0].hits[0].fraction);

  RpcResult<TickResult> after = stream->Tick({}, {}).get();
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(after->revision, revision);
  RpcResult<ColliderSnapshot> still = client.GetColliders(session, ids);
  ASSERT_TRUE(still.ok());
  EXPECT_TRUE(SameBits(still->colliders[1].pose.position, positions[1]));
  EXPECT_TRUE(stream->Finish().ok());

  // A unary move with apply: the answer and the update in one call.
  RpcResult<MoveResult> moved = client.Move(session, m);
  ASSERT_TRUE(moved.ok()) << moved.status().ToString();
  RpcResult<SessionInfo> info = client.GetSession(session);
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->revision, revision + 1);
  const std::vector<uint64_t> first = {kArenaPlayerBase};
  RpcResult<ColliderSnapshot> one = client.GetColliders(session, first);
  ASSERT_TRUE(one.ok());
  EXPECT_TRUE(SameBits(one->colliders[0].pose.position, moved->position));
  // Without apply_to_id nothing changes.
  m.apply_to_id.reset();
  m.filter.ignore = {kArenaPlayerBase};
  m.pose = Pose(moved->position);
  ASSERT_TRUE(client.Move(session, m).ok());
  EXPECT_EQ(client.GetSession(session)->revision, revision + 1);
  EXPECT_TRUE(client.DeleteSession(session).ok());
}

// Every field of a result, bit for bit; "" when equal.
std::string ResultDiff(const QueryResult& a, const QueryResult& b) {
  if (a.tag != b.tag) return "tag";
  if (a.truncated != b.truncated) return "truncated";
  if (a.move.has_value() != b.move.has_value()) return "move";
  if (a.move) {
    const MoveResult& x = *a.move;
    const MoveResult& y = *b.move;
    if (!SameBits(x.position, y.position) || !SameBits(x.displacement, y.displacement)) {
      return "move.position";
    }
    if (x.contacts.size() != y.contacts.size()) return "move.contacts.size";
    for (size_t k = 0; k < x.contacts.size(); ++k) {
      if (x.contacts[k].id != y.contacts[k].id ||
          !SameBits(x.contacts[k].normal, y.contacts[k].normal) ||
          !SameBits(x.contacts[k].point, y.contacts[k].point)) {
        return "move.contacts[" + std::to_string(k) + "]";
      }
    }
    if (x.on_ground != y.on_ground || x.ground_id != y.ground_id ||
        !SameBits(x.ground_normal, y.ground_normal) || x.stepped != y.stepped ||
        x.blocked != y.blocked) {
      return "move.flags";
    }
  }
  if (a.hits.size() != b.hits.size()) return "hits.size";
  for (size_t k = 0; k < a.hits.size(); ++k) {
    if (a.hits[k].id != b.hits[k].id ||
        std::bit_cast<uint64_t>(a.hits[k].fraction) !=
            std::bit_cast<uint64_t>(b.hits[k].fraction) ||
        !SameBits(a.hits[k].normal, b.hits[k].normal) ||
        !SameBits(a.hits[k].point, b.hits[k].point)) {
      return "hits[" + std::to_string(k) + "]";
    }
  }
  if (a.overlaps.size() != b.overlaps.size()) return "overlaps.size";
  for (size_t k = 0; k < a.overlaps.size(); ++k) {
    if (a.overlaps[k].id != b.overlaps[k].id) return "overlaps[" + std::to_string(k) + "]";
  }
  return "";
}

// 60 ticks of the arena answered into one TickResult the game keeps
// (TickInto, and the callback form every third tick), each equal field by
// field to a mirror's fresh answers; a kept QueryBatchResult the same over
// unary calls; errors reach the caller's status.
void PlayArenaIntoKeptBuffers(Client& client, const std::string& session) {
  const loadgen::ArenaOptions options;
  const loadgen::Arena arena = loadgen::GenerateArena(options);
  ASSERT_TRUE(client.CreateSession(session).ok());
  RpcResult<ApplyResult> added = client.AddColliders(session, arena.colliders);
  ASSERT_TRUE(added.ok()) << added.status().ToString();
  ColliderSet mirror;
  ASSERT_TRUE(mirror.AddBulk(arena.colliders).ok());

  std::unique_ptr<TickStream> stream = client.OpenTickStream(session);
  std::vector<Vec3> positions = arena.spawn;
  uint64_t revision = added->revision;
  TickResult kept;
  for (uint64_t tick = 1; tick <= 60; ++tick) {
    std::vector<Query> queries = loadgen::ArenaTickQueries(arena, options, positions, tick);
    // Some ticks carry fewer queries: the kept results shrink and grow again.
    if (tick % 5 == 0) queries.resize(positions.size() + 7);
    std::vector<ShapeFromCollider> by_id;
    for (size_t k = 0;
         tick % 2 == 0 && k < options.casts_per_tick && positions.size() + k < queries.size();
         ++k) {
      by_id.push_back(
          {positions.size() + k, kArenaPlayerBase + loadgen::ArenaSweepPlayer(options, k)});
    }
    if (tick % 3 == 0) {
      std::promise<RpcStatus> done;
      stream->Tick({}, queries, by_id, &kept, [&done](const RpcStatus& st) { done.set_value(st); });
      const RpcStatus st = done.get_future().get();
      ASSERT_TRUE(st.ok()) << "tick " << tick << ": " << st.ToString();
    } else {
      const RpcStatus st = stream->TickInto({}, queries, by_id, &kept);
      ASSERT_TRUE(st.ok()) << "tick " << tick << ": " << st.ToString();
    }
    EXPECT_EQ(kept.tick, tick);
    EXPECT_EQ(kept.revision, ++revision);
    ASSERT_EQ(kept.results.size(), queries.size());
    std::vector<QueryResult> expected(queries.size());
    mirror.RunBatch(queries, expected);
    std::vector<ColliderChange> applied;
    for (size_t i = 0; i < queries.size(); ++i) {
      ASSERT_EQ(ResultDiff(kept.results[i], expected[i]), "") << "tick " << tick << " query " << i;
    }
    for (size_t i = 0; i < positions.size(); ++i) {
      positions[i] = kept.results[i].move->position;
      applied.push_back(ColliderChange::Move(kArenaPlayerBase + i, Pose(positions[i])));
    }
    ASSERT_TRUE(mirror.Apply(applied).ok());
  }

  // A refused tick reaches the caller's status (the client refuses an index
  // past the queries; the server a collider moved twice); the stream goes on.
  MoveQuery m;
  m.shape = arena.player_shape;
  m.pose = Pose(positions[0]);
  m.displacement = {0.1, 0, 0};
  m.apply_to_id = kArenaPlayerBase;
  const std::vector<Query> twice = {m, m};
  const std::vector<ShapeFromCollider> past = {{2, kArenaPlayerBase}};
  RpcStatus st = stream->TickInto({}, twice, past, &kept);
  EXPECT_EQ(st.code(), RpcCode::kInvalidArgument);
  EXPECT_NE(st.message().find("shapes_from[0].query_index: 2"), std::string::npos) << st.message();
  st = stream->TickInto({}, twice, {}, &kept);
  EXPECT_EQ(st.code(), RpcCode::kInvalidArgument);
  EXPECT_NE(st.message().find("queries[1].move.apply_to_id"), std::string::npos) << st.message();
  st = stream->TickInto({}, {}, {}, nullptr);
  EXPECT_EQ(st.code(), RpcCode::kInvalidArgument) << st.ToString();
  st = stream->TickInto({}, {}, {}, &kept);
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(kept.revision, revision);
  EXPECT_TRUE(kept.results.empty());
  EXPECT_TRUE(stream->Finish().ok());
  // After Finish: FAILED_PRECONDITION, through the callback form too.
  st = stream->TickInto({}, {}, {}, &kept);
  EXPECT_EQ(st.code(), RpcCode::kFailedPrecondition);
  RpcStatus late;
  stream->TickAt(1000, {}, {}, &kept, [&late](const RpcStatus& s) { late = s; });
  EXPECT_EQ(late.code(), RpcCode::kFailedPrecondition);

  // Unary queries into a kept QueryBatchResult equal the value form's answers.
  QueryBatchResult batch;
  for (uint64_t round = 1; round <= 3; ++round) {
    std::vector<Query> queries = loadgen::ArenaTickQueries(arena, options, positions, 100 + round);
    for (size_t i = 0; i < positions.size(); ++i) {
      std::get<MoveQuery>(queries[i]).apply_to_id.reset();  // nothing changes
    }
    if (round == 2) queries.resize(positions.size() + 3);
    const RpcStatus into = client.Query(session, queries, {}, &batch);
    ASSERT_TRUE(into.ok()) << into.ToString();
    RpcResult<QueryBatchResult> value = client.Query(session, queries);
    ASSERT_TRUE(value.ok()) << value.status().ToString();
    EXPECT_EQ(batch.revision, value->revision);
    ASSERT_EQ(batch.results.size(), queries.size());
    for (size_t i = 0; i < queries.size(); ++i) {
      ASSERT_EQ(ResultDiff(batch.results[i], value->results[i]), "")
          << "round " << round << " query " << i;
    }
  }
  const std::vector<Query> one = {RayQuery{}};
  const std::vector<ShapeFromCollider> ray_id = {{0, kArenaPlayerBase}};
  const RpcStatus ray = client.Query(session, one, ray_id, &batch);
  EXPECT_EQ(ray.code(), RpcCode::kInvalidArgument) << ray.ToString();
  EXPECT_EQ(client.Query(session, one, {}, nullptr).code(), RpcCode::kInvalidArgument);
  EXPECT_TRUE(client.DeleteSession(session).ok());
}

// Runs play(client, session) against a hitboxd process.
template <typename Play>
void OnHitboxd(Play play, const std::string& session) {
  testing::HitboxdProcess server;
  ASSERT_TRUE(server.running()) << "could not start " << testing::HitboxdProcess::BinaryPath();
  ClientOptions o;
  o.default_timeout = std::chrono::seconds(20);
  Client client(server.address(), o);
  play(client, session);
}

// Runs play(client, session) against a server in this process (in-process channel).
template <typename Play>
void InProcess(Play play, const std::string& session) {
  spdlog::set_level(spdlog::level::warn);
  server::ServerOptions options;
  options.listen = "127.0.0.1:0";
  options.service.threads = 2;
  Result<std::unique_ptr<server::HitboxServer>> started = server::HitboxServer::Start(options);
  ASSERT_TRUE(started.ok()) << started.error().message;
  {
    Client client((*started)->InProcessChannel());
    play(client, session);
  }
  (*started)->Shutdown(std::chrono::milliseconds(100));
  (*started)->Wait();
}

// The moves-only benchmarks' queries (ArenaMoveQueries) are the full tick's
// first ones, field for field, whatever the tick and the players' places.
TEST(MoveInProcessTest, ArenaMoveQueriesAreTheTicksMoves) {
  const loadgen::ArenaOptions options;
  const loadgen::Arena arena = loadgen::GenerateArena(options);
  std::vector<Vec3> positions = arena.spawn;
  for (uint64_t tick : {1u, 59u, 60u, 61u, 1000u}) {
    for (Vec3& p : positions) p += Vec3{0.25, 0.0, -0.125};
    const std::vector<Query> all = loadgen::ArenaTickQueries(arena, options, positions, tick);
    const std::vector<Query> moves = loadgen::ArenaMoveQueries(arena, options, positions, tick);
    ASSERT_EQ(moves.size(), positions.size());
    ASSERT_GT(all.size(), moves.size());
    for (size_t i = 0; i < moves.size(); ++i) {
      const MoveQuery* want = std::get_if<MoveQuery>(&all[i]);
      const MoveQuery* got = std::get_if<MoveQuery>(&moves[i]);
      ASSERT_TRUE(want != nullptr && got != nullptr) << "tick " << tick << " query " << i;
      EXPECT_EQ(got->shape.kind(), want->shape.kind());
      EXPECT_EQ(got->shape.radius(), want->shape.radius());
      EXPECT_EQ(got->shape.half_height(), want->shape.half_height());
      EXPECT_TRUE(SameBits(got->pose.position, want->pose.position)) << "tick " << tick;
      EXPECT_TRUE(SameBits(got->displacement, want->displacement)) << "tick " << tick;
      EXPECT_EQ(got->apply_to_id, want->apply_to_id);
    }
  }
}

TEST(MoveHitboxdTest, ArenaOfSixtyFourPlayers) { OnHitboxd(PlayArena, "arena"); }

TEST(MoveInProcessTest, ArenaOfSixtyFourPlayers) { InProcess(PlayArena, "arena-in-process"); }

TEST(MoveHitboxdTest, ArenaIntoKeptBuffers) { OnHitboxd(PlayArenaIntoKeptBuffers, "arena-kept"); }

TEST(MoveInProcessTest, ArenaIntoKeptBuffers) {
  InProcess(PlayArenaIntoKeptBuffers, "arena-kept-in-process");
}

}  // namespace
}  // namespace hitbox
