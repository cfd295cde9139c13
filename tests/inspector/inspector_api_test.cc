// The inspector's JSON API (server/inspector_api.h) on an in-process
// hitboxd: the rpcs' access rules (protected mode, admin and session tokens),
// the world now and at a past tick, recorded queries, map triangles, and the
// same over the real HTTP endpoint (--http-listen) with the embedded page.
#include <httplib.h>

#include <memory>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "inspector_api.h"
#include "server.h"
#include "hitbox/v1/hitbox.grpc.pb.h"
#include "hitbox/wire/convert.h"

namespace hitbox {
namespace {

using ::testing::HasSubstr;
using json = nlohmann::json;

constexpr const char* kAdmin = "inspector-admin-token-0123456789";
constexpr const char* kLocal = "ipv4:127.0.0.1:40000";
constexpr const char* kRemote = "ipv4:10.1.2.3:40000";

class InspectorApiTest : public ::testing::Test {
 protected:
  // Starts a server: `admin` configures the admin token; queries recorded:
  // `record` (--record-queries).
  void Start(bool admin, uint32_t record = 2) {
    server::ServerOptions o;
    o.listen = "127.0.0.1:0";
    o.http_listen = "127.0.0.1:0";
    o.service.threads = 1;
    o.service.record_query_ticks = record;
    if (admin) o.service.auth.admin_token = kAdmin;
    o.maps_dir = std::string(HITBOX_SOURCE_DIR) + "/examples/maps";
    Result<std::unique_ptr<server::HitboxServer>> s = server::HitboxServer::Start(o);
    ASSERT_TRUE(s.ok()) << s.error().message;
    server_ = std::move(*s);
    stub_ = v1::Hitbox::NewStub(server_->InProcessChannel());
    api_ = std::make_unique<server::InspectorApi>(&server_->service());
  }

  // Creates session `id` (on the arena map when `map`); returns its token.
  std::string Create(const std::string& id, bool map = false) {
    v1::CreateSessionRequest req;
    req.set_session_id(id);
    if (map) req.set_map_id("arena");
    v1::SessionInfo info;
    grpc::ClientContext ctx;
    ctx.AddMetadata("authorization", std::string("Bearer ") + kAdmin);
    const grpc::Status st = stub_->CreateSession(&ctx, req, &info);
    EXPECT_TRUE(st.ok()) << st.error_message();
    return info.token();
  }

  // Applies one change batch at `tick`: collider 7 (a box) at x = tick.
  void TickMove(const std::string& id, uint64_t tick) {
    v1::ApplyChangesRequest req;
    req.set_session_id(id);
    req.set_tick(tick);
    Collider c;
    c.id = 7;
    c.shape = *Shape::MakeBox({1, 2, 3});
    c.pose = Pose({static_cast<double>(tick), 0, 0});
    c.layer = 5;
    if (tick == 1) {
      wire::ToProto(c, req.add_changes()->mutable_add());
    } else {
      v1::MoveCollider* m = req.add_changes()->mutable_move();
      m->set_id(7);
      wire::ToProto(c.pose, m->mutable_pose());
    }
    v1::ApplyChangesResponse resp;
    grpc::ClientContext ctx;
    ctx.AddMetadata("authorization", std::string("Bearer ") + kAdmin);
    const grpc::Status st = stub_->ApplyChanges(&ctx, req, &resp);
    ASSERT_TRUE(st.ok()) << st.error_message();
  }

  // One raycast through collider 7 on session `id`.
  void Ray(const std::string& id) {
    v1::QueryRequest req;
    req.set_session_id(id);
    v1::RayQuery* r = req.add_queries()->mutable_raycast();
    wire::ToProto(Vec3(-10, 0, 0), r->mutable_origin());
    wire::ToProto(Vec3(20, 0, 0), r->mutable_translation());
    v1::QueryResponse resp;
    grpc::ClientContext ctx;
    ctx.AddMetadata("authorization", std::string("Bearer ") + kAdmin);
    ASSERT_TRUE(stub_->Query(&ctx, req, &resp).ok());
  }

