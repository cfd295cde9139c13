// Session lifecycle: idle expiry (server and per-session timeouts, calls and
// ticks as activity, the reaper's log line), tick streams that end with
// NOT_FOUND when their session is deleted or expires (promptly, over a real
// loopback connection), and memory accounting with the --max-memory cap.
// In-process servers are reached over 127.0.0.1 TCP; the last tests run the
// hitboxd binary with the flags and environment variables.
#include <atomic>
#include <chrono>
#include <cstdio>
#include <future>
#include <mutex>
#include <sstream>
#include <thread>

#include <gmock/gmock.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include "process.h"
#include "server.h"
#include "service_util.h"

namespace hitbox {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using testing_service::SphereMsg;
using namespace std::chrono_literals;

// Collects the server's log lines (spdlog's default logger) while alive.
class LogCapture {
 public:
  LogCapture() : sink_(std::make_shared<spdlog::sinks::ostream_sink_mt>(out_)) {
    spdlog::default_logger()->sinks().push_back(sink_);
  }
  ~LogCapture() {
    auto& sinks = spdlog::default_logger()->sinks();
    sinks.erase(std::remove(sinks.begin(), sinks.end(), sink_), sinks.end());
  }
  std::string Text() {
    sink_->flush();
    return out_.str();
  }

 private:
  std::ostringstream out_;
  std::shared_ptr<spdlog::sinks::ostream_sink_mt> sink_;
};

// An in-process hitboxd reached over a loopback TCP channel.
class LifecycleTest : public ::testing::Test {
 protected:
  void StartServer(uint64_t idle_timeout_ms, uint64_t max_memory_bytes = 0) {
    server::ServerOptions o;
    o.listen = "127.0.0.1:0";
    o.service.threads = 1;
    o.service.limits.session.idle_timeout_ms = idle_timeout_ms;
    o.service.limits.max_memory_bytes = max_memory_bytes;
    Result<std::unique_ptr<server::HitboxServer>> s = server::HitboxServer::Start(o);
    ASSERT_TRUE(s.ok()) << s.error().message;
    server_ = std::move(*s);
    stub_ = v1::Hitbox::NewStub(grpc::CreateChannel(
        "127.0.0.1:" + std::to_string(server_->port()), grpc::InsecureChannelCredentials()));
  }
  void TearDown() override {
    if (server_) server_->Shutdown(100ms);
  }

  grpc::Status Create(const std::string& id, uint64_t idle_timeout_ms = 0,
                      v1::SessionInfo* info = nullptr) {
    v1::CreateSessionRequest req;
    req.set_session_id(id);
    if (idle_timeout_ms != 0) req.mutable_limits()->set_idle_timeout_ms(idle_timeout_ms);
    v1::SessionInfo tmp;
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + 5s);
    return stub_->CreateSession(&ctx, req, info ? info : &tmp);
  }
  grpc::Status Get(const std::string& id, v1::SessionInfo* info = nullptr) {
    v1::GetSessionRequest req;
    req.set_session_id(id);
    v1::SessionInfo tmp;
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + 5s);
    return stub_->GetSession(&ctx, req, info ? info : &tmp);
  }
  grpc::Status Delete(const std::string& id) {
    v1::DeleteSessionRequest req;
    req.set_session_id(id);
    v1::DeleteSessionResponse resp;
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + 5s);
    return stub_->DeleteSession(&ctx, req, &resp);
  }
  // Session ids listed by ListSessions (which is not activity on them).
  std::vector<std::string> Listed(std::vector<v1::SessionInfo>* infos = nullptr) {
    v1::ListSessionsResponse resp;
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + 5s);
    EXPECT_TRUE(stub_->ListSessions(&ctx, v1::ListSessionsRequest(), &resp).ok());
    std::vector<std::string> ids;
    for (const v1::SessionInfo& s : resp.sessions()) {
      ids.push_back(s.session_id());
      if (infos != nullptr) infos->push_back(s);
    }
    return ids;
  }
  grpc::Status Add(const std::string& id, uint64_t first, int n) {
    v1::ApplyChangesRequest req;
    req.set_session_id(id);
    for (int i = 0; i < n; ++i) {
      *req.add_changes()->mutable_add() = SphereMsg(first + i, 0.5, {3.0 * static_cast<double>(first + i), 0, 0});
    }
    v1::ApplyChangesResponse resp;
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + 5s);
    return stub_->ApplyChanges(&ctx, req, &resp);
  }
  grpc::Status Apply(const v1::ApplyChangesRequest& req) {
    v1::ApplyChangesResponse resp;
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + 5s);
    return stub_->ApplyChanges(&ctx, req, &resp);
  }
  // One raycast along +X through the spheres; returns the call's status.
  grpc::Status Ray(const std::string& id, v1::QueryResponse* resp = nullptr) {
    v1::QueryRequest req;
    req.set_session_id(id);
    v1::RayQuery* ray = req.add_queries()->mutable_raycast();
    ray->mutable_origin()->set_x(-10);
    ray->mutable_translation()->set_x(1000);
    v1::QueryResponse tmp;
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + 5s);
    return stub_->Query(&ctx, req, resp ? resp : &tmp);
  }
  static bool Contains(const std::vector<std::string>& ids, const std::string& id) {
    return std::find(ids.begin(), ids.end(), id) != ids.end();
  }

  std::unique_ptr<server::HitboxServer> server_;
  std::unique_ptr<v1::Hitbox::Stub> stub_;
};

