// Query on the completion-queue API (--rpc-api cq, cq_server.h) over a
// loopback port: the same answers, refusals, error messages and metrics as on
// the callback API, many calls at once, and a clean shutdown with calls in
// flight. Deadlines, cancellation and budgets inside long queries are
// hardening_test.cc's, run on both APIs; the conformance cases through the
// binary are e2e_test.cc's, run on both too.
#include <chrono>
#include <future>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <google/protobuf/descriptor.h>
#include <gmock/gmock.h>
#include <grpcpp/generic/generic_stub.h>
#include <gtest/gtest.h>

#include "cq_server.h"
#include "server.h"
#include "service_util.h"
#include "wait.h"

namespace hitbox {
namespace {

using ::testing::HasSubstr;
using testing_service::SphereMsg;

constexpr const char* kAdminToken = "cq-test-admin-token-0123456789";

// A server with Query on `api`, an admin token (so session tokens are
// checked), no work budget, a loopback TCP channel and session "s" of
// `grid`² unit spheres.
struct Served {
  explicit Served(server::RpcApi api, int grid = 20, uint32_t max_queries = 64) {
    server::ServerOptions o;
    o.listen = "127.0.0.1:0";
    o.service.threads = 2;
    o.service.auth.admin_token = kAdminToken;
    o.service.limits.session.max_queries_per_message = max_queries;
    // No work budget in the way of the long queries below.
    o.service.limits.session.max_nodes_per_message = 1ull << 40;
    o.service.limits.session.max_pair_tests_per_message = 1ull << 40;
    o.service.limits.max_message_bytes = 1ull << 30;  // room for 16M hits
    o.service.limits.max_inflight_bytes = 8ull << 30;
    o.rpc_api = api;
    Result<std::unique_ptr<server::HitboxServer>> s = server::HitboxServer::Start(o);
    EXPECT_TRUE(s.ok()) << s.error().message;
    if (!s.ok()) return;
    server = std::move(*s);
    grpc::ChannelArguments args;
    args.SetMaxReceiveMessageSize(-1);
    channel = grpc::CreateCustomChannel("127.0.0.1:" + std::to_string(server->port()),
                                       grpc::InsecureChannelCredentials(), args);
    stub = v1::Hitbox::NewStub(channel);
    v1::CreateSessionRequest create;
    create.set_session_id("s");
    v1::SessionInfo info;
    grpc::ClientContext cctx;
    cctx.AddMetadata("authorization", std::string("Bearer ") + kAdminToken);
    const grpc::Status st = stub->CreateSession(&cctx, create, &info);
    EXPECT_TRUE(st.ok()) << st.error_message();
    token = info.token();
    v1::ApplyChangesRequest req;
    req.set_session_id("s");
    for (int r = 0; r < grid; ++r) {
      for (int c = 0; c < grid; ++c) {
        *req.add_changes()->mutable_add() =
            SphereMsg(static_cast<uint64_t>(r * grid + c + 1), 1.0, {2.0 * r, 0, 2.0 * c});
      }
    }
    v1::ApplyChangesResponse applied;
    grpc::ClientContext actx;
    actx.AddMetadata("authorization", "Bearer " + token);
    EXPECT_TRUE(stub->ApplyChanges(&actx, req, &applied).ok());
  }

  // One Query with `bearer` as the token ("" : no authorization header).
  grpc::Status Query(const v1::QueryRequest& req, v1::QueryResponse* resp,
                     const std::string& bearer) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
    if (!bearer.empty()) ctx.AddMetadata("authorization", "Bearer " + bearer);
    return stub->Query(&ctx, req, resp);
  }

  // The counters Query moves (calls by code, queries by kind, hits,
  // refusals), one sample a line.
  std::string QueryCounters() const {
    std::istringstream in(server->RenderMetrics());
    std::string line, out;
    for (std::string prefix : {"hitbox_rpc_calls_total{rpc=\"Query\"", "hitbox_queries_total",
                               "hitbox_query_hits_total", "hitbox_rejected_requests_total"}) {
      in.clear();
      in.seekg(0);
      while (std::getline(in, line)) {
        if (line.rfind(prefix, 0) == 0) out += line + "\n";
      }
    }
    return out;
  }

