// End-to-end: the built hitboxd binary on a free loopback port, driven over a
// real channel: health, tick streams checked against an in-process
// ColliderSet fed the same changes, two sessions streamed at once, every
// conformance case file answered through the service, and SIGTERM -> exit 0.
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <future>
#include <sstream>
#include <thread>
#include <tuple>

#include <gmock/gmock.h>
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include "grpc/health/v1/health.grpc.pb.h"
#include "hitbox/cases/case_file.h"
#include "process.h"
#include "service_util.h"
#include "wait.h"

namespace hitbox {
namespace {

using testing_service::WorldGen;
namespace fs = std::filesystem;

// hitboxd (two service threads) with a channel to it and grpc.health.v1 checks.
class Daemon : public testing::HitboxdProcess {
 public:
  explicit Daemon(std::vector<std::string> extra = {})
      : HitboxdProcess(std::move(extra), {.threads = 2}) {
    if (running()) {
      grpc::ChannelArguments ch_args;
      ch_args.SetMaxReceiveMessageSize(64 << 20);
      channel_ = grpc::CreateCustomChannel(address(), grpc::InsecureChannelCredentials(), ch_args);
    }
  }

  std::shared_ptr<grpc::Channel> channel() const { return channel_; }
  // A "VmHWM:"-style field of /proc/<pid>/status in bytes (0 when unreadable).
  uint64_t StatusBytes(const std::string& field) const {
    std::ifstream in("/proc/" + std::to_string(pid()) + "/status");
    std::string line;
    while (std::getline(in, line)) {
      if (line.rfind(field + ":", 0) == 0) return std::stoull(line.substr(field.size() + 1)) * 1024;
    }
    return 0;
  }

  // grpc.health.v1.Health/Check for the whole server: 1 SERVING, 2 NOT_SERVING,
  // -1 when the call failed.
  int Health() const {
    auto stub = grpc::health::v1::Health::NewStub(channel_);
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(2));
    grpc::health::v1::HealthCheckResponse response;
    const grpc::Status st = stub->Check(&ctx, grpc::health::v1::HealthCheckRequest(), &response);
    return st.ok() ? static_cast<int>(response.status()) : -1;
  }

  bool WaitServing() const {
    return running() && testing::WaitUntil([&] { return Health() == 1; });
  }

