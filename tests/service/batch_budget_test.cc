// Change batches are priced and checked whole before anything is built
// (issue 28): the --max-memory cap, the build budget (--max-build-bytes), the
// build-work budget (limits.max_build_work_per_message), a bad last entry,
// deadlines and cancellation all refuse a batch before its first build
// (HitboxService::shapes_built() counts builds); the price agrees with what
// SessionInfo.memory_bytes reports after the build; deleted sessions free
// their set at once; a Tick stream binds only to a session that exists.
#include <chrono>
#include <cmath>
#include <limits>
#include <random>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <spdlog/spdlog.h>

#include "service.h"
#include "service_util.h"

namespace hitbox {
namespace {

using ::testing::HasSubstr;
using testing_service::SphereMsg;
using namespace std::chrono_literals;

// `tris` copies of one triangle (the batch, smaller).
v1::Collider IdenticalTriangles(uint64_t id, int tris) {
  v1::Collider c = SphereMsg(id, 1.0, {10.0 * static_cast<double>(id), 0, 0});
  v1::TriangleMesh* m = c.mutable_shape()->mutable_mesh();
  for (const auto& [x, z] : {std::pair{0.0, 0.0}, {1.0, 0.0}, {0.0, 1.0}}) {
    v1::Vec3* v = m->add_vertices();
    v->set_x(x);
    v->set_z(z);
  }
  m->mutable_indices()->Reserve(3 * tris);
  for (int i = 0; i < tris; ++i) {
    for (uint32_t k : {0u, 1u, 2u}) m->add_indices(k);
  }
  return c;
}

// A rows x cols grid mesh; `float32`: coordinates are float32 binary
// fractions (as glTF levels carry them), else short decimals (case files).
v1::Collider GridMesh(uint64_t id, int rows, int cols, bool float32) {
  v1::Collider c = SphereMsg(id, 1.0, {1000.0 * static_cast<double>(id), 0, 0});
  v1::TriangleMesh* m = c.mutable_shape()->mutable_mesh();
  for (int r = 0; r < rows; ++r) {
    for (int k = 0; k < cols; ++k) {
      v1::Vec3* v = m->add_vertices();
      if (float32) {
        v->set_x(static_cast<float>(k) * 0.1f);
        v->set_y(static_cast<float>((r * 7 + k * 3) % 11) * 0.0371f);
        v->set_z(static_cast<float>(r) * 0.1f);
      } else {
        v->set_x(k * 0.25);
        v->set_y(0.5 * ((r * 7 + k * 3) % 5));
        v->set_z(r * 0.25);
      }
    }
  }
  for (int r = 0; r + 1 < rows; ++r) {
    for (int k = 0; k + 1 < cols; ++k) {
      const uint32_t a = static_cast<uint32_t>(r * cols + k), b = a + 1,
                     d = a + static_cast<uint32_t>(cols), e = d + 1;
      for (uint32_t i : {a, d, b, b, d, e}) m->add_indices(i);
    }
  }
  return c;
}

v1::Collider SphereHull(uint64_t id, int points, std::mt19937* rng) {
  v1::Collider c = SphereMsg(id, 1.0, {5.0 * static_cast<double>(id), 0, 0});
  std::normal_distribution<double> g(0.0, 1.0);
  v1::ConvexHull* h = c.mutable_shape()->mutable_convex_hull();
  for (int i = 0; i < points; ++i) {
    const Vec3 p(g(*rng), g(*rng), g(*rng));
    wire::ToProto(p / p.Length(), h->add_points());
  }
  return c;
}

v1::Collider Field(uint64_t id, int rows, int cols) {
  v1::Collider c = SphereMsg(id, 1.0, {500.0 * static_cast<double>(id), 0, 0});
  v1::Heightfield* h = c.mutable_shape()->mutable_heightfield();
  h->set_rows(static_cast<uint32_t>(rows));
  h->set_cols(static_cast<uint32_t>(cols));
  h->set_cell_size_x(0.5);
  h->set_cell_size_z(0.5);
  for (int i = 0; i < rows * cols; ++i) h->add_heights(0.01 * (i % 97));
  return c;
}

v1::Collider HullCompound(uint64_t id, int children, std::mt19937* rng) {
  v1::Collider c = SphereMsg(id, 1.0, {50.0 * static_cast<double>(id), 0, 0});
  v1::Compound* comp = c.mutable_shape()->mutable_compound();
  for (int i = 0; i < children; ++i) {
    v1::CompoundChild* child = comp->add_children();
    *child->mutable_shape() = SphereHull(1, 16, rng).shape();
    child->mutable_position()->set_x(2.0 * i);
  }
  return c;
}

class BatchBudgetTest : public ::testing::Test {
 protected:
  void SetUp() override { spdlog::set_level(spdlog::level::off); }
  void TearDown() override { spdlog::set_level(spdlog::level::info); }

