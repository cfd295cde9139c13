// hitbox::Client against the scriptable in-process FakeHitbox (fake_hitbox.h):
// every call's conversion both ways, deadlines, retries of UNAVAILABLE on
// idempotent calls only, and the Tick stream's matching and failure modes.
#include "hitbox/client.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <future>
#include <mutex>
#include <thread>

#include "fake_hitbox.h"
#include "hitbox/wire/convert.h"
#include "hitbox/wire/session_limits.h"
#include "test_util.h"
#include "wait.h"

namespace hitbox {
namespace {

using std::chrono::milliseconds;
using testing::FakeServer;
using testing::Random;
using testing::TickMode;

// Options with fast, deterministic retries.
ClientOptions FastOptions() {
  ClientOptions o;
  o.default_timeout = std::chrono::seconds(10);
  o.retry.max_attempts = 4;
  o.retry.initial_backoff = milliseconds(5);
  o.retry.max_backoff = milliseconds(20);
  o.retry.jitter = 0.0;
  return o;
}

Collider RandomCollider(Random& rng, uint64_t id) {
  Collider c;
  c.id = id;
  c.shape = rng.MakeShape(static_cast<ShapeKind>(rng.Int(0, kConvexKindCount - 1)));
  c.pose = Pose(rng.InBox(100.0), rng.Rotation());
  c.layer = static_cast<uint32_t>(rng.Int(0, 31));
  c.user_data = rng.engine()();
  return c;
}

void ExpectSameCollider(const Collider& a, const Collider& b) {
  EXPECT_EQ(a.id, b.id);
  EXPECT_EQ(a.shape, b.shape) << a.shape.ToString() << " vs " << b.shape.ToString();
  EXPECT_TRUE(testing::PoseNear(a.pose, b.pose, 1e-12));
  EXPECT_EQ(a.layer, b.layer);
  EXPECT_EQ(a.user_data, b.user_data);
}

class ClientFakeTest : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    ASSERT_TRUE(server_.started());
    // Parameter: true = in-process channel, false = loopback TCP.
    client_ = GetParam() ? std::make_unique<Client>(server_.InProcessChannel(), Options())
                         : std::make_unique<Client>(server_.address(), Options());
  }
  virtual ClientOptions Options() { return FastOptions(); }

  FakeServer server_;
  std::unique_ptr<Client> client_;
};

INSTANTIATE_TEST_SUITE_P(Channels, ClientFakeTest, ::testing::Values(true, false),
                         [](const ::testing::TestParamInfo<bool>& p) { return p.param ? "InProcess" : "Loopback"; });

// Every session call round-trips its fields.
TEST_P(ClientFakeTest, SessionCalls) {
  SessionSpec spec{"arena-1", SessionLimits{500, 20, 30, 40}};
  RpcResult<SessionInfo> created = client_->CreateSession(spec);
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  EXPECT_EQ(created->session_id, "arena-1");
  EXPECT_EQ(created->limits.max_colliders, 500u);
  EXPECT_EQ(created->limits.max_changes_per_message, 20u);
  EXPECT_EQ(created->limits.max_queries_per_message, 30u);
  EXPECT_EQ(created->limits.max_hits_per_query, 40u);
  EXPECT_EQ(created->created_unix_ms, 1234);
  EXPECT_FALSE(created->bounds.has_value());

  RpcResult<SessionInfo> picked = client_->CreateSession();
  ASSERT_TRUE(picked.ok());
  EXPECT_EQ(picked->session_id, "auto-1");

  RpcResult<SessionInfo> dup = client_->CreateSession("arena-1");
  EXPECT_EQ(dup.code(), RpcCode::kAlreadyExists);
  EXPECT_EQ(dup.status().message(), "session 'arena-1' exists");

  RpcResult<std::vector<SessionInfo>> list = client_->ListSessions();
  ASSERT_TRUE(list.ok());
  ASSERT_EQ(list->size(), 2u);
  EXPECT_EQ((*list)[0].session_id, "arena-1");
  EXPECT_EQ((*list)[1].session_id, "auto-1");

  EXPECT_TRUE(client_->GetSession("arena-1").ok());
  EXPECT_TRUE(client_->DeleteSession("arena-1").ok());
  RpcResult<SessionInfo> gone = client_->GetSession("arena-1");
  EXPECT_EQ(gone.code(), RpcCode::kNotFound);
  EXPECT_EQ(gone.status().message(), "session 'arena-1' does not exist");
  EXPECT_EQ(gone.status().code_number(), 5);
  EXPECT_EQ(client_->DeleteSession("arena-1").code(), RpcCode::kNotFound);
}

// Limits with every field set, each to its own value.
SessionLimits EveryLimit() {
  SessionLimits l;
  l.max_colliders = 101;
  l.max_changes_per_message = 102;
  l.max_queries_per_message = 103;
  l.max_hits_per_query = 104;
  l.max_nodes_per_message = 105;
  l.max_pair_tests_per_message = 106;
  l.idle_timeout_ms = 107;
  l.history_ticks = 108;
  l.max_mesh_triangles = 109;
  l.max_heightfield_samples = 110;
  l.max_hull_points = 111;
  l.max_build_work_per_message = 112;
  l.max_watches = 113;
  l.max_watch_events_per_batch = 114;
  return l;
}

void ExpectEveryLimit(const SessionLimits& l) {
  EXPECT_EQ(l.max_colliders, 101u);
  EXPECT_EQ(l.max_changes_per_message, 102u);
  EXPECT_EQ(l.max_queries_per_message, 103u);
  EXPECT_EQ(l.max_hits_per_query, 104u);
  EXPECT_EQ(l.max_nodes_per_message, 105u);
  EXPECT_EQ(l.max_pair_tests_per_message, 106u);
  EXPECT_EQ(l.idle_timeout_ms, 107u);
  EXPECT_EQ(l.history_ticks, 108u);
  EXPECT_EQ(l.max_mesh_triangles, 109u);
  EXPECT_EQ(l.max_heightfield_samples, 110u);
  EXPECT_EQ(l.max_hull_points, 111u);
  EXPECT_EQ(l.max_build_work_per_message, 112u);
  EXPECT_EQ(l.max_watches, 113u);
  EXPECT_EQ(l.max_watch_events_per_batch, 114u);
}