 private:
  std::shared_ptr<grpc::Channel> channel_;
};

void CreateSession(v1::Hitbox::Stub* stub, const std::string& id) {
  grpc::ClientContext ctx;
  v1::CreateSessionRequest req;
  req.set_session_id(id);
  v1::SessionInfo info;
  const grpc::Status st = stub->CreateSession(&ctx, req, &info);
  ASSERT_TRUE(st.ok()) << st.error_message();
}

// Drives `ticks` ticks of random adds, moves, replaces, removes and queries on
// session `id` over one Tick stream, mirroring every change into a local
// ColliderSet, and checks every answer is identical. Returns failures.
std::vector<std::string> StreamAndCompare(const std::shared_ptr<grpc::Channel>& channel,
                                          const std::string& id, uint64_t seed, int ticks) {
  std::vector<std::string> failures;
  auto stub = v1::Hitbox::NewStub(channel);
  grpc::ClientContext ctx;
  auto stream = stub->Tick(&ctx);
  WorldGen gen(seed, 40.0);
  ColliderSet local;
  std::vector<uint64_t> live;
  uint64_t next_id = 1;
  for (int t = 0; t < ticks && failures.size() < 10; ++t) {
    v1::TickRequest req;
    if (t == 0) req.set_session_id(id);
    req.set_tick(static_cast<uint64_t>(t) + 100);
    std::vector<ColliderChange> changes;
    const int n_adds = t == 0 ? 200 : static_cast<int>(gen.Next() % 4);
    for (int i = 0; i < n_adds; ++i) {
      changes.push_back(ColliderChange::Add(gen.RandomCollider(next_id)));
      live.push_back(next_id++);
    }
    if (t > 0) {
      for (int i = 0; i < 8 && !live.empty(); ++i) {
        const uint64_t target = live[gen.Next() % live.size()];
        changes.push_back(ColliderChange::Move(target, gen.RandomPose()));
      }
      if (gen.Next() % 3 == 0 && !live.empty()) {
        Collider c = gen.RandomCollider(live[gen.Next() % live.size()]);
        changes.push_back(ColliderChange::Replace(c));
      }
      if (gen.Next() % 3 == 0 && live.size() > 10) {
        const size_t k = gen.Next() % live.size();
        changes.push_back(ColliderChange::Remove(live[k]));
        live.erase(live.begin() + static_cast<long>(k));
      }
    }
    for (ColliderChange& c : changes) {
      wire::ToProto(c, req.add_changes());  // what the server gets
      c = testing_service::ThroughWire(c);  // what it makes of it
    }
    std::vector<Query> queries;
    const int n_queries = 1 + static_cast<int>(gen.Next() % 24);
    for (int i = 0; i < n_queries; ++i) {
      const Query q0 = gen.RandomQuery();
      v1::Query* pq = req.add_queries();
      wire::ToProto(q0, pq);
      pq->set_tag(static_cast<uint64_t>(i));
      Query q = testing_service::ThroughWire(q0);
      std::visit([](auto& x) { if (x.filter.max_hits == 0) x.filter.max_hits = 1024; }, q);
      queries.push_back(q);
    }
    if (Status s = local.Apply(changes); !s.ok()) {
      failures.push_back("local apply failed: " + s.ToString());
      break;
    }
    v1::TickResponse resp;
    if (!stream->Write(req) || !stream->Read(&resp)) {
      failures.push_back("stream broke at tick " + std::to_string(t));
      break;
    }
    if (resp.has_error()) {
      failures.push_back("tick " + std::to_string(t) + " error: " + resp.error().message());
      continue;
    }
    if (resp.tick() != req.tick()) failures.push_back("tick echo mismatch at " + std::to_string(t));
    if (resp.revision() != local.revision()) {
      failures.push_back("revision " + std::to_string(resp.revision()) + " vs local " +
                         std::to_string(local.revision()));
    }
    if (resp.results_size() != n_queries) {
      failures.push_back("result count mismatch at tick " + std::to_string(t));
      continue;
    }
    std::vector<QueryResult> want(queries.size());
    local.RunBatch(queries, want);
    for (int i = 0; i < n_queries; ++i) {
      const std::string diff =
          testing_service::DiffResults(wire::ResultFromProto(resp.results(i)), want[i]);
      if (!diff.empty() || resp.results(i).tag() != static_cast<uint64_t>(i)) {
        failures.push_back("session " + id + " tick " + std::to_string(t) + " query " +
                           std::to_string(i) + ": " + diff + " query=" +
                           req.queries(i).ShortDebugString());
      }
    }
  }
  stream->WritesDone();
  const grpc::Status st = stream->Finish();
  if (!st.ok()) failures.push_back("stream finished with " + st.error_message());
  return failures;
}

// The daemon starts healthy, answers, and exits 0 on SIGTERM after health NOT_SERVING.
TEST(HitboxdTest, StartsServingAndStopsOnSigterm) {
  Daemon d({"--demo"});
  ASSERT_NE(d.port(), 0) << d.log();
  ASSERT_TRUE(d.WaitServing()) << d.log();
  auto stub = v1::Hitbox::NewStub(d.channel());
  grpc::ClientContext ctx;
  v1::GetSessionRequest req;
  req.set_session_id("demo");
  v1::SessionInfo info;
  ASSERT_TRUE(stub->GetSession(&ctx, req, &info).ok());
  EXPECT_EQ(info.collider_count(), 301u);
  EXPECT_EQ(d.Terminate(), 0) << d.log();
}

// Server reflection is on (so grpcurl works without .proto files): the
// service list names hitbox.v1.Hitbox and health, and the Hitbox descriptor
// is served. (Messages encoded by hand: ServerReflectionRequest field 7
// list_services, field 4 file_containing_symbol.)
TEST(HitboxdTest, ServerReflectionListsTheService) {
  Daemon d;
  ASSERT_TRUE(d.WaitServing()) << d.log();
  grpc::GenericStub stub(d.channel());
  grpc::CompletionQueue cq;
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  auto call =
      stub.PrepareCall(&ctx, "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo", &cq);
  auto wait = [&](intptr_t want) {
    void* tag = nullptr;
    bool ok = false;
    return cq.Next(&tag, &ok) && ok && reinterpret_cast<intptr_t>(tag) == want;
  };
  auto exchange = [&](const std::string& request, intptr_t tag) {
    grpc::Slice slice(request);
    grpc::ByteBuffer out(&slice, 1), in;
    call->Write(out, reinterpret_cast<void*>(tag));
    if (!wait(tag)) return std::string("<write failed>");
    call->Read(&in, reinterpret_cast<void*>(tag + 1));
    if (!wait(tag + 1)) return std::string("<read failed>");
    std::vector<grpc::Slice> slices;
    (void)in.Dump(&slices);
    std::string bytes;
    for (const grpc::Slice& sl : slices) bytes.append(reinterpret_cast<const char*>(sl.begin()), sl.size());
    return bytes;
  };
  call->StartCall(reinterpret_cast<void*>(1));
  ASSERT_TRUE(wait(1));
  const std::string services = exchange(std::string("\x3a\x00", 2), 10);
  EXPECT_THAT(services, ::testing::HasSubstr("hitbox.v1.Hitbox"));
  EXPECT_THAT(services, ::testing::HasSubstr("grpc.health.v1.Health"));
  const std::string symbol = "hitbox.v1.Hitbox";
  const std::string file = exchange(std::string("\x22") + static_cast<char>(symbol.size()) + symbol, 20);
  EXPECT_THAT(file, ::testing::HasSubstr("hitbox/v1/hitbox.proto"));
  EXPECT_THAT(file, ::testing::HasSubstr("TickRequest"));
  call->WritesDone(reinterpret_cast<void*>(30));
  ASSERT_TRUE(wait(30));
  grpc::Status st;
  call->Finish(&st, reinterpret_cast<void*>(31));
  ASSERT_TRUE(wait(31));
  EXPECT_TRUE(st.ok()) << st.error_message();
  cq.Shutdown();
  EXPECT_EQ(d.Terminate(), 0) << d.log();
}

// Flags and environment variables configure the limits.
TEST(HitboxdTest, LimitsFromFlagsAndEnvironment) {
  setenv("HITBOX_MAX_QUERIES", "3", 1);
  Daemon d({"--max-sessions", "1"});
  unsetenv("HITBOX_MAX_QUERIES");
  ASSERT_TRUE(d.WaitServing()) << d.log();
  auto stub = v1::Hitbox::NewStub(d.channel());
  CreateSession(stub.get(), "one");
  {
    grpc::ClientContext ctx;
    v1::CreateSessionRequest req;
    req.set_session_id("two");
    v1::SessionInfo info;
    EXPECT_EQ(stub->CreateSession(&ctx, req, &info).error_code(),
              grpc::StatusCode::RESOURCE_EXHAUSTED);
  }
  v1::QueryRequest q;
  q.set_session_id("one");
  for (int i = 0; i < 4; ++i) q.add_queries()->mutable_raycast();
  grpc::ClientContext ctx;
  v1::QueryResponse resp;
  const grpc::Status st = stub->Query(&ctx, q, &resp);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_THAT(st.error_message(), ::testing::HasSubstr("at most 3"));
  EXPECT_EQ(d.Terminate(), 0) << d.log();
}

// Many ticks of interleaved changes and queries give answers identical to an
// in-process ColliderSet fed the same changes.
// The request that used to take hitboxd down: a session of 1,000,000 spheres
// (a 1000 x 1000 grid) and one Query of 200 sphere overlaps of radius 1000,
// each reaching ~785k colliders. With the default limits the server answers
// or refuses (here: RESOURCE_EXHAUSTED, the work budget), stays under 1.5 GB
// (the session itself holds ~250 MB), answers a 60-query batch within its
// client's 3 s deadline or gives up on it, and keeps serving.
TEST(HitboxdTest, HugeOverlapBatchIsAnsweredOrRefusedInBoundedMemory) {
  Daemon d;
  ASSERT_GT(d.port(), 0) << d.log();
  auto stub = v1::Hitbox::NewStub(d.channel());
  CreateSession(stub.get(), "grid");
  constexpr int kSide = 1000;
  for (int row = 0; row < kSide;) {
    v1::ApplyChangesRequest req;
    req.set_session_id("grid");
    for (int end = std::min(kSide, row + 64); row < end; ++row) {
      for (int c = 0; c < kSide; ++c) {
        *req.add_changes()->mutable_add() = testing_service::SphereMsg(
            static_cast<uint64_t>(row) * kSide + c + 1, 0.5, {2.0 * row, 0, 2.0 * c});
      }
    }
    grpc::ClientContext ctx;
    v1::ApplyChangesResponse resp;
    const grpc::Status st = stub->ApplyChanges(&ctx, req, &resp);
    ASSERT_TRUE(st.ok()) << st.error_message();
  }
  auto overlaps = [](int n, int max_hits) {
    v1::QueryRequest req;
    req.set_session_id("grid");
    for (int i = 0; i < n; ++i) {
      v1::OverlapQuery* o = req.add_queries()->mutable_overlap();
      o->mutable_shape()->mutable_sphere()->set_radius(1000.0);
      o->mutable_pose()->mutable_position()->set_x(1000.0 + i);
      o->mutable_pose()->mutable_position()->set_z(1000.0);
      o->mutable_filter()->set_max_hits(max_hits);
    }
    return req;
  };
  for (int max_hits : {0, 1}) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
    v1::QueryResponse resp;
    const grpc::Status st = stub->Query(&ctx, overlaps(200, max_hits), &resp);
    std::printf("200 overlaps, max_hits %d: %s\n", max_hits,
                st.ok() ? "OK" : st.error_message().c_str());
    if (st.ok()) {
      ASSERT_EQ(resp.results_size(), 200);
      EXPECT_EQ(resp.results(0).overlaps_size(), max_hits == 0 ? 1024 : 1);
    } else {
      EXPECT_EQ(st.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << st.error_message();
      EXPECT_THAT(st.error_message(), ::testing::HasSubstr("work budget"));
    }
  }
  {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(3));
    v1::QueryResponse resp;
    const grpc::Status st = stub->Query(&ctx, overlaps(60, 0), &resp);
    std::printf("60 overlaps, 3 s deadline: %s\n", st.ok() ? "OK" : st.error_message().c_str());
    EXPECT_TRUE(st.ok() || st.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED ||
                st.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED)
        << st.error_message();
  }
  // Still serving, right away (the refused work stopped).
  {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(2));
    v1::QueryRequest req;
    req.set_session_id("grid");
    v1::RayQuery* ray = req.add_queries()->mutable_raycast();
    ray->mutable_origin()->set_x(-5);
    ray->mutable_translation()->set_x(10);
    v1::QueryResponse resp;
    const grpc::Status st = stub->Query(&ctx, req, &resp);
    ASSERT_TRUE(st.ok()) << st.error_message();
    ASSERT_EQ(resp.results(0).hits_size(), 1);
    EXPECT_EQ(resp.results(0).hits(0).id(), 1u);
  }
  const uint64_t peak = d.StatusBytes("VmHWM");
  EXPECT_GT(peak, 0u);
  EXPECT_LT(peak, 1500ull << 20) << "peak resident memory " << (peak >> 20) << " MiB";
  std::printf("hitboxd peak resident memory: %llu MiB\n",
              static_cast<unsigned long long>(peak >> 20));
  EXPECT_EQ(d.Health(), 1);
}

