// The metrics endpoint (--metrics-listen): scraped over HTTP before and after
// real calls on a server, the text must parse as Prometheus exposition format
// and the counters must move by what the calls did. Also: refusal reasons,
// a taken port, and the real hitboxd binary serving /metrics.
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <map>
#include <memory>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include <gtest/gtest.h>
#include <grpcpp/grpcpp.h>
#include <httplib.h>

#include "process.h"
#include "metrics.h"
#include "server.h"
#include "service_util.h"
#include "wait.h"

namespace hitbox {
namespace {

using testing_service::SphereMsg;

// Parses Prometheus text exposition (format 0.0.4) strictly enough to catch
// malformed output: "# HELP name text", "# TYPE name counter|gauge|histogram",
// and samples "name{label="value",...} number"; every sample belongs to a
// family typed before it, and every name starts with hitbox_. Returns the
// samples by series ("name{labels}").
std::map<std::string, double> ParseExposition(const std::string& text) {
  static const std::regex kHelp(R"(# HELP ([a-zA-Z_:][a-zA-Z0-9_:]*) .+)");
  static const std::regex kType(R"(# TYPE ([a-zA-Z_:][a-zA-Z0-9_:]*) (counter|gauge|histogram))");
  static const std::regex kSample(
      R"(([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[a-zA-Z_][a-zA-Z0-9_]*="[^"\\]*"(,[a-zA-Z_][a-zA-Z0-9_]*="[^"\\]*")*\})? (\S+))");
  std::map<std::string, double> samples;
  std::map<std::string, std::string> types;
  std::istringstream in(text);
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    ++n;
    std::smatch m;
    if (std::regex_match(line, m, kHelp)) continue;
    if (std::regex_match(line, m, kType)) {
      EXPECT_EQ(types.count(m[1]), 0u) << "line " << n << ": family typed twice: " << line;
      types[m[1]] = m[2];
      continue;
    }
    if (!std::regex_match(line, m, kSample)) {
      ADD_FAILURE() << "line " << n << " is not a sample: '" << line << "'";
      continue;
    }
    const std::string name = m[1];
    EXPECT_EQ(name.rfind("hitbox_", 0), 0u) << "line " << n << ": not prefixed hitbox_";
    std::string family = name;
    for (const char* suffix : {"_bucket", "_sum", "_count"}) {
      const std::string s = suffix;
      if (family.size() > s.size() && family.ends_with(s) &&
          types.count(family.substr(0, family.size() - s.size())) != 0 &&
          types[family.substr(0, family.size() - s.size())] == "histogram") {
        family = family.substr(0, family.size() - s.size());
      }
    }
    EXPECT_EQ(types.count(family), 1u) << "line " << n << ": no TYPE before " << name;
    size_t used = 0;
    double value = 0;
    try {
      value = m[4] == "+Inf" ? HUGE_VAL : std::stod(m[4], &used);
      if (m[4] != "+Inf") {
        EXPECT_EQ(used, m[4].length()) << "line " << n;
      }
    } catch (const std::exception&) {
      ADD_FAILURE() << "line " << n << ": bad value '" << m[4] << "'";
    }
    const std::string series = name + std::string(m[2]);
    EXPECT_EQ(samples.count(series), 0u) << "line " << n << ": duplicate series " << series;
    samples[series] = value;
  }
  return samples;
}

// GET /metrics on 127.0.0.1:port, parsed.
std::map<std::string, double> Scrape(int port) {
  httplib::Client http("127.0.0.1", port);
  http.set_read_timeout(5, 0);
  httplib::Result res = http.Get("/metrics");
  if (!res) {
    ADD_FAILURE() << "GET /metrics failed: " << httplib::to_string(res.error());
    return {};
  }
  EXPECT_EQ(res->status, 200);
  EXPECT_EQ(res->get_header_value("Content-Type"), "text/plain; version=0.0.4; charset=utf-8");
  return ParseExposition(res->body);
}

// A sample's value; fails the test when the series is missing.
double Value(const std::map<std::string, double>& m, const std::string& series) {
  const auto it = m.find(series);
  if (it == m.end()) {
    ADD_FAILURE() << "missing series " << series;
    return 0;
  }
  return it->second;
}
double Delta(const std::map<std::string, double>& before,
             const std::map<std::string, double>& after, const std::string& series) {
  const double b = before.count(series) ? before.at(series) : 0.0;
  return Value(after, series) - b;
}

// A TCP socket bound to a free loopback port (listening when `listening`),
// closed on destruction.
class LoopbackSocket {
 public:
  explicit LoopbackSocket(bool listening) : fd_(socket(AF_INET, SOCK_STREAM, 0)) {
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    if (fd_ >= 0 && bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
        (!listening || listen(fd_, 1) == 0) &&
        getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
      port_ = ntohs(addr.sin_port);
    }
  }
  ~LoopbackSocket() {
    if (fd_ >= 0) close(fd_);
  }
  LoopbackSocket(const LoopbackSocket&) = delete;
  LoopbackSocket& operator=(const LoopbackSocket&) = delete;
  /// The bound port (0: binding failed).
  int port() const { return port_; }

