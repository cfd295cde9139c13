// In-process service tests: every rpc, every validation error class and the
// limits, over the server's in-process channel. Each rejected request is
// checked for its code, a message naming the field, and an unchanged session.
#include <atomic>
#include <chrono>
#include <cmath>
#include <limits>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "server.h"
#include "service_util.h"

namespace hitbox {
namespace {

using ::testing::HasSubstr;
using testing_service::SphereMsg;
using testing_service::WorldGen;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

class ServiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server::ServerOptions o;
    o.listen = "127.0.0.1:0";
    o.service.threads = 2;
    o.service.limits.max_sessions = 4;
    o.service.limits.max_message_bytes = 1 << 20;
    o.service.limits.max_page_size = 16;
    o.service.limits.session.max_colliders = 100;
    o.service.limits.session.max_changes_per_message = 50;
    o.service.limits.session.max_queries_per_message = 20;
    o.service.limits.session.max_hits_per_query = 8;
    Result<std::unique_ptr<server::HitboxServer>> s = server::HitboxServer::Start(o);
    ASSERT_TRUE(s.ok()) << s.error().message;
    server_ = std::move(*s);
    stub_ = v1::Hitbox::NewStub(server_->InProcessChannel());
  }
  void TearDown() override {
    if (server_) server_->Shutdown(std::chrono::milliseconds(100));
  }

  grpc::Status Create(const std::string& id, v1::SessionInfo* info = nullptr) {
    v1::CreateSessionRequest req;
    req.set_session_id(id);
    v1::SessionInfo tmp;
    grpc::ClientContext ctx;
    return stub_->CreateSession(&ctx, req, info ? info : &tmp);
  }
  grpc::Status Apply(const v1::ApplyChangesRequest& req, v1::ApplyChangesResponse* resp = nullptr) {
    v1::ApplyChangesResponse tmp;
    grpc::ClientContext ctx;
    return stub_->ApplyChanges(&ctx, req, resp ? resp : &tmp);
  }
  grpc::Status RunQuery(const v1::QueryRequest& req, v1::QueryResponse* resp) {
    grpc::ClientContext ctx;
    return stub_->Query(&ctx, req, resp);
  }
  v1::SessionInfo Info(const std::string& id) {
    v1::GetSessionRequest req;
    req.set_session_id(id);
    v1::SessionInfo info;
    grpc::ClientContext ctx;
    EXPECT_TRUE(stub_->GetSession(&ctx, req, &info).ok());
    return info;
  }
  // Every collider of a session, by ListColliders, serialized (for "unchanged" checks).
  std::string Snapshot(const std::string& id) {
    v1::ListCollidersRequest req;
    req.set_session_id(id);
    grpc::ClientContext ctx;
    auto reader = stub_->ListColliders(&ctx, req);
    v1::ListCollidersResponse page;
    std::string all;
    while (reader->Read(&page)) all += page.SerializeAsString();
    EXPECT_TRUE(reader->Finish().ok());
    return all;
  }
  // Adds spheres 1..n along X.
  void AddSpheres(const std::string& id, int n) {
    v1::ApplyChangesRequest req;
    req.set_session_id(id);
    for (int i = 1; i <= n; ++i) *req.add_changes()->mutable_add() = SphereMsg(i, 0.5, {3.0 * i, 0, 0});
    ASSERT_TRUE(Apply(req).ok());
  }
  // Expects `req` to fail with `code` and a message containing `field`, with
  // the session's revision, count and colliders unchanged.
  void ExpectRejected(const v1::ApplyChangesRequest& req, grpc::StatusCode code,
                      const std::string& field) {
    const v1::SessionInfo before = Info(req.session_id());
    const std::string snap = Snapshot(req.session_id());
    const grpc::Status st = Apply(req);
    EXPECT_EQ(st.error_code(), code) << st.error_message();
    EXPECT_THAT(st.error_message(), HasSubstr(field));
    const v1::SessionInfo after = Info(req.session_id());
    EXPECT_EQ(after.revision(), before.revision());
    EXPECT_EQ(after.collider_count(), before.collider_count());
    EXPECT_EQ(Snapshot(req.session_id()), snap);
  }

  std::unique_ptr<server::HitboxServer> server_;
  std::unique_ptr<v1::Hitbox::Stub> stub_;
};