TEST(HitboxdTest, TickStreamMatchesInProcess) {
  Daemon d;
  ASSERT_TRUE(d.WaitServing()) << d.log();
  auto stub = v1::Hitbox::NewStub(d.channel());
  CreateSession(stub.get(), "match");
  const std::vector<std::string> failures = StreamAndCompare(d.channel(), "match", 1234, 300);
  for (const std::string& f : failures) ADD_FAILURE() << f;
  EXPECT_EQ(d.Terminate(), 0) << d.log();
}

// Two sessions streamed concurrently stay independent and both match.
TEST(HitboxdTest, TwoSessionsStreamConcurrently) {
  Daemon d;
  ASSERT_TRUE(d.WaitServing()) << d.log();
  auto stub = v1::Hitbox::NewStub(d.channel());
  CreateSession(stub.get(), "red");
  CreateSession(stub.get(), "blue");
  auto a = std::async(std::launch::async, StreamAndCompare, d.channel(), "red", 1, 200);
  auto b = std::async(std::launch::async, StreamAndCompare, d.channel(), "blue", 2, 200);
  for (const std::string& f : a.get()) ADD_FAILURE() << f;
  for (const std::string& f : b.get()) ADD_FAILURE() << f;
  EXPECT_EQ(d.Terminate(), 0) << d.log();
}

