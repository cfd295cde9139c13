// hitbox_loadgen against an in-process hitboxd on a loopback port: small,
// count-bounded runs that must report what they did, with no errors.
#include "hitbox/loadgen.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "server.h"

namespace hitbox {
namespace {

class LoadgenTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server::ServerOptions o;
    o.listen = "127.0.0.1:0";
    o.service.threads = 2;
    Result<std::unique_ptr<server::HitboxServer>> s = server::HitboxServer::Start(o);
    ASSERT_TRUE(s.ok()) << s.error().message;
    server_ = std::move(*s);
    channel_ = grpc::CreateChannel("127.0.0.1:" + std::to_string(server_->port()),
                                   grpc::InsecureChannelCredentials());
    loadgen::SceneOptions so;
    so.colliders = 2000;
    so.half_size = 40;
    scene_ = loadgen::GenerateScene(so);
    ASSERT_TRUE(loadgen::LoadScene(channel_, "lg", scene_, 500).ok());
  }
  void TearDown() override { server_->Shutdown(std::chrono::milliseconds(100)); }

  std::unique_ptr<server::HitboxServer> server_;
  std::shared_ptr<grpc::Channel> channel_;
  std::vector<Collider> scene_;
};

// Tick streams: every measured tick carries the moves and all its queries.
TEST_F(LoadgenTest, TickRunReportsEveryTick) {
  loadgen::TickOptions o;
  o.session_id = "lg";
  o.streams = 3;
  o.ticks = 40;
  o.warmup_ticks = 5;
  o.moves_per_tick = 4;
  o.queries_per_tick = 7;
  Result<loadgen::TickReport> r = loadgen::RunTicks(channel_, scene_, o);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->errors, 0u) << r->first_error;
  EXPECT_EQ(r->ticks, 120u);
  EXPECT_EQ(r->queries, 120u * 7);
  EXPECT_EQ(r->latency.count, 120u);
  EXPECT_GT(r->queries_per_s, 0);
  EXPECT_LE(r->latency.p50_us, r->latency.p99_us);
  EXPECT_LE(r->latency.p99_us, r->latency.max_us);
  // 3 streams x 45 ticks with changes, after the 4 load batches of 500.
  v1::GetSessionRequest req;
  req.set_session_id("lg");
  v1::SessionInfo info;
  EXPECT_TRUE(server_->service().DoGetSession(req, &info).ok());
  EXPECT_EQ(info.revision(), 4u + 3 * 45);
  EXPECT_EQ(info.collider_count(), 2000u);
}

// Unary calls, and errors are counted (unknown session), not hidden.
TEST_F(LoadgenTest, UnaryRunAndErrors) {
  loadgen::UnaryOptions o;
  o.session_id = "lg";
  o.calls = 50;
  o.warmup_calls = 5;
  Result<loadgen::UnaryReport> r = loadgen::RunUnary(channel_, scene_, o);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->calls, 50u);
  EXPECT_EQ(r->errors, 0u);
  o.session_id = "missing";
  r = loadgen::RunUnary(channel_, scene_, o);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.error().message, ::testing::HasSubstr("NOT_FOUND"));
}

// Percentiles by nearest rank, and the query-mix parser.
TEST(LoadgenUtilTest, SummarizeAndMix) {
  std::vector<double> v;
  for (int i = 1000; i >= 1; --i) v.push_back(i);
  const loadgen::Latency l = loadgen::Summarize(&v);
  EXPECT_EQ(l.count, 1000u);
  EXPECT_EQ(l.p50_us, 500);
  EXPECT_EQ(l.p99_us, 990);
  EXPECT_EQ(l.p999_us, 999);
  EXPECT_EQ(l.max_us, 1000);
  EXPECT_DOUBLE_EQ(l.mean_us, 500.5);
  Result<loadgen::QueryMix> m = loadgen::ParseQueryMix("cast=2,raycast=0.5");
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->overlap, 0);
  EXPECT_EQ(m->cast, 2);
  EXPECT_EQ(m->raycast, 0.5);
  EXPECT_FALSE(loadgen::ParseQueryMix("boxes=1").ok());
  EXPECT_FALSE(loadgen::ParseQueryMix("cast=-1").ok());
  // Generated queries follow the mix.
  const std::vector<Query> qs = loadgen::GenerateQueries(Aabb({-1, -1, -1}, {1, 1, 1}), *m, 500, 3);
  ASSERT_EQ(qs.size(), 500u);
  for (const Query& q : qs) EXPECT_FALSE(std::holds_alternative<OverlapQuery>(q));
}

}  // namespace
}  // namespace hitbox