// Every limit goes to the server in CreateSession and comes back in
// SessionInfo, the mesh, heightfield, hull and build-work limits included.
TEST_P(ClientFakeTest, EveryLimitRoundTrips) {
  RpcResult<SessionInfo> created = client_->CreateSession(SessionSpec{"limits", EveryLimit()});
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  ExpectEveryLimit(created->limits);
  RpcResult<SessionInfo> got = client_->GetSession("limits");
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  ExpectEveryLimit(got->limits);
}

// The client's conversion fills every field hitbox.v1.SessionLimits has, so a
// field the .proto adds fails here until the client carries it.
TEST(ClientLimitsTest, ConversionCoversEveryProtoField) {
  v1::SessionLimits proto;
  wire::LimitsToProto(EveryLimit(), &proto);
  const google::protobuf::Descriptor* d = proto.GetDescriptor();
  for (int i = 0; i < d->field_count(); ++i) {
    EXPECT_TRUE(proto.GetReflection()->HasField(proto, d->field(i))) << d->field(i)->name();
  }
  ExpectEveryLimit(wire::LimitsFromProto<SessionLimits>(proto));
}

// Random colliders reach the server exactly as given and come back exactly.
TEST_P(ClientFakeTest, CollidersRoundTrip) {
  ASSERT_TRUE(client_->CreateSession("s").ok());
  Random rng(20240611);
  std::vector<Collider> colliders;
  for (uint64_t id = 0; id < 50; ++id) colliders.push_back(RandomCollider(rng, id * 3));
  RpcResult<ApplyResult> applied = client_->AddColliders("s", colliders);
  ASSERT_TRUE(applied.ok()) << applied.status().ToString();
  EXPECT_EQ(applied->revision, 1u);
  EXPECT_EQ(applied->collider_count, 50u);

  // What the server received, decoded independently of the client.
  const v1::ApplyChangesRequest sent = server_.service().last_apply();
  EXPECT_FALSE(sent.has_expected_revision());
  std::vector<ColliderChange> decoded;
  ASSERT_TRUE(wire::FromProto(sent.changes(), &decoded).ok());
  ASSERT_EQ(decoded.size(), colliders.size());
  for (size_t i = 0; i < decoded.size(); ++i) {
    EXPECT_EQ(decoded[i].kind, ColliderChange::Kind::kAdd);
    ExpectSameCollider(decoded[i].collider, colliders[i]);
  }

  const std::vector<uint64_t> ids = {9, 0, 147};
  RpcResult<ColliderSnapshot> got = client_->GetColliders("s", ids);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(got->revision, 1u);
  ASSERT_EQ(got->colliders.size(), 3u);
  ExpectSameCollider(got->colliders[0], colliders[3]);
  ExpectSameCollider(got->colliders[1], colliders[0]);
  ExpectSameCollider(got->colliders[2], colliders[49]);
  const std::vector<uint64_t> unknown = {1};
  EXPECT_EQ(client_->GetColliders("s", unknown).code(), RpcCode::kNotFound);

  // Collected listing: every page, in id order.
  RpcResult<ColliderSnapshot> all = client_->ListColliders("s", /*page_size=*/7);
  ASSERT_TRUE(all.ok()) << all.status().ToString();
  ASSERT_EQ(all->colliders.size(), colliders.size());
  for (size_t i = 0; i < colliders.size(); ++i) ExpectSameCollider(all->colliders[i], colliders[i]);

  // Paged listing, stopped after three pages.
  int pages = 0;
  size_t seen = 0;
  RpcStatus paged = client_->ListColliders(
      "s",
      [&](const ColliderPage& page) {
        ++pages;
        seen += page.colliders.size();
        EXPECT_EQ(page.total, 50u);
        EXPECT_EQ(page.revision, 1u);
        return pages < 3;
      },
      /*page_size=*/5);
  EXPECT_TRUE(paged.ok()) << paged.ToString();
  EXPECT_EQ(pages, 3);
  EXPECT_EQ(seen, 15u);
}

// Move, remove, replace and expected_revision reach the server as asked.
TEST_P(ClientFakeTest, ChangeKindsAndExpectedRevision) {
  ASSERT_TRUE(client_->CreateSession("s").ok());
  const Pose pose(Vec3{1, 2, 3}, Quat::FromAxisAngle({0, 0, 1}, 0.5));
  ASSERT_TRUE(client_->MoveCollider("s", 42, pose).ok());
  std::vector<ColliderChange> decoded;
  ASSERT_TRUE(wire::FromProto(server_.service().last_apply().changes(), &decoded).ok());
  ASSERT_EQ(decoded.size(), 1u);
  EXPECT_EQ(decoded[0].kind, ColliderChange::Kind::kMove);
  EXPECT_EQ(decoded[0].collider.id, 42u);
  EXPECT_TRUE(testing::PoseNear(decoded[0].collider.pose, pose, 1e-15));

  const std::vector<uint64_t> ids = {4, 5};
  ASSERT_TRUE(client_->RemoveColliders("s", ids).ok());
  ASSERT_TRUE(wire::FromProto(server_.service().last_apply().changes(), &decoded).ok());
  ASSERT_EQ(decoded.size(), 2u);
  EXPECT_EQ(decoded[1].kind, ColliderChange::Kind::kRemove);
  EXPECT_EQ(decoded[1].collider.id, 5u);

  // The session is at revision 2: expecting 1 fails with the server's message.
  const std::vector<ColliderChange> none;
  RpcResult<ApplyResult> stale = client_->ApplyChanges("s", none, uint64_t{1});
  EXPECT_EQ(stale.code(), RpcCode::kFailedPrecondition);
  EXPECT_EQ(stale.status().message(), "expected_revision 1 but at 2");
  RpcResult<ApplyResult> fresh = client_->ApplyChanges("s", none, uint64_t{2});
  ASSERT_TRUE(fresh.ok()) << fresh.status().ToString();
  EXPECT_EQ(fresh->revision, 3u);
  EXPECT_EQ(server_.service().last_apply().expected_revision(), 2u);
}