// A tick stream opened on `session` with a deadline, so a stream that never
// ends fails the test instead of hanging it.
struct OpenStream {
  OpenStream(v1::Hitbox::Stub* stub, const std::string& session, std::chrono::seconds deadline) {
    ctx.set_deadline(std::chrono::system_clock::now() + deadline);
    stream = stub->Tick(&ctx);
    id = session;
  }
  // Sends one empty tick and reads its answer; false when the stream ended.
  bool Tick(uint64_t n, v1::TickResponse* resp) {
    v1::TickRequest req;
    req.set_session_id(id);
    req.set_tick(n);
    return stream->Write(req) && stream->Read(resp);
  }
  grpc::ClientContext ctx;
  std::unique_ptr<grpc::ClientReaderWriter<v1::TickRequest, v1::TickResponse>> stream;
  std::string id;
};

// The reaper as of a time `ms` past now (the clock seam: no test waits for
// the real reaper, whose timeouts here are a minute or more).
int64_t ReapAfter(server::HitboxServer& server, int64_t ms) {
  return server.service().ReapIdleSessions(server::SteadyNowNs() + ms * 1'000'000);
}

// An idle session is deleted (and logged) once its timeout passed, while
// sessions used by queries and ticks since stay; SessionInfo reports the last
// activity.
TEST_F(LifecycleTest, IdleSessionExpiresActiveOnesSurvive) {
  LogCapture log;
  constexpr int64_t kTimeoutMs = 60'000;
  StartServer(kTimeoutMs);
  v1::SessionInfo info;
  ASSERT_TRUE(Create("idle", 0, &info).ok());
  EXPECT_EQ(info.limits().idle_timeout_ms(), static_cast<uint64_t>(kTimeoutMs));
  const int64_t created = info.last_active_unix_ms();
  EXPECT_GT(created, 0);
  EXPECT_NEAR(static_cast<double>(created), static_cast<double>(info.created_unix_ms()), 50);
  ASSERT_TRUE(Create("queried").ok());
  ASSERT_TRUE(Create("ticked").ok());
  ASSERT_TRUE(Add("queried", 1, 3).ok());
  OpenStream ticks(stub_.get(), "ticked", 20s);
  v1::TickResponse resp;
  // "idle" was last active before `mark`, the others after it.
  const int64_t mark = server::SteadyNowNs();
  ASSERT_TRUE(Ray("queried").ok());
  ASSERT_TRUE(ticks.Tick(1, &resp));
  ASSERT_FALSE(resp.has_error()) << resp.error().message();
  server_->service().ReapIdleSessions(mark + kTimeoutMs * 1'000'000);
  std::vector<v1::SessionInfo> infos;
  const std::vector<std::string> ids = Listed(&infos);
  EXPECT_FALSE(Contains(ids, "idle"));
  EXPECT_TRUE(Contains(ids, "queried"));
  EXPECT_TRUE(Contains(ids, "ticked"));
  for (const v1::SessionInfo& s : infos) {
    EXPECT_GE(s.last_active_unix_ms(), created) << s.session_id();
  }
  const grpc::Status gone = Get("idle");
  EXPECT_EQ(gone.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_THAT(log.Text(), HasSubstr("session 'idle' expired after "));
  EXPECT_THAT(log.Text(), HasSubstr(" s idle"));
  EXPECT_THAT(log.Text(), Not(HasSubstr("session 'queried' expired")));
  // Once the activity stops, the others go too.
  ticks.stream->WritesDone();
  EXPECT_TRUE(ticks.stream->Finish().ok());
  EXPECT_EQ(ReapAfter(*server_, kTimeoutMs), INT64_MAX);  // none left to expire
  EXPECT_TRUE(Listed().empty());
}

// A session may lower the server's timeout (any value when the server's is
// "never"), never raise it; 0 on the server keeps sessions forever.
TEST_F(LifecycleTest, PerSessionIdleTimeout) {
  StartServer(0);  // never
  v1::SessionInfo info;
  ASSERT_TRUE(Create("forever", 0, &info).ok());
  EXPECT_EQ(info.limits().idle_timeout_ms(), 0u);
  ASSERT_TRUE(Create("short", 60'000, &info).ok());
  EXPECT_EQ(info.limits().idle_timeout_ms(), 60'000u);
  ReapAfter(*server_, 3'600'000);
  const std::vector<std::string> ids = Listed();
  EXPECT_TRUE(Contains(ids, "forever"));
  EXPECT_FALSE(Contains(ids, "short"));
  server_->Shutdown(0ms);
  server_.reset();

  StartServer(600'000);
  grpc::Status st = Create("above", 600'001);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(st.error_message(), HasSubstr("limits.idle_timeout_ms"));
  EXPECT_THAT(st.error_message(), HasSubstr("600000"));
  ASSERT_TRUE(Create("lower", 60'000, &info).ok());
  EXPECT_EQ(info.limits().idle_timeout_ms(), 60'000u);
  ASSERT_TRUE(Create("default").ok());
  ReapAfter(*server_, 300'000);
  const std::vector<std::string> later = Listed();
  EXPECT_FALSE(Contains(later, "lower"));
  EXPECT_TRUE(Contains(later, "default"));
}

// Any call on the session counts: GetSession / ApplyChanges keep it alive,
// while a session without calls since expires.
TEST_F(LifecycleTest, EveryCallIsActivity) {
  constexpr int64_t kTimeoutMs = 60'000;
  StartServer(kTimeoutMs);
  ASSERT_TRUE(Create("get").ok());
  ASSERT_TRUE(Create("apply").ok());
  ASSERT_TRUE(Create("quiet").ok());
  const int64_t mark = server::SteadyNowNs();
  ASSERT_TRUE(Get("get").ok());
  ASSERT_TRUE(Add("apply", 1, 1).ok());
  server_->service().ReapIdleSessions(mark + kTimeoutMs * 1'000'000);
  const std::vector<std::string> ids = Listed();
  EXPECT_TRUE(Contains(ids, "get"));
  EXPECT_TRUE(Contains(ids, "apply"));
  EXPECT_FALSE(Contains(ids, "quiet"));
}

// A stream waiting for the client's next tick ends at once when its session
// is deleted: NOT_FOUND with the reason, no tick needed.
TEST_F(LifecycleTest, DeletedSessionEndsIdleTickStream) {
  StartServer(0);
  ASSERT_TRUE(Create("del").ok());
  OpenStream s(stub_.get(), "del", 10s);
  v1::TickResponse resp;
  ASSERT_TRUE(s.Tick(1, &resp));
  ASSERT_FALSE(resp.has_error());
  // The server now waits for tick 2, which never comes: the deletion alone
  // ends the read (else the stream's deadline does, and the status differs).
  auto reader = std::async(std::launch::async, [&] { return s.stream->Read(&resp); });
  ASSERT_TRUE(Delete("del").ok());
  EXPECT_FALSE(reader.get());
  const grpc::Status st = s.stream->Finish();
  EXPECT_EQ(st.error_code(), grpc::StatusCode::NOT_FOUND) << st.error_message();
  EXPECT_THAT(st.error_message(), HasSubstr("session 'del' was deleted"));
}

// An expired session ends its idle stream the same way, saying it expired.
TEST_F(LifecycleTest, ExpiredSessionEndsTickStream) {
  constexpr int64_t kTimeoutMs = 60'000;
  StartServer(kTimeoutMs);
  ASSERT_TRUE(Create("exp").ok());
  OpenStream s(stub_.get(), "exp", 10s);
  v1::TickResponse resp;
  ASSERT_TRUE(s.Tick(1, &resp));
  ASSERT_FALSE(resp.has_error());
  auto reader = std::async(std::launch::async, [&] { return s.stream->Read(&resp); });
  ReapAfter(*server_, kTimeoutMs + 1'000);  // no more ticks: the session expires
  EXPECT_FALSE(reader.get());
  const grpc::Status st = s.stream->Finish();
  EXPECT_EQ(st.error_code(), grpc::StatusCode::NOT_FOUND) << st.error_message();
  EXPECT_THAT(st.error_message(), HasSubstr("session 'exp' expired after"));
  EXPECT_EQ(Get("exp").error_code(), grpc::StatusCode::NOT_FOUND);
}

// Deleting while ticks are in flight (pipelined, unread): the stream still
// ends with NOT_FOUND, after some more answered ticks. Repeated to shake out
// races between the tick in progress and the deletion.
TEST_F(LifecycleTest, DeletionRacingTicksEndsStream) {
  StartServer(0);
  int ended_mid_stream = 0;
  for (int round = 0; round < 30; ++round) {
    const std::string id = "race-" + std::to_string(round);
    ASSERT_TRUE(Create(id).ok());
    ASSERT_TRUE(Add(id, 1, 20).ok());
    OpenStream s(stub_.get(), id, 10s);
    std::thread writer([&] {
      v1::TickRequest req;
      req.set_session_id(id);
      for (int q = 0; q < 200; ++q) {  // enough work per tick for deletions to land mid-stream
        v1::RayQuery* ray = req.add_queries()->mutable_raycast();
        ray->mutable_origin()->set_y(0.01 * q);
        ray->mutable_translation()->set_x(100);
      }
      for (uint64_t n = 1; n <= 50; ++n) {
        req.set_tick(n);
        if (!s.stream->Write(req)) return;
      }
    });
    v1::TickResponse resp;
    ASSERT_TRUE(s.stream->Read(&resp));  // the stream is bound to the session
    ASSERT_FALSE(resp.has_error()) << resp.error().message();
    // Odd rounds delete up to 6 answers later: at varied points of the stream.
    int answered = 1;
    for (int later = round % 2 == 1 ? round % 7 : 0; later > 0 && s.stream->Read(&resp); --later) {
      EXPECT_FALSE(resp.has_error()) << resp.error().message();
      ++answered;
    }
    ASSERT_TRUE(Delete(id).ok());
    while (s.stream->Read(&resp)) {
      EXPECT_FALSE(resp.has_error()) << resp.error().message();  // errors end the stream instead
      ++answered;
    }
    writer.join();
    s.stream->WritesDone();  // fails when the server already ended the call
    const grpc::Status st = s.stream->Finish();
    EXPECT_EQ(st.error_code(), grpc::StatusCode::NOT_FOUND)
        << "round " << round << " after " << answered << " ticks: " << st.error_message();
    if (answered < 50) ++ended_mid_stream;
  }
  std::printf("%d of 30 streams ended with ticks still unanswered\n", ended_mid_stream);
}

// The next tick after deletion ends the stream even without a notification
// (DoTick directly, no reactor observing the session).
TEST_F(LifecycleTest, NextTickAfterDeletionEndsStream) {
  StartServer(0);
  server::HitboxService& svc = server_->service();
  ASSERT_TRUE(Create("next").ok());
  server::HitboxService::TickStream stream;
  v1::TickRequest tick;
  tick.set_session_id("next");
  v1::TickResponse resp;
  ASSERT_TRUE(svc.DoTick(&stream, tick, &resp).ok());
  ASSERT_TRUE(Delete("next").ok());
  const grpc::Status st = svc.DoTick(&stream, tick, &resp);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_THAT(st.error_message(), HasSubstr("was deleted"));
  EXPECT_FALSE(resp.has_error());
  // An unknown session on the first tick stays a per-tick error.
  server::HitboxService::TickStream ghost;
  tick.set_session_id("ghost");
  ASSERT_TRUE(svc.DoTick(&ghost, tick, &resp).ok());
  EXPECT_EQ(resp.error().code(), static_cast<int>(grpc::StatusCode::NOT_FOUND));
}

// The reaper is callable directly: it returns the next deadline and removes
// exactly the sessions past theirs.
TEST_F(LifecycleTest, ReapIdleSessionsDeadlines) {
  StartServer(0);
  server::HitboxService& svc = server_->service();
  ASSERT_TRUE(Create("a", 60'000).ok());
  ASSERT_TRUE(Create("b", 120'000).ok());
  ASSERT_TRUE(Create("never").ok());
  const int64_t now = server::SteadyNowNs();
  const int64_t next = svc.ReapIdleSessions(now);
  EXPECT_GT(next, now + 59'000'000'000);
  EXPECT_LE(next, now + 60'000'000'000);
  EXPECT_EQ(Listed().size(), 3u);
  svc.ReapIdleSessions(now + 90'000'000'000);  // 90 s later: "a" is past its minute
  EXPECT_EQ(Listed(), (std::vector<std::string>{"b", "never"}));
  EXPECT_EQ(svc.ReapIdleSessions(now + 1'000'000'000'000), INT64_MAX);
  EXPECT_EQ(Listed(), (std::vector<std::string>{"never"}));
}

// SessionInfo.memory_bytes follows the set, and the server total is the sum
// of the sessions' (back to 0 when all are deleted).
TEST_F(LifecycleTest, MemoryAccounting) {
  StartServer(0);
  server::SessionRegistry& reg = server_->service().sessions();
  v1::SessionInfo info;
  ASSERT_TRUE(Create("m1", 0, &info).ok());
  EXPECT_EQ(info.memory_bytes(), server::kSessionOverheadBytes);
  ASSERT_TRUE(Add("m1", 1, 500).ok());
  ASSERT_TRUE(Get("m1", &info).ok());
  EXPECT_GE(info.memory_bytes(), server::kSessionOverheadBytes + 500 * sizeof(Collider));
  const uint64_t m1 = info.memory_bytes();
  {
    std::shared_ptr<server::Session> s = reg.Find("m1");
    EXPECT_EQ(m1, server::kSessionOverheadBytes + s->set().MemoryBytes());
  }
  ASSERT_TRUE(Create("m2").ok());
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(Add("m2", 1 + 50 * i, 50).ok());
  v1::ApplyChangesRequest rm;
  rm.set_session_id("m2");
  for (int i = 1; i <= 200; ++i) rm.add_changes()->set_remove(i);
  ASSERT_TRUE(Apply(rm).ok());
  std::vector<v1::SessionInfo> infos;
  Listed(&infos);
  uint64_t sum = 0;
  for (const v1::SessionInfo& s : infos) sum += s.memory_bytes();
  EXPECT_EQ(reg.memory_bytes(), sum);
  ASSERT_TRUE(Delete("m1").ok());
  ASSERT_TRUE(Delete("m2").ok());
  EXPECT_EQ(reg.memory_bytes(), 0u);
}

// Past --max-memory, growth is refused with RESOURCE_EXHAUSTED naming the cap
// and the use, and changes nothing; queries, moves and removes still work;
// deleting a session makes room again.
TEST_F(LifecycleTest, MemoryCapRefusesGrowthOnly) {
  constexpr uint64_t kCap = 256 << 10;
  StartServer(0, kCap);
  const uint64_t per = server_->service().bytes_per_collider();
  ASSERT_GT(per, sizeof(Collider));
  ASSERT_TRUE(Create("cap").ok());
  ASSERT_TRUE(Add("cap", 1, 100).ok());
  v1::SessionInfo before;
  ASSERT_TRUE(Get("cap", &before).ok());
  const int too_many = static_cast<int>(kCap / per) + 10;
  grpc::Status st = Add("cap", 1000, too_many);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_THAT(st.error_message(), HasSubstr("--max-memory"));
  EXPECT_THAT(st.error_message(), HasSubstr("the cap is " + std::to_string(kCap)));
  EXPECT_THAT(st.error_message(),
              HasSubstr("sessions hold " + std::to_string(before.memory_bytes())));
  v1::SessionInfo after;
  ASSERT_TRUE(Get("cap", &after).ok());
  EXPECT_EQ(after.collider_count(), 100u);
  EXPECT_EQ(after.revision(), before.revision());
  EXPECT_EQ(after.memory_bytes(), before.memory_bytes());

  // Fill up in small batches until refused; then only growth is refused.
  uint64_t next_id = 200;
  int added = 0;
  for (; added < 10'000; added += 50, next_id += 50) {
    if (!(st = Add("cap", next_id, 50)).ok()) break;
  }
  ASSERT_EQ(st.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << st.error_message();
  v1::QueryResponse answer;
  ASSERT_TRUE(Ray("cap", &answer).ok());
  EXPECT_EQ(answer.results(0).hits_size(), 1);
  v1::ApplyChangesRequest move;
  move.set_session_id("cap");
  move.add_changes()->mutable_move()->set_id(1);
  move.mutable_changes(0)->mutable_move()->mutable_pose()->mutable_position()->set_y(5);
  EXPECT_TRUE(Apply(move).ok());
  v1::ApplyChangesRequest swap;  // one out, one in: no net growth
  swap.set_session_id("cap");
  swap.add_changes()->set_remove(2);
  *swap.add_changes()->mutable_add() = SphereMsg(99'999, 0.5);
  EXPECT_TRUE(Apply(swap).ok());
  v1::ApplyChangesRequest rm;
  rm.set_session_id("cap");
  for (int i = 3; i <= 50; ++i) rm.add_changes()->set_remove(i);
  EXPECT_TRUE(Apply(rm).ok());
  // The removed colliders' room is reused without passing the cap.
  EXPECT_TRUE(Add("cap", 50'000, 40).ok());
  // Deleting the session frees its memory: a big batch fits a new session.
  ASSERT_TRUE(Delete("cap").ok());
  ASSERT_TRUE(Create("fresh").ok());
  EXPECT_TRUE(Add("fresh", 1, added / 2).ok());
}

// A new session needs its overhead under the cap too.
TEST_F(LifecycleTest, MemoryCapRefusesSessions) {
  StartServer(0, server::kSessionOverheadBytes * 3 / 2);
  ASSERT_TRUE(Create("one").ok());
  const grpc::Status st = Create("two");
  EXPECT_EQ(st.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_THAT(st.error_message(), HasSubstr("a new session"));
  EXPECT_THAT(st.error_message(), HasSubstr("--max-memory"));
  ASSERT_TRUE(Delete("one").ok());
  EXPECT_TRUE(Create("two").ok());
}

// The hitboxd binary: --session-idle-timeout takes fractional seconds, the
// idle session's open stream ends with NOT_FOUND over the network, and
// HITBOX_MAX_MEMORY (with a suffix) caps sessions.
TEST(HitboxdLifecycleTest, FlagsAndEnvironment) {
  testing::HitboxdProcess daemon({"--session-idle-timeout", "0.3"});
  ASSERT_TRUE(daemon.running());
  auto stub = v1::Hitbox::NewStub(
      grpc::CreateChannel(daemon.address(), grpc::InsecureChannelCredentials()));
  {
    v1::CreateSessionRequest req;
    req.set_session_id("net");
    v1::SessionInfo info;
    grpc::ClientContext ctx;
    ASSERT_TRUE(stub->CreateSession(&ctx, req, &info).ok());
    EXPECT_EQ(info.limits().idle_timeout_ms(), 300u);
  }
  OpenStream s(stub.get(), "net", 10s);
  v1::TickResponse resp;
  ASSERT_TRUE(s.Tick(1, &resp));
  EXPECT_FALSE(s.stream->Read(&resp));
  const grpc::Status st = s.stream->Finish();
  EXPECT_EQ(st.error_code(), grpc::StatusCode::NOT_FOUND) << st.error_message();
  EXPECT_THAT(st.error_message(), HasSubstr("expired after"));

  setenv("HITBOX_MAX_MEMORY", "1K", 1);
  testing::HitboxdProcess capped;
  unsetenv("HITBOX_MAX_MEMORY");
  ASSERT_TRUE(capped.running());
  auto cstub = v1::Hitbox::NewStub(
      grpc::CreateChannel(capped.address(), grpc::InsecureChannelCredentials()));
  v1::CreateSessionRequest req;
  req.set_session_id("first");
  v1::SessionInfo info;
  {
    grpc::ClientContext ctx;
    ASSERT_TRUE(cstub->CreateSession(&ctx, req, &info).ok());  // exactly the 1 KiB overhead
    EXPECT_EQ(info.limits().idle_timeout_ms(), 3'600'000u);    // the default: one hour
  }
  req.set_session_id("second");
  grpc::ClientContext ctx;
  const grpc::Status refused = cstub->CreateSession(&ctx, req, &info);
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_THAT(refused.error_message(), HasSubstr("the cap is 1024"));

  testing::HitboxdProcess bad({"--max-memory", "12X"});
  EXPECT_FALSE(bad.running());
}

}  // namespace
}  // namespace hitbox