  void Start(const server::ServiceOptions& o) {
    service_ = std::make_unique<server::HitboxService>(o);
  }
  void Start() {
    server::ServiceOptions o;
    o.threads = 1;
    Start(o);
  }
  void Create(const std::string& id, uint64_t build_work = 0) {
    v1::CreateSessionRequest req;
    req.set_session_id(id);
    req.mutable_limits()->set_max_build_work_per_message(build_work);
    v1::SessionInfo info;
    ASSERT_TRUE(service_->DoCreateSession(req, &info).ok());
  }
  uint64_t MemoryOf(const std::string& id) {
    v1::GetSessionRequest req;
    req.set_session_id(id);
    v1::SessionInfo info;
    EXPECT_TRUE(service_->DoGetSession(req, &info).ok());
    return info.memory_bytes();
  }
  grpc::Status Apply(const v1::ApplyChangesRequest& req, const server::CallControl& call = {}) {
    v1::ApplyChangesResponse resp;
    return service_->DoApplyChanges(req, &resp, call);
  }
  static v1::ApplyChangesRequest Batch(const std::string& id, std::vector<v1::Collider> adds) {
    v1::ApplyChangesRequest req;
    req.set_session_id(id);
    for (v1::Collider& c : adds) *req.add_changes()->mutable_add() = std::move(c);
    return req;
  }