// A batch of mixed queries: one result per query, in order; convenience calls.
TEST_P(ClientFakeTest, Queries) {
  const Shape capsule = *Shape::MakeCapsule(0.4, 0.9);
  std::vector<Query> batch;
  batch.push_back(OverlapQuery{capsule, Pose::Identity(), {}, true});
  batch.push_back(CastQuery{capsule, Pose::Identity(), {1, 0, 0}, {}, false});
  batch.push_back(RayQuery{{0, 0, 0}, {0, -5, 0}, {}, true});
  // The fake answers with ids derived from each query's tag, which the
  // client sends as set (0 when unset) and reads back.
  std::get<CastQuery>(batch[1]).tag = 1;
  std::get<RayQuery>(batch[2]).tag = 2;
  RpcResult<QueryBatchResult> r = client_->Query("s", batch);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->revision, 7u);
  ASSERT_EQ(r->results.size(), 3u);
  for (uint64_t i = 0; i < 3; ++i) EXPECT_EQ(r->results[i].tag, i);
  ASSERT_EQ(r->results[0].overlaps.size(), 1u);
  EXPECT_EQ(r->results[0].overlaps[0].id, 200u);
  ASSERT_EQ(r->results[1].hits.size(), 1u);
  EXPECT_EQ(r->results[1].hits[0].id, 101u);
  EXPECT_EQ(r->results[2].hits[0].id, 102u);
  EXPECT_EQ(r->results[2].hits[0].fraction, 0.25);
  EXPECT_EQ(r->results[2].hits[0].normal, (Vec3{0, 1, 0}));

  RpcResult<std::optional<CastHit>> hit =
      client_->Sweep("s", capsule, Pose(Vec3{0, 1, 0}), Vec3{0, 0, 3});
  ASSERT_TRUE(hit.ok());
  ASSERT_TRUE(hit->has_value());
  EXPECT_EQ((*hit)->id, 100u);
  EXPECT_TRUE(client_->Raycast("s", {0, 0, 0}, {1, 0, 0}).ok());
  RpcResult<std::vector<OverlapHit>> over = client_->Overlap("s", capsule, Pose::Identity());
  ASSERT_TRUE(over.ok());
  EXPECT_EQ(over->size(), 1u);
  EXPECT_EQ(server_.service().calls("Query"), 4);
}

// A 1 us deadline and a slow server both end in DEADLINE_EXCEEDED, not a hang.
TEST_P(ClientFakeTest, DeadlinesExceeded) {
  // A deadline already passed: not even sent.
  CallOptions zero;
  zero.timeout = std::chrono::nanoseconds(0);
  EXPECT_EQ(client_->ListSessions(zero).code(), RpcCode::kDeadlineExceeded);
  EXPECT_EQ(client_->CreateSession(SessionSpec{"x", {}, {}}, zero).code(),
            RpcCode::kDeadlineExceeded);
  EXPECT_EQ(server_.service().calls("CreateSession"), 0);

  // 1 us and 40 ms against a server that answers only once released.
  server_.service().Hold();
  CallOptions tiny;
  tiny.timeout = std::chrono::microseconds(1);
  EXPECT_EQ(client_->ListSessions(tiny).code(), RpcCode::kDeadlineExceeded);
  EXPECT_EQ(client_->CreateSession(SessionSpec{"x", {}, {}}, tiny).code(),
            RpcCode::kDeadlineExceeded);
  CallOptions short_call;
  short_call.timeout = milliseconds(40);
  EXPECT_EQ(client_->GetSession("x", short_call).code(), RpcCode::kDeadlineExceeded);
  std::vector<ColliderChange> none;
  EXPECT_EQ(client_->ApplyChanges("x", none, std::nullopt, short_call).code(),
            RpcCode::kDeadlineExceeded);
  server_.service().Release();
}

// The default deadline comes from ClientOptions.
TEST_P(ClientFakeTest, DefaultDeadlineFromOptions) {
  ClientOptions o = FastOptions();
  o.default_timeout = milliseconds(30);
  Client slow_client(server_.address(), o);
  server_.service().Hold();
  EXPECT_EQ(slow_client.ListSessions().code(), RpcCode::kDeadlineExceeded);
  server_.service().Release();
  // A call's own timeout replaces the default: the server gets its deadline.
  const auto soon = std::chrono::system_clock::now() + std::chrono::seconds(5);
  CallOptions longer;
  longer.timeout = std::chrono::seconds(10);
  EXPECT_TRUE(slow_client.ListSessions(longer).ok());
  EXPECT_GT(server_.service().latest_deadline(), soon);
}