// Session lifecycle: create (named and auto), get, list sorted, delete.
TEST_F(ServiceTest, SessionLifecycle) {
  v1::SessionInfo info;
  ASSERT_TRUE(Create("beta", &info).ok());
  EXPECT_EQ(info.session_id(), "beta");
  EXPECT_EQ(info.revision(), 0u);
  EXPECT_EQ(info.collider_count(), 0u);
  EXPECT_FALSE(info.has_bounds());
  EXPECT_EQ(info.limits().max_colliders(), 100u);
  EXPECT_EQ(info.limits().max_hits_per_query(), 8u);
  EXPECT_GT(info.created_unix_ms(), 0);
  ASSERT_TRUE(Create("", &info).ok());
  const std::string auto_id = info.session_id();
  EXPECT_FALSE(auto_id.empty());
  ASSERT_TRUE(Create("alpha").ok());

  v1::ListSessionsResponse list;
  {
    grpc::ClientContext ctx;
    ASSERT_TRUE(stub_->ListSessions(&ctx, v1::ListSessionsRequest(), &list).ok());
  }
  ASSERT_EQ(list.sessions_size(), 3);
  EXPECT_EQ(list.sessions(0).session_id(), "alpha");
  EXPECT_EQ(list.sessions(1).session_id(), "beta");

  AddSpheres("alpha", 3);
  info = Info("alpha");
  EXPECT_EQ(info.collider_count(), 3u);
  EXPECT_EQ(info.revision(), 1u);
  ASSERT_TRUE(info.has_bounds());
  EXPECT_DOUBLE_EQ(info.bounds().min().x(), 2.5);
  EXPECT_DOUBLE_EQ(info.bounds().max().x(), 9.5);

  v1::DeleteSessionRequest del;
  del.set_session_id("alpha");
  v1::DeleteSessionResponse dresp;
  {
    grpc::ClientContext ctx;
    EXPECT_TRUE(stub_->DeleteSession(&ctx, del, &dresp).ok());
  }
  {
    grpc::ClientContext ctx;
    const grpc::Status st = stub_->DeleteSession(&ctx, del, &dresp);
    EXPECT_EQ(st.error_code(), grpc::StatusCode::NOT_FOUND);
    EXPECT_THAT(st.error_message(), HasSubstr("session_id"));
  }
  v1::GetSessionRequest get;
  get.set_session_id("alpha");
  grpc::ClientContext ctx;
  EXPECT_EQ(stub_->GetSession(&ctx, get, &info).error_code(), grpc::StatusCode::NOT_FOUND);
}

