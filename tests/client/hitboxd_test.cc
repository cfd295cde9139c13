// hitbox::Client against the real server: the hitboxd binary on a loopback
// port (as a user runs it) and, where the library is built, an in-process
// hitbox_server. Covers every call with real geometry, the server's error
// messages arriving intact, deadlines against a server that does not answer,
// a crash mid-stream with recovery, retries, and rendezvous routing over three
// hitboxd processes.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <map>
#include <set>
#include <thread>

#include "hitbox/client.h"
#include "hitbox/client_pool.h"
#include "hitbox/collision/collide.h"
#include "hitbox/wire/convert.h"
#include "process.h"
#include "test_util.h"

#include <spdlog/spdlog.h>

#include "server.h"

namespace hitbox {
namespace {

using std::chrono::milliseconds;
using testing::HitboxdProcess;

ClientOptions TestOptions() {
  ClientOptions o;
  o.default_timeout = std::chrono::seconds(10);
  o.retry.max_attempts = 6;
  o.retry.initial_backoff = milliseconds(20);
  o.retry.max_backoff = milliseconds(200);
  return o;
}

// The world of docs/client.md's example: a floor (layer 0) whose top is y = 0, and a wall
// (layer 1) whose front face is the plane z = 4.75.
std::vector<Collider> World() {
  return {
      {.id = 1, .shape = *Shape::MakeBox({20, 0.5, 20}), .pose = Pose({0, -0.5, 0})},
      {.id = 2, .shape = *Shape::MakeBox({5, 2, 0.25}), .pose = Pose({0, 2, 5}), .layer = 1,
       .user_data = 0xBEEF},
  };
}

// The message the server's validation gives a change batch: the batch as
// the client encodes it, decoded by hitbox_wire as the server does.
std::string WireError(const std::vector<ColliderChange>& changes) {
  v1::ApplyChangesRequest req;
  for (const ColliderChange& c : changes) wire::ToProto(c, req.add_changes());
  std::vector<ColliderChange> decoded;
  return wire::FromProto(req.changes(), &decoded).message();
}

// A unit sphere at the origin.
Collider UnitSphere(uint64_t id) {
  Collider c;
  c.id = id;
  return c;
}

// Every rpc once, with answers checked against hand geometry.
void ExerciseEveryCall(Client& client, const std::string& id) {
  SessionSpec spec{id, SessionLimits{.max_colliders = 1000,
                                     .max_changes_per_message = 100,
                                     .max_queries_per_message = 100,
                                     .max_hits_per_query = 50,
                                     .idle_timeout_ms = 600'000}};
  RpcResult<SessionInfo> created = client.CreateSession(spec);
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  EXPECT_EQ(created->session_id, id);
  EXPECT_EQ(created->revision, 0u);
  EXPECT_EQ(created->limits.max_colliders, 1000u);
  EXPECT_EQ(created->limits.max_hits_per_query, 50u);
  EXPECT_EQ(created->limits.idle_timeout_ms, 600'000u);
  EXPECT_GT(created->created_unix_ms, 0);
  EXPECT_GE(created->last_active_unix_ms, created->created_unix_ms);
  EXPECT_GE(created->memory_bytes, 1024u);  // at least the per-session overhead
  EXPECT_EQ(client.CreateSession(id).code(), RpcCode::kAlreadyExists);

  const std::vector<Collider> world = World();
  RpcResult<ApplyResult> added = client.AddColliders(id, world);
  ASSERT_TRUE(added.ok()) << added.status().ToString();
  EXPECT_EQ(added->revision, 1u);
  EXPECT_EQ(added->collider_count, 2u);

  RpcResult<SessionInfo> info = client.GetSession(id);
  ASSERT_TRUE(info.ok()) << info.status().ToString();
  EXPECT_EQ(info->collider_count, 2u);
  EXPECT_EQ(info->revision, 1u);
  ASSERT_TRUE(info->bounds.has_value());
  EXPECT_TRUE(testing::VecNear(info->bounds->min, {-20, -1, -20}, 1e-9));
  EXPECT_TRUE(testing::VecNear(info->bounds->max, {20, 4, 20}, 1e-9));

  RpcResult<std::vector<SessionInfo>> list = client.ListSessions();
  ASSERT_TRUE(list.ok());
  bool listed = false;
  for (const SessionInfo& s : *list) listed |= s.session_id == id;
  EXPECT_TRUE(listed);

  const std::vector<uint64_t> ids = {2, 1};
  RpcResult<ColliderSnapshot> got = client.GetColliders(id, ids);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  ASSERT_EQ(got->colliders.size(), 2u);
  EXPECT_EQ(got->colliders[0].user_data, 0xBEEFu);
  EXPECT_EQ(got->colliders[0].shape, world[1].shape);
  EXPECT_EQ(got->colliders[1].pose.position, world[0].pose.position);

  RpcResult<ColliderSnapshot> all = client.ListColliders(id, /*page_size=*/1);
  ASSERT_TRUE(all.ok()) << all.status().ToString();
  ASSERT_EQ(all->colliders.size(), 2u);
  EXPECT_EQ(all->colliders[0].id, 1u);
  EXPECT_EQ(all->colliders[1].id, 2u);
  int pages = 0;
  EXPECT_TRUE(client
                  .ListColliders(
                      id, [&](const ColliderPage& p) { return ++pages, p.total == 2; }, 1)
                  .ok());
  EXPECT_EQ(pages, 2);

  // A standing capsule swept 10 m along +z against layer 1 touches the wall
  // when its front (z + 0.4) reaches 4.75: fraction 0.435.
  const Shape capsule = *Shape::MakeCapsule(0.4, 0.5);
  QueryFilter walls;
  walls.mask = 1u << 1;
  RpcResult<std::optional<CastHit>> hit =
      client.Sweep(id, capsule, Pose({0, 0.9, 0}), Vec3{0, 0, 10}, walls);
  ASSERT_TRUE(hit.ok()) << hit.status().ToString();
  RpcResult<std::vector<CastHit>> every =
      client.SweepAll(id, capsule, Pose({0, 0.9, 0}), Vec3{0, 0, 10});
  ASSERT_TRUE(every.ok()) << every.status().ToString();
  RpcResult<std::optional<CastHit>> ray = client.Raycast(id, {0, 1, -1}, {0, 0, 10});
  ASSERT_TRUE(ray.ok()) << ray.status().ToString();
  ASSERT_TRUE(hit->has_value());
  EXPECT_EQ((*hit)->id, 2u);
  EXPECT_EQ((*hit)->user_data, 0xBEEFu);
  EXPECT_NEAR((*hit)->fraction, 0.435, 1e-5);
  EXPECT_TRUE(testing::VecNear((*hit)->normal, {0, 0, -1}, 1e-6));
  EXPECT_NEAR((*hit)->point.z, 4.75, 1e-4);
  // Without the mask the floor is touched from the start.
  ASSERT_EQ(every->size(), 2u);
  EXPECT_EQ((*every)[0].id, 1u);
  EXPECT_TRUE((*every)[0].started_overlapping());
  ASSERT_TRUE(ray->has_value());
  EXPECT_EQ((*ray)->id, 2u);
  EXPECT_NEAR((*ray)->fraction, 0.575, 1e-9);

  RpcResult<std::vector<OverlapHit>> over =
      client.Overlap(id, *Shape::MakeSphere(1.0), Pose({0, 0.5, 0}), {}, true);
  ASSERT_TRUE(over.ok());
  ASSERT_EQ(over->size(), 1u);
  EXPECT_EQ((*over)[0].id, 1u);
  ASSERT_TRUE((*over)[0].contact.has_value());
  EXPECT_NEAR((*over)[0].contact->depth, 0.5, 1e-6);

  // A batch answers in order at one revision.
  std::vector<Query> batch = {RayQuery{{0, 1, -1}, {0, 0, 10}, {}, false},
                              OverlapQuery{*Shape::MakeSphere(0.1), Pose({0, 10, 0}), {}, false}};
  RpcResult<QueryBatchResult> answers = client.Query(id, batch);
  ASSERT_TRUE(answers.ok());
  EXPECT_EQ(answers->revision, 1u);
  ASSERT_EQ(answers->results.size(), 2u);
  EXPECT_EQ(answers->results[0].hits.size(), 1u);
  EXPECT_TRUE(answers->results[1].overlaps.empty());

  // Move the wall out of the way; the sweep then misses.
  RpcResult<ApplyResult> moved = client.MoveCollider(id, 2, Pose({100, 2, 5}));
  ASSERT_TRUE(moved.ok()) << moved.status().ToString();
  EXPECT_EQ(moved->revision, 2u);
  hit = client.Sweep(id, capsule, Pose({0, 0.9, 0}), Vec3{0, 0, 10}, walls);
  ASSERT_TRUE(hit.ok());
  EXPECT_FALSE(hit->has_value());  // holds with or without core casts

  // expected_revision guards a batch.
  const std::vector<ColliderChange> replace = {ColliderChange::Replace(world[1])};
  EXPECT_EQ(client.ApplyChanges(id, replace, uint64_t{1}).code(), RpcCode::kFailedPrecondition);
  EXPECT_TRUE(client.ApplyChanges(id, replace, uint64_t{2}).ok());

  const std::vector<uint64_t> remove = {1, 2};
  RpcResult<ApplyResult> removed = client.RemoveColliders(id, remove);
  ASSERT_TRUE(removed.ok());
  EXPECT_EQ(removed->collider_count, 0u);

  EXPECT_TRUE(client.DeleteSession(id).ok());
  EXPECT_EQ(client.GetSession(id).code(), RpcCode::kNotFound);
  EXPECT_EQ(client.DeleteSession(id).code(), RpcCode::kNotFound);
}

class HitboxdTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(server_.running()) << "could not start " << HitboxdProcess::BinaryPath();
    client_ = std::make_unique<Client>(server_.address(), TestOptions());
  }
  HitboxdProcess server_;
  std::unique_ptr<Client> client_;
};

TEST_F(HitboxdTest, EveryCall) { ExerciseEveryCall(*client_, "every-call"); }

// Against the real hitboxd: every query's tag goes out and comes back on its
// result (Query and tick streams); max_hits cuts say truncated (0: the
// server's default max_hits_per_query of 1024, not reached here); a capsule
// resting on the floor is a hit at fraction 0 without a contact offset and
// reaches the wall with one; one sunk in the floor has its contact, or none
// when it skips it; a bad offset is refused by name.
TEST_F(HitboxdTest, TagsTruncatedAndContactOffset) {
  ASSERT_TRUE(client_->CreateSession("tags").ok());
  std::vector<ColliderChange> add = {
      ColliderChange::Add({1, *Shape::MakeBox({10, 0.5, 10}), Pose({0, -0.5, 0}), 0, 0}),
      ColliderChange::Add({2, *Shape::MakeBox({0.5, 2, 5}), Pose({3.0, 1.0, 0}), 0, 0})};
  for (uint64_t id = 10; id < 16; ++id) {
    add.push_back(ColliderChange::Add(
        {id, *Shape::MakeSphere(0.2), Pose({-5.0, 0.5, static_cast<double>(id)}), 0, id}));
  }
  ASSERT_TRUE(client_->ApplyChanges("tags", add).ok());

  const Shape capsule = *Shape::MakeCapsule(0.5, 0.5);
  CastQuery resting;
  resting.shape = capsule;
  resting.pose = Pose({-1.5, 1.0, 0});  // bottom exactly on the floor's top, y = 0
  resting.translation = {4, 0, 0};
  resting.tag = 101;
  CastQuery skinned = resting;
  skinned.contact_offset = 1e-3;
  skinned.tag = 102;
  OverlapQuery spheres;
  spheres.shape = *Shape::MakeBox({1, 1, 100});
  spheres.pose = Pose({-5, 1.5, 0});  // above the floor: the six spheres only
  spheres.filter.max_hits = 4;
  spheres.tag = UINT64_MAX;
  OverlapQuery all = spheres;
  all.filter.max_hits = 0;
  all.tag = 0;
  const std::vector<hitbox::Query> batch = {resting, skinned, spheres, all};
  RpcResult<QueryBatchResult> r = client_->Query("tags", batch);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->results.size(), 4u);
  EXPECT_EQ(r->results[0].tag, 101u);
  EXPECT_EQ(r->results[1].tag, 102u);
  EXPECT_EQ(r->results[2].tag, UINT64_MAX);
  EXPECT_EQ(r->results[3].tag, 0u);
  EXPECT_EQ(r->results[2].overlaps.size(), 4u);
  EXPECT_TRUE(r->results[2].truncated);
  EXPECT_EQ(r->results[3].overlaps.size(), 6u);
  EXPECT_FALSE(r->results[3].truncated);
  ASSERT_EQ(r->results[0].hits.size(), 1u);
  EXPECT_EQ(r->results[0].hits[0].id, 1u);  // the floor, at once
  EXPECT_EQ(r->results[0].hits[0].fraction, 0.0);
  ASSERT_EQ(r->results[1].hits.size(), 1u);
  EXPECT_EQ(r->results[1].hits[0].id, 2u);  // the wall
  EXPECT_NEAR(r->results[1].hits[0].fraction, 3.5 / 4.0, 1e-9);

  // The same on a tick stream.
  std::unique_ptr<TickStream> stream = client_->OpenTickStream("tags");
  RpcResult<TickResult> t = stream->Tick({}, batch).get();
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  ASSERT_EQ(t->results.size(), 4u);
  for (size_t i = 0; i < 4; ++i) EXPECT_EQ(t->results[i].tag, r->results[i].tag);
  EXPECT_TRUE(t->results[2].truncated);
  EXPECT_TRUE(stream->Finish().ok());

  // A sweep that starts in the floor: with its contact, or without it
  // (skip_started_contact), through a Query and through a tick stream alike.
  CastQuery sunk = resting;
  sunk.pose = Pose({-1.5, 0.8, 0});  // 0.2 deep in the floor
  CastQuery sunk_skip = sunk;
  sunk_skip.skip_started_contact = true;
  const std::vector<hitbox::Query> started = {sunk, sunk_skip};
  RpcResult<QueryBatchResult> by_query = client_->Query("tags", started);
  ASSERT_TRUE(by_query.ok()) << by_query.status().ToString();
  std::unique_ptr<TickStream> started_stream = client_->OpenTickStream("tags");
  RpcResult<TickResult> by_tick = started_stream->Tick({}, started).get();
  ASSERT_TRUE(by_tick.ok()) << by_tick.status().ToString();
  EXPECT_TRUE(started_stream->Finish().ok());
  for (const std::vector<QueryResult>* results : {&by_query->results, &by_tick->results}) {
    ASSERT_EQ(results->size(), 2u);
    ASSERT_EQ((*results)[0].hits.size(), 1u);
    ASSERT_EQ((*results)[1].hits.size(), 1u);
    const CastHit& full = (*results)[0].hits[0];
    const CastHit& skip = (*results)[1].hits[0];
    EXPECT_EQ(full.id, 1u);
    EXPECT_EQ(skip.id, 1u);
    EXPECT_TRUE(full.started_overlapping());
    EXPECT_TRUE(skip.started_overlapping());
    EXPECT_NEAR(full.depth, 0.2, 1e-9);
    EXPECT_NEAR(full.normal.y, 1.0, 1e-12);
    EXPECT_EQ(skip.depth, 0.0);
    EXPECT_TRUE(skip.normal == Vec3(-1, 0, 0));
    EXPECT_TRUE(skip.point == sunk.pose.position);
  }

  skinned.contact_offset = -0.5;
  RpcResult<QueryBatchResult> bad = client_->Query("tags", std::vector<hitbox::Query>{skinned});
  EXPECT_EQ(bad.code(), RpcCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("queries[0].cast.contact_offset"), std::string::npos)
      << bad.status().message();
  EXPECT_TRUE(client_->DeleteSession("tags").ok());
}

// The same against an in-process server (no network).
TEST(InProcessServerTest, EveryCall) {
  spdlog::set_level(spdlog::level::warn);
  server::ServerOptions options;
  options.listen = "127.0.0.1:0";
  options.service.threads = 1;
  Result<std::unique_ptr<server::HitboxServer>> started = server::HitboxServer::Start(options);
  ASSERT_TRUE(started.ok()) << started.error().message;
  Client client((*started)->InProcessChannel(), TestOptions());
  ExerciseEveryCall(client, "in-process");
  (*started)->Shutdown(milliseconds(100));
  (*started)->Wait();
}

// Bad input is rejected with the server's code and field-naming message, and
// nothing stored is lost.
TEST_F(HitboxdTest, BadInputRejectedWithServerMessage) {
  ASSERT_TRUE(client_->CreateSession("bad-input").ok());
  const std::vector<Collider> world = World();
  ASSERT_TRUE(client_->AddColliders("bad-input", world).ok());

  Collider fine;
  fine.id = 8;
  Collider nan_pose;
  nan_pose.id = 7;
  nan_pose.pose.position.y = std::nan("");
  const std::vector<ColliderChange> batch = {ColliderChange::Add(fine),
                                             ColliderChange::Add(nan_pose)};
  RpcResult<ApplyResult> r = client_->ApplyChanges("bad-input", batch);
  EXPECT_EQ(r.code(), RpcCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("changes[1]"), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find("position.y"), std::string::npos) << r.status().message();
  // Byte for byte what the server's validation (hitbox_wire) says about it.
  EXPECT_EQ(r.status().message(), WireError(batch));

  Collider bad_layer;
  bad_layer.id = 9;
  bad_layer.layer = 40;
  const std::vector<ColliderChange> layer_batch = {ColliderChange::Add(bad_layer)};
  r = client_->ApplyChanges("bad-input", layer_batch);
  EXPECT_EQ(r.code(), RpcCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("layer"), std::string::npos) << r.status().message();
  EXPECT_EQ(r.status().message(), WireError(layer_batch));

  const std::vector<ColliderChange> quat = {
      ColliderChange::Move(1, Pose({0, 0, 0}, Quat(0, 0, 0, 2)))};
  r = client_->ApplyChanges("bad-input", quat);
  EXPECT_EQ(r.code(), RpcCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("rotation"), std::string::npos) << r.status().message();

  const std::vector<Collider> dup = {world[0]};
  EXPECT_EQ(client_->AddColliders("bad-input", dup).code(), RpcCode::kAlreadyExists);
  const std::vector<uint64_t> unknown = {1, 12345};
  EXPECT_EQ(client_->RemoveColliders("bad-input", unknown).code(), RpcCode::kNotFound);

  RpcResult<SessionInfo> bad_id = client_->CreateSession("no spaces allowed");
  EXPECT_EQ(bad_id.code(), RpcCode::kInvalidArgument);
  EXPECT_NE(bad_id.status().message().find("session_id"), std::string::npos);

  // Nothing changed.
  RpcResult<SessionInfo> info = client_->GetSession("bad-input");
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->revision, 1u);
  EXPECT_EQ(info->collider_count, 2u);
}

// A server that does not answer (SIGSTOP): every call ends with
// DEADLINE_EXCEEDED at its deadline, retries or not; then it answers again.
TEST_F(HitboxdTest, DeadlineOnServerThatDoesNotAnswer) {
  ASSERT_TRUE(client_->CreateSession("paused").ok());
  server_.Pause();
  CallOptions call;
  call.timeout = milliseconds(100);
  EXPECT_EQ(client_->GetSession("paused", call).code(), RpcCode::kDeadlineExceeded);
  EXPECT_EQ(client_->ListColliders("paused", 0, call).code(), RpcCode::kDeadlineExceeded);
  const std::vector<ColliderChange> none;
  EXPECT_EQ(client_->ApplyChanges("paused", none, std::nullopt, call).code(),
            RpcCode::kDeadlineExceeded);
  call.timeout = std::chrono::microseconds(1);
  EXPECT_EQ(client_->ListSessions(call).code(), RpcCode::kDeadlineExceeded);
  TickStreamOptions tick_options;
  tick_options.timeout = milliseconds(100);
  std::unique_ptr<TickStream> stream = client_->OpenTickStream("paused", tick_options);
  EXPECT_EQ(stream->Tick({}, {}).get().code(), RpcCode::kDeadlineExceeded);
  server_.Resume();
  EXPECT_TRUE(client_->GetSession("paused").ok());
}

// Ticks in flight are matched; a rejected tick fails alone with the server's
// message; a deleted session fails the next tick with NOT_FOUND.
TEST_F(HitboxdTest, TickStream) {
  ASSERT_TRUE(client_->CreateSession("ticks").ok());
  std::unique_ptr<TickStream> stream = client_->OpenTickStream("ticks");
  const std::vector<Collider> world = World();
  const Shape capsule = *Shape::MakeCapsule(0.4, 0.5);
  QueryFilter walls;
  walls.mask = 1u << 1;
  std::vector<std::future<RpcResult<TickResult>>> futures;
  // Tick 1 adds the world; ticks 2.. move the wall 0.1 m further each and sweep.
  std::vector<ColliderChange> add;
  for (const Collider& c : world) add.push_back(ColliderChange::Add(c));
  futures.push_back(stream->Tick(add, {}));
  for (int i = 1; i <= 20; ++i) {
    const std::vector<ColliderChange> move = {
        ColliderChange::Move(2, Pose({0, 2, 5 + 0.1 * i}))};
    const std::vector<Query> sweep = {
        CastQuery{capsule, Pose({0, 0.9, 0}), {0, 0, 10}, walls, false}};
    futures.push_back(stream->Tick(move, sweep));
  }
  for (size_t i = 0; i < futures.size(); ++i) {
    RpcResult<TickResult> r = futures[i].get();
    ASSERT_TRUE(r.ok()) << i << ": " << r.status().ToString();
    EXPECT_EQ(r->tick, i + 1);
    EXPECT_EQ(r->revision, i + 1);
    if (i == 0) continue;
    ASSERT_EQ(r->results.size(), 1u);
    ASSERT_EQ(r->results[0].hits.size(), 1u);
    // Wall front at 4.75 + 0.1 i: fraction (4.35 + 0.1 i) / 10.
    EXPECT_NEAR(r->results[0].hits[0].fraction, (4.35 + 0.1 * static_cast<double>(i)) / 10, 1e-5)
        << "tick " << i + 1;
  }
  const std::vector<ColliderChange> bad = {ColliderChange::Move(999, Pose())};
  RpcResult<TickResult> rejected = stream->Tick(bad, {}).get();
  EXPECT_EQ(rejected.code(), RpcCode::kNotFound);
  EXPECT_NE(rejected.status().message().find("999"), std::string::npos)
      << rejected.status().message();
  RpcResult<TickResult> after = stream->Tick({}, {}).get();
  ASSERT_TRUE(after.ok()) << after.status().ToString();
  EXPECT_EQ(after->revision, 21u);  // the rejected tick changed nothing

  ASSERT_TRUE(client_->DeleteSession("ticks").ok());
  EXPECT_EQ(stream->Tick({}, {}).get().code(), RpcCode::kNotFound);
}

// Lag compensation from the client library: a stream numbered by game ticks
// (TickAt) moves a sphere; Rewind(t) views and QueryOptions-style at_tick on
// batch queries see it where it was; ApplyTick continues the ticks; a tick
// outside the session's history is OUT_OF_RANGE; the session reports its ticks.
TEST_F(HitboxdTest, RewindFromTheClient) {
  SessionSpec spec;
  spec.session_id = "rewind";
  spec.limits.history_ticks = 16;
  ASSERT_TRUE(client_->CreateSession(spec).ok());
  std::unique_ptr<TickStream> stream = client_->OpenTickStream("rewind");
  Collider ball;
  ball.id = 7;
  ball.shape = *Shape::MakeSphere(0.5);
  ASSERT_TRUE(stream->TickAt(1000, std::vector{ColliderChange::Add(ball)}, {}).get().ok());
  for (uint64_t t = 1001; t <= 1010; ++t) {
    const std::vector<ColliderChange> move = {
        ColliderChange::Move(7, Pose({0, static_cast<double>(t - 1000), 0}))};
    RpcResult<TickResult> r = stream->TickAt(t, move, {}).get();
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r->tick, t);
  }
  EXPECT_EQ(stream->TickAt(1005, {}, {}).get().code(), RpcCode::kInvalidArgument);
  // Rewind views: at 1004.5 the ball is at y = 4.5.
  RpcResult<std::optional<CastHit>> hit =
      client_->Rewind(1004.5).Raycast("rewind", {-10, 4.5, 0}, {20, 0, 0});
  ASSERT_TRUE(hit.ok()) << hit.status().ToString();
  ASSERT_TRUE(hit->has_value());
  EXPECT_EQ((*hit)->id, 7u);
  hit = client_->Raycast("rewind", {-10, 4.5, 0}, {20, 0, 0});
  ASSERT_TRUE(hit.ok());
  EXPECT_FALSE(hit->has_value());
  // A batch mixing present and rewound queries (Query::at_tick).
  RayQuery past{{-10, 2, 0}, {20, 0, 0}, {}, false};
  past.at_tick = 1002;
  RayQuery now{{-10, 10, 0}, {20, 0, 0}, {}, false};
  RpcResult<QueryBatchResult> batch = client_->Query("rewind", std::vector<Query>{past, now});
  ASSERT_TRUE(batch.ok()) << batch.status().ToString();
  EXPECT_EQ(batch->results[0].hits.size(), 1u);
  EXPECT_EQ(batch->results[1].hits.size(), 1u);
  // ApplyTick continues the ticks; lower ones are refused.
  ASSERT_TRUE(client_->ApplyTick("rewind", 1011, std::vector{ColliderChange::Move(7, Pose({0, 11, 0}))}).ok());
  EXPECT_EQ(client_->ApplyTick("rewind", 1003, std::vector{ColliderChange::Move(7, Pose())}).code(),
            RpcCode::kInvalidArgument);
  RpcResult<SessionInfo> info = client_->GetSession("rewind");
  ASSERT_TRUE(info.ok());
  ASSERT_TRUE(info->ticks.has_value());
  EXPECT_EQ(info->ticks->oldest, 1000u);
  EXPECT_EQ(info->ticks->newest, 1011u);
  EXPECT_EQ(info->limits.history_ticks, 16u);
  const RpcResult<std::optional<CastHit>> late =
      client_->Rewind(999.0).Raycast("rewind", {-10, 0, 0}, {20, 0, 0});
  EXPECT_EQ(late.code(), RpcCode::kOutOfRange);
  EXPECT_NE(late.status().message().find("oldest tick 1000, newest tick 1011"), std::string::npos)
      << late.status().message();
}