// UNAVAILABLE is retried for idempotent calls only.
TEST_P(ClientFakeTest, RetriesIdempotentCallsOnly) {
  FakeServer& s = server_;
  ASSERT_TRUE(client_->CreateSession("s").ok());
  const std::vector<uint64_t> no_ids;
  const std::vector<ColliderChange> no_changes;
  const std::vector<Query> no_queries;
  struct Case {
    const char* method;
    bool idempotent;
    std::function<RpcStatus()> call;
  };
  const std::vector<Case> cases = {
      {"GetSession", true, [&] { return client_->GetSession("s").status(); }},
      {"ListSessions", true, [&] { return client_->ListSessions().status(); }},
      {"GetColliders", true, [&] { return client_->GetColliders("s", no_ids).status(); }},
      {"ListColliders", true, [&] { return client_->ListColliders("s").status(); }},
      {"Query", true, [&] { return client_->Query("s", no_queries).status(); }},
      {"CreateSession", true, [&] { return client_->CreateSession("with-id").status(); }},
      {"CreateSession", false, [&] { return client_->CreateSession().status(); }},
      {"ApplyChanges", false,
       [&] { return client_->ApplyChanges("s", no_changes).status(); }},
      {"DeleteSession", false, [&] { return client_->DeleteSession("s"); }},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(c.method) + (c.idempotent ? " (idempotent)" : ""));
    const int before = s.service().calls(c.method);
    s.service().FailNext(2);
    const RpcStatus status = c.call();
    if (c.idempotent) {
      EXPECT_TRUE(status.ok()) << status.ToString();
      EXPECT_EQ(s.service().calls(c.method) - before, 3);
    } else {
      EXPECT_EQ(status.code(), RpcCode::kUnavailable);
      EXPECT_EQ(status.message(), "fake: try again");
      EXPECT_EQ(s.service().calls(c.method) - before, 1);
    }
    s.service().FailNext(0);
  }
}

// The paged ListColliders retries only before its first page: after data was
// handed to the caller, a retry would repeat it.
TEST_P(ClientFakeTest, PagedListRetriesOnlyBeforeFirstPage) {
  ASSERT_TRUE(client_->CreateSession("s").ok());
  std::vector<Collider> colliders(5);
  for (uint64_t i = 0; i < colliders.size(); ++i) colliders[i].id = i;
  ASSERT_TRUE(client_->AddColliders("s", colliders).ok());
  const int before = server_.service().calls("ListColliders");
  server_.service().FailNext(2);
  size_t seen = 0;
  RpcStatus st = client_->ListColliders(
      "s", [&](const ColliderPage& p) { return seen += p.colliders.size(), true; }, 2);
  EXPECT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(seen, 5u);
  EXPECT_EQ(server_.service().calls("ListColliders") - before, 3);
}

// Attempts stop at max_attempts; allow_retry=false disables retries per call.
TEST_P(ClientFakeTest, RetryLimits) {
  ASSERT_TRUE(client_->CreateSession("s").ok());
  server_.service().FailNext(100);
  const int before = server_.service().calls("GetSession");
  RpcResult<SessionInfo> r = client_->GetSession("s");
  EXPECT_EQ(r.code(), RpcCode::kUnavailable);
  EXPECT_EQ(server_.service().calls("GetSession") - before, 4);  // FastOptions: 4 attempts
  CallOptions once;
  once.allow_retry = false;
  EXPECT_EQ(client_->GetSession("s", once).code(), RpcCode::kUnavailable);
  EXPECT_EQ(server_.service().calls("GetSession") - before, 5);
  server_.service().FailNext(0);
}

// Backoff grows by the multiplier, is capped, and jitter stays within its band.
TEST(ClientRetryTest, BackoffScheduleAndJitter) {
  FakeServer server;
  for (double jitter : {0.0, 0.5}) {
    std::vector<milliseconds> waits;
    ClientOptions o;
    o.retry.max_attempts = 7;
    o.retry.initial_backoff = milliseconds(4);
    o.retry.max_backoff = milliseconds(40);
    o.retry.multiplier = 3.0;
    o.retry.jitter = jitter;
    o.jitter_seed = 99;
    o.on_retry = [&](std::string_view method, int attempt, const RpcStatus& st, milliseconds w) {
      EXPECT_EQ(method, "ListSessions");
      EXPECT_EQ(attempt, static_cast<int>(waits.size()) + 1);
      EXPECT_EQ(st.code(), RpcCode::kUnavailable);
      waits.push_back(w);
    };
    Client client(server.address(), o);
    server.service().FailNext(100);
    EXPECT_EQ(client.ListSessions().code(), RpcCode::kUnavailable);
    ASSERT_EQ(waits.size(), 6u);
    double base = 4.0;
    for (size_t i = 0; i < waits.size(); ++i) {
      const double lo = std::floor(base * (1.0 - jitter)) - 1.0;
      const double hi = base * (1.0 + jitter);
      EXPECT_GE(static_cast<double>(waits[i].count()), lo) << "retry " << i << " jitter " << jitter;
      EXPECT_LE(static_cast<double>(waits[i].count()), hi) << "retry " << i << " jitter " << jitter;
      base = std::min(40.0, base * 3.0);
    }
  }
}

// A server that is not there: idempotent calls retry until attempts run out,
// the others fail at once; both with UNAVAILABLE.
TEST(ClientRetryTest, StoppedServer) {
  std::string address;
  {
    FakeServer gone;
    address = gone.address();
  }  // the port is closed now
  int retries = 0;
  ClientOptions o = FastOptions();
  o.on_retry = [&](std::string_view, int, const RpcStatus&, milliseconds) { ++retries; };
  Client client(address, o);
  EXPECT_EQ(client.GetSession("s").code(), RpcCode::kUnavailable);
  EXPECT_EQ(retries, 3);
  retries = 0;
  const std::vector<ColliderChange> none;
  EXPECT_EQ(client.ApplyChanges("s", none).code(), RpcCode::kUnavailable);
  EXPECT_EQ(client.DeleteSession("s").code(), RpcCode::kUnavailable);
  EXPECT_EQ(client.CreateSession().code(), RpcCode::kUnavailable);
  EXPECT_EQ(retries, 0);
  // The tick stream fails its ticks with UNAVAILABLE too.
  std::unique_ptr<TickStream> stream = client.OpenTickStream("s");
  RpcResult<TickResult> t = stream->Tick({}, {}).get();
  EXPECT_EQ(t.code(), RpcCode::kUnavailable);
  EXPECT_TRUE(stream->done());
}

// --- Tick stream ------------------------------------------------------------

// The fake answers Query messages only: streams that send messages whatever
// the server says.
TickStreamOptions MessageForm() {
  TickStreamOptions o;
  o.packed = false;
  return o;
}