// Session errors: duplicate, malformed id, too many sessions, limits above the server's.
TEST_F(ServiceTest, SessionErrors) {
  ASSERT_TRUE(Create("s1").ok());
  grpc::Status st = Create("s1");
  EXPECT_EQ(st.error_code(), grpc::StatusCode::ALREADY_EXISTS);
  EXPECT_THAT(st.error_message(), HasSubstr("session_id"));
  st = Create("bad id!");
  EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(st.error_message(), HasSubstr("session_id"));
  st = Create(std::string(129, 'x'));
  EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  for (const char* dots : {".", ".."}) {  // path-like ids are refused
    st = Create(dots);
    EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << dots;
    EXPECT_THAT(st.error_message(), HasSubstr("is not allowed"));
  }

  v1::CreateSessionRequest req;
  req.set_session_id("s2");
  req.mutable_limits()->set_max_colliders(101);
  v1::SessionInfo info;
  {
    grpc::ClientContext ctx;
    st = stub_->CreateSession(&ctx, req, &info);
  }
  EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(st.error_message(), HasSubstr("limits.max_colliders"));
  req.mutable_limits()->set_max_colliders(10);
  req.mutable_limits()->set_max_hits_per_query(9);
  {
    grpc::ClientContext ctx;
    st = stub_->CreateSession(&ctx, req, &info);
  }
  EXPECT_THAT(st.error_message(), HasSubstr("limits.max_hits_per_query"));
  req.mutable_limits()->set_max_hits_per_query(2);
  {
    grpc::ClientContext ctx;
    ASSERT_TRUE(stub_->CreateSession(&ctx, req, &info).ok());
  }
  EXPECT_EQ(info.limits().max_colliders(), 10u);
  EXPECT_EQ(info.limits().max_changes_per_message(), 50u);
  EXPECT_EQ(info.limits().max_hits_per_query(), 2u);

  ASSERT_TRUE(Create("s3").ok());
  ASSERT_TRUE(Create("s4").ok());
  st = Create("s5");
  EXPECT_EQ(st.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_THAT(st.error_message(), HasSubstr("sessions"));

  // A session's own lower limit applies: 11 colliders into max_colliders=10.
  v1::ApplyChangesRequest apply;
  apply.set_session_id("s2");
  for (int i = 0; i < 11; ++i) *apply.add_changes()->mutable_add() = SphereMsg(i, 1);
  ExpectRejected(apply, grpc::StatusCode::RESOURCE_EXHAUSTED, "max_colliders");
}

// Every kind of change applies, bumping the revision once per batch.
TEST_F(ServiceTest, ApplyChangesAndGetColliders) {
  ASSERT_TRUE(Create("w").ok());
  AddSpheres("w", 5);
  v1::ApplyChangesRequest req;
  req.set_session_id("w");
  v1::Collider repl = SphereMsg(2, 2.0, {0, 10, 0}, 3);
  repl.set_user_data(77);
  *req.add_changes()->mutable_replace() = repl;
  v1::MoveCollider* mv = req.add_changes()->mutable_move();
  mv->set_id(3);
  mv->mutable_pose()->mutable_position()->set_z(-4);
  req.add_changes()->set_remove(4);
  *req.add_changes()->mutable_add() = SphereMsg(42, 1.0);
  req.add_changes()->mutable_move()->set_id(42);  // move what this batch added
  req.mutable_changes(4)->mutable_move()->mutable_pose()->mutable_position()->set_y(5);
  req.set_expected_revision(1);
  v1::ApplyChangesResponse resp;
  ASSERT_TRUE(Apply(req, &resp).ok());
  EXPECT_EQ(resp.revision(), 2u);
  EXPECT_EQ(resp.collider_count(), 5u);

  v1::ApplyChangesRequest empty;
  empty.set_session_id("w");
  ASSERT_TRUE(Apply(empty, &resp).ok());
  EXPECT_EQ(resp.revision(), 2u);  // an empty batch does not bump

  v1::GetCollidersRequest get;
  get.set_session_id("w");
  get.add_ids(42);
  get.add_ids(2);
  get.add_ids(3);
  v1::GetCollidersResponse got;
  {
    grpc::ClientContext ctx;
    ASSERT_TRUE(stub_->GetColliders(&ctx, get, &got).ok());
  }
  ASSERT_EQ(got.colliders_size(), 3);
  EXPECT_EQ(got.revision(), 2u);
  EXPECT_EQ(got.colliders(0).id(), 42u);
  EXPECT_EQ(got.colliders(0).pose().position().y(), 5);
  EXPECT_EQ(got.colliders(1).shape().sphere().radius(), 2.0);
  EXPECT_EQ(got.colliders(1).layer(), 3u);
  EXPECT_EQ(got.colliders(1).user_data(), 77u);
  EXPECT_EQ(got.colliders(2).pose().position().z(), -4);
  EXPECT_EQ(got.colliders(2).shape().sphere().radius(), 0.5);  // move keeps the shape

  get.add_ids(4);  // removed
  grpc::ClientContext ctx;
  const grpc::Status st = stub_->GetColliders(&ctx, get, &got);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_THAT(st.error_message(), HasSubstr("ids[3]"));
}

// Every validation error class of ApplyChanges, each leaving the session unchanged.
TEST_F(ServiceTest, ApplyChangesRejections) {
  ASSERT_TRUE(Create("v").ok());
  AddSpheres("v", 5);
  auto batch = [] {
    v1::ApplyChangesRequest req;
    req.set_session_id("v");
    *req.add_changes()->mutable_add() = SphereMsg(10, 1);  // a valid first entry
    return req;
  };
  v1::ApplyChangesRequest r = batch();
  v1::Collider c = SphereMsg(11, 1);
  c.mutable_pose()->mutable_position()->set_x(kNaN);
  *r.add_changes()->mutable_add() = c;
  ExpectRejected(r, grpc::StatusCode::INVALID_ARGUMENT, "changes[1].add.pose.position.x");

  r = batch();
  c = SphereMsg(11, 1);
  c.mutable_pose()->mutable_rotation()->set_w(0.5);
  *r.add_changes()->mutable_replace() = c;
  ExpectRejected(r, grpc::StatusCode::INVALID_ARGUMENT, "changes[1].replace.pose.rotation");

  r = batch();
  c = SphereMsg(11, 0);
  *r.add_changes()->mutable_add() = c;
  ExpectRejected(r, grpc::StatusCode::INVALID_ARGUMENT, "changes[1].add.shape.sphere.radius");

  r = batch();
  c = SphereMsg(11, 1);
  c.mutable_shape()->mutable_box()->mutable_half_extents()->set_x(1);  // y, z = 0
  *r.add_changes()->mutable_add() = c;
  ExpectRejected(r, grpc::StatusCode::INVALID_ARGUMENT, "changes[1].add.shape.box.half_extents.y");

  r = batch();
  c = SphereMsg(11, 1);
  c.mutable_shape()->Clear();
  *r.add_changes()->mutable_add() = c;
  ExpectRejected(r, grpc::StatusCode::INVALID_ARGUMENT, "changes[1].add.shape");

  r = batch();
  r.add_changes();
  ExpectRejected(r, grpc::StatusCode::INVALID_ARGUMENT, "changes[1]");

  r = batch();
  c = SphereMsg(11, 1);
  c.set_layer(32);
  *r.add_changes()->mutable_add() = c;
  ExpectRejected(r, grpc::StatusCode::INVALID_ARGUMENT, "changes[1].add.layer");

  r = batch();
  r.add_changes()->mutable_move()->set_id(3);  // no pose
  ExpectRejected(r, grpc::StatusCode::INVALID_ARGUMENT, "changes[1].move.pose");

  r = batch();
  *r.add_changes()->mutable_add() = SphereMsg(3, 1);  // exists
  ExpectRejected(r, grpc::StatusCode::ALREADY_EXISTS, "changes[1].add.id");

  r = batch();
  *r.add_changes()->mutable_add() = SphereMsg(10, 1);  // duplicate within the batch
  ExpectRejected(r, grpc::StatusCode::ALREADY_EXISTS, "changes[1].add.id");

  r = batch();
  r.add_changes()->mutable_move()->set_id(99);
  r.mutable_changes(1)->mutable_move()->mutable_pose();
  ExpectRejected(r, grpc::StatusCode::NOT_FOUND, "changes[1].move.id");

  r = batch();
  *r.add_changes()->mutable_replace() = SphereMsg(99, 1);
  ExpectRejected(r, grpc::StatusCode::NOT_FOUND, "changes[1].replace.id");

  r = batch();
  r.add_changes()->set_remove(1);
  r.add_changes()->set_remove(1);  // removed twice
  ExpectRejected(r, grpc::StatusCode::NOT_FOUND, "changes[2].remove");

  r = batch();
  r.set_expected_revision(7);
  ExpectRejected(r, grpc::StatusCode::FAILED_PRECONDITION, "expected_revision");

  r = batch();
  for (int i = 0; i < 50; ++i) *r.add_changes()->mutable_add() = SphereMsg(1000 + i, 1);
  ExpectRejected(r, grpc::StatusCode::RESOURCE_EXHAUSTED, "changes: 51 changes");

  // 5 + 48 + 48 = 101 > 100 colliders.
  r = batch();
  for (int i = 0; i < 47; ++i) *r.add_changes()->mutable_add() = SphereMsg(1000 + i, 1);
  ASSERT_TRUE(Apply(r).ok());
  r.Clear();
  r.set_session_id("v");
  for (int i = 0; i < 48; ++i) *r.add_changes()->mutable_add() = SphereMsg(2000 + i, 1);
  ExpectRejected(r, grpc::StatusCode::RESOURCE_EXHAUSTED, "limits.max_colliders");

  // Unknown and malformed sessions.
  r.set_session_id("nope");
  grpc::Status st = Apply(r);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_THAT(st.error_message(), HasSubstr("session_id"));
  r.set_session_id("");
  st = Apply(r);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(st.error_message(), HasSubstr("session_id"));
}

// A request above the maximum message size is refused by gRPC with RESOURCE_EXHAUSTED.
TEST_F(ServiceTest, OversizedMessageIsRejected) {
  ASSERT_TRUE(Create("big").ok());
  v1::ApplyChangesRequest r;
  r.set_session_id("big");
  for (int i = 0; i < 30000; ++i) *r.add_changes()->mutable_add() = SphereMsg(i, 1, {1, 2, 3});
  ASSERT_GT(r.ByteSizeLong(), 1u << 20);
  const grpc::Status st = Apply(r);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << st.error_message();
  EXPECT_EQ(Info("big").collider_count(), 0u);
}

// Query answers equal an in-process ColliderSet's on the same world, with tags echoed.
TEST_F(ServiceTest, QueryMatchesInProcess) {
  ASSERT_TRUE(Create("q").ok());
  WorldGen gen(99, 15.0);
  ColliderSet local;
  v1::ApplyChangesRequest add;
  add.set_session_id("q");
  std::vector<ColliderChange> changes;
  for (uint64_t id = 1; id <= 40; ++id) {
    const ColliderChange ch = ColliderChange::Add(gen.RandomCollider(id));
    wire::ToProto(ch, add.add_changes());               // what the server gets
    changes.push_back(testing_service::ThroughWire(ch));  // what it makes of it
  }
  ASSERT_TRUE(local.Apply(changes).ok());
  ASSERT_TRUE(Apply(add).ok());
  for (int round = 0; round < 10; ++round) {
    v1::QueryRequest req;
    req.set_session_id("q");
    std::vector<Query> queries;
    for (int i = 0; i < 20; ++i) {
      const Query q0 = gen.RandomQuery();
      v1::Query* pq = req.add_queries();
      wire::ToProto(q0, pq);
      pq->set_tag(1000 + i);
      Query q = testing_service::ThroughWire(q0);
      std::visit([](auto& x) { if (x.filter.max_hits == 0) x.filter.max_hits = 8; }, q);
      queries.push_back(q);
    }
    v1::QueryResponse resp;
    ASSERT_TRUE(RunQuery(req, &resp).ok());
    EXPECT_EQ(resp.revision(), 1u);
    ASSERT_EQ(resp.results_size(), 20);
    for (int i = 0; i < 20; ++i) {
      QueryResult want;
      local.Run(queries[i], &want);
      EXPECT_EQ(resp.results(i).tag(), 1000u + i);
      EXPECT_EQ(testing_service::DiffResults(wire::ResultFromProto(resp.results(i)), want), "")
          << "round " << round << " query " << i << ": " << req.queries(i).ShortDebugString();
    }
  }
}

// Query errors and the per-query hit cap.
TEST_F(ServiceTest, QueryRejectionsAndHitCap) {
  ASSERT_TRUE(Create("h").ok());
  AddSpheres("h", 20);  // spheres at x = 3, 6, ..., 60
  v1::QueryRequest req;
  req.set_session_id("h");
  v1::OverlapQuery* o = req.add_queries()->mutable_overlap();
  o->mutable_shape()->mutable_box()->mutable_half_extents()->set_x(100);
  o->mutable_shape()->mutable_box()->mutable_half_extents()->set_y(1);
  o->mutable_shape()->mutable_box()->mutable_half_extents()->set_z(1);
  v1::QueryResponse resp;
  ASSERT_TRUE(RunQuery(req, &resp).ok());
  ASSERT_EQ(resp.results_size(), 1);
  ASSERT_EQ(resp.results(0).overlaps_size(), 8);  // clamped to max_hits_per_query
  EXPECT_EQ(resp.results(0).overlaps(0).id(), 1u);
  EXPECT_EQ(resp.results(0).overlaps(0).user_data(), 100u);
  o->mutable_filter()->set_max_hits(3);
  ASSERT_TRUE(RunQuery(req, &resp).ok());
  EXPECT_EQ(resp.results(0).overlaps_size(), 3);
  o->mutable_filter()->set_mask(0);
  ASSERT_TRUE(RunQuery(req, &resp).ok());
  EXPECT_EQ(resp.results(0).overlaps_size(), 0);

  v1::QueryRequest bad = req;
  bad.add_queries();  // kind unset
  grpc::Status st = RunQuery(bad, &resp);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(st.error_message(), HasSubstr("queries[1]"));

  bad = req;
  bad.add_queries()->mutable_raycast()->mutable_origin()->set_y(kNaN);
  st = RunQuery(bad, &resp);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(st.error_message(), HasSubstr("queries[1].raycast.origin.y"));

  bad = req;
  bad.add_queries()->mutable_cast()->mutable_shape()->mutable_sphere()->set_radius(1);
  bad.mutable_queries(1)->mutable_cast()->mutable_pose()->mutable_rotation()->set_x(2);
  st = RunQuery(bad, &resp);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(st.error_message(), HasSubstr("queries[1].cast.pose.rotation: quaternion norm 2"));

  bad = req;
  for (int i = 0; i < 20; ++i) *bad.add_queries() = req.queries(0);
  st = RunQuery(bad, &resp);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_THAT(st.error_message(), HasSubstr("queries: 21 queries"));

  bad = req;
  bad.set_session_id("missing");
  st = RunQuery(bad, &resp);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::NOT_FOUND);
}