  std::unique_ptr<server::HitboxService> service_;
};

// A batch whose price passes --max-memory is refused naming the figure and
// the cap, before any build, and holds nothing afterwards.
TEST_F(BatchBudgetTest, OverMemoryCapRefusedBeforeAnyBuild) {
  server::ServiceOptions o;
  o.threads = 1;
  o.limits.max_memory_bytes = 3 << 20;
  Start(o);
  Create("s");
  const uint64_t before = MemoryOf("s");
  std::vector<v1::Collider> meshes;
  for (uint64_t i = 1; i <= 8; ++i) meshes.push_back(IdenticalTriangles(i, 65'536));
  const grpc::Status st = Apply(Batch("s", meshes));
  EXPECT_EQ(st.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_THAT(st.error_message(), HasSubstr("--max-memory"));
  EXPECT_THAT(st.error_message(), HasSubstr("the cap is " + std::to_string(3 << 20)));
  EXPECT_THAT(st.error_message(), HasSubstr("this batch needs about "));
  EXPECT_EQ(service_->shapes_built(), 0u);
  EXPECT_EQ(MemoryOf("s"), before);
  EXPECT_EQ(service_->sessions().memory_bytes(), before);
  EXPECT_EQ(service_->build_memory().used(), 0u);
  // One of them fits, and is built.
  meshes.resize(1);
  EXPECT_TRUE(Apply(Batch("s", meshes)).ok());
  EXPECT_EQ(service_->shapes_built(), 1u);
}

// A bad last entry (NaN radius, an index out of range, a taken id) refuses
// the whole batch before its first build.
TEST_F(BatchBudgetTest, BadLastEntryRefusedBeforeAnyBuild) {
  Start();
  Create("s");
  std::vector<v1::Collider> meshes;
  for (uint64_t i = 1; i <= 4; ++i) meshes.push_back(IdenticalTriangles(i, 20'000));
  {
    v1::ApplyChangesRequest req = Batch("s", meshes);
    *req.add_changes()->mutable_add() = SphereMsg(99, std::nan(""));
    const grpc::Status st = Apply(req);
    EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_THAT(st.error_message(), HasSubstr("changes[4].add.shape.sphere.radius"));
  }
  {
    v1::ApplyChangesRequest req = Batch("s", meshes);
    v1::Collider bad = IdenticalTriangles(98, 10);
    bad.mutable_shape()->mutable_mesh()->set_indices(29, 7);
    *req.add_changes()->mutable_add() = bad;
    const grpc::Status st = Apply(req);
    EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_THAT(st.error_message(), HasSubstr("changes[4].add.shape.mesh.indices[29]"));
  }
  {
    v1::ApplyChangesRequest req = Batch("s", meshes);
    *req.add_changes()->mutable_add() = SphereMsg(2, 1.0);  // id 2 is in the batch already
    const grpc::Status st = Apply(req);
    EXPECT_EQ(st.error_code(), grpc::StatusCode::ALREADY_EXISTS);
    EXPECT_THAT(st.error_message(), HasSubstr("changes[4].add.id"));
  }
  {
    v1::ApplyChangesRequest req = Batch("s", meshes);
    req.add_changes()->set_remove(12345);
    EXPECT_EQ(Apply(req).error_code(), grpc::StatusCode::NOT_FOUND);
  }
  EXPECT_EQ(service_->shapes_built(), 0u);
  EXPECT_EQ(service_->sessions().memory_bytes(), MemoryOf("s"));
}

// The pre-check says what the build-time checks say, word for word.
TEST_F(BatchBudgetTest, CheckChangesMatchesFromProto) {
  std::mt19937 rng(1);
  std::vector<v1::ApplyChangesRequest> bad;
  bad.push_back(Batch("s", {SphereMsg(1, -1.0)}));
  bad.push_back(Batch("s", {IdenticalTriangles(1, 5)}));
  bad.back().mutable_changes(0)->mutable_add()->mutable_shape()->mutable_mesh()->add_indices(0);
  bad.push_back(Batch("s", {Field(1, 3, 3)}));
  bad.back().mutable_changes(0)->mutable_add()->mutable_shape()->mutable_heightfield()->set_heights(
      4, std::numeric_limits<double>::infinity());
  bad.push_back(Batch("s", {SphereHull(1, 3, &rng)}));
  bad.push_back(Batch("s", {HullCompound(1, 2, &rng)}));
  bad.back().mutable_changes(0)->mutable_add()->mutable_shape()->mutable_compound()->mutable_children(
      1)->mutable_position()->set_y(std::nan(""));
  {
    v1::Collider degenerate = IdenticalTriangles(1, 3);  // every triangle of zero area
    degenerate.mutable_shape()->mutable_mesh()->mutable_vertices(2)->set_z(0);
    bad.push_back(Batch("s", {degenerate}));
  }
  for (const v1::ApplyChangesRequest& req : bad) {
    std::vector<ColliderChange> built, skeletons;
    std::vector<wire::ChangeCost> costs;
    const Status full = wire::FromProto(req.changes(), &built);
    const Status pre = wire::CheckChanges(req.changes(), &skeletons, &costs);
    ASSERT_FALSE(full.ok());
    ASSERT_FALSE(pre.ok()) << full.message();
    EXPECT_EQ(pre.message(), full.message());
    EXPECT_EQ(pre.code(), full.code());
  }
}

// Build work past limits.max_build_work_per_message is refused up front,
// naming both figures; a session may not raise the server's budget.
TEST_F(BatchBudgetTest, BuildWorkBudget) {
  server::ServiceOptions o;
  o.threads = 1;
  o.limits.session.max_build_work_per_message = 100'000;
  Start(o);
  Create("s", 5'000);
  const grpc::Status st = Apply(Batch("s", {IdenticalTriangles(1, 3'000), IdenticalTriangles(2, 3'000)}));
  EXPECT_EQ(st.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_THAT(st.error_message(), HasSubstr("takes 6000 units of work"));
  EXPECT_THAT(st.error_message(), HasSubstr("budget of 5000 (limits.max_build_work_per_message)"));
  EXPECT_EQ(service_->shapes_built(), 0u);
  EXPECT_TRUE(Apply(Batch("s", {IdenticalTriangles(1, 3'000)})).ok());
  v1::CreateSessionRequest raise;
  raise.set_session_id("t");
  raise.mutable_limits()->set_max_build_work_per_message(100'001);
  v1::SessionInfo info;
  EXPECT_EQ(service_->DoCreateSession(raise, &info).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
}

// Batches being built share --max-build-bytes: one that does not fit is
// refused (retry) and gives back what it reserved.
TEST_F(BatchBudgetTest, BuildBytesBudget) {
  server::ServiceOptions o;
  o.threads = 1;
  o.limits.max_build_bytes = 1 << 20;
  Start(o);
  Create("s");
  const grpc::Status st = Apply(Batch("s", {IdenticalTriangles(1, 200'000)}));
  EXPECT_EQ(st.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_THAT(st.error_message(), HasSubstr("of 1048576 bytes (--max-build-bytes)"));
  EXPECT_EQ(service_->shapes_built(), 0u);
  EXPECT_EQ(service_->build_memory().used(), 0u);
  EXPECT_EQ(service_->sessions().memory_bytes(), MemoryOf("s"));
  EXPECT_TRUE(Apply(Batch("s", {IdenticalTriangles(1, 1'000)})).ok());
  EXPECT_EQ(service_->build_memory().used(), 0u);
}

// A passed deadline or a cancelled call stops a batch before its next build.
TEST_F(BatchBudgetTest, DeadlineAndCancellationStopBuilds) {
  Start();
  Create("s");
  server::CallControl late;
  late.deadline = std::chrono::steady_clock::now() - 1ms;
  grpc::Status st = Apply(Batch("s", {IdenticalTriangles(1, 1'000)}), late);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED);
  EXPECT_THAT(st.error_message(), HasSubstr("before changes[0] was built"));
  // Cancelled after the first build: the second never starts.
  int asked = 0;
  server::CallControl cancel;
  cancel.cancelled = [&asked] { return ++asked > 1; };
  st = Apply(Batch("s", {IdenticalTriangles(1, 1'000), IdenticalTriangles(2, 1'000)}), cancel);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::CANCELLED);
  EXPECT_THAT(st.error_message(), HasSubstr("before changes[1] was built"));
  EXPECT_EQ(service_->shapes_built(), 1u);
  EXPECT_EQ(service_->sessions().memory_bytes(), MemoryOf("s"));
  EXPECT_EQ(service_->build_memory().used(), 0u);
}

// The price of a batch (its shapes' predicted bytes plus bytes per collider)
// agrees within 10% with the growth of SessionInfo.memory_bytes it causes,
// for meshes (decimal and float32 vertices, identical triangles), hulls,
// heightfields and compounds.
TEST_F(BatchBudgetTest, PriceAgreesWithMemoryBytes) {
  Start();
  std::mt19937 rng(7);
  std::vector<std::pair<const char*, std::vector<v1::Collider>>> batches;
  batches.push_back({"decimal mesh", {GridMesh(1, 200, 150, false)}});
  batches.push_back({"float32 mesh", {GridMesh(1, 200, 150, true)}});
  batches.push_back({"identical triangles", {IdenticalTriangles(1, 100'000)}});
  std::vector<v1::Collider> hulls;
  for (uint64_t i = 1; i <= 40; ++i) hulls.push_back(SphereHull(i, 64, &rng));
  batches.push_back({"hulls", hulls});
  batches.push_back({"heightfield", {Field(1, 300, 257)}});
  std::vector<v1::Collider> compounds;
  for (uint64_t i = 1; i <= 20; ++i) compounds.push_back(HullCompound(i, 12, &rng));
  batches.push_back({"compounds", compounds});
  int n = 0;
  for (const auto& [what, colliders] : batches) {
    std::string id = "p";
    id += std::to_string(n++);
    Create(id);
    const uint64_t before = MemoryOf(id);
    const v1::ApplyChangesRequest req = Batch(id, colliders);
    std::vector<ColliderChange> skeletons;
    std::vector<wire::ChangeCost> costs;
    ASSERT_TRUE(wire::CheckChanges(req.changes(), &skeletons, &costs).ok());
    uint64_t priced = colliders.size() * service_->bytes_per_collider();
    for (const wire::ChangeCost& c : costs) priced += c.shape_bytes;
    ASSERT_TRUE(Apply(req).ok()) << what;
    const uint64_t grown = MemoryOf(id) - before;
    EXPECT_NEAR(static_cast<double>(priced) / static_cast<double>(grown), 1.0, 0.10)
        << what << ": priced " << priced << ", memory_bytes grew " << grown;
  }
}

// Replacing or removing a big shape frees its price: a same-size replace
// passes under a cap the two together would not fit.
TEST_F(BatchBudgetTest, ReplaceCountsTheBytesItFrees) {
  server::ServiceOptions o;
  o.threads = 1;
  o.limits.max_memory_bytes = 5 << 19;
  Start(o);
  Create("s");
  ASSERT_TRUE(Apply(Batch("s", {IdenticalTriangles(1, 200'000)})).ok());
  ASSERT_GT(MemoryOf("s"), 5u << 18);  // over half the cap: two would not fit
  v1::ApplyChangesRequest replace;
  replace.set_session_id("s");
  *replace.add_changes()->mutable_replace() = IdenticalTriangles(1, 200'000);
  EXPECT_TRUE(Apply(replace).ok());
  EXPECT_EQ(Apply(Batch("s", {IdenticalTriangles(2, 200'000)})).error_code(),
            grpc::StatusCode::RESOURCE_EXHAUSTED);
}

// A tick's changes are priced the same way (the tick is refused, the stream goes on).
TEST_F(BatchBudgetTest, TickChangesArePriced) {
  server::ServiceOptions o;
  o.threads = 1;
  o.limits.max_memory_bytes = 2 << 20;
  Start(o);
  Create("s");
  server::HitboxService::TickStream stream;
  v1::TickRequest tick;
  tick.set_session_id("s");
  tick.set_tick(1);
  *tick.add_changes()->mutable_add() = IdenticalTriangles(1, 600'000);
  v1::TickResponse resp;
  ASSERT_TRUE(service_->DoTick(&stream, tick, &resp).ok());
  EXPECT_EQ(resp.error().code(), static_cast<int>(grpc::StatusCode::RESOURCE_EXHAUSTED));
  EXPECT_THAT(resp.error().message(), HasSubstr("--max-memory"));
  EXPECT_EQ(service_->shapes_built(), 0u);
  EXPECT_TRUE(stream.changes.empty());
}

// A Tick stream whose first tick names an unknown session stays unbound: a
// later tick naming a real session is served.
TEST_F(BatchBudgetTest, TickBindsOnlyToAnExistingSession) {
  Start();
  Create("real");
  server::HitboxService::TickStream stream;
  v1::TickRequest tick;
  tick.set_session_id("ghost");
  v1::TickResponse resp;
  ASSERT_TRUE(service_->DoTick(&stream, tick, &resp).ok());
  EXPECT_EQ(resp.error().code(), static_cast<int>(grpc::StatusCode::NOT_FOUND));
  EXPECT_TRUE(stream.session_id.empty());
  tick.set_session_id("real");
  *tick.add_changes()->mutable_add() = SphereMsg(1, 1.0);
  resp.Clear();
  ASSERT_TRUE(service_->DoTick(&stream, tick, &resp).ok());
  EXPECT_FALSE(resp.has_error()) << resp.error().message();
  EXPECT_EQ(stream.session_id, "real");
  tick.set_session_id("ghost");  // bound now: another id is refused
  resp.Clear();
  ASSERT_TRUE(service_->DoTick(&stream, tick, &resp).ok());
  EXPECT_EQ(resp.error().code(), static_cast<int>(grpc::StatusCode::INVALID_ARGUMENT));
}

// A deleted session's set is freed at once, even while something (a stream,
// a call in flight) still holds the Session object.
TEST_F(BatchBudgetTest, DeletedSessionFreesItsSetAtOnce) {
  Start();
  Create("s");
  ASSERT_TRUE(Apply(Batch("s", {IdenticalTriangles(1, 200'000)})).ok());
  const std::shared_ptr<server::Session> held = service_->sessions().Find("s");
  ASSERT_GT(held->set().MemoryBytes(), 1u << 20);
  v1::DeleteSessionRequest del;
  del.set_session_id("s");
  ASSERT_TRUE(service_->DoDeleteSession(del).ok());
  EXPECT_TRUE(held->deleted());
  EXPECT_EQ(held->set().size(), 0u);
  EXPECT_LT(held->set().MemoryBytes(), 4096u);
  EXPECT_EQ(service_->sessions().memory_bytes(), 0u);
}


// Watches are counted in --max-memory before a batch applies: a batch whose
// new watch, or whose moves into a watch, would grow the inside sets and
// events past the memory left is refused whole (no watch, no move, the same
// revision and no more memory held); with room, the same batch applies.
TEST_F(BatchBudgetTest, WatchGrowthIsReservedAgainstMaxMemory) {
  server::ServiceOptions o;
  o.threads = 1;
  o.limits.max_memory_bytes = 4 << 20;
  Start(o);
  Create("w");
  // 2,000 balls at the origin, 2,000 far from it.
  std::vector<v1::Collider> balls;
  for (uint64_t i = 1; i <= 4'000; ++i) {
    balls.push_back(SphereMsg(i, 0.1, {i <= 2'000 ? 0.0 : 500.0, 0, 0}));
  }
  ASSERT_TRUE(Apply(Batch("w", balls)).ok());
  // Another session takes the memory left, to within one collider.
  const auto fill = [&](const std::string& id) {
    Create(id);
    uint64_t next = 1;
    for (uint64_t step : {1'000, 100, 10, 1}) {
      for (;;) {
        std::vector<v1::Collider> more;
        for (uint64_t k = 0; k < step; ++k) more.push_back(SphereMsg(next + k, 0.1, {-500, 0, 0}));
        if (!Apply(Batch(id, more)).ok()) break;
        next += step;
      }
    }
  };
  fill("fill");
  const auto info = [&] {
    v1::GetSessionRequest req;
    req.set_session_id("w");
    v1::SessionInfo i;
    EXPECT_TRUE(service_->DoGetSession(req, &i).ok());
    return i;
  };
  const auto add_watch = [&] {
    v1::ApplyChangesRequest req;
    req.set_session_id("w");
    v1::Watch* w = req.add_changes()->mutable_add_watch();
    w->set_id(1);
    w->mutable_shape()->mutable_sphere()->set_radius(5);
    return req;
  };
  const uint64_t revision = info().revision();
  const uint64_t held = service_->sessions().memory_bytes();
  grpc::Status st = Apply(add_watch());
  EXPECT_EQ(st.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << st.error_message();
  EXPECT_THAT(st.error_message(), HasSubstr("the watches would grow by at least"));
  EXPECT_THAT(st.error_message(), HasSubstr("--max-memory"));
  EXPECT_EQ(info().watches_size(), 0);
  EXPECT_EQ(info().revision(), revision);
  // At most the capacity its watch's storage kept (a tree node block, a
  // vector slot); refused again, nothing more.
  const uint64_t after_refusal = service_->sessions().memory_bytes();
  EXPECT_LE(after_refusal, held + 8'192);
  EXPECT_EQ(Apply(add_watch()).error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_EQ(service_->sessions().memory_bytes(), after_refusal);
  // With the memory back, the same batch applies: 2,000 colliders inside.
  v1::DeleteSessionRequest del;
  del.set_session_id("fill");
  ASSERT_TRUE(service_->DoDeleteSession(del).ok());
  v1::ApplyChangesResponse resp;
  ASSERT_TRUE(service_->DoApplyChanges(add_watch(), &resp, {}).ok());
  EXPECT_EQ(resp.events_size(), 2'000);
  // Moves into the watch grow its inside set: refused the same way when the
  // memory is taken again.
  fill("fill2");
  v1::ApplyChangesRequest moves;
  moves.set_session_id("w");
  for (uint64_t i = 2'001; i <= 4'000; ++i) {
    v1::MoveCollider* m = moves.add_changes()->mutable_move();
    m->set_id(i);
    m->mutable_pose()->mutable_position()->set_x(1.0);
  }
  const uint64_t revision2 = info().revision();
  st = Apply(moves);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << st.error_message();
  EXPECT_THAT(st.error_message(), HasSubstr("--max-memory"));
  EXPECT_EQ(info().revision(), revision2);
  ASSERT_EQ(info().watches_size(), 1);
  EXPECT_EQ(info().watches(0).inside_count(), 2'000u);
  del.set_session_id("fill2");
  ASSERT_TRUE(service_->DoDeleteSession(del).ok());
  v1::ApplyChangesResponse moved;
  ASSERT_TRUE(service_->DoApplyChanges(moves, &moved, {}).ok());
  EXPECT_EQ(moved.events_size(), 2'000);
  EXPECT_EQ(info().watches(0).inside_count(), 4'000u);
}

// The caches query batches make (merged meshes, the tree's wide copy) are
// reserved against --max-memory like colliders: where they do not fit, the
// batches answer without them (alike) and the total stays under the cap;
// with room, they are made and SessionInfo.memory_bytes counts them.
TEST_F(BatchBudgetTest, QueryCachesAreReservedAgainstMaxMemory) {
  server::ServiceOptions o;
  o.threads = 1;
  o.background_caches = false;  // made in the batches that pay for them
  o.limits.max_memory_bytes = 4 << 20;
  Start(o);
  Create("m");
  // Twelve grid meshes at one pose: ray batches merge them once they pay.
  std::vector<v1::Collider> grids;
  for (uint64_t i = 1; i <= 12; ++i) {
    v1::Collider c = GridMesh(i, 24, 24, true);
    wire::ToProto(Vec3{}, c.mutable_pose()->mutable_position());
    grids.push_back(std::move(c));
  }
  ASSERT_TRUE(Apply(Batch("m", grids)).ok());
  const uint64_t alone = MemoryOf("m");
  const std::shared_ptr<server::Session> m = service_->sessions().Find("m");
  const auto merged_triangles = [&] { return m->set().GetTreeStats().merged_triangles; };
  // Rays straight down onto the grids, many batches of them.
  v1::QueryRequest rays;
  rays.set_session_id("m");
  std::mt19937 rng(29);
  std::uniform_real_distribution<double> along(0.05, 2.25);
  for (int k = 0; k < 500; ++k) {
    v1::RayQuery* r = rays.add_queries()->mutable_raycast();
    wire::ToProto(Vec3{along(rng), 5.0, along(rng)}, r->mutable_origin());
    wire::ToProto(Vec3{0.0, -10.0, 0.0}, r->mutable_translation());
  }
  const auto run = [&](v1::QueryResponse* resp) {
    for (int b = 0; b < 40; ++b) {
      resp->Clear();
      ASSERT_TRUE(service_->DoQuery(rays, resp).ok());
    }
  };
  // Another session takes the memory left.
  Create("fill");
  uint64_t next = 1;
  for (uint64_t step : {1'000, 100, 10, 1}) {
    for (;;) {
      std::vector<v1::Collider> more;
      for (uint64_t k = 0; k < step; ++k) more.push_back(SphereMsg(next + k, 0.1, {-500, 0, 0}));
      if (!Apply(Batch("fill", more)).ok()) break;
      next += step;
    }
  }
  const uint64_t full = service_->sessions().memory_bytes();
  v1::QueryResponse tight;
  run(&tight);
  EXPECT_EQ(merged_triangles(), 0u);
  EXPECT_EQ(service_->sessions().memory_bytes(), full);
  EXPECT_EQ(MemoryOf("m"), alone);
  // With the memory back, the merged meshes are made and counted; the
  // answers are alike.
  v1::DeleteSessionRequest del;
  del.set_session_id("fill");
  ASSERT_TRUE(service_->DoDeleteSession(del).ok());
  v1::QueryResponse roomy;
  run(&roomy);
  EXPECT_EQ(merged_triangles(), 12u * 2 * 23 * 23);
  const uint64_t merged = MemoryOf("m");
  // (A merged mesh keeps its own hierarchy only: over 2 bytes a triangle.)
  EXPECT_GT(merged, alone + m->set().GetTreeStats().merged_triangles * 2);
  EXPECT_EQ(service_->sessions().memory_bytes(), merged);
  ASSERT_EQ(tight.results_size(), roomy.results_size());
  for (int i = 0; i < tight.results_size(); ++i) {
    ASSERT_EQ(tight.results(i).hits_size(), 1) << "query " << i;
    ASSERT_EQ(tight.results(i).DebugString(), roomy.results(i).DebugString()) << "query " << i;
  }
  // A change to the meshes drops the merged ones, and their bytes.
  v1::ApplyChangesRequest remove;
  remove.set_session_id("m");
  remove.add_changes()->set_remove(1);
  ASSERT_TRUE(Apply(remove).ok());
  ASSERT_TRUE(service_->DoQuery(rays, &roomy).ok());
  EXPECT_EQ(merged_triangles(), 0u);
  EXPECT_LT(MemoryOf("m"), alone);
  EXPECT_EQ(service_->sessions().memory_bytes(), MemoryOf("m"));
}

}  // namespace
}  // namespace hitbox
