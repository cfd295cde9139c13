// The inspector's JSON API (server/inspector_api.h) on an in-process
// hitboxd: the rpcs' access rules (protected mode, admin and session tokens),
// the world now and at a past tick, recorded queries, map triangles, and the
// same over the real HTTP endpoint (--http-listen) with the embedded page.
#include <httplib.h>

#include <atomic>
#include <memory>
#include <string>
#include <thread>

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

  // Adds watch 3, a sphere of radius 2 at the origin, to session `id`.
  void AddWatch(const std::string& id) {
    v1::ApplyChangesRequest req;
    req.set_session_id(id);
    Watch w;
    w.id = 3;
    w.shape = *Shape::MakeSphere(2);
    wire::ToProto(w, req.add_changes()->mutable_add_watch());
    v1::ApplyChangesResponse resp;
    grpc::ClientContext ctx;
    ctx.AddMetadata("authorization", std::string("Bearer ") + kAdmin);
    const grpc::Status st = stub_->ApplyChanges(&ctx, req, &resp);
    ASSERT_TRUE(st.ok()) << st.error_message();
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

// The data of one server-sent event ("event: world\ndata: {...}\n\n").
json EventData(const std::string& event, std::string* name = nullptr) {
  const size_t nl = event.find('\n');
  if (name != nullptr) *name = event.substr(7, nl - 7);
  EXPECT_EQ(event.compare(nl + 1, 6, "data: "), 0) << event;
  return json::parse(event.substr(nl + 7));
}

// A stream's first event carries the whole world; later ones what changed:
// moved colliders as id and pose, added ones whole, removed ones as ids,
// the newest recorded queries once; it ends when the session is deleted.
TEST_F(InspectorApiTest, StreamSendsWhatChanged) {
  Start(/*admin=*/true);
  Create("s");
  TickMove("s", 1);
  server::InspectorAnswer a = Get("/api/sessions/s/stream", kAdmin);
  ASSERT_EQ(a.status, 200) << a.body;
  ASSERT_NE(a.stream, nullptr);
  EXPECT_EQ(a.content_type, "text/event-stream");
  std::string e;
  std::string name;
  ASSERT_TRUE(a.stream->Event(&e));
  json d = EventData(e, &name);
  EXPECT_EQ(name, "world");
  EXPECT_EQ(d["full"], true);
  ASSERT_EQ(d["added"].size(), 1u);
  EXPECT_EQ(d["added"][0]["id"], 7);
  EXPECT_EQ(d["newest_tick"], 1);
  EXPECT_FALSE(d.contains("queries"));

  TickMove("s", 2);
  Ray("s");
  e.clear();
  ASSERT_TRUE(a.stream->Event(&e));
  d = EventData(e);
  EXPECT_EQ(d["full"], false);
  EXPECT_EQ(d["added"].size(), 0u);
  ASSERT_EQ(d["moved"].size(), 1u);
  EXPECT_EQ(d["moved"][0], json::parse("[7,[2,0,0],[0,0,0,1]]"));
  EXPECT_EQ(d["removed"].size(), 0u);
  ASSERT_TRUE(d.contains("queries"));
  EXPECT_EQ(d["queries"]["queries"][0]["hits"][0]["id"], 7);

  // Nothing new: no colliders, no queries (nor before 5 events since the last).
  e.clear();
  ASSERT_TRUE(a.stream->Event(&e));
  d = EventData(e);
  EXPECT_FALSE(d.contains("added"));
  EXPECT_FALSE(d.contains("moved"));
  EXPECT_FALSE(d.contains("queries"));
  EXPECT_EQ(d["seq"], 3);

  // A watch: listed with its inside set (collider 7 at x = 2 touches it).
  AddWatch("s");
  e.clear();
  ASSERT_TRUE(a.stream->Event(&e));
  d = EventData(e);
  ASSERT_EQ(d["watches"].size(), 1u);
  EXPECT_EQ(d["watches"][0]["id"], 3);
  EXPECT_EQ(d["watches"][0]["inside"], json::array({7}));
  EXPECT_EQ(d["watches"][0]["shape"]["kind"], "sphere");

  // Removed, then the session deleted: the stream ends saying why.
  {
    v1::ApplyChangesRequest req;
    req.set_session_id("s");
    req.add_changes()->set_remove(7);
    v1::ApplyChangesResponse resp;
    grpc::ClientContext ctx;
    ctx.AddMetadata("authorization", std::string("Bearer ") + kAdmin);
    ASSERT_TRUE(stub_->ApplyChanges(&ctx, req, &resp).ok());
  }
  e.clear();
  ASSERT_TRUE(a.stream->Event(&e));
  EXPECT_EQ(EventData(e)["removed"], json::array({7}));
  ASSERT_TRUE(server_->service().sessions().Remove("s") != nullptr);
  e.clear();
  EXPECT_FALSE(a.stream->Event(&e));
  EXPECT_EQ(EventData(e, &name)["reason"], "session_id: session 's' was deleted");
  EXPECT_EQ(name, "end");
  EXPECT_FALSE(a.stream->Next(&e));
}

// Streams are bounded per session and in all, with the limit named; a closed
// stream frees its place; the sessions list counts them.
TEST_F(InspectorApiTest, StreamLimits) {
  Start(/*admin=*/true);
  std::vector<std::unique_ptr<server::InspectorStream>> open;
  for (size_t i = 0; i < server::kMaxInspectorStreams; ++i) {
    std::string id = "l";
    id += std::to_string(i / server::kMaxInspectorStreamsPerSession);
    if (i % server::kMaxInspectorStreamsPerSession == 0) Create(id);
    std::string path = "/api/sessions/";  // appended: gcc 12's -Wrestrict misfires on +
    path += id;
    path += "/stream";
    server::InspectorAnswer a = Get(path, kAdmin);
    ASSERT_EQ(a.status, 200) << a.body;
    open.push_back(std::move(a.stream));
  }
  const server::InspectorAnswer per = Get("/api/sessions/l0/stream", kAdmin);
  EXPECT_EQ(per.status, 429);
  EXPECT_THAT(per.body, HasSubstr("at most 4 per session"));
  Create("other");
  const server::InspectorAnswer all = Get("/api/sessions/other/stream", kAdmin);
  EXPECT_EQ(all.status, 429);
  EXPECT_THAT(all.body, HasSubstr("at most 16 on this server"));
  const json list = json::parse(Get("/api/sessions", kAdmin).body);
  EXPECT_EQ(list["sessions"][0]["streams"], 4);
  EXPECT_EQ(api_->open_streams(), server::kMaxInspectorStreams);
  open.pop_back();
  EXPECT_EQ(Get("/api/sessions/other/stream", kAdmin).status, 200);  // freed on return
  EXPECT_EQ(api_->open_streams(), server::kMaxInspectorStreams - 1);
  // Same access rules as the rest of the API.
  EXPECT_EQ(Get("/api/sessions/l0/stream").status, 401);
  EXPECT_EQ(Get("/api/sessions/l0/stream", "wrong-token").status, 403);
}

// Stop() ends open streams at once (no wait for the next event) and refuses new ones.
TEST_F(InspectorApiTest, StopEndsStreams) {
  Start(/*admin=*/true);
  Create("x");
  server::InspectorAnswer a = Get("/api/sessions/x/stream", kAdmin);
  ASSERT_NE(a.stream, nullptr);
  std::string e;
  ASSERT_TRUE(a.stream->Next(&e));  // the first event is due at once
  std::thread stopper([&] { api_->Stop(); });
  e.clear();
  EXPECT_FALSE(a.stream->Next(&e));  // woken by Stop, or stopped already
  stopper.join();
  std::string name;
  EXPECT_EQ(EventData(e, &name)["reason"], "the server is stopping");
  EXPECT_EQ(Get("/api/sessions/x/stream", kAdmin).status, 503);
}

// The sessions list's rates, from the clock given: ticks and queries per
// second between two reads a second or more apart.
TEST_F(InspectorApiTest, SessionRatesFromTheClock) {
  Start(/*admin=*/true);
  int64_t now_ns = 5'000'000'000;
  api_ = std::make_unique<server::InspectorApi>(&server_->service(), [&] { return now_ns; });
  Create("r");
  TickMove("r", 1);
  json list = json::parse(Get("/api/sessions", kAdmin).body);
  EXPECT_TRUE(list["sessions"][0]["ticks_per_s"].is_null());
  for (uint64_t t = 2; t <= 21; ++t) TickMove("r", t);
  for (int i = 0; i < 10; ++i) Ray("r");
  now_ns += 500'000'000;  // half a second: not measured yet
  EXPECT_TRUE(json::parse(Get("/api/sessions", kAdmin).body)["sessions"][0]["ticks_per_s"].is_null());
  now_ns += 1'500'000'000;  // two seconds since the first read
  list = json::parse(Get("/api/sessions", kAdmin).body);
  EXPECT_EQ(list["sessions"][0]["ticks_per_s"], 10.0);
  EXPECT_EQ(list["sessions"][0]["queries_per_s"], 5.0);
  EXPECT_EQ(list["sessions"][0]["streams"], 0);
}

// The world answer lists the watches with their inside sets.
TEST_F(InspectorApiTest, WorldListsWatches) {
  Start(/*admin=*/true);
  Create("w");
  TickMove("w", 1);
  AddWatch("w");
  const json w = json::parse(Get("/api/sessions/w/world", kAdmin).body);
  ASSERT_EQ(w["watches"].size(), 1u);
  EXPECT_EQ(w["watches"][0]["inside"], json::array({7}));
  EXPECT_EQ(w["watches"][0]["inside_count"], 1);
  EXPECT_TRUE(w["watches"][0]["attach_to"].is_null());
}

// Over HTTP: the stream is text/event-stream; a server stopping with a
// stream open ends it and does not hang.
TEST_F(InspectorApiTest, StreamOverHttpEndsAtShutdown) {
  Start(/*admin=*/true);
  Create("h");
  TickMove("h", 1);
  httplib::Client http("127.0.0.1", server_->metrics_port());
  std::atomic<int> worlds{0};
  std::string received;
  std::string content_type;
  std::mutex mu;
  std::thread reader([&] {
    httplib::Headers headers = {{"Authorization", std::string("Bearer ") + kAdmin}};
    http.Get(
        "/api/sessions/h/stream", headers,
        [&](const httplib::Response& res) {
          std::lock_guard<std::mutex> lock(mu);
          content_type = res.get_header_value("Content-Type");
          return true;
        },
        [&](const char* data, size_t n) {
          std::lock_guard<std::mutex> lock(mu);
          received.append(data, n);
          if (std::string(data, n).find("event: world") != std::string::npos) ++worlds;
          return true;
        });
  });
  // Ends when events arrive (10 a second), or at the test's timeout.
  while (worlds.load() < 2) std::this_thread::yield();
  server_.reset();  // must return with the stream open
  reader.join();
  std::lock_guard<std::mutex> lock(mu);
  EXPECT_EQ(content_type, "text/event-stream");
  EXPECT_THAT(received, HasSubstr("event: end\ndata: {\"reason\":\"the server is stopping\"}"));
}

}  // namespace
}  // namespace hitbox