// max_hits over the wire: 0 stands for the session's max_hits_per_query (8
// here), as does anything above it; truncated says when hits were left out,
// and the tag comes back.
TEST_F(ServiceTest, TruncatedSaysWhenMaxHitsCut) {
  ASSERT_TRUE(Create("t").ok());
  AddSpheres("t", 20);  // spheres at x = 3, 6, ..., 60
  v1::QueryRequest req;
  req.set_session_id("t");
  v1::Query* q = req.add_queries();
  q->set_tag(12345);
  v1::OverlapQuery* o = q->mutable_overlap();
  o->mutable_shape()->mutable_box()->mutable_half_extents()->set_x(100);
  o->mutable_shape()->mutable_box()->mutable_half_extents()->set_y(1);
  o->mutable_shape()->mutable_box()->mutable_half_extents()->set_z(1);
  struct Case {
    uint32_t max_hits;
    double half_x;  // 100: all 20 spheres; 13.5: the first 4
    int listed;
    bool truncated;
  };
  for (const Case& c : {Case{0, 100, 8, true}, Case{3, 100, 3, true}, Case{25, 100, 8, true},
                        Case{0, 13.5, 4, false}, Case{4, 13.5, 4, false},
                        Case{3, 13.5, 3, true}}) {
    o->mutable_filter()->set_max_hits(c.max_hits);
    o->mutable_shape()->mutable_box()->mutable_half_extents()->set_x(c.half_x);
    v1::QueryResponse resp;
    ASSERT_TRUE(RunQuery(req, &resp).ok());
    ASSERT_EQ(resp.results_size(), 1);
    EXPECT_EQ(resp.results(0).overlaps_size(), c.listed) << c.max_hits << " " << c.half_x;
    EXPECT_EQ(resp.results(0).truncated(), c.truncated) << c.max_hits << " " << c.half_x;
    EXPECT_EQ(resp.results(0).tag(), 12345u);
  }
  // All-hits rays too; a closest-hit ray is never cut.
  v1::RayQuery* ray = req.add_queries()->mutable_raycast();
  ray->mutable_translation()->set_x(100);
  ray->set_all_hits(true);
  v1::QueryResponse resp;
  ASSERT_TRUE(RunQuery(req, &resp).ok());
  EXPECT_EQ(resp.results(1).hits_size(), 8);
  EXPECT_TRUE(resp.results(1).truncated());
  ray->set_all_hits(false);
  ASSERT_TRUE(RunQuery(req, &resp).ok());
  EXPECT_EQ(resp.results(1).hits_size(), 1);
  EXPECT_FALSE(resp.results(1).truncated());
  // A cast's contact offset out of range names the field.
  v1::CastQuery* cast = req.add_queries()->mutable_cast();
  cast->mutable_shape()->mutable_sphere()->set_radius(1);
  cast->set_contact_offset(-1);
  const grpc::Status st = RunQuery(req, &resp);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(st.error_message(), HasSubstr("queries[2].cast.contact_offset"));
}