// Many ticks in flight; each future gets its own tick's answer.
TEST_P(ClientFakeTest, TickStreamMatchesResults) {
  std::unique_ptr<TickStream> stream = client_->OpenTickStream("s", MessageForm());
  std::vector<std::future<RpcResult<TickResult>>> futures;
  std::vector<size_t> query_counts;
  Random rng(7);
  for (int i = 0; i < 64; ++i) {
    std::vector<Query> queries(static_cast<size_t>(rng.Int(0, 4)),
                               RayQuery{{0, 0, 0}, {1, 0, 0}, {}, false});
    for (size_t q = 0; q < queries.size(); ++q) std::get<RayQuery>(queries[q]).tag = q;
    query_counts.push_back(queries.size());
    futures.push_back(stream->Tick({}, queries));
  }
  for (size_t i = 0; i < futures.size(); ++i) {
    RpcResult<TickResult> r = futures[i].get();
    ASSERT_TRUE(r.ok()) << i << ": " << r.status().ToString();
    EXPECT_EQ(r->tick, i + 1);
    EXPECT_EQ(r->revision, 10 * (i + 1));
    ASSERT_EQ(r->results.size(), query_counts[i]);
    for (size_t q = 0; q < r->results.size(); ++q) EXPECT_EQ(r->results[q].hits[0].id, 100 + q);
  }
  EXPECT_EQ(stream->pending(), 0u);
  EXPECT_TRUE(stream->Finish().ok());
  EXPECT_EQ(stream->Tick({}, {}).get().code(), RpcCode::kFailedPrecondition);
}

// Three rays tagged 0..2; the fake answers query q with collider 100 + q.
std::vector<Query> ThreeRays() {
  std::vector<Query> queries(3, RayQuery{{0, 0, 0}, {1, 0, 0}, {}, false});
  for (size_t q = 0; q < queries.size(); ++q) std::get<RayQuery>(queries[q]).tag = q;
  return queries;
}

// Ticks of a default (packed) stream to a server that does not take the
// packed form: each query answered, as with the message form.
void ExpectMessageFormAnswers(TickStream& stream) {
  const std::vector<Query> queries = ThreeRays();
  for (int i = 0; i < 3; ++i) {
    RpcResult<TickResult> r = stream.Tick({}, queries).get();
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    ASSERT_EQ(r->results.size(), queries.size());
    for (size_t q = 0; q < queries.size(); ++q) EXPECT_EQ(r->results[q].hits.at(0).id, 100 + q);
  }
  TickResult kept;
  ASSERT_TRUE(stream.TickInto({}, queries, {}, &kept).ok());
  ASSERT_EQ(kept.results.size(), queries.size());
  EXPECT_EQ(kept.results[2].hits.at(0).id, 102u);
}

// A server older than GetServerInfo (UNIMPLEMENTED; it ignores the packed
// fields, so packed queries would get no answer) gets the message form from
// a default stream; the Client asks once for all its streams.
TEST_P(ClientFakeTest, TickStreamSendsMessagesToServerWithoutPackedForm) {
  std::unique_ptr<TickStream> stream = client_->OpenTickStream("s");
  ExpectMessageFormAnswers(*stream);
  std::unique_ptr<TickStream> second = client_->OpenTickStream("s");
  ExpectMessageFormAnswers(*second);
  EXPECT_EQ(server_.service().calls("GetServerInfo"), 1);
  EXPECT_EQ(server_.service().packed_ticks_received(), 0);
  EXPECT_EQ(server_.service().ticks_received(), 8);
}

// A server that says it does not take the packed form: the message form too.
TEST_P(ClientFakeTest, TickStreamSendsMessagesWhenServerSaysNo) {
  server_.service().packed_ticks = false;
  std::unique_ptr<TickStream> stream = client_->OpenTickStream("s");
  ExpectMessageFormAnswers(*stream);
  EXPECT_EQ(server_.service().calls("GetServerInfo"), 1);
  EXPECT_EQ(server_.service().packed_ticks_received(), 0);
}

// A server that takes the packed form gets it (the fake answers no query, so
// the ticks are empty); a stream asked for messages never asks.
TEST_P(ClientFakeTest, TickStreamSendsPackedWhenServerSaysYes) {
  server_.service().packed_ticks = true;
  std::unique_ptr<TickStream> messages = client_->OpenTickStream("s", MessageForm());
  ASSERT_TRUE(messages->Tick({}, {}).get().ok());
  EXPECT_EQ(server_.service().calls("GetServerInfo"), 0);
  EXPECT_EQ(server_.service().packed_ticks_received(), 0);
  std::unique_ptr<TickStream> stream = client_->OpenTickStream("s");
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(stream->Tick({}, {}).get().ok());
  EXPECT_EQ(server_.service().calls("GetServerInfo"), 1);
  EXPECT_EQ(server_.service().packed_ticks_received(), 3);
}

// A failed ask (here UNAVAILABLE) is not kept: that stream sends messages,
// the next one asks again and learns the answer.
TEST_P(ClientFakeTest, TickStreamAsksAgainAfterAFailedAsk) {
  server_.service().packed_ticks = true;
  server_.service().FailNext(1);
  std::unique_ptr<TickStream> first = client_->OpenTickStream("s");
  ExpectMessageFormAnswers(*first);
  EXPECT_EQ(server_.service().packed_ticks_received(), 0);
  std::unique_ptr<TickStream> second = client_->OpenTickStream("s");
  ASSERT_TRUE(second->Tick({}, {}).get().ok());
  EXPECT_EQ(server_.service().calls("GetServerInfo"), 2);
  EXPECT_EQ(server_.service().packed_ticks_received(), 1);
}