 private:
  int fd_;
  int port_ = 0;
};

class MetricsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server::ServerOptions o;
    o.listen = "127.0.0.1:0";
    o.http_listen = "127.0.0.1:0";
    o.service.threads = 1;
    o.service.limits.session.max_queries_per_message = 4;
    Result<std::unique_ptr<server::HitboxServer>> s = server::HitboxServer::Start(o);
    ASSERT_TRUE(s.ok()) << s.error().message;
    server_ = std::move(*s);
    ASSERT_GT(server_->metrics_port(), 0);
    stub_ = v1::Hitbox::NewStub(grpc::CreateChannel(
        "127.0.0.1:" + std::to_string(server_->port()), grpc::InsecureChannelCredentials()));
  }
  void TearDown() override {
    if (server_) server_->Shutdown(std::chrono::milliseconds(100));
  }

  // A query request on session "m" with an overlap sphere at the origin and a
  // ray along +x through it.
  static v1::QueryRequest TwoQueries() {
    v1::QueryRequest q;
    q.set_session_id("m");
    v1::OverlapQuery* overlap = q.add_queries()->mutable_overlap();
    overlap->mutable_shape()->mutable_sphere()->set_radius(10);
    overlap->mutable_filter()->set_max_hits(16);
    v1::RayQuery* ray = q.add_queries()->mutable_raycast();
    ray->mutable_origin()->set_x(-50);
    ray->mutable_translation()->set_x(100);
    return q;
  }

  std::unique_ptr<server::HitboxServer> server_;
  std::unique_ptr<v1::Hitbox::Stub> stub_;
};