// ListColliders streams a sorted snapshot in pages capped by the server.
TEST_F(ServiceTest, ListCollidersPages) {
  ASSERT_TRUE(Create("l").ok());
  v1::ApplyChangesRequest req;
  req.set_session_id("l");
  for (int i = 50; i >= 1; --i) *req.add_changes()->mutable_add() = SphereMsg(i * 7, 1);
  ASSERT_TRUE(Apply(req).ok());
  for (uint32_t page_size : {0u, 7u, 100u}) {
    v1::ListCollidersRequest lreq;
    lreq.set_session_id("l");
    lreq.set_page_size(page_size);
    grpc::ClientContext ctx;
    auto reader = stub_->ListColliders(&ctx, lreq);
    v1::ListCollidersResponse page;
    std::vector<uint64_t> ids;
    int pages = 0;
    while (reader->Read(&page)) {
      ++pages;
      EXPECT_EQ(page.revision(), 1u);
      EXPECT_EQ(page.total(), 50u);
      EXPECT_LE(page.colliders_size(), page_size == 7 ? 7 : 16);  // server cap 16
      for (const v1::Collider& c : page.colliders()) ids.push_back(c.id());
    }
    ASSERT_TRUE(reader->Finish().ok());
    ASSERT_EQ(ids.size(), 50u);
    for (size_t i = 0; i < ids.size(); ++i) EXPECT_EQ(ids[i], (i + 1) * 7);
    EXPECT_EQ(pages, page_size == 7 ? 8 : 4);
  }
  // An empty session streams one empty page; an unknown one is NOT_FOUND.
  ASSERT_TRUE(Create("e").ok());
  v1::ListCollidersRequest lreq;
  lreq.set_session_id("e");
  {
    grpc::ClientContext ctx;
    auto reader = stub_->ListColliders(&ctx, lreq);
    v1::ListCollidersResponse page;
    int pages = 0;
    while (reader->Read(&page)) ++pages;
    EXPECT_TRUE(reader->Finish().ok());
    EXPECT_EQ(pages, 1);
  }
  lreq.set_session_id("unknown");
  grpc::ClientContext ctx;
  auto reader = stub_->ListColliders(&ctx, lreq);
  v1::ListCollidersResponse page;
  EXPECT_FALSE(reader->Read(&page));
  EXPECT_EQ(reader->Finish().error_code(), grpc::StatusCode::NOT_FOUND);
}

