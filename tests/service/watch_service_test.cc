// Watches through the real hitboxd binary over loopback, on both rpc APIs
// (--rpc-api cq, the default, and callback): the events of Tick and
// ApplyChanges equal an in-process ColliderSet's fed the same changes; a
// WatchEvents stream receives the same events and ends with NOT_FOUND when
// the session goes; GetSession lists the watches; bad input is refused and
// loses nothing; a tick rolled back takes its watches back; a restart on
// --data-dir restores the watches and their inside sets.
#include <chrono>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include "process.h"
#include "service_util.h"
#include "temp_dir.h"

namespace hitbox {
namespace {

using testing_service::WorldGen;

std::unique_ptr<v1::Hitbox::Stub> Connect(const testing::HitboxdProcess& d) {
  return v1::Hitbox::NewStub(
      grpc::CreateChannel(d.address(), grpc::InsecureChannelCredentials()));
}

grpc::Status Create(v1::Hitbox::Stub* stub, const std::string& id,
                    const v1::SessionLimits& limits = {}) {
  grpc::ClientContext ctx;
  v1::CreateSessionRequest req;
  req.set_session_id(id);
  *req.mutable_limits() = limits;
  v1::SessionInfo info;
  return stub->CreateSession(&ctx, req, &info);
}

grpc::Status Apply(v1::Hitbox::Stub* stub, const std::string& id,
                   const std::vector<ColliderChange>& changes, v1::ApplyChangesResponse* resp,
                   std::optional<uint64_t> tick = std::nullopt) {
  grpc::ClientContext ctx;
  v1::ApplyChangesRequest req;
  req.set_session_id(id);
  for (const ColliderChange& c : changes) wire::ToProto(c, req.add_changes());
  if (tick) req.set_tick(*tick);
  return stub->ApplyChanges(&ctx, req, resp);
}

v1::SessionInfo Get(v1::Hitbox::Stub* stub, const std::string& id) {
  grpc::ClientContext ctx;
  v1::GetSessionRequest req;
  req.set_session_id(id);
  v1::SessionInfo info;
  EXPECT_TRUE(stub->GetSession(&ctx, req, &info).ok());
  return info;
}

std::vector<WatchEvent> Events(const google::protobuf::RepeatedPtrField<v1::WatchEvent>& in) {
  std::vector<WatchEvent> out;
  for (const v1::WatchEvent& e : in) out.push_back(wire::ResultFromProto(e));
  return out;
}

Watch SphereWatch(uint64_t id, double r, const Vec3& at, std::optional<uint64_t> attach = {}) {
  Watch w;
  w.id = id;
  w.shape = *Shape::MakeSphere(r);
  w.pose = Pose(at);
  w.attach_to = attach;
  return w;
}

class WatchServiceTest : public ::testing::TestWithParam<const char*> {
 protected:
  std::vector<std::string> Args() const { return {"--rpc-api", GetParam()}; }
};

// Random ticks with watches over the Tick stream: each answer's events equal
// the in-process set's; a WatchEvents stream gets the same events in the
// same order, and ends with NOT_FOUND once the session is deleted.
TEST_P(WatchServiceTest, TickEventsMatchInProcessAndStream) {
  testing::HitboxdProcess d(Args(), {.threads = 2});
  ASSERT_TRUE(d.running()) << d.log();
  auto stub = Connect(d);
  ASSERT_TRUE(Create(stub.get(), "w").ok());

  // The events stream, read on its own thread into `streamed`.
  grpc::ClientContext watch_ctx;
  v1::WatchEventsRequest watch_req;
  watch_req.set_session_id("w");
  auto reader = stub->WatchEvents(&watch_ctx, watch_req);
  // The server sends the stream's headers once it is registered with the
  // session: from then on no batch's events can pass it by.
  reader->WaitForInitialMetadata();
  std::vector<WatchEvent> streamed;
  auto reading = std::async(std::launch::async, [&] {
    v1::WatchEventsResponse msg;
    while (reader->Read(&msg)) {
      for (const v1::WatchEvent& e : msg.events()) streamed.push_back(wire::ResultFromProto(e));
    }
    return reader->Finish();
  });
  WorldGen gen(5, 20.0);
  ColliderSet local;
  grpc::ClientContext ctx;
  auto stream = stub->Tick(&ctx);
  std::vector<uint64_t> live;
  std::vector<uint64_t> watches;
  uint64_t next_id = 1, next_watch = 1;
  std::vector<WatchEvent> answered;
  for (int t = 0; t < 150; ++t) {
    v1::TickRequest req;
    if (t == 0) req.set_session_id("w");
    req.set_tick(static_cast<uint64_t>(t) + 10);
    std::vector<ColliderChange> changes;
    const int adds = t == 0 ? 60 : static_cast<int>(gen.Next() % 3);
    for (int i = 0; i < adds; ++i) {
      changes.push_back(ColliderChange::Add(gen.RandomCollider(next_id)));
      live.push_back(next_id++);
    }
    for (int i = 0; i < 6 && t > 0; ++i) {
      changes.push_back(ColliderChange::Move(live[gen.Next() % live.size()], gen.RandomPose()));
    }
    if (t > 0 && gen.Next() % 4 == 0 && live.size() > 20) {
      const size_t k = gen.Next() % live.size();
      changes.push_back(ColliderChange::Remove(live[k]));
      live.erase(live.begin() + static_cast<long>(k));
    }
    if (t < 10 || gen.Next() % 5 == 0) {
      std::optional<uint64_t> attach;
      if (gen.Next() % 2 == 0) attach = live[gen.Next() % live.size()];
      Watch w = SphereWatch(next_watch, gen.Uniform(2, 8), attach ? Vec3{} : gen.RandomPoint(), attach);
      if (gen.Next() % 3 == 0) w.mask = static_cast<uint32_t>(gen.Next() % 16);
      changes.push_back(ColliderChange::AddWatch(std::move(w)));
      watches.push_back(next_watch++);
    } else if (gen.Next() % 6 == 0 && !watches.empty()) {
      const size_t k = gen.Next() % watches.size();
      if (local.FindWatch(watches[k]) != nullptr) {
        changes.push_back(ColliderChange::RemoveWatch(watches[k]));
      }
      watches.erase(watches.begin() + static_cast<long>(k));
    }
    for (ColliderChange& c : changes) {
      wire::ToProto(c, req.add_changes());
      c = testing_service::ThroughWire(c);
    }
    ASSERT_TRUE(local.Apply(changes, req.tick()).ok());
    v1::TickResponse resp;
    ASSERT_TRUE(stream->Write(req) && stream->Read(&resp)) << "tick " << t;
    ASSERT_FALSE(resp.has_error()) << resp.error().message();
    ASSERT_EQ(Events(resp.events()), local.watch_events()) << "tick " << t;
    answered.insert(answered.end(), local.watch_events().begin(), local.watch_events().end());
  }
  stream->WritesDone();
  ASSERT_TRUE(stream->Finish().ok());
  ASSERT_GT(answered.size(), 50u);

  // GetSession lists every watch with its inside set.
  const v1::SessionInfo info = Get(stub.get(), "w");
  ASSERT_EQ(static_cast<size_t>(info.watches_size()), local.watch_count());
  for (const v1::WatchInfo& w : info.watches()) {
    const WatchState* s = local.FindWatch(w.watch().id());
    ASSERT_NE(s, nullptr);
    EXPECT_EQ(w.inside_count(), s->inside.size());
  }

  // Deleting the session ends the events stream with NOT_FOUND, after every
  // event of the ticks.
  {
    grpc::ClientContext del_ctx;
    v1::DeleteSessionRequest del;
    del.set_session_id("w");
    v1::DeleteSessionResponse del_resp;
    ASSERT_TRUE(stub->DeleteSession(&del_ctx, del, &del_resp).ok());
  }
  const grpc::Status end = reading.get();
  EXPECT_EQ(end.error_code(), grpc::StatusCode::NOT_FOUND) << end.error_message();
  EXPECT_EQ(streamed, answered);
}

// ApplyChanges answers a watch's ENTER at once; bad watch changes are refused
// naming the field, and change nothing; the watch limit holds.
TEST_P(WatchServiceTest, ApplyChangesEventsAndErrors) {
  testing::HitboxdProcess d(Args(), {.threads = 2});
  ASSERT_TRUE(d.running()) << d.log();
  auto stub = Connect(d);
  v1::SessionLimits limits;
  limits.set_max_watches(2);
  limits.set_max_pair_tests_per_message(1);
  ASSERT_TRUE(Create(stub.get(), "a", limits).ok());
  v1::ApplyChangesResponse resp;
  ASSERT_TRUE(Apply(stub.get(), "a",
                    {ColliderChange::Add(Collider{1, *Shape::MakeSphere(1), Pose({1, 0, 0}), 0, 0}),
                     ColliderChange::Add(Collider{2, *Shape::MakeSphere(1), Pose({9, 0, 0}), 0, 0})},
                    &resp, 3)
                  .ok());
  ASSERT_TRUE(Apply(stub.get(), "a", {ColliderChange::AddWatch(SphereWatch(7, 2, {0, 0, 0}))}, &resp).ok());
  ASSERT_EQ(resp.events_size(), 1);
  EXPECT_EQ(resp.events(0).watch_id(), 7u);
  EXPECT_EQ(resp.events(0).collider_id(), 1u);
  EXPECT_EQ(resp.events(0).kind(), v1::WatchEvent::ENTER);
  EXPECT_EQ(resp.events(0).tick(), 3u);
  const uint64_t revision = resp.revision();

  struct Bad {
    v1::ColliderChange change;
    grpc::StatusCode code;
    std::string part;
  };
  std::vector<Bad> bads;
  {
    v1::ColliderChange c;
    c.mutable_add_watch()->set_id(8);
    c.mutable_add_watch()->mutable_shape()->mutable_sphere()->set_radius(
        std::numeric_limits<double>::quiet_NaN());
    bads.push_back({c, grpc::StatusCode::INVALID_ARGUMENT, "changes[0].add_watch.shape.sphere.radius"});
  }
  {
    v1::ColliderChange c;
    c.mutable_add_watch()->set_id(8);
    c.mutable_add_watch()->mutable_shape()->mutable_mesh();
    bads.push_back({c, grpc::StatusCode::INVALID_ARGUMENT, "changes[0].add_watch.shape.mesh"});
  }
  {
    v1::ColliderChange c;
    wire::ToProto(SphereWatch(8, 1, {}, 99), c.mutable_add_watch());
    bads.push_back({c, grpc::StatusCode::NOT_FOUND, "changes[0].add_watch.attach_to: collider 99"});
  }
  {
    v1::ColliderChange c;
    c.set_remove_watch(42);
    bads.push_back({c, grpc::StatusCode::NOT_FOUND, "changes[0].remove_watch: watch 42"});
  }
  for (const Bad& b : bads) {
    grpc::ClientContext ctx;
    v1::ApplyChangesRequest req;
    req.set_session_id("a");
    *req.add_changes() = b.change;
    v1::ApplyChangesResponse r;
    const grpc::Status st = stub->ApplyChanges(&ctx, req, &r);
    EXPECT_EQ(st.error_code(), b.code) << st.error_message();
    EXPECT_NE(st.error_message().find(b.part), std::string::npos) << st.error_message();
  }
  const grpc::Status over = Apply(stub.get(), "a",
                                  {ColliderChange::AddWatch(SphereWatch(8, 1, {})),
                                   ColliderChange::AddWatch(SphereWatch(9, 1, {}))},
                                  &resp);
  EXPECT_EQ(over.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << over.error_message();
  EXPECT_NE(over.error_message().find("limits.max_watches"), std::string::npos);
  // A watch whose first query needs more than a Query's work budget (two
  // pair tests, the session allows one) is refused before it applies.
  const grpc::Status heavy =
      Apply(stub.get(), "a", {ColliderChange::AddWatch(SphereWatch(8, 20, {}))}, &resp);
  EXPECT_EQ(heavy.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << heavy.error_message();
  EXPECT_NE(heavy.error_message().find("limits.max_pair_tests_per_message"), std::string::npos);
  const v1::SessionInfo info = Get(stub.get(), "a");
  EXPECT_EQ(info.revision(), revision);
  ASSERT_EQ(info.watches_size(), 1);
  EXPECT_EQ(info.watches(0).inside_count(), 1u);
  EXPECT_EQ(info.limits().max_watches(), 2u);
}

// A tick whose queries fail after its changes applied is undone: its watch
// and its events are gone, the stream goes on.
TEST_P(WatchServiceTest, RolledBackTickTakesItsWatchesBack) {
  testing::HitboxdProcess d(Args(), {.threads = 2});
  ASSERT_TRUE(d.running()) << d.log();
  auto stub = Connect(d);
  v1::SessionLimits limits;
  limits.set_max_pair_tests_per_message(5);
  ASSERT_TRUE(Create(stub.get(), "r", limits).ok());
  std::vector<ColliderChange> balls;
  for (uint64_t i = 1; i <= 20; ++i) {
    balls.push_back(ColliderChange::Add(
        Collider{i, *Shape::MakeSphere(0.4), Pose({static_cast<double>(i) * 0.5, 0, 0}), 0, 0}));
  }
  v1::ApplyChangesResponse resp;
  ASSERT_TRUE(Apply(stub.get(), "r", balls, &resp).ok());
  grpc::ClientContext ctx;
  auto stream = stub->Tick(&ctx);
  v1::TickRequest req;
  req.set_session_id("r");
  req.set_tick(1);
  wire::ToProto(ColliderChange::AddWatch(SphereWatch(1, 3, {0, 0, 0})), req.add_changes());
  wire::ToProto(ColliderChange::Move(20, Pose({0.2, 0, 0})), req.add_changes());
  OverlapQuery big;
  big.shape = *Shape::MakeSphere(100);
  wire::ToProto(Query(big), req.add_queries());  // 20 pair tests: over the budget of 5
  v1::TickResponse answer;
  ASSERT_TRUE(stream->Write(req) && stream->Read(&answer));
  ASSERT_TRUE(answer.has_error());
  EXPECT_EQ(answer.events_size(), 0);
  stream->WritesDone();
  ASSERT_TRUE(stream->Finish().ok());
  const v1::SessionInfo info = Get(stub.get(), "r");
  EXPECT_EQ(info.watches_size(), 0);
  EXPECT_EQ(info.revision(), resp.revision());
}

INSTANTIATE_TEST_SUITE_P(RpcApis, WatchServiceTest, ::testing::Values("cq", "callback"));

// Watches survive a restart on --data-dir, from the log and from a
// compacted snapshot: the same definitions, the same inside sets, and the
// next move reports events against them.
TEST(WatchPersistenceTest, RestartRestoresWatchesAndInsideSets) {
  testing::TempDir dir("watches");
  const std::vector<std::string> args = {"--data-dir", dir.path(), "--compact-min-bytes", "1"};
  testing::HitboxdProcess d(args, {.log_level = "info", .threads = 2});
  ASSERT_TRUE(d.running()) << d.log();
  auto stub = Connect(d);
  ASSERT_TRUE(Create(stub.get(), "p").ok());
  v1::ApplyChangesResponse resp;
  std::vector<ColliderChange> batch;
  for (uint64_t i = 1; i <= 10; ++i) {
    batch.push_back(ColliderChange::Add(
        Collider{i, *Shape::MakeSphere(0.5), Pose({static_cast<double>(i), 0, 0}), 0, 0}));
  }
  batch.push_back(ColliderChange::AddWatch(SphereWatch(1, 2.2, {3, 0, 0})));
  batch.push_back(ColliderChange::AddWatch(SphereWatch(2, 1.2, {0, 0, 0}, 10)));
  ASSERT_TRUE(Apply(stub.get(), "p", batch, &resp).ok());
  ASSERT_TRUE(Apply(stub.get(), "p", {ColliderChange::Move(10, Pose({6, 0, 0}))}, &resp).ok());
  const v1::SessionInfo before = Get(stub.get(), "p");
  ASSERT_EQ(before.watches_size(), 2);
  ASSERT_EQ(d.Terminate(), 0);
  ASSERT_TRUE(d.Start(0)) << d.log();
  stub = Connect(d);
  const v1::SessionInfo after = Get(stub.get(), "p");
  ASSERT_EQ(after.watches_size(), 2) << d.log();
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(after.watches(i).watch().ShortDebugString(), before.watches(i).watch().ShortDebugString());
    EXPECT_EQ(std::vector<uint64_t>(after.watches(i).inside().begin(), after.watches(i).inside().end()),
              std::vector<uint64_t>(before.watches(i).inside().begin(), before.watches(i).inside().end()));
  }
  EXPECT_EQ(after.revision(), before.revision());
  // Collider 3 leaves watch 1: one EXIT, against the restored inside set.
  ASSERT_TRUE(Apply(stub.get(), "p", {ColliderChange::Move(3, Pose({40, 0, 0}))}, &resp).ok());
  ASSERT_EQ(resp.events_size(), 1);
  EXPECT_EQ(resp.events(0).watch_id(), 1u);
  EXPECT_EQ(resp.events(0).collider_id(), 3u);
  EXPECT_EQ(resp.events(0).kind(), v1::WatchEvent::EXIT);
}


// A batch that moves a collider carrying 10,000 watches needs more watch
// work than the session's per-message budget: ApplyChanges and a tick are
// refused with RESOURCE_EXHAUSTED naming the budget, and the session is
// unchanged (revision, the collider's pose, the watches' inside sets).
TEST(WatchBudgetServiceTest, AttachedWatchesOverTheWorkBudgetRefuseTheBatch) {
  testing::HitboxdProcess d({"--max-watches", "10000"}, {.threads = 2});
  ASSERT_TRUE(d.running()) << d.log();
  auto stub = Connect(d);
  v1::SessionLimits limits;
  limits.set_max_watches(10'000);
  limits.set_max_pair_tests_per_message(20'000);
  ASSERT_TRUE(Create(stub.get(), "b", limits).ok());
  // The carrier far from 40 balls: the watches' first queries find nothing.
  std::vector<ColliderChange> batch;
  batch.push_back(ColliderChange::Add(Collider{1, *Shape::MakeSphere(0.5), Pose({-100, 0, 0}), 0, 0}));
  for (uint64_t i = 2; i <= 41; ++i) {
    batch.push_back(ColliderChange::Add(Collider{i, *Shape::MakeSphere(0.5),
                                                 Pose({static_cast<double>(i % 7), 0, static_cast<double>(i / 7)}), 0, 0}));
  }
  v1::ApplyChangesResponse resp;
  ASSERT_TRUE(Apply(stub.get(), "b", batch, &resp).ok());
  batch.clear();
  for (uint64_t w = 1; w <= 10'000; ++w) {
    const auto x = static_cast<double>(w % 100), z = static_cast<double>(w / 100);
    batch.push_back(ColliderChange::AddWatch(SphereWatch(w, 2.0, {0.05 * x, 0, 0.05 * z}, 1)));
  }
  ASSERT_TRUE(Apply(stub.get(), "b", batch, &resp).ok());
  const v1::SessionInfo before = Get(stub.get(), "b");
  ASSERT_EQ(before.watches_size(), 10'000);
  // Moved among the balls, each watch reruns its query: ~10 pair tests each.
  const grpc::Status st = Apply(stub.get(), "b", {ColliderChange::Move(1, Pose({3, 0, 3}))}, &resp);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << st.error_message();
  EXPECT_NE(st.error_message().find("updating the watches after this batch"), std::string::npos)
      << st.error_message();
  EXPECT_NE(st.error_message().find("limits.max_pair_tests_per_message"), std::string::npos)
      << st.error_message();
  grpc::ClientContext ctx;
  auto stream = stub->Tick(&ctx);
  v1::TickRequest req;
  req.set_session_id("b");
  wire::ToProto(ColliderChange::Move(1, Pose({3, 0, 3})), req.add_changes());
  v1::TickResponse answer;
  ASSERT_TRUE(stream->Write(req) && stream->Read(&answer));
  ASSERT_TRUE(answer.has_error());
  EXPECT_EQ(answer.error().code(), static_cast<int>(grpc::StatusCode::RESOURCE_EXHAUSTED));
  EXPECT_EQ(answer.events_size(), 0);
  // The stream goes on: a move that leaves the watches' reach is cheap.
  v1::TickRequest next;
  wire::ToProto(ColliderChange::Move(1, Pose({-120, 0, 0})), next.add_changes());
  ASSERT_TRUE(stream->Write(next) && stream->Read(&answer));
  EXPECT_FALSE(answer.has_error()) << answer.error().message();
  stream->WritesDone();
  ASSERT_TRUE(stream->Finish().ok());
  const v1::SessionInfo after = Get(stub.get(), "b");
  EXPECT_EQ(after.revision(), before.revision() + 1);
  ASSERT_EQ(after.watches_size(), 10'000);
  for (int i = 0; i < after.watches_size(); ++i) ASSERT_EQ(after.watches(i).inside_count(), 0u);
}


// A restart under a lower work budget replays the log whole: batches
// accepted once are restored unbounded, though their watch updates now pass
// the session's budget; the next such batch is refused.
TEST(WatchPersistenceTest, RestartReplaysBatchesOverALowerBudget) {
  testing::TempDir dir("watch-budget");
  const std::vector<std::string> args = {"--data-dir", dir.path(), "--compact-min-bytes", "1000000000"};
  testing::HitboxdProcess d(args, {.log_level = "info", .threads = 2});
  ASSERT_TRUE(d.running()) << d.log();
  auto stub = Connect(d);
  ASSERT_TRUE(Create(stub.get(), "q").ok());
  std::vector<ColliderChange> batch;
  batch.push_back(ColliderChange::Add(Collider{1, *Shape::MakeSphere(0.5), Pose({-100, 0, 0}), 0, 0}));
  for (uint64_t i = 2; i <= 41; ++i) {
    batch.push_back(ColliderChange::Add(Collider{i, *Shape::MakeSphere(0.5),
                                                 Pose({static_cast<double>(i % 7), 0, static_cast<double>(i / 7)}), 0, 0}));
  }
  for (uint64_t w = 1; w <= 1'000; ++w) {
    batch.push_back(ColliderChange::AddWatch(SphereWatch(w, 2.0, {0.05 * static_cast<double>(w % 40), 0, 0}, 1)));
  }
  v1::ApplyChangesResponse resp;
  ASSERT_TRUE(Apply(stub.get(), "q", batch, &resp).ok());
  // ~10 pair tests for each of the 1,000 watches: within the default budget.
  ASSERT_TRUE(Apply(stub.get(), "q", {ColliderChange::Move(1, Pose({3, 0, 3}))}, &resp).ok());
  const v1::SessionInfo before = Get(stub.get(), "q");
  ASSERT_GT(before.watches(0).inside_count(), 0u);
  ASSERT_EQ(d.Terminate(), 0);
  testing::HitboxdProcess low({"--data-dir", dir.path(), "--max-pair-tests-per-message", "2000"},
                              {.log_level = "info", .threads = 2});
  ASSERT_TRUE(low.running()) << low.log();
  stub = Connect(low);
  const v1::SessionInfo after = Get(stub.get(), "q");
  EXPECT_EQ(after.revision(), before.revision()) << low.log();
  EXPECT_EQ(after.limits().max_pair_tests_per_message(), 2'000u);
  ASSERT_EQ(after.watches_size(), 1'000);
  for (int i = 0; i < 1'000; ++i) {
    ASSERT_EQ(after.watches(i).inside_count(), before.watches(i).inside_count()) << i;
  }
  const grpc::Status st = Apply(stub.get(), "q", {ColliderChange::Move(1, Pose({3, 0, 2}))}, &resp);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << st.error_message();
}

}  // namespace
}  // namespace hitbox