// Calls, queries, hits, pair tests, refusals and gauges move by what was done.
TEST_F(MetricsTest, CountersMoveWithCalls) {
  const std::map<std::string, double> before = Scrape(server_->metrics_port());
  ASSERT_FALSE(before.empty());
  EXPECT_EQ(Value(before, "hitbox_sessions"), 0);

  {
    grpc::ClientContext ctx;
    v1::CreateSessionRequest req;
    req.set_session_id("m");
    v1::SessionInfo info;
    ASSERT_TRUE(stub_->CreateSession(&ctx, req, &info).ok());
  }
  {
    grpc::ClientContext ctx;
    v1::ApplyChangesRequest req;
    req.set_session_id("m");
    for (uint64_t id = 1; id <= 3; ++id) {
      *req.add_changes()->mutable_add() = SphereMsg(id, 1.0, Vec3(3.0 * (static_cast<double>(id) - 2.0), 0, 0));
    }
    v1::ApplyChangesResponse resp;
    ASSERT_TRUE(stub_->ApplyChanges(&ctx, req, &resp).ok());
  }
  uint64_t hits = 0;
  for (int i = 0; i < 2; ++i) {
    grpc::ClientContext ctx;
    v1::QueryResponse resp;
    ASSERT_TRUE(stub_->Query(&ctx, TwoQueries(), &resp).ok());
    for (const v1::QueryResult& r : resp.results()) hits += r.overlaps_size() + r.hits_size();
  }
  EXPECT_EQ(hits, 2u * (3 + 1));  // the sphere touches all three, the ray hits the first
  {  // Refused: a malformed query (no kind set) -> invalid.
    grpc::ClientContext ctx;
    v1::QueryRequest q = TwoQueries();
    q.add_queries();
    v1::QueryResponse resp;
    EXPECT_EQ(stub_->Query(&ctx, q, &resp).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  }
  {  // Refused: more queries than limits.max_queries_per_message -> limits.
    grpc::ClientContext ctx;
    v1::QueryRequest q = TwoQueries();
    for (int i = 0; i < 3; ++i) *q.add_queries() = q.queries(0);
    v1::QueryResponse resp;
    EXPECT_EQ(stub_->Query(&ctx, q, &resp).error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  }
  {  // A tick stream: one answered tick, one refused in band (invalid); open while scraped.
    grpc::ClientContext ctx;
    auto stream = stub_->Tick(&ctx);
    v1::TickRequest tick;
    tick.set_session_id("m");
    *tick.mutable_queries() = TwoQueries().queries();
    v1::TickResponse resp;
    ASSERT_TRUE(stream->Write(tick));
    ASSERT_TRUE(stream->Read(&resp));
    EXPECT_FALSE(resp.has_error()) << resp.error().message();
    tick.set_session_id("other");
    ASSERT_TRUE(stream->Write(tick));
    ASSERT_TRUE(stream->Read(&resp));
    EXPECT_TRUE(resp.has_error());
    EXPECT_EQ(Value(Scrape(server_->metrics_port()), "hitbox_tick_streams_open"), 1);
    stream->WritesDone();
    EXPECT_TRUE(stream->Finish().ok());
  }

  // The server counts a stream's end once its status is sent, which may come
  // just after the client's Finish() returned: wait for it.
  std::map<std::string, double> after;
  const std::string tick_ok = R"(hitbox_rpc_calls_total{rpc="Tick",code="OK"})";
  EXPECT_TRUE(testing::WaitUntil([&] {
    after = Scrape(server_->metrics_port());
    return Value(after, "hitbox_tick_streams_open") == 0 && Delta(before, after, tick_ok) != 0;
  }));
  EXPECT_EQ(Delta(before, after, R"(hitbox_rpc_calls_total{rpc="CreateSession",code="OK"})"), 1);
  EXPECT_EQ(Delta(before, after, R"(hitbox_rpc_calls_total{rpc="ApplyChanges",code="OK"})"), 1);
  EXPECT_EQ(Delta(before, after, R"(hitbox_rpc_calls_total{rpc="Query",code="OK"})"), 2);
  EXPECT_EQ(Delta(before, after,
                  R"(hitbox_rpc_calls_total{rpc="Query",code="INVALID_ARGUMENT"})"), 1);
  EXPECT_EQ(Delta(before, after,
                  R"(hitbox_rpc_calls_total{rpc="Query",code="RESOURCE_EXHAUSTED"})"), 1);
  EXPECT_EQ(Delta(before, after, R"(hitbox_rpc_calls_total{rpc="Tick",code="OK"})"), 1);
  // The histogram agrees with the counter, its buckets are cumulative, and
  // a Query call took well under the last finite bucket.
  const std::string q = R"(rpc="Query",code="OK")";
  EXPECT_EQ(Value(after, "hitbox_rpc_duration_seconds_count{" + q + "}"), 2);
  EXPECT_EQ(Value(after, "hitbox_rpc_duration_seconds_bucket{" + q + R"(,le="+Inf"})"), 2);
  EXPECT_EQ(Value(after, "hitbox_rpc_duration_seconds_bucket{" + q + R"(,le="10"})"), 2);
  double previous = 0;
  for (double le : server::kLatencyBucketsSeconds) {
    std::ostringstream series;
    series << "hitbox_rpc_duration_seconds_bucket{" << q << ",le=\"" << le << "\"}";
    const double v = Value(after, series.str());
    EXPECT_GE(v, previous) << series.str();
    previous = v;
  }
  EXPECT_GT(Value(after, "hitbox_rpc_duration_seconds_sum{" + q + "}"), 0);
  // Two Query calls and one answered tick, each one overlap and one ray.
  EXPECT_EQ(Delta(before, after, R"(hitbox_queries_total{kind="overlap"})"), 3);
  EXPECT_EQ(Delta(before, after, R"(hitbox_queries_total{kind="raycast"})"), 3);
  EXPECT_EQ(Delta(before, after, R"(hitbox_queries_total{kind="cast"})"), 0);
  EXPECT_EQ(Delta(before, after, "hitbox_query_hits_total"), 3 * (3 + 1));
  EXPECT_GE(Delta(before, after, "hitbox_pair_tests_total"), 3 * 3);
  EXPECT_EQ(Delta(before, after, R"(hitbox_rejected_requests_total{reason="invalid"})"), 2);
  EXPECT_EQ(Delta(before, after, R"(hitbox_rejected_requests_total{reason="limits"})"), 1);
  EXPECT_EQ(Delta(before, after, R"(hitbox_rejected_requests_total{reason="auth"})"), 0);
  EXPECT_EQ(Value(after, "hitbox_sessions"), 1);
  EXPECT_EQ(Value(after, "hitbox_colliders"), 3);
  EXPECT_GT(Value(after, "hitbox_session_memory_bytes"), 0);
  EXPECT_EQ(Value(after, "hitbox_tick_streams_open"), 0);
  EXPECT_EQ(Value(after, "hitbox_maps"), 0);
  EXPECT_EQ(Value(after, "hitbox_history_memory_bytes"), 0);
  EXPECT_GT(Value(after, "hitbox_process_resident_memory_bytes"), 1 << 20);
}

// A session past its idle timeout counts as expired.
TEST_F(MetricsTest, ExpiredSessionsCount) {
  grpc::ClientContext ctx;
  v1::CreateSessionRequest req;
  req.set_session_id("brief");
  req.mutable_limits()->set_idle_timeout_ms(60'000);
  v1::SessionInfo info;
  ASSERT_TRUE(stub_->CreateSession(&ctx, req, &info).ok());
  // The reaper as of two minutes from now (the clock seam, no waiting).
  server_->service().ReapIdleSessions(server::SteadyNowNs() + 120'000'000'000);
  EXPECT_EQ(Value(Scrape(server_->metrics_port()), "hitbox_sessions_expired_total"), 1);
  EXPECT_EQ(Value(Scrape(server_->metrics_port()), "hitbox_sessions"), 0);
}

// Besides /metrics only the inspector is served (its page at /, its API
// under /api/: tests/inspector); other paths are not found.
TEST_F(MetricsTest, OtherPathsAreNotFound) {
  httplib::Client http("127.0.0.1", server_->metrics_port());
  for (const char* path : {"/nope", "/metrics/x", "/api"}) {
    httplib::Result res = http.Get(path);
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, 404) << path;
  }
}

// An HTTP port that is taken fails the start, naming the flag and address.
TEST(MetricsEndpointTest, TakenPortFailsTheStart) {
  const LoopbackSocket held(/*listening=*/true);
  ASSERT_GT(held.port(), 0);
  const std::string taken = "127.0.0.1:" + std::to_string(held.port());

  server::ServerOptions o;
  o.listen = "127.0.0.1:0";
  o.http_listen = taken;
  Result<std::unique_ptr<server::HitboxServer>> s = server::HitboxServer::Start(o);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("--http-listen"), std::string::npos) << s.error().message;
  EXPECT_NE(s.error().message.find(taken), std::string::npos) << s.error().message;
  o.http_listen = "no-port";
  EXPECT_FALSE(server::HitboxServer::Start(o).ok());
}

// Each refusal message of the service lands in its reason.
TEST(MetricsEndpointTest, RejectionReasons) {
  using server::RejectReason;
  using C = grpc::StatusCode;
  const struct {
    C code;
    const char* message;
    std::optional<RejectReason> reason;
  } cases[] = {
      {C::UNAUTHENTICATED, "no token", RejectReason::kAuth},
      {C::PERMISSION_DENIED, "x", RejectReason::kAuth},
      {C::INVALID_ARGUMENT, "queries[0]: ...", RejectReason::kInvalid},
      {C::RESOURCE_EXHAUSTED,
       "queries: the request needs more than its work budget of 10 pair tests "
       "(limits.max_pair_tests_per_message)",
       RejectReason::kBudget},
      {C::RESOURCE_EXHAUSTED,
       "queries: 9 queries, at most 4 per message (limits.max_queries_per_message)",
       RejectReason::kLimits},
      {C::RESOURCE_EXHAUSTED,
       "sessions: the server holds 4 sessions, at most 4 allowed (--max-sessions)",
       RejectReason::kLimits},
      {C::RESOURCE_EXHAUSTED,
       "queries: the server's answers in flight already hold 1 of 2 bytes "
       "(--max-inflight-bytes)",
       RejectReason::kResourceExhausted},
      {C::RESOURCE_EXHAUSTED, "the server has 8 calls in flight already (--max-in-flight)",
       RejectReason::kResourceExhausted},
      {C::NOT_FOUND, "session_id: ...", std::nullopt},
      {C::OK, "", std::nullopt},
  };
  for (const auto& c : cases) {
    EXPECT_EQ(server::ClassifyRejection(c.code, c.message), c.reason) << c.message;
  }
}

// The hitboxd binary with --metrics-listen serves /metrics, counts a call
// made over the network, and still stops cleanly on SIGTERM.
TEST(MetricsBinaryTest, HitboxdServesMetrics) {
  // A free port, released for hitboxd (another process could take it first,
  // which would show as a failed start).
  const int metrics_port = LoopbackSocket(/*listening=*/false).port();
  ASSERT_GT(metrics_port, 0);
  testing::HitboxdProcess hitboxd({"--metrics-listen", "127.0.0.1:" + std::to_string(metrics_port),
                                   "--shutdown-grace-ms", "200"});
  ASSERT_TRUE(hitboxd.running()) << "hitboxd did not start (metrics port taken?)";
  const std::map<std::string, double> before = Scrape(metrics_port);
  auto stub = v1::Hitbox::NewStub(
      grpc::CreateChannel(hitboxd.address(), grpc::InsecureChannelCredentials()));
  grpc::ClientContext ctx;
  v1::CreateSessionRequest req;
  req.set_session_id("bin");
  v1::SessionInfo info;
  ASSERT_TRUE(stub->CreateSession(&ctx, req, &info).ok());
  const std::map<std::string, double> after = Scrape(metrics_port);
  EXPECT_EQ(Delta(before, after, R"(hitbox_rpc_calls_total{rpc="CreateSession",code="OK"})"), 1);
  EXPECT_EQ(Value(after, "hitbox_sessions"), 1);
  EXPECT_EQ(hitboxd.Terminate(), 0);
}

}  // namespace
}  // namespace hitbox