// The tick stream: binding, per-tick errors that change nothing, results
// after changes, a different session id, and deletion mid-stream.
TEST_F(ServiceTest, TickStream) {
  ASSERT_TRUE(Create("t").ok());
  AddSpheres("t", 3);
  grpc::ClientContext ctx;
  auto stream = stub_->Tick(&ctx);
  v1::TickRequest req;
  v1::TickResponse resp;

  req.set_tick(1);  // no session named yet
  ASSERT_TRUE(stream->Write(req) && stream->Read(&resp));
  EXPECT_EQ(resp.tick(), 1u);
  ASSERT_TRUE(resp.has_error());
  EXPECT_EQ(resp.error().code(), static_cast<int>(grpc::StatusCode::INVALID_ARGUMENT));
  EXPECT_THAT(resp.error().message(), HasSubstr("session_id"));

  req.set_session_id("t");
  req.set_tick(2);
  v1::MoveCollider* mv = req.add_changes()->mutable_move();
  mv->set_id(1);
  mv->mutable_pose()->mutable_position()->set_y(50);
  v1::RayQuery* ray = req.add_queries()->mutable_raycast();
  ray->mutable_origin()->set_y(50);
  ray->mutable_origin()->set_x(-10);
  ray->mutable_translation()->set_x(20);
  req.mutable_queries(0)->set_tag(5);
  ASSERT_TRUE(stream->Write(req) && stream->Read(&resp));
  ASSERT_FALSE(resp.has_error()) << resp.error().message();
  EXPECT_EQ(resp.tick(), 2u);
  EXPECT_EQ(resp.revision(), 2u);
  ASSERT_EQ(resp.results_size(), 1);
  EXPECT_EQ(resp.results(0).tag(), 5u);

  // A bad tick: valid move then NaN; nothing changes, the stream goes on.
  const std::string before = Snapshot("t");
  v1::TickRequest bad;
  bad.set_tick(3);
  bad.add_changes()->mutable_move()->set_id(2);
  bad.mutable_changes(0)->mutable_move()->mutable_pose()->mutable_position()->set_z(1);
  bad.add_changes()->mutable_move()->set_id(3);
  bad.mutable_changes(1)->mutable_move()->mutable_pose()->mutable_position()->set_z(kNaN);
  ASSERT_TRUE(stream->Write(bad) && stream->Read(&resp));
  ASSERT_TRUE(resp.has_error());
  EXPECT_EQ(resp.error().code(), static_cast<int>(grpc::StatusCode::INVALID_ARGUMENT));
  EXPECT_THAT(resp.error().message(), HasSubstr("changes[1].move.pose.position.z"));
  EXPECT_EQ(resp.results_size(), 0);
  EXPECT_EQ(Snapshot("t"), before);
  EXPECT_EQ(Info("t").revision(), 2u);

  bad.Clear();
  bad.set_tick(4);
  bad.add_changes()->set_remove(77);
  ASSERT_TRUE(stream->Write(bad) && stream->Read(&resp));
  EXPECT_EQ(resp.error().code(), static_cast<int>(grpc::StatusCode::NOT_FOUND));

  bad.Clear();
  bad.set_tick(5);
  bad.set_session_id("other");
  ASSERT_TRUE(stream->Write(bad) && stream->Read(&resp));
  EXPECT_EQ(resp.error().code(), static_cast<int>(grpc::StatusCode::INVALID_ARGUMENT));
  EXPECT_THAT(resp.error().message(), HasSubstr("bound to session 't'"));

  // Queries-only tick, same session repeated.
  v1::TickRequest q;
  q.set_tick(6);
  q.set_session_id("t");
  *q.add_queries() = req.queries(0);
  ASSERT_TRUE(stream->Write(q) && stream->Read(&resp));
  ASSERT_FALSE(resp.has_error());
  EXPECT_EQ(resp.revision(), 2u);
  EXPECT_EQ(resp.results_size(), 1);

  v1::DeleteSessionRequest del;
  del.set_session_id("t");
  v1::DeleteSessionResponse dresp;
  {
    grpc::ClientContext dctx;
    ASSERT_TRUE(stub_->DeleteSession(&dctx, del, &dresp).ok());
  }
  // The deletion ended the stream (it was waiting for tick 7): no answer, and
  // the status says why. A re-created session of the same name is not picked up.
  ASSERT_TRUE(Create("t").ok());
  q.set_tick(7);
  stream->Write(q);  // may already fail: the server finished the call
  EXPECT_FALSE(stream->Read(&resp));
  const grpc::Status ended = stream->Finish();
  EXPECT_EQ(ended.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_THAT(ended.error_message(), HasSubstr("session 't' was deleted"));

  // A stream naming an unknown session gets NOT_FOUND ticks.
  grpc::ClientContext ctx2;
  auto s2 = stub_->Tick(&ctx2);
  q.set_session_id("ghost");
  ASSERT_TRUE(s2->Write(q) && s2->Read(&resp));
  EXPECT_EQ(resp.error().code(), static_cast<int>(grpc::StatusCode::NOT_FOUND));
  s2->WritesDone();
  EXPECT_TRUE(s2->Finish().ok());
}

// Queries never see half a batch: a writer moves a group of 10 spheres in and
// out of a probe region in single batches while readers count what they see.
TEST_F(ServiceTest, QueriesNeverSeeHalfABatch) {
  ASSERT_TRUE(Create("atomic").ok());
  AddSpheres("atomic", 10);  // x = 3..30, y = 0
  std::atomic<bool> stop{false};
  std::atomic<int> bad{0}, seen{0};
  auto reader = [&] {
    auto stub = v1::Hitbox::NewStub(server_->InProcessChannel());
    v1::QueryRequest req;
    req.set_session_id("atomic");
    v1::OverlapQuery* o = req.add_queries()->mutable_overlap();
    v1::Vec3* he = o->mutable_shape()->mutable_box()->mutable_half_extents();
    he->set_x(100);
    he->set_y(1);
    he->set_z(1);
    while (!stop.load()) {
      grpc::ClientContext ctx;
      v1::QueryResponse resp;
      if (!stub->Query(&ctx, req, &resp).ok()) {
        ++bad;
        continue;
      }
      const int n = resp.results(0).overlaps_size();
      if (n != 0 && n != 8) ++bad;  // 8: the hit cap, all inside
      ++seen;
    }
  };
  std::thread r1(reader), r2(reader);
  // At least 100 batches, and on until the readers answered 300 queries
  // (bounded: a loaded machine may start the readers late).
  for (int round = 0; round < 100 || (seen.load() < 300 && round < 100000); ++round) {
    v1::ApplyChangesRequest req;
    req.set_session_id("atomic");
    for (int i = 1; i <= 10; ++i) {
      v1::MoveCollider* mv = req.add_changes()->mutable_move();
      mv->set_id(i);
      mv->mutable_pose()->mutable_position()->set_x(3.0 * i);
      mv->mutable_pose()->mutable_position()->set_y(round % 2 == 0 ? 50.0 : 0.0);
    }
    ASSERT_TRUE(Apply(req).ok());
  }
  stop = true;
  r1.join();
  r2.join();
  EXPECT_EQ(bad.load(), 0);
  EXPECT_GE(seen.load(), 300);
}

}  // namespace
}  // namespace hitbox