// The server crashes with ticks in flight: every pending tick fails with
// UNAVAILABLE, the stream stays failed, and the caller recovers by
// re-creating the session on the restarted server and opening a new stream.
TEST_F(HitboxdTest, ServerKilledMidStreamThenRecovered) {
  ASSERT_TRUE(client_->CreateSession("crash").ok());
  const std::vector<Collider> world = World();
  ASSERT_TRUE(client_->AddColliders("crash", world).ok());
  std::unique_ptr<TickStream> stream = client_->OpenTickStream("crash");
  ASSERT_TRUE(stream->Tick({}, {}).get().ok());  // the stream is up

  server_.Pause();  // ticks now stay pending
  const std::vector<Query> ray = {RayQuery{{0, 1, -1}, {0, 0, 10}, {}, false}};
  std::vector<std::future<RpcResult<TickResult>>> pending;
  for (int i = 0; i < 10; ++i) pending.push_back(stream->Tick({}, ray));
  EXPECT_EQ(stream->pending(), 10u);
  server_.Kill();
  for (auto& f : pending) {
    RpcResult<TickResult> r = f.get();
    EXPECT_EQ(r.code(), RpcCode::kUnavailable) << r.status().ToString();
  }
  EXPECT_TRUE(stream->done());
  EXPECT_EQ(stream->status().code(), RpcCode::kUnavailable);
  EXPECT_EQ(stream->Tick({}, ray).get().code(), RpcCode::kUnavailable);

  // While it is down: idempotent calls retry and give up with UNAVAILABLE,
  // ApplyChanges fails at once.
  int retries = 0;
  ClientOptions o = TestOptions();
  o.retry.max_attempts = 3;
  o.on_retry = [&](std::string_view, int, const RpcStatus&, milliseconds) { ++retries; };
  Client counting(client_->address(), o);
  EXPECT_EQ(counting.GetSession("crash").code(), RpcCode::kUnavailable);
  EXPECT_EQ(retries, 2);
  EXPECT_EQ(counting.ApplyChanges("crash", std::vector<ColliderChange>{}).code(),
            RpcCode::kUnavailable);
  EXPECT_EQ(retries, 2);

  // Restarted on the same port: the session is gone (sessions live in memory);
  // re-create it, reload, open a new stream.
  const int port = server_.port();
  ASSERT_TRUE(server_.Start(port)) << "could not restart hitboxd on port " << port;
  CallOptions patient;
  patient.wait_for_ready = true;  // the channel may still be in reconnect backoff
  EXPECT_EQ(client_->GetSession("crash", patient).code(), RpcCode::kNotFound);
  ASSERT_TRUE(client_->CreateSession("crash").ok());
  ASSERT_TRUE(client_->AddColliders("crash", world).ok());
  std::unique_ptr<TickStream> fresh = client_->OpenTickStream("crash");
  RpcResult<TickResult> r = fresh->Tick({}, ray).get();
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->results.size(), 1u);
  ASSERT_EQ(r->results[0].hits.size(), 1u);
  EXPECT_EQ(r->results[0].hits[0].id, 2u);
  EXPECT_EQ(fresh->Finish().code(), RpcCode::kOk);
}