  std::unique_ptr<server::HitboxServer> server;
  std::shared_ptr<grpc::Channel> channel;
  std::unique_ptr<v1::Hitbox::Stub> stub;
  std::string token;
};

v1::QueryRequest Rays(int n, const std::string& session = "s") {
  v1::QueryRequest req;
  req.set_session_id(session);
  for (int i = 0; i < n; ++i) {
    v1::Query* q = req.add_queries();
    q->set_tag(static_cast<uint64_t>(i) + 7);
    v1::RayQuery* ray = q->mutable_raycast();
    ray->mutable_origin()->set_x(2.0 * i);
    ray->mutable_origin()->set_y(10);
    ray->mutable_translation()->set_y(-20);
  }
  return req;
}

// The same requests, good and bad, get the same status, message and answer
// byte for byte from either API; the Query metrics count them the same.
TEST(CqServerTest, AnswersAndRefusesLikeTheCallbackApi) {
  Served callback(server::RpcApi::kCallback);
  Served cq(server::RpcApi::kCq);
  ASSERT_NE(callback.server, nullptr);
  ASSERT_NE(cq.server, nullptr);
  struct Case {
    const char* what;
    v1::QueryRequest req;
    bool use_token;  // else a wrong one ("" for none)
    std::string wrong;
    grpc::StatusCode want;
  };
  v1::QueryRequest bad_shape = Rays(1);
  bad_shape.mutable_queries(0)->mutable_overlap()->mutable_shape()->mutable_sphere()->set_radius(-1);
  std::vector<Case> cases = {
      {"good", Rays(10), true, "", grpc::StatusCode::OK},
      {"no token", Rays(1), false, "", grpc::StatusCode::UNAUTHENTICATED},
      {"wrong token", Rays(1), false, "not-the-token", grpc::StatusCode::PERMISSION_DENIED},
      {"unknown session", Rays(1, "nope"), false, kAdminToken, grpc::StatusCode::NOT_FOUND},
      {"malformed session id", Rays(1, "bad id!"), false, kAdminToken,
       grpc::StatusCode::INVALID_ARGUMENT},
      {"too many queries", Rays(65), true, "", grpc::StatusCode::RESOURCE_EXHAUSTED},
      {"bad shape", bad_shape, true, "", grpc::StatusCode::INVALID_ARGUMENT},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    v1::QueryResponse a, b;
    const grpc::Status sa = callback.Query(c.req, &a, c.use_token ? callback.token : c.wrong);
    const grpc::Status sb = cq.Query(c.req, &b, c.use_token ? cq.token : c.wrong);
    EXPECT_EQ(sa.error_code(), c.want) << sa.error_message();
    EXPECT_EQ(sb.error_code(), sa.error_code()) << sb.error_message();
    EXPECT_EQ(sb.error_message(), sa.error_message());
    EXPECT_EQ(b.SerializeAsString(), a.SerializeAsString());
    if (c.want == grpc::StatusCode::OK) {
      ASSERT_EQ(b.results_size(), 10);
      for (int i = 0; i < 10; ++i) {
        EXPECT_EQ(b.results(i).tag(), static_cast<uint64_t>(i) + 7);
        ASSERT_EQ(b.results(i).hits_size(), 1) << i;  // the sphere under each ray
      }
    }
  }
  EXPECT_THAT(cq.QueryCounters(), HasSubstr("code=\"OK\"} 1"));
  EXPECT_THAT(cq.QueryCounters(), HasSubstr("hitbox_queries_total{kind=\"raycast\"} 10"));
  EXPECT_THAT(cq.QueryCounters(), HasSubstr("hitbox_query_hits_total 10"));
  EXPECT_EQ(cq.QueryCounters(), callback.QueryCounters());
  EXPECT_EQ(cq.server->service().answer_memory().used(), 0u);
}

// Many calls at once from many clients (more than the requests each queue
// keeps posted): every one answered, and answered right.
TEST(CqServerTest, ManyConcurrentCalls) {
  Served cq(server::RpcApi::kCq);
  ASSERT_NE(cq.server, nullptr);
  constexpr int kThreads = 4, kInFlight = 50, kRounds = 5;
  std::vector<std::future<int>> failures;
  for (int t = 0; t < kThreads; ++t) {
    failures.push_back(std::async(std::launch::async, [&cq, t] {
      // Its own channel: calls of other threads do not share its connection.
      grpc::ChannelArguments args;
      args.SetInt("hitbox.test.channel", t);  // keeps the channels apart
      auto channel = grpc::CreateCustomChannel("127.0.0.1:" + std::to_string(cq.server->port()),
                                               grpc::InsecureChannelCredentials(), args);
      auto stub = v1::Hitbox::NewStub(channel);
      int bad = 0;
      for (int round = 0; round < kRounds; ++round) {
        struct Pending {
          grpc::ClientContext ctx;
          v1::QueryRequest req;
          v1::QueryResponse resp;
          std::promise<grpc::Status> done;
        };
        std::vector<std::unique_ptr<Pending>> calls;
        for (int i = 0; i < kInFlight; ++i) {
          auto p = std::make_unique<Pending>();
          p->req = Rays(1 + (i % 5));
          p->ctx.AddMetadata("authorization", "Bearer " + cq.token);
          stub->async()->Query(&p->ctx, &p->req, &p->resp,
                               [raw = p.get()](grpc::Status s) { raw->done.set_value(s); });
          calls.push_back(std::move(p));
        }
        for (int i = 0; i < kInFlight; ++i) {
          const grpc::Status st = calls[i]->done.get_future().get();
          const int n = 1 + (i % 5);
          if (!st.ok() || calls[i]->resp.results_size() != n ||
              calls[i]->resp.results(n - 1).hits_size() != 1) {
            ++bad;
          }
        }
      }
      return bad;
    }));
  }
  for (auto& f : failures) EXPECT_EQ(f.get(), 0);
  // Freed just after the reply.
  EXPECT_TRUE(testing::WaitUntil([&] { return cq.server->service().answer_memory().used() == 0; }));
}

// `n` overlaps of a 1 km sphere over session "s" of Served(..., grid = 150),
// 1024 hits each: seconds of work.
v1::QueryRequest HugeOverlaps(int n) {
  v1::QueryRequest huge;
  huge.set_session_id("s");
  for (int i = 0; i < n; ++i) {
    v1::OverlapQuery* o = huge.add_queries()->mutable_overlap();
    o->mutable_shape()->mutable_sphere()->set_radius(1000.0);
    o->mutable_pose()->mutable_position()->set_x(150);
    o->mutable_filter()->set_max_hits(1024);
  }
  return huge;
}

// A client that cancels a long Query stops it, though the polling thread
// answering it is busy meanwhile (the call's done notice is looked for on its
// queue while it runs): the session's write lock, which waits for the query,
// is free once the call ended, after a small part of the query's pair tests.
TEST(CqServerTest, CancellationStopsTheRunningQuery) {
  Served cq(server::RpcApi::kCq, /*grid=*/150, /*max_queries=*/4096);
  ASSERT_NE(cq.server, nullptr);
  server::Metrics& metrics = cq.server->service().metrics();
  uint64_t before = metrics.pair_tests();
  v1::QueryResponse one;
  ASSERT_TRUE(cq.Query(HugeOverlaps(1), &one, cq.token).ok());
  const uint64_t whole = (metrics.pair_tests() - before) * 2000;
  const v1::QueryRequest huge = HugeOverlaps(2000);
  grpc::ClientContext ctx;
  ctx.AddMetadata("authorization", "Bearer " + cq.token);
  v1::QueryResponse resp;
  std::promise<grpc::Status> done;
  before = metrics.pair_tests();
  cq.stub->async()->Query(&ctx, &huge, &resp, [&](grpc::Status s) { done.set_value(s); });
  ASSERT_TRUE(testing::WaitUntil([&] { return cq.server->service().answer_memory().used() > 0; }))
      << "the query is not running";
  ctx.TryCancel();
  EXPECT_EQ(done.get_future().get().error_code(), grpc::StatusCode::CANCELLED);
  v1::ApplyChangesRequest change;
  change.set_session_id("s");
  *change.add_changes()->mutable_add() = SphereMsg(999'999, 1.0, {-50, 0, 0});
  v1::ApplyChangesResponse applied;
  grpc::ClientContext actx;
  actx.AddMetadata("authorization", "Bearer " + cq.token);
  ASSERT_TRUE(cq.stub->ApplyChanges(&actx, change, &applied).ok());
  EXPECT_LT(metrics.pair_tests() - before, whole / 2) << "the query went on after cancellation";
  EXPECT_TRUE(testing::WaitUntil([&] { return cq.server->service().answer_memory().used() == 0; }));
}

// Shutdown with long queries running on the completion-queue threads: the
// grace passes, the calls end (none OK, none hanging), their bytes are given
// back and the server stops; a Query after that fails cleanly.
TEST(CqServerTest, ShutsDownCleanlyWithCallsInFlight) {
  Served cq(server::RpcApi::kCq, /*grid=*/150, /*max_queries=*/4096);
  ASSERT_NE(cq.server, nullptr);
  const v1::QueryRequest huge = HugeOverlaps(2000);
  constexpr int kCalls = 4;
  std::vector<std::future<grpc::Status>> calls;
  for (int i = 0; i < kCalls; ++i) {
    calls.push_back(std::async(std::launch::async, [&] {
      v1::QueryResponse resp;
      return cq.Query(huge, &resp, cq.token);
    }));
  }
  // A query is running: its answer bytes are reserved.
  ASSERT_TRUE(testing::WaitUntil([&] { return cq.server->service().answer_memory().used() > 0; }));
  cq.server->Shutdown(std::chrono::milliseconds(100));
  cq.server->Wait();
  for (auto& c : calls) {
    const grpc::Status st = c.get();
    EXPECT_FALSE(st.ok());
    EXPECT_NE(st.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED) << st.error_message();
  }
  EXPECT_EQ(cq.server->service().answer_memory().used(), 0u);
  v1::QueryResponse resp;
  EXPECT_EQ(cq.Query(Rays(1), &resp, cq.token).error_code(), grpc::StatusCode::UNAVAILABLE);
  cq.server.reset();  // the queues are drained already: nothing left to free
}

// Calls `method` ("/package.Service/Method") with one empty message (every
// field unset) as the admin, whatever its kind (unary or streaming), and
// returns the call's status. Reads and drops whatever comes back.
grpc::Status CallWithEmptyMessage(const std::shared_ptr<grpc::Channel>& channel,
                                  const std::string& method) {
  grpc::GenericStub stub(channel);
  grpc::CompletionQueue queue;
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  ctx.AddMetadata("authorization", std::string("Bearer ") + kAdminToken);
  std::unique_ptr<grpc::GenericClientAsyncReaderWriter> call =
      stub.PrepareCall(&ctx, method, &queue);
  void* tag = nullptr;
  bool ok = false;
  const auto step = [&](int want) {
    EXPECT_TRUE(queue.Next(&tag, &ok));
    EXPECT_EQ(tag, reinterpret_cast<void*>(static_cast<intptr_t>(want)));
    return ok;
  };
  call->StartCall(reinterpret_cast<void*>(1));
  step(1);
  grpc::Slice empty("");
  grpc::ByteBuffer message(&empty, 1);
  call->WriteLast(message, grpc::WriteOptions(), reinterpret_cast<void*>(2));
  step(2);
  grpc::ByteBuffer answer;
  do {
    call->Read(&answer, reinterpret_cast<void*>(3));
  } while (step(3));
  grpc::Status status;
  call->Finish(&status, reinterpret_cast<void*>(4));
  step(4);
  return status;
}

// Every rpc of hitbox.v1.Hitbox (from the service's descriptor, so one the
// .proto adds is checked too) is served under --rpc-api cq as on the callback
// API: an empty request gets the same status, never UNIMPLEMENTED, though the
// cq path handles only Query itself. An unknown method is UNIMPLEMENTED on both.
TEST(CqServerTest, EveryRpcIsServedLikeOnTheCallbackApi) {
  Served callback(server::RpcApi::kCallback);
  Served cq(server::RpcApi::kCq);
  ASSERT_NE(callback.server, nullptr);
  ASSERT_NE(cq.server, nullptr);
  const google::protobuf::ServiceDescriptor* service =
      google::protobuf::DescriptorPool::generated_pool()->FindServiceByName(
          v1::Hitbox::service_full_name());
  ASSERT_NE(service, nullptr);
  ASSERT_GE(service->method_count(), 11);
  for (int i = 0; i < service->method_count(); ++i) {
    const std::string method = "/" + service->full_name() + "/" + service->method(i)->name();
    SCOPED_TRACE(method);
    const grpc::Status a = CallWithEmptyMessage(callback.channel, method);
    const grpc::Status b = CallWithEmptyMessage(cq.channel, method);
    EXPECT_NE(a.error_code(), grpc::StatusCode::UNIMPLEMENTED) << a.error_message();
    EXPECT_EQ(b.error_code(), a.error_code()) << b.error_message();
    EXPECT_EQ(b.error_message(), a.error_message());
  }
  const std::string unknown = "/" + service->full_name() + "/NoSuchRpc";
  EXPECT_EQ(CallWithEmptyMessage(callback.channel, unknown).error_code(),
            grpc::StatusCode::UNIMPLEMENTED);
  EXPECT_EQ(CallWithEmptyMessage(cq.channel, unknown).error_code(),
            grpc::StatusCode::UNIMPLEMENTED);
}

TEST(CqServerTest, ParsesTheFlag) {
  EXPECT_EQ(server::ParseRpcApi("cq"), server::RpcApi::kCq);
  EXPECT_EQ(server::ParseRpcApi("callback"), server::RpcApi::kCallback);
  EXPECT_EQ(server::ParseRpcApi("async"), std::nullopt);
  EXPECT_STREQ(server::RpcApiName(server::RpcApi::kCq), "cq");
}

}  // namespace
}  // namespace hitbox