// A client that stops reading its Tick stream is not buffered without bound
// and does not hold up another stream on another session: the server reads
// its next tick only after the previous response was written.
TEST(HitboxdTest, StalledStreamDoesNotBlockOthers) {
  Daemon d;
  ASSERT_TRUE(d.WaitServing()) << d.log();
  auto stub = v1::Hitbox::NewStub(d.channel());
  CreateSession(stub.get(), "stalled");
  CreateSession(stub.get(), "live");
  {
    v1::ApplyChangesRequest req;
    req.set_session_id("stalled");
    for (int i = 0; i < 1000; ++i) {
      *req.add_changes()->mutable_add() = testing_service::SphereMsg(i, 0.5, {i * 0.01, 0, 0});
    }
    grpc::ClientContext ctx;
    v1::ApplyChangesResponse resp;
    ASSERT_TRUE(stub->ApplyChanges(&ctx, req, &resp).ok());
  }
  // Stream A: every tick (~15 kB) answers ~1000 hits (tens of kB); it never reads.
  grpc::ClientContext stalled_ctx;
  auto stalled = stub->Tick(&stalled_ctx);
  std::atomic<int> written{0};
  std::atomic<bool> in_write{false};
  std::thread writer([&] {
    v1::TickRequest req;
    req.set_session_id("stalled");
    v1::OverlapQuery* o = req.add_queries()->mutable_overlap();
    o->mutable_shape()->mutable_sphere()->set_radius(100);
    for (int i = 0; i < 300; ++i) {  // cheap misses that make each request ~15 kB
      v1::RayQuery* r = req.add_queries()->mutable_raycast();
      r->mutable_origin()->set_x(1e4 + i);
      r->mutable_translation()->set_y(1);
    }
    for (int t = 0; t < 100000; ++t) {
      req.set_tick(t);
      in_write = true;
      const bool ok = stalled->Write(req);  // blocks once flow control pushes back
      in_write = false;
      if (!ok) break;
      ++written;
      if (t == 0) req.clear_session_id();
    }
  });
  // Stream B on another session runs normally meanwhile.
  const std::vector<std::string> failures = StreamAndCompare(d.channel(), "live", 5, 50);
  for (const std::string& f : failures) ADD_FAILURE() << f;
  // The stalled writer is pushed back (the server stopped reading A): it sits
  // in one Write while 20 ticks in a row of another stream are answered, far
  // below its 100000 ticks. B's round trips are the interval, not a clock.
  grpc::ClientContext probe_ctx;
  auto probe = stub->Tick(&probe_ctx);
  v1::TickRequest tick;
  tick.set_session_id("live");
  tick.add_queries()->mutable_raycast()->mutable_translation()->set_y(1);
  v1::TickResponse answer;
  int still = 0;
  for (int round = 0; round < 100000 && still < 20; ++round) {
    const int before = written.load();
    tick.set_tick(static_cast<uint64_t>(round));
    ASSERT_TRUE(probe->Write(tick) && probe->Read(&answer));
    ASSERT_FALSE(answer.has_error()) << answer.error().message();
    still = in_write.load() && written.load() == before ? still + 1 : 0;
  }
  probe->WritesDone();
  EXPECT_TRUE(probe->Finish().ok());
  const int last = written.load();
  EXPECT_EQ(still, 20) << "the server kept reading a stream whose client does not read";
  EXPECT_LT(last, 100000);
  std::printf("stalled stream: %d ticks written before flow control pushed back\n", last);
  stalled_ctx.TryCancel();
  writer.join();
  EXPECT_EQ(d.Terminate(), 0) << d.log();
}