  server::InspectorAnswer Get(const std::string& path, const char* token = nullptr,
                              const char* peer = kLocal,
                              std::map<std::string, std::string> params = {}) {
    server::InspectorRequest r;
    r.path = path;
    r.peer = peer;
    r.params = std::move(params);
    if (token != nullptr) r.authorization = std::string("Bearer ") + token;
    return api_->Handle(r);
  }

  std::unique_ptr<server::HitboxServer> server_;
  std::unique_ptr<v1::Hitbox::Stub> stub_;
  std::unique_ptr<server::InspectorApi> api_;
};

// Without credentials, protected mode: loopback peers only.
TEST_F(InspectorApiTest, ProtectedModeServesLoopbackOnly) {
  Start(/*admin=*/false);
  Create("a");
  EXPECT_EQ(Get("/api/sessions", nullptr, kRemote).status, 403);
  EXPECT_EQ(Get("/api/sessions/a/world", nullptr, kRemote).status, 403);
  EXPECT_EQ(Get("/api/sessions", nullptr, "ipv6:[::1]:5").status, 200);
  const server::InspectorAnswer a = Get("/api/sessions");
  ASSERT_EQ(a.status, 200) << a.body;
  EXPECT_EQ(json::parse(a.body)["sessions"].size(), 1u);
}

// With an admin token: nothing without a token; the admin sees every session,
// a session's token only its own.
TEST_F(InspectorApiTest, TokensDecideWhatIsReadable) {
  Start(/*admin=*/true);
  const std::string a = Create("a");
  const std::string b = Create("b");
  for (const char* path : {"/api/sessions", "/api/sessions/a", "/api/sessions/a/world",
                           "/api/sessions/a/queries", "/api/sessions/a/map"}) {
    EXPECT_EQ(Get(path).status, 401) << path;
    EXPECT_EQ(Get(path, "wrong-token-wrong-token").status, 403) << path;
  }
  const json all = json::parse(Get("/api/sessions", kAdmin).body);
  EXPECT_EQ(all["sessions"].size(), 2u);
  EXPECT_TRUE(all["admin"].get<bool>());
  const server::InspectorAnswer mine = Get("/api/sessions", a.c_str());
  ASSERT_EQ(mine.status, 200) << mine.body;
  const json only = json::parse(mine.body);
  ASSERT_EQ(only["sessions"].size(), 1u);
  EXPECT_EQ(only["sessions"][0]["id"], "a");
  EXPECT_TRUE(only["maps"].empty());
  EXPECT_EQ(Get("/api/sessions/a/world", a.c_str()).status, 200);
  EXPECT_EQ(Get("/api/sessions/b/world", a.c_str()).status, 403);
  EXPECT_EQ(Get("/api/sessions/b/world", b.c_str()).status, 200);
  // An unknown session reads as a refused one to a session token, 404 to the admin.
  EXPECT_EQ(Get("/api/sessions/nope/world", a.c_str()).status, 403);
  EXPECT_EQ(Get("/api/sessions/nope/world", kAdmin).status, 404);
  EXPECT_EQ(Get("/api/elsewhere", kAdmin).status, 404);
}

// The world lists every collider with its shape, pose and layer; at a past
// tick it is the pose of that tick; bad ticks are a 400 naming the field.
TEST_F(InspectorApiTest, WorldNowAndAtPastTick) {
  Start(/*admin=*/true);
  Create("w");
  for (uint64_t t = 1; t <= 5; ++t) TickMove("w", t);
  const server::InspectorAnswer now = Get("/api/sessions/w/world", kAdmin);
  ASSERT_EQ(now.status, 200) << now.body;
  const json w = json::parse(now.body);
  ASSERT_EQ(w["colliders"].size(), 1u);
  const json& c = w["colliders"][0];
  EXPECT_EQ(c["id"], 7);
  EXPECT_EQ(c["layer"], 5);
  EXPECT_EQ(c["shape"]["kind"], "box");
  EXPECT_EQ(c["shape"]["half"], json::array({1, 2, 3}));
  EXPECT_EQ(c["p"], json::array({5, 0, 0}));
  EXPECT_EQ(w["newest_tick"], 5);
  EXPECT_EQ(w["oldest_tick"], 1);

  const json past = json::parse(Get("/api/sessions/w/world", kAdmin, kLocal, {{"tick", "2"}}).body);
  ASSERT_EQ(past["colliders"].size(), 1u);
  EXPECT_EQ(past["colliders"][0]["p"], json::array({2, 0, 0}));
  EXPECT_EQ(past["tick"], 2);
  const json half = json::parse(Get("/api/sessions/w/world", kAdmin, kLocal, {{"tick", "2.5"}}).body);
  EXPECT_EQ(half["colliders"][0]["p"], json::array({2.5, 0, 0}));

  const server::InspectorAnswer bad = Get("/api/sessions/w/world", kAdmin, kLocal, {{"tick", "x"}});
  EXPECT_EQ(bad.status, 400);
  EXPECT_THAT(bad.body, HasSubstr("tick: expected a tick number"));
  const server::InspectorAnswer old = Get("/api/sessions/w/world", kAdmin, kLocal, {{"tick", "99"}});
  EXPECT_EQ(old.status, 400);
  EXPECT_THAT(old.body, HasSubstr("outside the history (ticks 1..5)"));
}

// --record-queries 2 keeps the last two calls' queries and their hits.
TEST_F(InspectorApiTest, RecordsTheLastQueries) {
  Start(/*admin=*/true);
  Create("q");
  TickMove("q", 1);
  for (int i = 0; i < 3; ++i) {
    v1::QueryRequest req;
    req.set_session_id("q");
    v1::RayQuery* r = req.add_queries()->mutable_raycast();
    wire::ToProto(Vec3(-10, 0, 0), r->mutable_origin());
    wire::ToProto(Vec3(20, 0, 0), r->mutable_translation());
    req.mutable_queries(0)->set_tag(100 + i);
    v1::QueryResponse resp;
    grpc::ClientContext ctx;
    ctx.AddMetadata("authorization", std::string("Bearer ") + kAdmin);
    ASSERT_TRUE(stub_->Query(&ctx, req, &resp).ok());
  }
  const json q = json::parse(Get("/api/sessions/q/queries", kAdmin).body);
  EXPECT_EQ(q["recording"], 2);
  ASSERT_EQ(q["ticks"].size(), 2u);
  const json& last = q["ticks"][1];
  EXPECT_EQ(last["tick"], 1);
  ASSERT_EQ(last["queries"].size(), 1u);
  EXPECT_EQ(last["queries"][0]["kind"], "ray");
  EXPECT_EQ(last["queries"][0]["tag"], 102);
  ASSERT_EQ(last["queries"][0]["hits"].size(), 1u);
  EXPECT_EQ(last["queries"][0]["hits"][0]["id"], 7);
  EXPECT_EQ(last["queries"][0]["hits"][0]["point"], json::array({0, 0, 0}));

  // ?last=K keeps the newest K; ?tick=T the entries of that tick.
  const json newest = json::parse(Get("/api/sessions/q/queries", kAdmin, kLocal, {{"last", "1"}}).body);
  ASSERT_EQ(newest["ticks"].size(), 1u);
  EXPECT_EQ(newest["ticks"][0]["queries"][0]["tag"], 102);
  EXPECT_EQ(json::parse(Get("/api/sessions/q/queries", kAdmin, kLocal, {{"tick", "1"}}).body)["ticks"].size(), 2u);
  EXPECT_EQ(json::parse(Get("/api/sessions/q/queries", kAdmin, kLocal, {{"tick", "2"}}).body)["ticks"].size(), 0u);
  const server::InspectorAnswer bad = Get("/api/sessions/q/queries", kAdmin, kLocal, {{"last", "-1"}});
  EXPECT_EQ(bad.status, 400);
  EXPECT_THAT(bad.body, HasSubstr("last: expected a whole number"));
}

// Without --record-queries, a session's queries are recorded only while an
// inspector reads it (its world or queries).
TEST_F(InspectorApiTest, RecordsWhileWatched) {
  Start(/*admin=*/true, /*record=*/0);
  Create("v");
  TickMove("v", 1);
  Ray("v");
  EXPECT_EQ(server_->service().sessions().Find("v")->recorder().size(), 0u);
  ASSERT_EQ(Get("/api/sessions/v/world", kAdmin).status, 200);  // now watched
  Ray("v");
  const json q = json::parse(Get("/api/sessions/v/queries", kAdmin).body);
  EXPECT_EQ(q["recording"], server::kWatchedRecordTicks);
  ASSERT_EQ(q["ticks"].size(), 1u);
  EXPECT_EQ(q["ticks"][0]["tick"], 1);
}

// Watching lasts until the time given (the clock is passed in).
TEST(QueryRecorderTest, WatchedUntil) {
  server::QueryRecorder r;
  EXPECT_FALSE(r.ever_watched());
  EXPECT_EQ(r.Capacity(0, 0), 0u);
  EXPECT_EQ(r.Capacity(5, 0), 5u);
  r.Watch(1000);
  EXPECT_TRUE(r.ever_watched());
  EXPECT_TRUE(r.Watched(999));
  EXPECT_FALSE(r.Watched(1000));
  EXPECT_EQ(r.Capacity(0, 999), server::kWatchedRecordTicks);
  EXPECT_EQ(r.Capacity(0, 1000), 0u);
  EXPECT_EQ(r.Capacity(3, 999), 3u);
}

// A session on the arena map gets the map's surfaces as world triangles.
TEST_F(InspectorApiTest, MapGeometryAsTriangles) {
  Start(/*admin=*/true);
  Create("m", /*map=*/true);
  const server::InspectorAnswer a = Get("/api/sessions/m/map", kAdmin);
  ASSERT_EQ(a.status, 200);
  const json m = json::parse(a.body);
  EXPECT_EQ(m["map"], "arena");
  const auto& positions = m["positions"];
  const auto& indices = m["indices"];
  EXPECT_GT(m["triangles"].get<size_t>(), 1000u);
  EXPECT_EQ(indices.size(), 3 * m["triangles"].get<size_t>());
  ASSERT_EQ(positions.size() % 3, 0u);
  uint32_t top = 0;
  for (const auto& i : indices) top = std::max(top, i.get<uint32_t>());
  EXPECT_LT(top, positions.size() / 3);
  EXPECT_FALSE(m["colliders"].empty());  // the arena's convex props
  EXPECT_EQ(json::parse(Get("/api/sessions/m", kAdmin).body)["map"], "arena");
}

// The HTTP endpoint: the page and three.js from the binary, /metrics as
// before, the API behind the bearer header.
TEST_F(InspectorApiTest, ServedOverHttp) {
  Start(/*admin=*/true);
  const std::string token = Create("h");
  httplib::Client http("127.0.0.1", server_->metrics_port());
  const auto page = http.Get("/");
  ASSERT_TRUE(page);
  EXPECT_EQ(page->status, 200);
  EXPECT_THAT(page->body, HasSubstr("/three/three.min.js"));
  EXPECT_THAT(page->get_header_value("Content-Type"), HasSubstr("text/html"));
  const auto three = http.Get("/three/three.min.js");
  ASSERT_TRUE(three);
  EXPECT_GT(three->body.size(), 100000u);
  EXPECT_EQ(http.Get("/three/missing.js")->status, 404);
  EXPECT_THAT(http.Get("/metrics")->body, HasSubstr("hitbox_sessions 1"));
  const auto refused = http.Get("/api/sessions");
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->status, 401);
  EXPECT_EQ(refused->get_header_value("WWW-Authenticate"), "Bearer");
  const auto ok = http.Get("/api/sessions/h/world", {{"Authorization", "Bearer " + token}});
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200) << ok->body;
  EXPECT_EQ(json::parse(ok->body)["id"], "h");
}

}  // namespace
}  // namespace hitbox
