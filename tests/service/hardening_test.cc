// Bounded work and memory in the service (in process, over the server's
// in-process channel): work budgets per request, deadlines and cancellation
// inside long queries, the server-wide budget for answers in flight, and ticks
// whose queries fail after their changes applied (they change nothing). Each
// case runs with Query on either gRPC API (--rpc-api callback and cq).
#include <chrono>
#include <cmath>
#include <future>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "server.h"
#include "service.h"
#include "service_util.h"
#include "wait.h"

namespace hitbox {
namespace {

using ::testing::HasSubstr;
using testing_service::SphereMsg;

constexpr int kGrid = 150;  // 22,500 unit spheres, 2 m apart on a plane

class HardeningTest : public ::testing::TestWithParam<server::RpcApi> {
 protected:
  void Start(uint64_t max_nodes, uint64_t max_pairs, uint64_t inflight = 1ull << 30) {
    server::ServerOptions o;
    o.listen = "127.0.0.1:0";
    o.service.threads = 2;
    o.rpc_api = GetParam();
    o.service.limits.session.max_nodes_per_message = max_nodes;
    o.service.limits.session.max_pair_tests_per_message = max_pairs;
    o.service.limits.max_inflight_bytes = inflight;
    Result<std::unique_ptr<server::HitboxServer>> s = server::HitboxServer::Start(o);
    ASSERT_TRUE(s.ok()) << s.error().message;
    server_ = std::move(*s);
    stub_ = v1::Hitbox::NewStub(server_->InProcessChannel());
    v1::CreateSessionRequest create;
    create.set_session_id("grid");
    v1::SessionInfo info;
    grpc::ClientContext ctx;
    ASSERT_TRUE(stub_->CreateSession(&ctx, create, &info).ok());
    for (int i = 0; i < kGrid; i += 50) {
      v1::ApplyChangesRequest req;
      req.set_session_id("grid");
      for (int r = i; r < i + 50; ++r) {
        for (int c = 0; c < kGrid; ++c) {
          *req.add_changes()->mutable_add() =
              SphereMsg(static_cast<uint64_t>(r * kGrid + c + 1), 1.0, {2.0 * r, 0, 2.0 * c});
        }
      }
      v1::ApplyChangesResponse resp;
      grpc::ClientContext actx;
      ASSERT_TRUE(stub_->ApplyChanges(&actx, req, &resp).ok());
    }
  }
  void TearDown() override {
    if (server_) server_->Shutdown(std::chrono::milliseconds(100));
  }