// SIGTERM with an open, idle tick stream: the stream is cancelled after the
// grace period and the daemon still exits 0.
TEST(HitboxdTest, ShutdownCancelsOpenStreamsAfterGrace) {
  Daemon d({"--shutdown-grace-ms", "300"});
  ASSERT_TRUE(d.WaitServing()) << d.log();
  auto stub = v1::Hitbox::NewStub(d.channel());
  CreateSession(stub.get(), "s");
  grpc::ClientContext ctx;
  auto stream = stub->Tick(&ctx);
  v1::TickRequest req;
  req.set_session_id("s");
  v1::TickResponse resp;
  ASSERT_TRUE(stream->Write(req) && stream->Read(&resp));
  EXPECT_FALSE(resp.has_error());
  EXPECT_EQ(d.Terminate(), 0) << d.log();
  EXPECT_FALSE(stream->Read(&resp));
  EXPECT_FALSE(stream->Finish().ok());
}

// Lag compensation on the Tick stream as a game server uses it: each tick
// moves a sphere and shoots at where it was 3.5 ticks ago (between two
// ticks), mixed with present-time shots; the window's ends, a future tick
// and one before the window are OUT_OF_RANGE naming both ends; a lower tick
// is refused naming both; a tick rolled back (its queries failed) leaves the
// history as it was.
TEST(HitboxdRewindTest, TickStreamLagCompensation) {
  Daemon d({"--max-history-ticks", "16"});
  ASSERT_NE(d.port(), 0) << d.log();
  ASSERT_TRUE(d.WaitServing()) << d.log();
  auto stub = v1::Hitbox::NewStub(d.channel());
  {
    grpc::ClientContext ctx;
    v1::CreateSessionRequest req;
    req.set_session_id("lag");
    req.mutable_limits()->set_history_ticks(8);
    v1::SessionInfo info;
    ASSERT_TRUE(stub->CreateSession(&ctx, req, &info).ok());
    EXPECT_EQ(info.limits().history_ticks(), 8u);
    EXPECT_FALSE(info.has_newest_tick());
    grpc::ClientContext ctx2;
    req.set_session_id("too-long");
    req.mutable_limits()->set_history_ticks(17);
    const grpc::Status st = stub->CreateSession(&ctx2, req, &info);
    EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_THAT(st.error_message(), ::testing::HasSubstr("history_ticks"));
  }
  // A ray along +x at height y, at tick t (unset: now).
  const auto shot = [](double y, std::optional<double> t) {
    v1::Query q;
    q.mutable_raycast()->mutable_origin()->set_x(-10);
    q.mutable_raycast()->mutable_origin()->set_y(y);
    q.mutable_raycast()->mutable_translation()->set_x(20);
    if (t) q.set_at_tick(*t);
    return q;
  };
  grpc::ClientContext ctx;
  auto stream = stub->Tick(&ctx);
  v1::TickRequest req;
  v1::TickResponse resp;
  const auto tick = [&](const v1::TickRequest& r) {
    EXPECT_TRUE(stream->Write(r) && stream->Read(&resp));
    return resp;
  };
  // Tick 100 adds the sphere at y = 0; tick t moves it to y = t - 100.
  req.set_session_id("lag");
  req.set_tick(100);
  *req.add_changes()->mutable_add() = testing_service::SphereMsg(1, 0.5);
  ASSERT_FALSE(tick(req).has_error()) << resp.error().message();
  for (uint64_t t = 101; t <= 120; ++t) {
    req.Clear();
    req.set_tick(t);
    v1::MoveCollider* mv = req.add_changes()->mutable_move();
    mv->set_id(1);
    mv->mutable_pose()->mutable_position()->set_y(static_cast<double>(t) - 100.0);
    if (t >= 104) {
      const double at = static_cast<double>(t) - 3.5;
      *req.add_queries() = shot(at - 100.0, at);                        // where it was: hit
      *req.add_queries() = shot(at - 100.0, std::nullopt);              // now: miss
      *req.add_queries() = shot(static_cast<double>(t) - 100.0, std::nullopt);  // now: hit
    }
    ASSERT_FALSE(tick(req).has_error()) << t << ": " << resp.error().message();
    if (t >= 104) {
      ASSERT_EQ(resp.results_size(), 3);
      ASSERT_EQ(resp.results(0).hits_size(), 1) << t;
      EXPECT_EQ(resp.results(0).hits(0).id(), 1u);
      EXPECT_NEAR(resp.results(0).hits(0).fraction(), 9.5 / 20.0, 1e-12);
      EXPECT_EQ(resp.results(1).hits_size(), 0) << t;
      EXPECT_EQ(resp.results(2).hits_size(), 1) << t;
    }
  }
  // The window is 113..120: its ends answer, outside them is OUT_OF_RANGE.
  for (double at : {113.0, 120.0, 116.25}) {
    req.Clear();
    *req.add_queries() = shot(at - 100.0, at);
    ASSERT_FALSE(tick(req).has_error()) << at << ": " << resp.error().message();
    EXPECT_EQ(resp.results(0).hits_size(), 1) << at;
  }
  for (double at : {112.0, 112.5, 120.5, 121.0, 5.0}) {
    req.Clear();
    *req.add_queries() = shot(0, std::nullopt);
    *req.add_queries() = shot(0, at);
    ASSERT_TRUE(tick(req).has_error()) << at;
    EXPECT_EQ(resp.error().code(), static_cast<int>(grpc::StatusCode::OUT_OF_RANGE));
    EXPECT_THAT(resp.error().message(), ::testing::HasSubstr("queries[1].at_tick"));
    EXPECT_THAT(resp.error().message(), ::testing::HasSubstr("oldest tick 113, newest tick 120"));
  }
  // Ticks only increase.
  req.Clear();
  req.set_tick(119);
  req.add_changes()->mutable_move()->set_id(1);
  req.mutable_changes(0)->mutable_move()->mutable_pose()->mutable_position()->set_y(3);
  ASSERT_TRUE(tick(req).has_error());
  EXPECT_EQ(resp.error().code(), static_cast<int>(grpc::StatusCode::INVALID_ARGUMENT));
  EXPECT_THAT(resp.error().message(), ::testing::HasSubstr("119"));
  EXPECT_THAT(resp.error().message(), ::testing::HasSubstr("120"));
  // Tick 200 moves the sphere far away but its query is out of range: the
  // tick is rolled back, history included (still 113..120, sphere as before).
  req.Clear();
  req.set_tick(200);
  v1::MoveCollider* far = req.add_changes()->mutable_move();
  far->set_id(1);
  far->mutable_pose()->mutable_position()->set_y(1000);
  *req.add_queries() = shot(0, 100.0);
  ASSERT_TRUE(tick(req).has_error());
  EXPECT_EQ(resp.error().code(), static_cast<int>(grpc::StatusCode::OUT_OF_RANGE));
  {
    grpc::ClientContext c;
    v1::GetSessionRequest g;
    g.set_session_id("lag");
    v1::SessionInfo info;
    ASSERT_TRUE(stub->GetSession(&c, g, &info).ok());
    EXPECT_EQ(info.oldest_tick(), 113u);
    EXPECT_EQ(info.newest_tick(), 120u);
  }
  req.Clear();
  *req.add_queries() = shot(19.5, 119.5);
  *req.add_queries() = shot(20, std::nullopt);
  ASSERT_FALSE(tick(req).has_error()) << resp.error().message();
  EXPECT_EQ(resp.results(0).hits_size(), 1);
  EXPECT_EQ(resp.results(1).hits_size(), 1);
  stream->WritesDone();
  EXPECT_TRUE(stream->Finish().ok());
  EXPECT_EQ(d.Terminate(), 0) << d.log();
}