// A graceful stop (SIGTERM, as in a rolling deploy): ticks sent before it are
// answered, the open stream then ends with an error, and later ticks fail at
// once with that error.
TEST(HitboxdGracefulStopTest, StreamEndsWithError) {
  HitboxdProcess server({"--shutdown-grace-ms", "200"});
  ASSERT_TRUE(server.running());
  Client client(server.address(), TestOptions());
  ASSERT_TRUE(client.CreateSession("deploy").ok());
  std::unique_ptr<TickStream> stream = client.OpenTickStream("deploy");
  std::vector<std::future<RpcResult<TickResult>>> before;
  for (int i = 0; i < 5; ++i) before.push_back(stream->Tick({}, {}));
  for (auto& f : before) EXPECT_TRUE(f.get().ok());
  EXPECT_EQ(server.Terminate(), 0);  // returns once the process has exited
  RpcResult<TickResult> after = stream->Tick({}, {}).get();
  EXPECT_EQ(after.code(), RpcCode::kUnavailable) << after.status().ToString();
  EXPECT_TRUE(stream->done());
  EXPECT_EQ(stream->status().code(), RpcCode::kUnavailable);
}

// Rendezvous routing over three hitboxd processes: sessions spread over all
// three, each session's calls reach its own process (ListSessions on each
// shows exactly its sessions), and removing one process only moves its sessions.
TEST(HitboxdRoutingTest, ThreeProcesses) {
  std::vector<std::unique_ptr<HitboxdProcess>> procs;
  std::vector<std::string> addresses;
  for (int i = 0; i < 3; ++i) {
    procs.push_back(std::make_unique<HitboxdProcess>());
    ASSERT_TRUE(procs.back()->running());
    addresses.push_back(procs.back()->address());
  }
  ClientPool pool(addresses, TestOptions());
  std::map<std::string, std::string> owner;  // session -> address
  for (int i = 0; i < 24; ++i) {
    const std::string id = "match-" + std::to_string(i);
    ASSERT_TRUE(pool.CreateSession(SessionSpec{id, {}, {}}).ok());
    owner[id] = pool.AddressFor(id);
    // i + 1 colliders, added through the routed client.
    std::vector<Collider> colliders;
    for (int c = 0; c <= i; ++c) colliders.push_back(UnitSphere(static_cast<uint64_t>(c)));
    ASSERT_TRUE(pool.ForSession(id)->AddColliders(id, colliders).ok());
  }
  std::map<std::string, std::set<std::string>> expected;
  for (const auto& [id, addr] : owner) expected[addr].insert(id);
  EXPECT_EQ(expected.size(), 3u) << "24 sessions should spread over all three processes";

  auto check_process = [&](const std::string& addr) {
    Client direct(addr, TestOptions());
    RpcResult<std::vector<SessionInfo>> list = direct.ListSessions();
    ASSERT_TRUE(list.ok()) << list.status().ToString();
    std::set<std::string> held;
    for (const SessionInfo& s : *list) {
      held.insert(s.session_id);
      if (s.session_id.rfind("match-", 0) != 0) continue;  // reported by EXPECT_EQ below
      // The collider count proves the session's adds went to this process.
      EXPECT_EQ(s.collider_count, std::strtoull(s.session_id.c_str() + 6, nullptr, 10) + 1)
          << s.session_id << " on " << addr;
    }
    EXPECT_EQ(held, expected[addr]) << addr;
  };
  for (const std::string& addr : addresses) check_process(addr);

  // Take one process away: only its sessions get a new owner.
  const std::string removed = addresses[1];
  procs[1]->Kill();
  ASSERT_TRUE(pool.RemoveAddress(removed));
  for (const auto& [id, addr] : owner) {
    const std::string now = pool.AddressFor(id);
    if (addr == removed) {
      EXPECT_NE(now, removed) << id;
      // The caller re-creates a lost session on its new owner.
      ASSERT_TRUE(pool.CreateSession(SessionSpec{id, {}, {}}).ok()) << id;
      const int n = std::atoi(id.c_str() + 6) + 1;
      std::vector<Collider> colliders;
      for (int c = 0; c < n; ++c) colliders.push_back(UnitSphere(static_cast<uint64_t>(c)));
      ASSERT_TRUE(pool.ForSession(id)->AddColliders(id, colliders).ok());
      expected[now].insert(id);
    } else {
      EXPECT_EQ(now, addr) << id << " moved although its process is still in the pool";
      EXPECT_TRUE(pool.ForSession(id)->GetSession(id).ok()) << id;
    }
  }
  for (const std::string& addr : {addresses[0], addresses[2]}) check_process(addr);
}

}  // namespace
}  // namespace hitbox