  // `n` overlaps of a sphere of `radius` over the grid.
  static v1::QueryRequest Overlaps(int n, double radius, uint32_t max_hits = 0) {
    v1::QueryRequest req;
    req.set_session_id("grid");
    for (int i = 0; i < n; ++i) {
      v1::OverlapQuery* o = req.add_queries()->mutable_overlap();
      o->mutable_shape()->mutable_sphere()->set_radius(radius);
      o->mutable_pose()->mutable_position()->set_x(kGrid);
      o->mutable_pose()->mutable_position()->set_z(kGrid);
      o->mutable_filter()->set_max_hits(max_hits);
    }
    return req;
  }
  // `n` overlaps of a thin slab tilted just off the grid's plane, above the
  // spheres: its bounds take in every sphere, so each query runs a pair
  // test with all 22,500, and it touches none (an empty answer).
  static v1::QueryRequest Slabs(int n) {
    v1::QueryRequest req;
    req.set_session_id("grid");
    for (int i = 0; i < n; ++i) {
      v1::OverlapQuery* o = req.add_queries()->mutable_overlap();
      v1::Vec3* half = o->mutable_shape()->mutable_box()->mutable_half_extents();
      half->set_x(1000.0);
      half->set_y(0.05);
      half->set_z(1000.0);
      o->mutable_pose()->mutable_position()->set_x(kGrid);
      o->mutable_pose()->mutable_position()->set_y(1.5);
      o->mutable_pose()->mutable_position()->set_z(kGrid);
      o->mutable_pose()->mutable_rotation()->set_w(std::cos(0.0005));
      o->mutable_pose()->mutable_rotation()->set_x(std::sin(0.0005));
    }
    return req;
  }
  grpc::Status Query(const v1::QueryRequest& req, v1::QueryResponse* resp,
                     std::chrono::milliseconds deadline = std::chrono::milliseconds(0)) {
    grpc::ClientContext ctx;
    if (deadline.count() > 0) ctx.set_deadline(std::chrono::system_clock::now() + deadline);
    return stub_->Query(&ctx, req, resp);
  }
  // Pair tests that answering `req` runs (it must succeed).
  uint64_t PairTestsOf(const v1::QueryRequest& req) {
    const uint64_t before = server_->service().metrics().pair_tests();
    v1::QueryResponse resp;
    EXPECT_TRUE(Query(req, &resp).ok());
    return server_->service().metrics().pair_tests() - before;
  }
  // A change batch gets the write lock, so the stopped query has ended; it
  // ran less than half of the `whole` request's pair tests (counted since
  // `before`), and none of its answer bytes stay reserved.
  void ExpectStopped(uint64_t before, uint64_t whole) {
    v1::ApplyChangesRequest change;
    change.set_session_id("grid");
    *change.add_changes()->mutable_add() = SphereMsg(999'999, 1.0, {-50, 0, 0});
    v1::ApplyChangesResponse applied;
    grpc::ClientContext ctx;
    ASSERT_TRUE(stub_->ApplyChanges(&ctx, change, &applied).ok());
    const uint64_t ran = server_->service().metrics().pair_tests() - before;
    EXPECT_LT(ran, whole / 2) << "the query went on after it was stopped";
    EXPECT_TRUE(testing::WaitUntil([&] { return server_->service().answer_memory().used() == 0; }));
  }
  uint64_t Revision() {
    v1::GetSessionRequest req;
    req.set_session_id("grid");
    v1::SessionInfo info;
    grpc::ClientContext ctx;
    EXPECT_TRUE(stub_->GetSession(&ctx, req, &info).ok());
    return info.revision();
  }

  std::unique_ptr<server::HitboxServer> server_;
  std::unique_ptr<v1::Hitbox::Stub> stub_;
};

// A request that needs more tree nodes or pair tests than the session's
// budget is RESOURCE_EXHAUSTED, naming the limit and what to lower; smaller
// requests on the same session go on being answered.
TEST_P(HardeningTest, WorkBudgetRefusesRunawayRequests) {
  Start(/*max_nodes=*/200'000, /*max_pairs=*/20'000);
  v1::QueryResponse resp;
  grpc::Status st = Query(Overlaps(200, 1000.0, 1), &resp);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << st.error_message();
  EXPECT_THAT(st.error_message(), HasSubstr("limits.max_nodes_per_message"));
  EXPECT_THAT(st.error_message(), HasSubstr("200000 tree nodes"));
  EXPECT_EQ(resp.results_size(), 0);

  // max_hits keeps pair tests low: one huge overlap with max_hits 16 fits;
  // the same without max_hits (clamped to 1024) needs more pair tests.
  resp.Clear();
  st = Query(Overlaps(1, 1000.0, 16), &resp);
  ASSERT_TRUE(st.ok()) << st.error_message();
  ASSERT_EQ(resp.results(0).overlaps_size(), 16);
  EXPECT_EQ(resp.results(0).overlaps(0).id(), 1u);
  resp.Clear();
  st = Query(Overlaps(5, 30.0), &resp);  // ~700 candidates each, all tested
  EXPECT_TRUE(st.ok()) << st.error_message();
  st = Query(Overlaps(40, 30.0), &resp);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_THAT(st.error_message(), HasSubstr("limits.max_pair_tests_per_message"));

  // The session's limits are reported, and a session may ask for less.
  v1::GetSessionRequest get;
  get.set_session_id("grid");
  v1::SessionInfo info;
  grpc::ClientContext ctx;
  ASSERT_TRUE(stub_->GetSession(&ctx, get, &info).ok());
  EXPECT_EQ(info.limits().max_nodes_per_message(), 200'000u);
  EXPECT_EQ(info.limits().max_pair_tests_per_message(), 20'000u);
  v1::CreateSessionRequest create;
  create.set_session_id("greedy");
  create.mutable_limits()->set_max_nodes_per_message(300'000);
  grpc::ClientContext cctx;
  st = stub_->CreateSession(&cctx, create, &info);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(st.error_message(), HasSubstr("limits.max_nodes_per_message"));
}

// A request whose deadline passes stops inside its long queries: once the
// client saw DEADLINE_EXCEEDED, a change batch gets the session's write lock
// (which waits for every running query), and the pair tests run are a small
// part of what the whole request needs.
TEST_P(HardeningTest, DeadlineStopsLongRequests) {
  Start(/*max_nodes=*/1ull << 40, /*max_pairs=*/1ull << 40);
  const uint64_t whole = PairTestsOf(Overlaps(1, 1000.0, 1024)) * 2000;
  v1::QueryResponse resp;
  const v1::QueryRequest huge = Overlaps(2000, 1000.0, 1024);  // ~1 s of work per 100
  const uint64_t before = server_->service().metrics().pair_tests();
  const grpc::Status st = Query(huge, &resp, std::chrono::milliseconds(200));
  EXPECT_EQ(st.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED) << st.error_message();
  ExpectStopped(before, whole);
}

// A cancelled request stops too (the client goes away mid-request). Its
// answers are empty, so nothing but the cancellation ends it early (a batch
// of large answers stops at the message size, about half way), and it is
// long (seconds of pair tests on two threads): a cancellation that reaches
// the server late still shows.
TEST_P(HardeningTest, CancellationStopsLongRequests) {
  Start(/*max_nodes=*/1ull << 40, /*max_pairs=*/1ull << 40);
  constexpr int kSlabs = 40'000;
  const uint64_t one = PairTestsOf(Slabs(1));
  EXPECT_EQ(one, static_cast<uint64_t>(kGrid * kGrid));
  const uint64_t whole = one * kSlabs;
  const v1::QueryRequest huge = Slabs(kSlabs);
  grpc::ClientContext ctx;
  v1::QueryResponse resp;
  std::promise<grpc::Status> done;
  const uint64_t before = server_->service().metrics().pair_tests();
  stub_->async()->Query(&ctx, &huge, &resp, [&](grpc::Status s) { done.set_value(s); });
  // Running: its first chunk's answer bytes are reserved.
  ASSERT_TRUE(testing::WaitUntil([&] { return server_->service().answer_memory().used() > 0; }));
  ctx.TryCancel();
  EXPECT_EQ(done.get_future().get().error_code(), grpc::StatusCode::CANCELLED);
  ExpectStopped(before, whole);
}

// The answers of all calls in flight share one byte budget: a request whose
// worst-case answer cannot fit is RESOURCE_EXHAUSTED naming the flag, and
// nothing stays reserved after any call.
TEST_P(HardeningTest, InflightMemoryBudget) {
  Start(/*max_nodes=*/1ull << 40, /*max_pairs=*/1ull << 40, /*inflight=*/64 << 10);
  v1::QueryResponse resp;
  // 1024 hits of an overlap hold ~64 KiB and more: over the budget.
  grpc::Status st = Query(Overlaps(1, 1000.0, 1024), &resp);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << st.error_message();
  EXPECT_THAT(st.error_message(), HasSubstr("--max-inflight-bytes"));
  EXPECT_EQ(server_->service().answer_memory().used(), 0u);
  // Small answers fit, and give their bytes back once sent.
  st = Query(Overlaps(10, 3.0, 8), &resp);
  ASSERT_TRUE(st.ok()) << st.error_message();
  EXPECT_EQ(resp.results(0).overlaps_size(), 8);
  // OnDone gives the bytes back just after the reply.
  EXPECT_TRUE(testing::WaitUntil([&] { return server_->service().answer_memory().used() == 0; }));

  // A ListColliders snapshot counts too: 22,500 colliders do not fit in 64 KiB.
  v1::ListCollidersRequest list;
  list.set_session_id("grid");
  grpc::ClientContext lctx;
  auto reader = stub_->ListColliders(&lctx, list);
  v1::ListCollidersResponse page;
  EXPECT_FALSE(reader->Read(&page));
  st = reader->Finish();
  EXPECT_EQ(st.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << st.error_message();
  EXPECT_THAT(st.error_message(), HasSubstr("--max-inflight-bytes"));
  EXPECT_EQ(server_->service().answer_memory().used(), 0u);
}

// A tick whose changes applied but whose queries then ran out of budget is
// rejected as a whole: the changes are undone and the revision kept.
TEST_P(HardeningTest, TickWithFailingQueriesChangesNothing) {
  Start(/*max_nodes=*/200'000, /*max_pairs=*/20'000);
  const uint64_t revision = Revision();
  auto stream_ctx = std::make_unique<grpc::ClientContext>();
  auto stream = stub_->Tick(stream_ctx.get());
  v1::TickRequest tick;
  tick.set_session_id("grid");
  tick.set_tick(1);
  *tick.add_changes()->mutable_add() = SphereMsg(500'000, 2.0, {-20, 0, 0});
  v1::ColliderChange* move = tick.add_changes();
  move->mutable_move()->set_id(1);
  move->mutable_move()->mutable_pose()->mutable_position()->set_y(7);
  tick.add_changes()->set_remove(2);
  *tick.mutable_queries() = Overlaps(200, 1000.0, 1).queries();
  ASSERT_TRUE(stream->Write(tick));
  v1::TickResponse resp;
  ASSERT_TRUE(stream->Read(&resp));
  EXPECT_EQ(resp.error().code(), static_cast<int>(grpc::StatusCode::RESOURCE_EXHAUSTED));
  EXPECT_THAT(resp.error().message(), HasSubstr("max_nodes_per_message"));
  stream->WritesDone();
  EXPECT_TRUE(stream->Finish().ok());
  EXPECT_EQ(Revision(), revision);
  v1::GetCollidersRequest get;
  get.set_session_id("grid");
  get.add_ids(1);
  get.add_ids(2);
  v1::GetCollidersResponse got;
  grpc::ClientContext gctx;
  ASSERT_TRUE(stub_->GetColliders(&gctx, get, &got).ok()) << "collider 2 is back";
  EXPECT_EQ(got.colliders(0).pose().position().y(), 0.0);
  get.clear_ids();
  get.add_ids(500'000);
  grpc::ClientContext g2;
  EXPECT_EQ(stub_->GetColliders(&g2, get, &got).error_code(), grpc::StatusCode::NOT_FOUND);
}

}  // namespace
}  // namespace hitbox

namespace hitbox {
namespace {

// Geometry limits (--max-mesh-triangles, --max-heightfield-samples,
// --max-hull-points and the session values that lower them): a bigger
// shape is RESOURCE_EXHAUSTED naming the change and the limit, and nothing
// of the batch is applied.
TEST(GeometryLimitsTest, BigShapesAreRefusedByName) {
  server::ServiceOptions o;
  o.threads = 1;
  o.limits.session.max_hull_points = 8;
  server::HitboxService service(o);
  v1::CreateSessionRequest create;
  create.set_session_id("g");
  create.mutable_limits()->set_max_mesh_triangles(2);
  create.mutable_limits()->set_max_heightfield_samples(9);
  v1::SessionInfo info;
  ASSERT_TRUE(service.DoCreateSession(create, &info).ok());
  EXPECT_EQ(info.limits().max_mesh_triangles(), 2u);
  EXPECT_EQ(info.limits().max_hull_points(), 8u);
  // A session may not raise the server's limit.
  v1::CreateSessionRequest raise;
  raise.set_session_id("h");
  raise.mutable_limits()->set_max_hull_points(9);
  EXPECT_EQ(service.DoCreateSession(raise, &info).error_code(), grpc::StatusCode::INVALID_ARGUMENT);

  const auto apply = [&](const v1::Collider& c) {
    v1::ApplyChangesRequest req;
    req.set_session_id("g");
    *req.add_changes()->mutable_add() = SphereMsg(c.id() + 100, 1.0);
    *req.add_changes()->mutable_add() = c;
    v1::ApplyChangesResponse resp;
    return service.DoApplyChanges(req, &resp);
  };
  const auto quad_strip = [](uint64_t id, int quads) {
    v1::Collider c = SphereMsg(id, 1.0);
    v1::TriangleMesh* m = c.mutable_shape()->mutable_mesh();
    for (int i = 0; i <= quads; ++i) {
      for (double z : {0.0, 1.0}) {
        v1::Vec3* v = m->add_vertices();
        v->set_x(i);
        v->set_z(z);
      }
    }
    for (int i = 0; i < quads; ++i) {
      const uint32_t a = static_cast<uint32_t>(2 * i);
      for (uint32_t k : {a, a + 1, a + 2, a + 1, a + 3, a + 2}) m->add_indices(k);
    }
    return c;
  };
  grpc::Status st = apply(quad_strip(2, 2));  // 4 triangles
  EXPECT_EQ(st.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_THAT(st.error_message(), HasSubstr("changes[1].add.shape"));
  EXPECT_THAT(st.error_message(), HasSubstr("limits.max_mesh_triangles"));
  EXPECT_TRUE(apply(quad_strip(5, 1)).ok()) << "2 triangles are within the limit";

  v1::Collider field = SphereMsg(3, 1.0);
  v1::Heightfield* h = field.mutable_shape()->mutable_heightfield();
  h->set_rows(4);
  h->set_cols(4);
  h->set_cell_size_x(1);
  h->set_cell_size_z(1);
  for (int i = 0; i < 16; ++i) h->add_heights(0);
  st = apply(field);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << st.error_message();
  EXPECT_THAT(st.error_message(), HasSubstr("limits.max_heightfield_samples"));

  v1::Collider hull = SphereMsg(4, 1.0);
  v1::ConvexHull* ch = hull.mutable_shape()->mutable_convex_hull();
  for (int i = 0; i < 9; ++i) {  // a box's corners and its centre
    v1::Vec3* p = ch->add_points();
    p->set_x(i == 8 ? 0 : (i & 1 ? 1 : -1));
    p->set_y(i == 8 ? 0 : (i & 2 ? 1 : -1));
    p->set_z(i == 8 ? 0 : (i & 4 ? 1 : -1));
  }
  st = apply(hull);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << st.error_message();
  EXPECT_THAT(st.error_message(), HasSubstr("limits.max_hull_points"));
  // Nothing of the refused batches was applied: only the accepted one's two.
  v1::GetSessionRequest get;
  get.set_session_id("g");
  ASSERT_TRUE(service.DoGetSession(get, &info).ok());
  EXPECT_EQ(info.collider_count(), 2u);
}

INSTANTIATE_TEST_SUITE_P(RpcApi, HardeningTest,
                         ::testing::Values(server::RpcApi::kCallback, server::RpcApi::kCq),
                         [](const ::testing::TestParamInfo<server::RpcApi>& p) {
                           return std::string(server::RpcApiName(p.param));
                         });

}  // namespace
}  // namespace hitbox