// Answers that come back out of order still reach the right tick.
TEST_P(ClientFakeTest, TickStreamOutOfOrderAnswers) {
  server_.service().tick_mode = TickMode::kReversePairs;
  std::unique_ptr<TickStream> stream = client_->OpenTickStream("s");
  std::vector<std::future<RpcResult<TickResult>>> futures;
  for (int i = 0; i < 20; ++i) futures.push_back(stream->Tick({}, {}));
  for (size_t i = 0; i < futures.size(); ++i) {
    RpcResult<TickResult> r = futures[i].get();
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r->tick, i + 1);
    EXPECT_EQ(r->revision, 10 * (i + 1));
  }
}

// A rejected tick fails alone with the server's code and message; the stream goes on.
TEST_P(ClientFakeTest, TickStreamRejectedTickKeepsStream) {
  std::unique_ptr<TickStream> stream = client_->OpenTickStream("s");
  const std::vector<ColliderChange> bad = {ColliderChange::Move(1, Pose()),
                                           ColliderChange::Remove(666)};
  auto before = stream->Tick({}, {});
  auto rejected = stream->Tick(bad, {});
  auto after = stream->Tick({}, {});
  EXPECT_TRUE(before.get().ok());
  RpcResult<TickResult> r = rejected.get();
  EXPECT_EQ(r.code(), RpcCode::kNotFound);
  EXPECT_EQ(r.status().message(), "changes[1].remove: collider 666 does not exist");
  RpcResult<TickResult> a = after.get();
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->tick, 3u);
  EXPECT_FALSE(stream->done());
}

// The server ends the stream with UNAVAILABLE: answered ticks keep their
// results, every pending one gets the error, later ticks fail at once.
TEST_P(ClientFakeTest, TickStreamBreakFailsAllPending) {
  server_.service().tick_mode = TickMode::kBreakAfter;
  server_.service().break_after = 5;
  std::unique_ptr<TickStream> stream = client_->OpenTickStream("s");
  std::vector<std::future<RpcResult<TickResult>>> futures;
  for (int i = 0; i < 30; ++i) futures.push_back(stream->Tick({}, {}));
  for (size_t i = 0; i < futures.size(); ++i) {
    RpcResult<TickResult> r = futures[i].get();
    if (i < 5) {
      EXPECT_TRUE(r.ok()) << i << ": " << r.status().ToString();
    } else {
      EXPECT_EQ(r.code(), RpcCode::kUnavailable) << i;
      EXPECT_EQ(r.status().message(), "fake: going away") << i;
    }
  }
  EXPECT_TRUE(stream->done());
  EXPECT_EQ(stream->status().code(), RpcCode::kUnavailable);
  EXPECT_EQ(stream->pending(), 0u);
  EXPECT_EQ(stream->Tick({}, {}).get().code(), RpcCode::kUnavailable);
  // A new stream works.
  server_.service().tick_mode = TickMode::kEcho;
  std::unique_ptr<TickStream> again = client_->OpenTickStream("s");
  EXPECT_TRUE(again->Tick({}, {}).get().ok());
}

// Cancel() and destruction fail pending ticks with CANCELLED; a stream
// deadline with DEADLINE_EXCEEDED; callbacks are called exactly once.
TEST_P(ClientFakeTest, TickStreamCancelDeadlineAndDestroy) {
  server_.service().tick_mode = TickMode::kStall;
  {
    std::unique_ptr<TickStream> stream = client_->OpenTickStream("s");
    auto a = stream->Tick({}, {});
    auto b = stream->Tick({}, {});
    stream->Cancel();
    EXPECT_EQ(a.get().code(), RpcCode::kCancelled);
    EXPECT_EQ(b.get().code(), RpcCode::kCancelled);
    EXPECT_EQ(stream->Tick({}, {}).get().code(), RpcCode::kCancelled);
  }
  {
    TickStreamOptions o;
    o.timeout = milliseconds(50);
    std::unique_ptr<TickStream> stream = client_->OpenTickStream("s", o);
    EXPECT_EQ(stream->Tick({}, {}).get().code(), RpcCode::kDeadlineExceeded);
  }
  std::atomic<int> called{0};
  std::atomic<int> cancelled{0};
  {
    std::unique_ptr<TickStream> stream = client_->OpenTickStream("s");
    for (int i = 0; i < 10; ++i) {
      stream->Tick({}, {}, [&](RpcResult<TickResult> r) {
        ++called;
        if (r.code() == RpcCode::kCancelled) ++cancelled;
      });
    }
  }  // destroyed with 10 pending ticks
  EXPECT_EQ(called.load(), 10);
  EXPECT_EQ(cancelled.load(), 10);
}

// More than max_in_flight pending ticks: RESOURCE_EXHAUSTED at once.
TEST_P(ClientFakeTest, TickStreamMaxInFlight) {
  server_.service().tick_mode = TickMode::kStall;
  TickStreamOptions o;
  o.max_in_flight = 3;
  std::unique_ptr<TickStream> stream = client_->OpenTickStream("s", o);
  std::vector<std::future<RpcResult<TickResult>>> held;
  for (int i = 0; i < 3; ++i) held.push_back(stream->Tick({}, {}));
  RpcResult<TickResult> over = stream->Tick({}, {}).get();
  EXPECT_EQ(over.code(), RpcCode::kResourceExhausted);
  EXPECT_EQ(stream->pending(), 3u);
  stream->Cancel();
  for (auto& f : held) EXPECT_EQ(f.get().code(), RpcCode::kCancelled);
}