// Every conformance case file answered through the service: colliders loaded
// in batches under the limits, queries sent in batches, checked by FORMAT.md;
// with Query on either gRPC API (--rpc-api callback, cq).
class HitboxdCasesTest
    : public ::testing::TestWithParam<std::tuple<std::string, std::string>> {};

TEST_P(HitboxdCasesTest, AnswersMatchReference) {
  Result<cases::CaseFile> loaded = cases::LoadCaseFile(std::get<0>(GetParam()));
  ASSERT_TRUE(loaded.ok()) << loaded.error().message;
  const cases::CaseFile& file = *loaded;
  // A short grace: at SIGTERM this test's idle channel (nothing polls it
  // while Terminate waits) would hold the stop for the whole default 5 s.
  Daemon d({"--max-changes", "4096", "--max-queries", "1024", "--rpc-api",
            std::get<1>(GetParam()), "--shutdown-grace-ms", "300"});
  ASSERT_TRUE(d.WaitServing()) << d.log();
  auto stub = v1::Hitbox::NewStub(d.channel());
  CreateSession(stub.get(), "cases");
  constexpr size_t kChangeBatch = 4096, kQueryBatch = 1024;
  for (size_t start = 0; start < file.colliders.size(); start += kChangeBatch) {
    v1::ApplyChangesRequest req;
    req.set_session_id("cases");
    for (size_t i = start; i < std::min(file.colliders.size(), start + kChangeBatch); ++i) {
      wire::ToProto(file.colliders[i], req.add_changes()->mutable_add());
    }
    if (file.ticks) req.set_tick(file.ticks->oldest);  // the world at the first tick
    grpc::ClientContext ctx;
    v1::ApplyChangesResponse resp;
    const grpc::Status st = stub->ApplyChanges(&ctx, req, &resp);
    ASSERT_TRUE(st.ok()) << st.error_message();
  }
  if (file.ticks) {
    // The later ticks' moves as a game server sends them: one Tick each.
    grpc::ClientContext ctx;
    auto stream = stub->Tick(&ctx);
    for (size_t k = 0; k < file.tick_moves.size(); ++k) {
      v1::TickRequest req;
      req.set_session_id("cases");
      req.set_tick(file.ticks->oldest + 1 + k);
      for (const ColliderChange& c : file.tick_moves[k]) wire::ToProto(c, req.add_changes());
      ASSERT_TRUE(stream->Write(req));
      v1::TickResponse resp;
      ASSERT_TRUE(stream->Read(&resp));
      ASSERT_FALSE(resp.has_error()) << resp.error().message();
    }
    stream->WritesDone();
    ASSERT_TRUE(stream->Finish().ok());
  }
  const std::vector<Query> queries = cases::Queries(file);
  std::vector<QueryResult> results(queries.size());
  for (size_t start = 0; start < queries.size(); start += kQueryBatch) {
    v1::QueryRequest req;
    req.set_session_id("cases");
    const size_t end = std::min(queries.size(), start + kQueryBatch);
    for (size_t i = start; i < end; ++i) {
      v1::Query* q = req.add_queries();
      wire::ToProto(queries[i], q);
      q->set_tag(file.queries[i].id);
    }
    grpc::ClientContext ctx;
    v1::QueryResponse resp;
    const grpc::Status st = stub->Query(&ctx, req, &resp);
    ASSERT_TRUE(st.ok()) << st.error_message();
    ASSERT_EQ(resp.results_size(), static_cast<int>(end - start));
    for (size_t i = start; i < end; ++i) {
      const v1::QueryResult& r = resp.results(static_cast<int>(i - start));
      ASSERT_EQ(r.tag(), file.queries[i].id);
      results[i] = wire::ResultFromProto(r);
    }
  }
  const cases::Report report = cases::CheckAll(file, results, 20);
  for (const std::string& f : report.failures) ADD_FAILURE() << f;
  EXPECT_TRUE(report.ok()) << report.ToString(file);
  EXPECT_EQ(d.Terminate(), 0) << d.log();
}

std::string CaseName(
    const ::testing::TestParamInfo<std::tuple<std::string, std::string>>& info) {
  const fs::path path(std::get<0>(info.param));
  std::string name = path.filename().string();
  if (path.parent_path().filename() == "next") name = "next_" + name;
  if (path.parent_path().filename() == "rewind") name = "rewind_" + name;
  for (char& c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return name + "_" + std::get<1>(info.param);
}

INSTANTIATE_TEST_SUITE_P(
    Cases, HitboxdCasesTest,
    ::testing::Combine(::testing::ValuesIn(cases::ListSupportedCaseFiles(HITBOX_CASES_DIR)),
                       ::testing::Values("callback", "cq")),
    CaseName);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(HitboxdCasesTest);

}  // namespace
}  // namespace hitbox