namespace hitbox {
namespace {

// Answers are bounded by the message size: a Query whose hits would not fit is
// RESOURCE_EXHAUSTED, and a tick with changes whose queries could overflow is
// rejected before its changes apply (nothing changes).
TEST(ServiceLimitsTest, HitBudgetFollowsMaxMessageBytes) {
  server::ServerOptions o;
  o.listen = "127.0.0.1:0";
  o.service.threads = 1;
  o.service.limits.max_message_bytes = 4096;  // 64 hits of 64 bytes
  o.service.limits.session.max_hits_per_query = 8;
  Result<std::unique_ptr<server::HitboxServer>> started = server::HitboxServer::Start(o);
  ASSERT_TRUE(started.ok()) << started.error().message;
  server::HitboxService& svc = (*started)->service();
  v1::CreateSessionRequest create;
  create.set_session_id("b");
  v1::SessionInfo info;
  ASSERT_TRUE(svc.DoCreateSession(create, &info).ok());
  v1::ApplyChangesRequest add;
  add.set_session_id("b");
  for (int i = 0; i < 20; ++i) *add.add_changes()->mutable_add() = SphereMsg(i, 1, {0.1 * i, 0, 0});
  v1::ApplyChangesResponse applied;
  ASSERT_TRUE(svc.DoApplyChanges(add, &applied).ok());

  v1::QueryRequest q;
  q.set_session_id("b");
  for (int i = 0; i < 12; ++i) {
    q.add_queries()->mutable_overlap()->mutable_shape()->mutable_sphere()->set_radius(50);
  }
  v1::QueryResponse resp;
  grpc::Status st = svc.DoQuery(q, &resp);  // 12 x 8 = 96 hits > 64
  EXPECT_EQ(st.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_THAT(st.error_message(), HasSubstr("max_hits"));
  q.mutable_queries()->DeleteSubrange(8, 4);  // 8 x 8 = 64 fits
  resp.Clear();
  ASSERT_TRUE(svc.DoQuery(q, &resp).ok());
  EXPECT_EQ(resp.results_size(), 8);

  server::HitboxService::TickStream stream;
  v1::TickRequest tick;
  tick.set_session_id("b");
  tick.add_changes()->set_remove(3);
  for (int i = 0; i < 9; ++i) *tick.add_queries() = q.queries(0);  // worst case 72 > 64
  v1::TickResponse tresp;
  svc.DoTick(&stream, tick, &tresp);
  ASSERT_TRUE(tresp.has_error());
  EXPECT_EQ(tresp.error().code(), static_cast<int>(grpc::StatusCode::RESOURCE_EXHAUSTED));
  v1::GetSessionRequest get;
  get.set_session_id("b");
  ASSERT_TRUE(svc.DoGetSession(get, &info).ok());
  EXPECT_EQ(info.collider_count(), 20u);  // the remove did not apply
  EXPECT_EQ(info.revision(), 1u);
  (*started)->Shutdown(std::chrono::milliseconds(0));
}

// A tick with changes is budgeted by the hits its queries do return: nine
// overlaps that could each return 8 (72 > 64 at worst) but return one each
// run and the changes apply; the same tick finding 72 is refused and changes
// nothing.
TEST(ServiceLimitsTest, TickWithChangesIsBudgetedByReturnedHits) {
  server::ServerOptions o;
  o.listen = "127.0.0.1:0";
  o.service.threads = 1;
  o.service.limits.max_message_bytes = 4096;  // 64 hits of 64 bytes
  o.service.limits.session.max_hits_per_query = 8;
  Result<std::unique_ptr<server::HitboxServer>> started = server::HitboxServer::Start(o);
  ASSERT_TRUE(started.ok()) << started.error().message;
  server::HitboxService& svc = (*started)->service();
  v1::CreateSessionRequest create;
  create.set_session_id("b");
  v1::SessionInfo info;
  ASSERT_TRUE(svc.DoCreateSession(create, &info).ok());
  v1::ApplyChangesRequest add;
  add.set_session_id("b");
  for (int i = 0; i < 20; ++i) *add.add_changes()->mutable_add() = SphereMsg(i, 0.5, {3.0 * i, 0, 0});
  v1::ApplyChangesResponse applied;
  ASSERT_TRUE(svc.DoApplyChanges(add, &applied).ok());
  v1::GetSessionRequest get;
  get.set_session_id("b");

  server::HitboxService::TickStream stream;
  v1::TickRequest tick;
  tick.set_session_id("b");
  tick.add_changes()->set_remove(3);
  for (int i = 0; i < 9; ++i) {  // max_hits 0: the session's 8 each, 72 at worst
    v1::OverlapQuery* q = tick.add_queries()->mutable_overlap();
    q->mutable_shape()->mutable_sphere()->set_radius(0.6);
    q->mutable_pose()->mutable_position()->set_x(3.0 * (10 + i));  // one sphere each
  }
  v1::TickResponse tresp;
  svc.DoTick(&stream, tick, &tresp);
  ASSERT_FALSE(tresp.has_error()) << tresp.error().message();
  ASSERT_EQ(tresp.results_size(), 9);
  for (const v1::QueryResult& r : tresp.results()) {
    EXPECT_EQ(r.overlaps_size(), 1);
    EXPECT_FALSE(r.truncated());
  }
  ASSERT_TRUE(svc.DoGetSession(get, &info).ok());
  EXPECT_EQ(info.collider_count(), 19u);  // the remove applied
  const uint64_t revision = info.revision();

  // Now they find 8 each (72 > 64): refused by what they return, nothing changes.
  v1::TickRequest big = tick;
  big.mutable_changes(0)->set_remove(4);
  for (v1::Query& q : *big.mutable_queries()) {
    q.mutable_overlap()->mutable_shape()->mutable_sphere()->set_radius(100);
  }
  tresp.Clear();
  server::HitboxService::TickStream stream2;
  svc.DoTick(&stream2, big, &tresp);
  ASSERT_TRUE(tresp.has_error());
  EXPECT_EQ(tresp.error().code(), static_cast<int>(grpc::StatusCode::RESOURCE_EXHAUSTED));
  EXPECT_THAT(tresp.error().message(), HasSubstr("hits"));
  ASSERT_TRUE(svc.DoGetSession(get, &info).ok());
  EXPECT_EQ(info.collider_count(), 19u);  // the remove of 4 did not apply
  EXPECT_EQ(info.revision(), revision);
  (*started)->Shutdown(std::chrono::milliseconds(0));
}

}  // namespace
}  // namespace hitbox