// Ticks from several threads at once all come back matched.
TEST_P(ClientFakeTest, TickStreamConcurrentCallers) {
  std::unique_ptr<TickStream> stream = client_->OpenTickStream("s", MessageForm());
  std::atomic<int> bad{0};
  std::vector<std::thread> threads;
  for (size_t t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      // Thread t sends t + 1 queries per tick and checks it gets t + 1 results.
      const std::vector<Query> queries(t + 1, RayQuery{{0, 0, 0}, {1, 0, 0}, {}, false});
      for (int i = 0; i < 50; ++i) {
        RpcResult<TickResult> r = stream->Tick({}, queries).get();
        if (!r.ok() || r->results.size() != t + 1 || r->revision != 10 * r->tick) ++bad;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(bad.load(), 0);
  EXPECT_TRUE(stream->Finish().ok());
}

TickStreamOptions Blocking(TickStreamOptions o = {}) {
  o.blocking = true;
  return o;
}

// A blocking stream opens on its first tick and answers every Tick form
// before it returns, callbacks on the caller's thread; its refusals are the
// callback API's.
TEST_P(ClientFakeTest, BlockingTickStreamAnswersOnTheCallersThread) {
  { std::unique_ptr<TickStream> unused = client_->OpenTickStream("s", Blocking()); }
  EXPECT_EQ(server_.service().calls("Tick"), 0);
  std::unique_ptr<TickStream> stream = client_->OpenTickStream("s", Blocking(MessageForm()));
  Random rng(11);
  TickResult kept;
  for (uint64_t i = 1; i <= 24; ++i) {
    std::vector<Query> queries(static_cast<size_t>(rng.Int(0, 4)),
                               RayQuery{{0, 0, 0}, {1, 0, 0}, {}, false});
    for (size_t q = 0; q < queries.size(); ++q) std::get<RayQuery>(queries[q]).tag = q;
    RpcResult<TickResult> r = RpcStatus(RpcCode::kInternal, "not called");
    switch (i % 3) {
      case 0: {
        std::future<RpcResult<TickResult>> f = stream->Tick({}, queries);
        ASSERT_EQ(f.wait_for(std::chrono::seconds(0)), std::future_status::ready) << i;
        r = f.get();
        break;
      }
      case 1: {
        const std::thread::id caller = std::this_thread::get_id();
        bool on_caller = false;
        stream->Tick({}, queries, [&](RpcResult<TickResult> got) {
          on_caller = std::this_thread::get_id() == caller;
          r = std::move(got);
        });
        EXPECT_TRUE(on_caller) << i;
        break;
      }
      default: {
        const RpcStatus st = stream->TickInto({}, queries, {}, &kept);
        r = st.ok() ? RpcResult<TickResult>(kept) : RpcResult<TickResult>(st);
      }
    }
    ASSERT_TRUE(r.ok()) << i << ": " << r.status().ToString();
    EXPECT_EQ(r->tick, i);
    EXPECT_EQ(r->revision, 10 * i);
    ASSERT_EQ(r->results.size(), queries.size());
    for (size_t q = 0; q < r->results.size(); ++q) EXPECT_EQ(r->results[q].hits[0].id, 100 + q);
    EXPECT_EQ(stream->pending(), 0u);
  }
  EXPECT_EQ(server_.service().calls("Tick"), 1);
  RpcStatus st = stream->TickInto({}, {}, {}, nullptr);
  EXPECT_EQ(st.code(), RpcCode::kInvalidArgument);
  EXPECT_EQ(st.message(), "Tick: out is null");
  RpcResult<TickResult> late = stream->TickAt(3, {}, {}).get();
  EXPECT_EQ(late.code(), RpcCode::kInvalidArgument);
  EXPECT_EQ(late.status().message(),
            "tick 3: the ticks of a stream must increase (the next is at least 25)");
  RpcResult<TickResult> at = stream->TickAt(40, {}, {}).get();
  ASSERT_TRUE(at.ok()) << at.status().ToString();
  EXPECT_EQ(at->tick, 40u);
  EXPECT_EQ(stream->Tick({}, {}).get()->tick, 41u);
  EXPECT_TRUE(stream->Finish().ok());
  EXPECT_TRUE(stream->done());
  EXPECT_EQ(stream->Tick({}, {}).get().code(), RpcCode::kFailedPrecondition);
  EXPECT_EQ(server_.service().ticks_received(), 26);
}

// A blocking stream takes the packed form exactly when the callback one does.
TEST_P(ClientFakeTest, BlockingTickStreamSendsTheFormTheServerTakes) {
  std::unique_ptr<TickStream> old_server = client_->OpenTickStream("s", Blocking());
  ExpectMessageFormAnswers(*old_server);
  EXPECT_EQ(server_.service().packed_ticks_received(), 0);
  server_.service().packed_ticks = true;
  Client fresh(server_.address(), FastOptions());  // asks again
  std::unique_ptr<TickStream> stream = fresh.OpenTickStream("s", Blocking());
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(stream->Tick({}, {}).get().ok());
  EXPECT_EQ(server_.service().packed_ticks_received(), 3);
}

// A rejected tick fails alone; a broken stream fails its tick and every
// later one with the server's status, without sending them.
TEST_P(ClientFakeTest, BlockingTickStreamRejectedAndBroken) {
  std::unique_ptr<TickStream> stream = client_->OpenTickStream("s", Blocking());
  const std::vector<ColliderChange> bad = {ColliderChange::Move(1, Pose()),
                                           ColliderChange::Remove(666)};
  RpcResult<TickResult> rejected = stream->Tick(bad, {}).get();
  EXPECT_EQ(rejected.code(), RpcCode::kNotFound);
  EXPECT_EQ(rejected.status().message(), "changes[1].remove: collider 666 does not exist");
  ASSERT_TRUE(stream->Tick({}, {}).get().ok());
  EXPECT_FALSE(stream->done());
  EXPECT_TRUE(stream->Finish().ok());  // its handler done before the fake changes mode

  server_.service().tick_mode = TickMode::kBreakAfter;
  server_.service().break_after = 2;
  std::unique_ptr<TickStream> breaking = client_->OpenTickStream("s", Blocking());
  const int received = server_.service().ticks_received();
  for (int i = 0; i < 2; ++i) EXPECT_TRUE(breaking->Tick({}, {}).get().ok()) << i;
  RpcResult<TickResult> broken = breaking->Tick({}, {}).get();
  EXPECT_EQ(broken.code(), RpcCode::kUnavailable);
  EXPECT_EQ(broken.status().message(), "fake: going away");
  EXPECT_TRUE(breaking->done());
  EXPECT_EQ(breaking->status().code(), RpcCode::kUnavailable);
  TickResult kept;
  EXPECT_EQ(breaking->TickInto({}, {}, {}, &kept).code(), RpcCode::kUnavailable);
  EXPECT_EQ(server_.service().ticks_received(), received + 3);
  EXPECT_EQ(breaking->Finish().code(), RpcCode::kUnavailable);
}

// Cancel() from another thread ends a tick blocked on its answer with
// CANCELLED, and the stream with it; the stream's deadline ends one with
// DEADLINE_EXCEEDED; a blocked tick's stream is destroyed once it returns.
TEST_P(ClientFakeTest, BlockingTickStreamCancelAndDeadline) {
  server_.service().tick_mode = TickMode::kStall;
  std::unique_ptr<TickStream> stream = client_->OpenTickStream("s", Blocking());
  std::promise<RpcStatus> status;
  std::thread ticker([&] {
    TickResult kept;
    status.set_value(stream->TickInto({}, {}, {}, &kept));
  });
  ASSERT_TRUE(testing::WaitUntil([&] { return server_.service().ticks_received() >= 1; }));
  EXPECT_EQ(stream->pending(), 1u);
  stream->Cancel();
  EXPECT_EQ(status.get_future().get().code(), RpcCode::kCancelled);
  ticker.join();
  EXPECT_TRUE(stream->done());
  EXPECT_EQ(stream->pending(), 0u);
  EXPECT_EQ(stream->Tick({}, {}).get().code(), RpcCode::kCancelled);
  stream.reset();

  TickStreamOptions o = Blocking();
  o.timeout = milliseconds(50);
  std::unique_ptr<TickStream> timed = client_->OpenTickStream("s", o);
  EXPECT_EQ(timed->Tick({}, {}).get().code(), RpcCode::kDeadlineExceeded);
  EXPECT_EQ(timed->status().code(), RpcCode::kDeadlineExceeded);
}

// Ticks from several threads take turns, each answered as its own.
TEST_P(ClientFakeTest, BlockingTickStreamConcurrentCallers) {
  std::unique_ptr<TickStream> stream = client_->OpenTickStream("s", Blocking(MessageForm()));
  std::atomic<int> bad{0};
  std::mutex mu;
  std::vector<uint64_t> ticks;
  std::vector<std::thread> threads;
  for (size_t t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      const std::vector<Query> queries(t + 1, RayQuery{{0, 0, 0}, {1, 0, 0}, {}, false});
      TickResult kept;
      for (int i = 0; i < 50; ++i) {
        const RpcStatus st = stream->TickInto({}, queries, {}, &kept);
        if (!st.ok() || kept.results.size() != t + 1 || kept.revision != 10 * kept.tick) ++bad;
        std::lock_guard<std::mutex> lock(mu);
        ticks.push_back(kept.tick);
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(bad.load(), 0);
  std::sort(ticks.begin(), ticks.end());
  for (size_t i = 0; i < ticks.size(); ++i) EXPECT_EQ(ticks[i], i + 1);
  EXPECT_TRUE(stream->Finish().ok());
}

// The server going down mid-stream (not a clean status from the handler):
// every pending tick gets an error and the stream reports it.
TEST(ClientTickStopTest, ServerShutdownMidStream) {
  auto server = std::make_unique<FakeServer>();
  server->service().tick_mode = TickMode::kStall;
  Client client(server->address(), FastOptions());
  std::unique_ptr<TickStream> stream = client.OpenTickStream("s");
  std::vector<std::future<RpcResult<TickResult>>> futures;
  for (int i = 0; i < 5; ++i) futures.push_back(stream->Tick({}, {}));
  ASSERT_TRUE(testing::WaitUntil([&] { return server->service().ticks_received() >= 5; }));
  server->Stop();
  for (auto& f : futures) {
    RpcResult<TickResult> r = f.get();
    EXPECT_FALSE(r.ok());
    EXPECT_TRUE(r.code() == RpcCode::kUnavailable || r.code() == RpcCode::kCancelled)
        << r.status().ToString();
  }
  EXPECT_TRUE(stream->done());
}

// --- RpcStatus --------------------------------------------------------------

TEST(RpcStatusTest, NamesAndConversions) {
  EXPECT_EQ(RpcStatus().ToString(), "OK");
  EXPECT_EQ(RpcStatus(RpcCode::kUnavailable, "down").ToString(), "UNAVAILABLE: down");
  EXPECT_EQ(RpcStatus(RpcCode::kOk, "ignored").message(), "");
  for (int c = 0; c <= 16; ++c) {
    // Our names are gRPC's own.
    EXPECT_STREQ(RpcCodeName(static_cast<RpcCode>(c)),
                 wire::GrpcCodeName(static_cast<grpc::StatusCode>(c)));
  }
  const RpcStatus from_core =
      RpcStatus::FromStatus(Status(ErrorCode::kResourceExhausted, "too many"));
  EXPECT_EQ(from_core.code(), RpcCode::kResourceExhausted);
  EXPECT_EQ(from_core.message(), "too many");
  for (ErrorCode e : {ErrorCode::kInvalidArgument, ErrorCode::kNotFound, ErrorCode::kAlreadyExists,
                      ErrorCode::kResourceExhausted, ErrorCode::kFailedPrecondition,
                      ErrorCode::kDeadlineExceeded, ErrorCode::kCancelled, ErrorCode::kInternal}) {
    EXPECT_EQ(static_cast<int>(ToRpcCode(e)), static_cast<int>(wire::ToGrpcCode(e)));
  }
  RpcResult<int> bad = RpcStatus();  // OK without a value is a bug, reported
  EXPECT_EQ(bad.code(), RpcCode::kInternal);
  RpcResult<int> good = 3;
  EXPECT_TRUE(good.ok());
  EXPECT_TRUE(good.status().ok());
  EXPECT_EQ(*good, 3);
}

}  // namespace
}  // namespace hitbox
