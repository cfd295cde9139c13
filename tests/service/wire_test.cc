// hitbox_wire: proto <-> core conversion, validation messages naming the field
// path, and the status-code mapping.
#include "hitbox/wire/convert.h"

#include <cmath>
#include <limits>
#include <random>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "test_util.h"

namespace hitbox {
namespace {

using ::testing::HasSubstr;

v1::Collider SphereCollider(uint64_t id, double radius) {
  v1::Collider c;
  c.set_id(id);
  c.mutable_shape()->mutable_sphere()->set_radius(radius);
  return c;
}

// The example of the issue: a negative box half-extent names the full path.
TEST(WireTest, BadBoxHalfExtentNamesFullPath) {
  v1::ApplyChangesRequest req;
  for (int i = 0; i < 3; ++i) *req.add_changes()->mutable_add() = SphereCollider(i, 1);
  v1::Collider* c = req.add_changes()->mutable_add();
  c->set_id(9);
  v1::Vec3* he = c->mutable_shape()->mutable_box()->mutable_half_extents();
  he->set_x(1);
  he->set_y(-1);
  he->set_z(1);
  std::vector<ColliderChange> out;
  const Status s = wire::FromProto(req.changes(), &out);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "changes[3].add.shape.box.half_extents.y must be finite and in [1e-7, 1e6] metres, got -1");
}

// A zero quaternion is rejected with its norm in the message.
TEST(WireTest, ZeroQuaternionIsRejected) {
  v1::QueryRequest req;
  v1::CastQuery* cast = req.add_queries()->mutable_cast();
  cast->mutable_shape()->mutable_sphere()->set_radius(1);
  cast->mutable_pose()->mutable_rotation();  // present, all zeros
  std::vector<Query> out;
  const Status s = wire::FromProto(req.queries(), &out);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message(), "queries[0].cast.pose.rotation: quaternion norm 0 is not 1 (tolerance 1e-6)");
}

// Missing sub-messages and unset oneofs are INVALID_ARGUMENT naming the field.
TEST(WireTest, MissingRequiredPartsNameTheField) {
  std::vector<ColliderChange> changes;
  v1::ApplyChangesRequest req;
  req.add_changes();  // change oneof unset
  Status s = wire::FromProto(req.changes(), &changes);
  EXPECT_EQ(s.code(), ErrorCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("changes[0]: no change set"));

  req.Clear();
  req.add_changes()->mutable_add()->set_id(1);  // no shape
  s = wire::FromProto(req.changes(), &changes);
  EXPECT_EQ(s.message(), "changes[0].add.shape is required");

  req.Clear();
  req.add_changes()->mutable_add()->mutable_shape();  // shape kind unset
  s = wire::FromProto(req.changes(), &changes);
  EXPECT_THAT(s.message(), HasSubstr("changes[0].add.shape: no shape kind set"));

  req.Clear();
  req.add_changes()->mutable_move()->set_id(4);  // no pose
  s = wire::FromProto(req.changes(), &changes);
  EXPECT_EQ(s.message(), "changes[0].move.pose is required");

  std::vector<Query> queries;
  v1::QueryRequest q;
  q.add_queries()->mutable_raycast();
  q.add_queries();  // kind unset
  s = wire::FromProto(q.queries(), &queries);
  EXPECT_THAT(s.message(), HasSubstr("queries[1]: no query kind set"));

  q.Clear();
  q.add_queries()->mutable_overlap();
  s = wire::FromProto(q.queries(), &queries);
  EXPECT_EQ(s.message(), "queries[0].overlap.shape is required");
}

// Query.shape_from_collider: the shape and pose are the collider's, so the
// message must leave them out; a raycast has no shape. The id itself is
// checked by the server (it needs the set).
TEST(WireTest, ShapeFromColliderLeavesShapeAndPoseOut) {
  std::vector<Query> queries;
  v1::QueryRequest q;
  v1::Query* sweep = q.add_queries();
  sweep->set_shape_from_collider(7);
  sweep->mutable_cast()->mutable_translation()->set_x(1);
  Status s = wire::FromProto(q.queries(), &queries);
  ASSERT_TRUE(s.ok()) << s.message();
  ASSERT_EQ(queries.size(), 1u);
  EXPECT_EQ(std::get<CastQuery>(queries[0]).translation.x, 1.0);

  sweep->mutable_cast()->mutable_pose();
  s = wire::FromProto(q.queries(), &queries);
  EXPECT_EQ(s.code(), ErrorCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("queries[0].cast.pose: must be left out when "
                                     "shape_from_collider is set"));
  sweep->mutable_cast()->mutable_shape()->mutable_sphere()->set_radius(1);
  s = wire::FromProto(q.queries(), &queries);
  EXPECT_THAT(s.message(), HasSubstr("queries[0].cast.shape: must be left out"));

  q.Clear();
  q.add_queries()->mutable_overlap();
  q.add_queries()->mutable_raycast();
  q.mutable_queries(0)->set_shape_from_collider(1);
  q.mutable_queries(1)->set_shape_from_collider(1);
  s = wire::FromProto(q.queries(), &queries);
  EXPECT_THAT(s.message(), HasSubstr("queries[1].shape_from_collider: a raycast has no shape"));

  // The client side leaves them out.
  MoveQuery m;
  m.shape = *Shape::MakeCapsule(0.4, 0.5);
  v1::Query out;
  wire::ToProto(Query(m), &out, /*shape_and_pose=*/false);
  EXPECT_FALSE(out.move().has_shape());
  EXPECT_FALSE(out.move().has_pose());
}

// A shape kind this server does not know (a newer client's field 15) reads as
// an unset oneof: INVALID_ARGUMENT naming the field, not a crash.
TEST(WireTest, UnknownShapeKindIsRejected) {
  v1::Shape s;
  ASSERT_TRUE(s.ParseFromString(std::string("\x7a\x02\x08\x01", 4)));  // field 15 {1: 1}
  const Result<Shape> r = wire::FromProto(s, "queries[2].overlap.shape");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::kInvalidArgument);
  EXPECT_THAT(r.error().message, HasSubstr("queries[2].overlap.shape: no shape kind set"));
}

v1::Collider HullCollider(uint64_t id, const std::vector<Vec3>& points) {
  v1::Collider c;
  c.set_id(id);
  for (const Vec3& p : points) {
    v1::Vec3* v = c.mutable_shape()->mutable_convex_hull()->add_points();
    v->set_x(p.x);
    v->set_y(p.y);
    v->set_z(p.z);
  }
  return c;
}

// Convex hulls: a valid one round-trips (the points as given); bad points
// name their index and axis; degenerate and short lists say why.
TEST(WireTest, ConvexHullPathsAndRoundTrip) {
  const std::vector<Vec3> cube = {{-1, -1, -1}, {1, -1, -1}, {-1, 1, -1}, {1, 1, -1},
                                  {-1, -1, 1},  {1, -1, 1},  {-1, 1, 1},  {1, 1, 1},
                                  {0.5, 0, 0}};
  Result<Collider> ok = wire::FromProto(HullCollider(1, cube), "c");
  ASSERT_TRUE(ok.ok()) << ok.error().message;
  ASSERT_EQ(ok->shape.kind(), ShapeKind::kConvexHull);
  EXPECT_EQ(ok->shape.hull()->vertices().size(), 8u);
  v1::Shape back;
  wire::ToProto(ok->shape, &back);
  ASSERT_EQ(back.convex_hull().points_size(), 9);
  EXPECT_EQ(back.convex_hull().points(8).x(), 0.5);

  v1::ApplyChangesRequest req;
  for (int i = 0; i < 4; ++i) *req.add_changes()->mutable_add() = SphereCollider(i, 1);
  std::vector<Vec3> bad = cube;
  bad[7].x = std::numeric_limits<double>::quiet_NaN();
  *req.add_changes()->mutable_add() = HullCollider(9, bad);
  std::vector<ColliderChange> out;
  Status s = wire::FromProto(req.changes(), &out);
  EXPECT_EQ(s.code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(s.message(),
            "changes[4].add.shape.convex_hull.points[7].x must be finite and in [-1e6, 1e6] "
            "metres, got nan");

  EXPECT_EQ(wire::FromProto(HullCollider(1, {{0, 0, 0}, {1, 0, 0}, {0, 1, 0}, {1, 1, 0}}), "c")
                .error()
                .message,
            "c.shape.convex_hull: the points are coplanar (zero volume)");
  EXPECT_EQ(wire::FromProto(HullCollider(1, {{0, 0, 0}, {1, 0, 0}, {0, 1, 0}}), "c").error().message,
            "c.shape.convex_hull.points needs at least 4 points, got 3");
  std::vector<Vec3> many;
  for (int i = 0; i < 257; ++i) many.push_back({std::cos(i * 1.0), std::sin(i * 1.0), i * 0.01});
  EXPECT_EQ(wire::FromProto(HullCollider(1, many), "c").error().message,
            "c.shape.convex_hull.points holds at most 256 points, got 257");
}

// Every non-finite or out-of-range number is caught, with its value.
TEST(WireTest, NonFiniteAndOutOfRangeValues) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  v1::Collider c = SphereCollider(1, nan);
  EXPECT_EQ(wire::FromProto(c, "c").error().message,
            "c.shape.sphere.radius must be finite and in [1e-7, 1e6] metres, got nan");
  c = SphereCollider(1, 0);
  EXPECT_EQ(wire::FromProto(c, "c").error().message,
            "c.shape.sphere.radius must be finite and in [1e-7, 1e6] metres, got 0");
  c = SphereCollider(1, 1);
  c.mutable_pose()->mutable_position()->set_z(-inf);
  EXPECT_EQ(wire::FromProto(c, "c").error().message,
            "c.pose.position.z must be finite, got -inf");
  c = SphereCollider(1, 1);
  c.set_layer(32);
  EXPECT_EQ(wire::FromProto(c, "c").error().message, "c.layer must be in [0, 31], got 32");

  v1::Shape s;
  s.mutable_capsule()->set_radius(1);
  s.mutable_capsule()->set_half_height(-0.5);
  EXPECT_EQ(wire::FromProto(s, "s").error().message,
            "s.capsule.half_height must be 0 or finite and in [1e-7, 1e6] metres, got -0.5");
  s.mutable_cylinder()->set_radius(-2);
  EXPECT_EQ(wire::FromProto(s, "s").error().message,
            "s.cylinder.radius must be finite and in [1e-7, 1e6] metres, got -2");

  // The accepted ranges (geometry.proto): sizes in [1e-7, 1e6], coordinates
  // within +-1e9; both ends are inclusive.
  c = SphereCollider(1, 1e308);
  EXPECT_EQ(wire::FromProto(c, "c").error().message,
            "c.shape.sphere.radius must be finite and in [1e-7, 1e6] metres, got 1e+308");
  c = SphereCollider(1, 5e-324);
  EXPECT_EQ(wire::FromProto(c, "c").error().message,
            "c.shape.sphere.radius must be finite and in [1e-7, 1e6] metres, got 5e-324");
  EXPECT_TRUE(wire::FromProto(SphereCollider(1, 1e-7), "c").ok());
  EXPECT_TRUE(wire::FromProto(SphereCollider(1, 1e6), "c").ok());
  EXPECT_FALSE(wire::FromProto(SphereCollider(1, 1.000001e6), "c").ok());
  s.mutable_capsule()->set_radius(1);
  s.mutable_capsule()->set_half_height(5e-324);
  EXPECT_EQ(wire::FromProto(s, "s").error().message,
            "s.capsule.half_height must be 0 or finite and in [1e-7, 1e6] metres, got 5e-324");
  s.mutable_capsule()->set_half_height(0);
  EXPECT_TRUE(wire::FromProto(s, "s").ok());
  c = SphereCollider(1, 1);
  c.mutable_pose()->mutable_position()->set_y(1e9);
  EXPECT_TRUE(wire::FromProto(c, "c").ok());
  c.mutable_pose()->mutable_position()->set_y(-1.5e9);
  EXPECT_EQ(wire::FromProto(c, "c").error().message,
            "c.pose.position.y must be within +-1e9 metres, got -1.5e+09");

  v1::Quat q;
  q.set_w(1.00001);
  EXPECT_THAT(wire::FromProto(q, "q").error().message, HasSubstr("q: quaternion norm 1.00001"));
  q.set_x(nan);
  EXPECT_EQ(wire::FromProto(q, "q").error().message, "q.x must be finite, got nan");

  v1::QueryFilter f;
  for (int i = 0; i <= wire::kMaxIgnoreIds; ++i) f.add_ignore_ids(i);
  EXPECT_THAT(wire::FromProto(f, "f").error().message, HasSubstr("f.ignore_ids: 257 ids"));

  v1::Query rq;
  rq.mutable_raycast()->mutable_translation()->set_y(nan);
  EXPECT_EQ(wire::FromProto(rq, "queries[5]").error().message,
            "queries[5].raycast.translation.y must be finite, got nan");
}

// Quaternions within tolerance are accepted and normalized exactly; absent
// pose parts default to the identity.
TEST(WireTest, PoseDefaultsAndNormalization) {
  v1::Pose p;
  Result<Pose> pose = wire::FromProto(p, "p");
  ASSERT_TRUE(pose.ok());
  EXPECT_EQ(pose->position, Vec3(0, 0, 0));
  EXPECT_EQ(pose->rotation, Quat::Identity());
  p.mutable_rotation()->set_w(1 + 5e-7);
  pose = wire::FromProto(p, "p");
  ASSERT_TRUE(pose.ok());
  EXPECT_NEAR(pose->rotation.Length(), 1.0, 1e-15);

  v1::QueryFilter f;
  Result<QueryFilter> filter = wire::FromProto(f, "f");
  ASSERT_TRUE(filter.ok());
  EXPECT_EQ(filter->mask, 0xFFFFFFFFu);
  f.set_mask(0);
  EXPECT_EQ(wire::FromProto(f, "f")->mask, 0u);
}

// core -> proto -> core is the identity for random colliders, changes and queries.
TEST(WireTest, RoundTripRandom) {
  std::mt19937_64 rng(12345);
  std::uniform_real_distribution<double> u(-100, 100), pos(0.01, 5);
  auto random_shape = [&]() {
    switch (rng() % 4) {
      case 0: return *Shape::MakeSphere(pos(rng));
      case 1: return *Shape::MakeBox({pos(rng), pos(rng), pos(rng)});
      case 2: return *Shape::MakeCapsule(pos(rng), pos(rng));
      default: return *Shape::MakeCylinder(pos(rng), pos(rng));
    }
  };
  auto random_pose = [&]() {
    return Pose({u(rng), u(rng), u(rng)}, Quat(u(rng), u(rng), u(rng), u(rng)).Normalized());
  };
  for (int i = 0; i < 500; ++i) {
    Collider c;
    c.id = rng();
    c.shape = random_shape();
    c.pose = random_pose();
    c.layer = static_cast<uint32_t>(rng() % 32);
    c.user_data = rng();
    v1::Collider pc;
    wire::ToProto(c, &pc);
    Result<Collider> back = wire::FromProto(pc, "c");
    ASSERT_TRUE(back.ok()) << back.error().message;
    EXPECT_EQ(back->id, c.id);
    EXPECT_EQ(back->shape, c.shape) << c.shape.ToString();
    EXPECT_EQ(back->pose.position, c.pose.position);
    EXPECT_NEAR(back->pose.rotation.x, c.pose.rotation.x, 1e-15);
    EXPECT_NEAR(back->pose.rotation.w, c.pose.rotation.w, 1e-15);
    EXPECT_EQ(back->layer, c.layer);
    EXPECT_EQ(back->user_data, c.user_data);

    CastQuery cq;
    cq.shape = random_shape();
    cq.pose = random_pose();
    cq.translation = {u(rng), u(rng), u(rng)};
    cq.filter.mask = static_cast<uint32_t>(rng());
    cq.filter.ignore = {rng(), rng()};
    cq.filter.max_hits = 7;
    cq.all_hits = (i % 2) == 0;
    v1::Query pq;
    wire::ToProto(Query(cq), &pq);
    Result<Query> qb = wire::FromProto(pq, "q");
    ASSERT_TRUE(qb.ok()) << qb.error().message;
    const auto& cb = std::get<CastQuery>(*qb);
    EXPECT_EQ(cb.shape, cq.shape);
    EXPECT_EQ(cb.translation, cq.translation);
    EXPECT_EQ(cb.filter.mask, cq.filter.mask);
    EXPECT_EQ(cb.filter.ignore, cq.filter.ignore);
    EXPECT_EQ(cb.filter.max_hits, 7u);
    EXPECT_EQ(cb.all_hits, cq.all_hits);
  }
}

// Results round-trip (server ToProto, client ResultFromProto).
TEST(WireTest, ResultsRoundTrip) {
  QueryResult r;
  OverlapHit oh{3, 4, Contact{0.25, {0, 0, 1}, {1, 2, 3}, {1, 2, 2.75}}};
  r.overlaps = {oh, OverlapHit{5, 6, std::nullopt}};
  r.hits = {CastHit{{CastState::kStartedOverlapping, 0.5, {1, 0, 0}, {2, 3, 4}, 0.125}, 7, 8}};
  v1::QueryResult p;
  wire::ToProto(r, 99, &p);
  EXPECT_EQ(p.tag(), 99u);
  const QueryResult b = wire::ResultFromProto(p);
  ASSERT_EQ(b.overlaps.size(), 2u);
  EXPECT_EQ(b.overlaps[0].id, 3u);
  ASSERT_TRUE(b.overlaps[0].contact.has_value());
  EXPECT_EQ(b.overlaps[0].contact->depth, 0.25);
  EXPECT_EQ(b.overlaps[0].contact->point_b, Vec3(1, 2, 2.75));
  EXPECT_FALSE(b.overlaps[1].contact.has_value());
  ASSERT_EQ(b.hits.size(), 1u);
  EXPECT_EQ(b.hits[0].fraction, 0.5);
  EXPECT_TRUE(b.hits[0].started_overlapping());
  EXPECT_EQ(b.hits[0].depth, 0.125);
  EXPECT_EQ(b.hits[0].point, Vec3(2, 3, 4));
}

// Move queries: absent settings take the documented defaults, every field
// round-trips, bad settings name their path, surfaces are refused as the
// character's shape; the move result round-trips.
TEST(WireTest, MovePathsDefaultsAndRoundTrip) {
  v1::Query p;
  v1::MoveQuery* m = p.mutable_move();
  m->mutable_shape()->mutable_capsule()->set_radius(0.4);
  m->mutable_shape()->mutable_capsule()->set_half_height(0.5);
  m->mutable_displacement()->set_x(1);
  Result<Query> q = wire::FromProto(p, "queries[3]");
  ASSERT_TRUE(q.ok()) << q.error().message;
  const MoveQuery& d = std::get<MoveQuery>(*q);
  const MoveSettings defaults;
  EXPECT_EQ(d.settings.up, defaults.up);
  EXPECT_EQ(d.settings.skin_width, 0.01);
  EXPECT_EQ(d.settings.max_iterations, 8);
  EXPECT_EQ(d.settings.max_slope_degrees, 45.0);
  EXPECT_EQ(d.settings.step_height, 0.3);
  EXPECT_EQ(d.settings.ground_snap_distance, 0.1);
  EXPECT_FALSE(d.apply_to_id.has_value());
  // Explicit zeros are kept (no stepping, no snap), and the up is normalized.
  m->mutable_settings()->set_step_height(0);
  m->mutable_settings()->set_ground_snap_distance(0);
  m->mutable_settings()->mutable_up()->set_z(2);
  m->set_apply_to_id(0);
  q = wire::FromProto(p, "queries[3]");
  ASSERT_TRUE(q.ok()) << q.error().message;
  EXPECT_EQ(std::get<MoveQuery>(*q).settings.step_height, 0.0);
  EXPECT_EQ(std::get<MoveQuery>(*q).settings.ground_snap_distance, 0.0);
  EXPECT_EQ(std::get<MoveQuery>(*q).settings.up, Vec3(0, 0, 1));
  EXPECT_EQ(std::get<MoveQuery>(*q).apply_to_id, std::optional<uint64_t>(0));
  // Round trip of a full query.
  MoveQuery full = std::get<MoveQuery>(*q);
  full.settings = {{0, 1, 0}, 0.02, 12, 50, 0.4, 0.2};
  full.filter.ignore = {7};
  full.pose = Pose({1, 2, 3});
  v1::Query wire_q;
  wire::ToProto(Query(full), &wire_q);
  Result<Query> back = wire::FromProto(wire_q, "q");
  ASSERT_TRUE(back.ok()) << back.error().message;
  const MoveQuery& b = std::get<MoveQuery>(*back);
  EXPECT_EQ(b.settings.max_iterations, 12);
  EXPECT_EQ(b.settings.max_slope_degrees, 50.0);
  EXPECT_EQ(b.pose.position, Vec3(1, 2, 3));
  EXPECT_EQ(b.filter.ignore, std::vector<uint64_t>{7});
  EXPECT_EQ(b.apply_to_id, full.apply_to_id);
  // Bad settings name the full path.
  const auto error = [&](auto set) {
    v1::Query bad = p;
    set(bad.mutable_move()->mutable_settings());
    Result<Query> r = wire::FromProto(bad, "queries[3]");
    return r.ok() ? std::string("ok") : r.error().message;
  };
  EXPECT_THAT(error([](v1::MoveSettings* s) { s->set_max_slope_degrees(90); }),
              HasSubstr("queries[3].move.settings.max_slope_degrees: must be in [0, 90)"));
  EXPECT_THAT(error([](v1::MoveSettings* s) { s->set_skin_width(0); }),
              HasSubstr("queries[3].move.settings.skin_width"));
  EXPECT_THAT(error([](v1::MoveSettings* s) { s->set_max_iterations(0); }),
              HasSubstr("queries[3].move.settings.max_iterations"));
  EXPECT_THAT(error([](v1::MoveSettings* s) { s->set_step_height(-1); }),
              HasSubstr("queries[3].move.settings.step_height"));
  EXPECT_THAT(error([](v1::MoveSettings* s) { s->set_ground_snap_distance(NAN); }),
              HasSubstr("queries[3].move.settings.ground_snap_distance"));
  EXPECT_THAT(error([](v1::MoveSettings* s) { s->mutable_up()->Clear(); }),
              HasSubstr("queries[3].move.settings.up"));
  v1::Query mesh = p;
  mesh.mutable_move()->mutable_shape()->mutable_mesh();
  Result<Query> refused = wire::FromProto(mesh, "queries[3]");
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(refused.error().message, HasSubstr("queries[3].move.shape.mesh"));
  // The result.
  QueryResult r;
  r.move = MoveResult{{1, 2, 3}, {0.5, 0, 0}, {MoveContact{4, 5, {0, 1, 0}, {1, 1, 1}}}, true, 4,
                      5, {0, 1, 0}, true, false};
  v1::QueryResult rp;
  wire::ToProto(r, 1, &rp);
  const QueryResult rb = wire::ResultFromProto(rp);
  ASSERT_TRUE(rb.move.has_value());
  EXPECT_EQ(rb.move->position, Vec3(1, 2, 3));
  EXPECT_EQ(rb.move->contacts.size(), 1u);
  EXPECT_EQ(rb.move->contacts[0].sub_shape, 5u);
  EXPECT_EQ(rb.move->ground_id, 4u);
  EXPECT_TRUE(rb.move->stepped);
  EXPECT_FALSE(rb.move->blocked);
  EXPECT_FALSE(wire::ResultFromProto(v1::QueryResult()).move.has_value());
}

// Session ids: 1..128 of [A-Za-z0-9._:-], except "." and "..".
TEST(WireTest, SessionIds) {
  EXPECT_TRUE(wire::ValidateSessionId("match-42:eu_west.1").ok());
  EXPECT_EQ(wire::ValidateSessionId("").code(), ErrorCode::kInvalidArgument);
  EXPECT_THAT(wire::ValidateSessionId("a b").message(), HasSubstr("session_id: character 1"));
  EXPECT_THAT(wire::ValidateSessionId(std::string(129, 'a')).message(), HasSubstr("129"));
  EXPECT_TRUE(wire::ValidateSessionId(std::string(128, 'a')).ok());
  // "." and ".." would name directories wherever ids become path segments.
  EXPECT_EQ(wire::ValidateSessionId(".").code(), ErrorCode::kInvalidArgument);
  EXPECT_THAT(wire::ValidateSessionId("..").message(), HasSubstr("'..' is not allowed"));
  EXPECT_TRUE(wire::ValidateSessionId("...").ok());
  EXPECT_TRUE(wire::ValidateSessionId(".a").ok());
}

// ErrorCode <-> grpc::StatusCode keeps the names.
TEST(WireTest, StatusMapping) {
  const ErrorCode codes[] = {ErrorCode::kInvalidArgument, ErrorCode::kNotFound,
                             ErrorCode::kAlreadyExists, ErrorCode::kResourceExhausted,
                             ErrorCode::kFailedPrecondition, ErrorCode::kDeadlineExceeded,
                             ErrorCode::kCancelled, ErrorCode::kOutOfRange,
                             ErrorCode::kUnavailable, ErrorCode::kInternal};
  for (ErrorCode c : codes) {
    EXPECT_EQ(wire::FromGrpcCode(wire::ToGrpcCode(c)), c);
    EXPECT_STREQ(wire::GrpcCodeName(wire::ToGrpcCode(c)), ErrorCodeName(c));
  }
  const grpc::Status g = wire::ToGrpcStatus(Status(ErrorCode::kNotFound, "collider 7"));
  EXPECT_EQ(g.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(g.error_message(), "collider 7");
  EXPECT_TRUE(wire::ToGrpcStatus(Status::Ok()).ok());
  const Status back =
      wire::FromGrpcStatus(grpc::Status(grpc::StatusCode::PERMISSION_DENIED, "no"));
  EXPECT_EQ(back.code(), ErrorCode::kInternal);
  EXPECT_EQ(back.message(), "PERMISSION_DENIED: no");
}

}  // namespace
}  // namespace hitbox

namespace hitbox {
namespace {

v1::Collider MeshCollider(uint64_t id, int vertices, const std::vector<uint32_t>& indices) {
  v1::Collider c;
  c.set_id(id);
  auto* m = c.mutable_shape()->mutable_mesh();
  for (int i = 0; i < vertices; ++i) {
    v1::Vec3* v = m->add_vertices();
    v->set_x(i % 2);
    v->set_y(i / 2 % 2);
    v->set_z(i / 4);
  }
  for (uint32_t i : indices) m->add_indices(i);
  return c;
}

// Meshes and heightfields: a valid one round-trips; bad indices, counts and
// sizes name their field; surfaces are refused as query shapes; sub_shape
// travels both ways.
TEST(WireTest, SurfacePathsAndRoundTrip) {
  Result<Collider> ok = wire::FromProto(MeshCollider(1, 4, {0, 1, 2, 1, 3, 2}), "c");
  ASSERT_TRUE(ok.ok()) << ok.error().message;
  ASSERT_EQ(ok->shape.kind(), ShapeKind::kMesh);
  v1::Shape back;
  wire::ToProto(ok->shape, &back);
  ASSERT_EQ(back.mesh().indices_size(), 6);
  EXPECT_EQ(back.mesh().vertices_size(), 4);
  EXPECT_EQ(back.mesh().indices(4), 3u);

  v1::ApplyChangesRequest req;
  for (int i = 0; i < 4; ++i) *req.add_changes()->mutable_add() = MeshCollider(i, 4, {0, 1, 2});
  std::vector<uint32_t> bad;
  for (int k = 0; k < 18; ++k) bad.insert(bad.end(), {0, 1, 2});
  bad[17 * 3 + 2] = 900;
  *req.add_changes()->mutable_add() = MeshCollider(9, 300, bad);
  std::vector<ColliderChange> out;
  Status s = wire::FromProto(req.changes(), &out);
  EXPECT_EQ(s.code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(s.message(),
            "changes[4].add.shape.mesh.indices[53] (triangles[17][2]): vertex index 900 out of "
            "range (300 vertices)");
  EXPECT_EQ(wire::FromProto(MeshCollider(1, 4, {0, 1}), "c").error().message,
            "c.shape.mesh.indices must hold 3 indices per triangle, got 2");

  v1::Collider hf;
  hf.set_id(2);
  auto* h = hf.mutable_shape()->mutable_heightfield();
  h->set_rows(2);
  h->set_cols(3);
  h->set_cell_size_x(1.0);
  h->set_cell_size_z(0.5);
  for (int i = 0; i < 6; ++i) h->add_heights(i * 0.25);
  Result<Collider> field = wire::FromProto(hf, "c");
  ASSERT_TRUE(field.ok()) << field.error().message;
  EXPECT_EQ(field->shape.kind(), ShapeKind::kHeightfield);
  wire::ToProto(field->shape, &back);
  EXPECT_EQ(back.heightfield().heights_size(), 6);
  EXPECT_EQ(back.heightfield().heights(5), 1.25);
  h->set_cell_size_z(5e-316);
  EXPECT_EQ(wire::FromProto(hf, "c").error().message,
            "c.shape.heightfield.cell_size_z must be finite and in [1e-7, 1e6] metres, got 5e-316");
  h->set_cell_size_z(0.5);
  h->add_heights(9);
  EXPECT_EQ(wire::FromProto(hf, "c").error().message,
            "c.shape.heightfield.heights must hold rows * cols = 6 heights, got 7");

  v1::Query q;
  *q.mutable_overlap()->mutable_shape() = back;
  EXPECT_EQ(wire::FromProto(q, "queries[2]").error().message,
            "queries[2].overlap.shape.heightfield: a heightfield is a collider-only shape, not "
            "a query shape (use sphere, box, capsule, cylinder or convex_hull)");

  QueryResult r;
  OverlapHit oh;
  oh.id = 3;
  oh.sub_shape = 17;
  r.overlaps = {oh};
  CastHit ch;
  ch.id = 4;
  ch.sub_shape = 123456;
  r.hits = {ch};
  v1::QueryResult p;
  wire::ToProto(r, 1, &p);
  const QueryResult b = wire::ResultFromProto(p);
  EXPECT_EQ(b.overlaps[0].sub_shape, 17u);
  EXPECT_EQ(b.hits[0].sub_shape, 123456u);
}

}  // namespace
}  // namespace hitbox

namespace hitbox {
namespace {

/// A collider holding a compound of `n` children: spheres of radius 0.1 at
/// x = 0, 1, 2, ..., every third child rotated a quarter turn about Y.
v1::Collider CompoundCollider(uint64_t id, int n) {
  v1::Collider c;
  c.set_id(id);
  v1::Compound* compound = c.mutable_shape()->mutable_compound();
  for (int i = 0; i < n; ++i) {
    v1::CompoundChild* child = compound->add_children();
    child->mutable_shape()->mutable_sphere()->set_radius(0.1);
    child->mutable_position()->set_x(i);
    if (i % 3 == 0) {
      child->mutable_rotation()->set_y(std::sqrt(0.5));
      child->mutable_rotation()->set_w(std::sqrt(0.5));
    }
  }
  return c;
}

std::string CompoundError(const v1::Collider& c) {
  Result<Collider> r = wire::FromProto(c, "c");
  if (r.ok()) return "ok";
  EXPECT_EQ(r.error().code, ErrorCode::kInvalidArgument);
  return r.error().message;
}

// Compounds: a valid one round-trips (children and their poses); a bad child
// names its full field path, also deep in a batch; 1..64 children; a mesh,
// heightfield or compound child and a compound query shape are refused
// before anything is built.
TEST(WireTest, CompoundPathsAndRoundTrip) {
  Result<Collider> ok = wire::FromProto(CompoundCollider(1, 4), "c");
  ASSERT_TRUE(ok.ok()) << ok.error().message;
  ASSERT_EQ(ok->shape.kind(), ShapeKind::kCompound);
  const std::vector<CompoundChild>& children = ok->shape.compound()->children();
  ASSERT_EQ(children.size(), 4u);
  EXPECT_EQ(children[2].pose.position, (Vec3{2, 0, 0}));
  EXPECT_EQ(children[3].shape, *Shape::MakeSphere(0.1));
  v1::Shape back;
  wire::ToProto(ok->shape, &back);
  ASSERT_EQ(back.compound().children_size(), 4);
  EXPECT_EQ(back.compound().children(1).position().x(), 1.0);
  EXPECT_NEAR(back.compound().children(3).rotation().y(), std::sqrt(0.5), 1e-15);
  v1::Collider again;
  *again.mutable_shape() = back;
  Result<Collider> round = wire::FromProto(again, "c");
  ASSERT_TRUE(round.ok()) << round.error().message;
  EXPECT_EQ(round->shape, ok->shape);

  // The path of a bad child deep in a batch.
  v1::ApplyChangesRequest req;
  for (int i = 0; i < 3; ++i) *req.add_changes()->mutable_add() = SphereCollider(i, 1);
  v1::Collider* bad = req.add_changes()->mutable_add();
  *bad = CompoundCollider(9, 6);
  v1::Vec3* he =
      bad->mutable_shape()->mutable_compound()->mutable_children(5)->mutable_shape()->mutable_box()
          ->mutable_half_extents();
  he->set_x(1);
  he->set_y(-1);
  he->set_z(1);
  std::vector<ColliderChange> out;
  const Status s = wire::FromProto(req.changes(), &out);
  EXPECT_EQ(s.code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(s.message(),
            "changes[3].add.shape.compound.children[5].shape.box.half_extents.y must be finite "
            "and in [1e-7, 1e6] metres, got -1");

  // Child poses and shapes.
  v1::Collider c = CompoundCollider(1, 3);
  c.mutable_shape()->mutable_compound()->mutable_children(1)->mutable_position()->set_z(
      std::numeric_limits<double>::infinity());
  EXPECT_EQ(CompoundError(c),
            "c.shape.compound.children[1].position.z must be finite and in [-1e6, 1e6] metres, "
            "got inf");
  c = CompoundCollider(1, 3);
  c.mutable_shape()->mutable_compound()->mutable_children(0)->mutable_rotation()->set_w(2);
  EXPECT_THAT(CompoundError(c),
              HasSubstr("c.shape.compound.children[0].rotation: quaternion norm "));
  c = CompoundCollider(1, 3);
  c.mutable_shape()->mutable_compound()->mutable_children(2)->clear_shape();
  EXPECT_EQ(CompoundError(c), "c.shape.compound.children[2].shape is required");
  c = CompoundCollider(1, 3);
  *c.mutable_shape()->mutable_compound()->mutable_children(1)->mutable_shape() =
      MeshCollider(1, 4, {0, 1, 2}).shape();
  EXPECT_EQ(CompoundError(c),
            "c.shape.compound.children[1].shape.mesh: a mesh cannot be a compound child (use "
            "sphere, box, capsule, cylinder or convex_hull)");
  c = CompoundCollider(1, 3);
  *c.mutable_shape()->mutable_compound()->mutable_children(2)->mutable_shape() =
      CompoundCollider(1, 2).shape();
  EXPECT_EQ(CompoundError(c),
            "c.shape.compound.children[2].shape.compound: a compound cannot be a compound child "
            "(use sphere, box, capsule, cylinder or convex_hull)");

  // The child limit.
  EXPECT_EQ(CompoundError(CompoundCollider(1, 0)),
            "c.shape.compound.children needs at least 1 child, got 0");
  EXPECT_EQ(CompoundError(CompoundCollider(1, 64)), "ok");
  EXPECT_EQ(CompoundError(CompoundCollider(1, 65)),
            "c.shape.compound.children holds at most 64 children, got 65");

  // Colliders only.
  v1::Query q;
  *q.mutable_cast()->mutable_shape() = CompoundCollider(1, 2).shape();
  EXPECT_EQ(wire::FromProto(q, "queries[1]").error().message,
            "queries[1].cast.shape.compound: a compound is a collider-only shape, not a query "
            "shape (use sphere, box, capsule, cylinder or convex_hull)");
}

// A cast's contact offset: finite and in [0, kMaxContactOffset] metres, else
// INVALID_ARGUMENT naming queries[i].cast.contact_offset; it round-trips,
// absent is 0, as does skip_started_contact (absent: false). Every query's tag reaches the core
// query and back; a result's truncated flag and tag round-trip.
TEST(WireTest, ContactOffsetTagAndTruncated) {
  v1::QueryRequest req;
  v1::Query* pq = req.add_queries();
  pq->set_tag(41);
  pq->mutable_cast()->mutable_shape()->mutable_sphere()->set_radius(1);
  std::vector<Query> out;
  ASSERT_TRUE(wire::FromProto(req.queries(), &out).ok());
  EXPECT_EQ(std::get<CastQuery>(out[0]).contact_offset, 0.0);
  EXPECT_FALSE(std::get<CastQuery>(out[0]).skip_started_contact);
  EXPECT_EQ(std::get<CastQuery>(out[0]).tag, 41u);
  // skip_started_contact round-trips.
  pq->mutable_cast()->set_skip_started_contact(true);
  ASSERT_TRUE(wire::FromProto(req.queries(), &out).ok());
  EXPECT_TRUE(std::get<CastQuery>(out[0]).skip_started_contact);
  {
    v1::Query back;
    wire::ToProto(out[0], &back);
    EXPECT_TRUE(back.cast().skip_started_contact());
  }
  pq->mutable_cast()->clear_skip_started_contact();
  for (double good : {0.0, 1e-3, 0.25, kMaxContactOffset}) {
    pq->mutable_cast()->set_contact_offset(good);
    ASSERT_TRUE(wire::FromProto(req.queries(), &out).ok()) << good;
    EXPECT_EQ(std::get<CastQuery>(out[0]).contact_offset, good);
    v1::Query back;
    wire::ToProto(out[0], &back);
    EXPECT_EQ(back.cast().contact_offset(), good);
    EXPECT_EQ(back.tag(), 41u);
  }
  for (double bad : {-1e-12, std::numeric_limits<double>::quiet_NaN(),
                     std::numeric_limits<double>::infinity(), 1000.5}) {
    pq->mutable_cast()->set_contact_offset(bad);
    const Status s = wire::FromProto(req.queries(), &out);
    ASSERT_FALSE(s.ok()) << bad;
    EXPECT_EQ(s.code(), ErrorCode::kInvalidArgument);
    EXPECT_THAT(s.message(), HasSubstr("queries[0].cast.contact_offset: must be in [0, 1000] metres"));
  }
  // Tags of the other kinds.
  v1::Query* o = req.add_queries();
  o->set_tag(7);
  o->mutable_overlap()->mutable_shape()->mutable_sphere()->set_radius(1);
  v1::Query* ray = req.add_queries();
  ray->set_tag(UINT64_MAX);
  ray->mutable_raycast();
  pq->mutable_cast()->set_contact_offset(0.5);
  ASSERT_TRUE(wire::FromProto(req.queries(), &out).ok());
  EXPECT_EQ(std::get<OverlapQuery>(out[1]).tag, 7u);
  EXPECT_EQ(std::get<RayQuery>(out[2]).tag, UINT64_MAX);

  QueryResult r;
  r.truncated = true;
  r.tag = 5;
  v1::QueryResult p;
  wire::ToProto(r, 5, &p);
  EXPECT_TRUE(p.truncated());
  const QueryResult b = wire::ResultFromProto(p);
  EXPECT_TRUE(b.truncated);
  EXPECT_EQ(b.tag, 5u);
  r.truncated = false;
  p.Clear();
  wire::ToProto(r, 6, &p);
  EXPECT_FALSE(p.truncated());
  EXPECT_FALSE(wire::ResultFromProto(p).truncated);
  EXPECT_EQ(wire::ResultFromProto(p).tag, 6u);
}

// A default filter (every layer, no ignored ids, max_hits 0) is left out of
// the message and reads back as the default; any other is sent. A message
// reused for a default-filter query loses the filter it had.
TEST(WireTest, DefaultFilterIsLeftOut) {
  RayQuery rq;
  rq.translation = {1, 0, 0};
  v1::Query p;
  wire::ToProto(Query(rq), &p);
  EXPECT_FALSE(p.raycast().has_filter());
  Result<Query> back = wire::FromProto(p, "q");
  ASSERT_TRUE(back.ok()) << back.error().message;
  const QueryFilter& f = std::get<RayQuery>(*back).filter;
  EXPECT_EQ(f.mask, QueryFilter{}.mask);
  EXPECT_TRUE(f.ignore.empty());
  EXPECT_EQ(f.max_hits, 0u);

  const QueryFilter defaults;
  for (int k = 0; k < 3; ++k) {
    OverlapQuery oq;
    oq.shape = *Shape::MakeSphere(1);
    if (k == 0) oq.filter.mask = 1;
    if (k == 1) oq.filter.ignore = {9};
    if (k == 2) oq.filter.max_hits = 3;
    v1::Query po;
    wire::ToProto(Query(oq), &po);
    EXPECT_TRUE(po.overlap().has_filter()) << k;
    Result<Query> ob = wire::FromProto(po, "q");
    ASSERT_TRUE(ob.ok()) << ob.error().message;
    const QueryFilter& g = std::get<OverlapQuery>(*ob).filter;
    EXPECT_EQ(g.mask, k == 0 ? 1u : defaults.mask);
    EXPECT_EQ(g.ignore, k == 1 ? std::vector<uint64_t>{9} : std::vector<uint64_t>{});
    EXPECT_EQ(g.max_hits, k == 2 ? 3u : 0u);
    // The same message reused for a default-filter query.
    oq.filter = QueryFilter{};
    wire::ToProto(Query(oq), &po);
    EXPECT_FALSE(po.overlap().has_filter()) << k;
  }
}


// A query list converts each query as the single-query FromProto does (the
// list takes a fast path for overlaps, casts and rays): the same values, and
// for a bad query the same error under "queries[i]". 3000 seeded lists of
// queries of every kind and form, valid and broken one field at a time,
// converted into a vector that still holds other queries.
TEST(WireTest, QueryListMatchesSingleQueries) {
  std::mt19937_64 rng(20261123);
  std::uniform_real_distribution<double> u(-100, 100), pos(0.01, 5);
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  auto pick = [&](std::initializer_list<double> v) { return v.begin()[rng() % v.size()]; };
  auto random_shape = [&](v1::Shape* s) {
    switch (rng() % 5) {
      case 0: s->mutable_sphere()->set_radius(pos(rng)); break;
      case 1: wire::ToProto(Vec3{pos(rng), pos(rng), pos(rng)},
                            s->mutable_box()->mutable_half_extents()); break;
      case 2:
        s->mutable_capsule()->set_radius(pos(rng));
        s->mutable_capsule()->set_half_height(rng() % 4 == 0 ? 0.0 : pos(rng));
        break;
      case 3:
        s->mutable_cylinder()->set_radius(pos(rng));
        s->mutable_cylinder()->set_half_height(rng() % 4 == 0 ? 0.0 : pos(rng));
        break;
      default:
        for (int k = 0; k < 4; ++k) {
          wire::ToProto(Vec3{k == 1 ? 1.0 : 0.0, k == 2 ? 1.0 : 0.0, k == 3 ? 1.0 : 0.0},
                        s->mutable_convex_hull()->add_points());
        }
        break;
    }
  };
  auto random_pose = [&](v1::Pose* p) {
    if (rng() % 4 != 0) wire::ToProto(Vec3{u(rng), u(rng), u(rng)}, p->mutable_position());
    if (rng() % 4 != 0) {
      wire::ToProto(Quat(u(rng), u(rng), u(rng), u(rng)).Normalized(), p->mutable_rotation());
    }
  };
  auto random_filter = [&](v1::QueryFilter* f) {
    if (rng() % 2) f->set_mask(static_cast<uint32_t>(rng()));
    const int ids = static_cast<int>(rng() % 3);
    for (int k = 0; k < ids; ++k) f->add_ignore_ids(rng() % 100);
    if (rng() % 2) f->set_max_hits(static_cast<uint32_t>(rng() % 10));
  };
  auto random_query = [&](v1::Query* q) {
    switch (rng() % 4) {
      case 0: {
        v1::OverlapQuery* o = q->mutable_overlap();
        random_shape(o->mutable_shape());
        if (rng() % 2) random_pose(o->mutable_pose());
        if (rng() % 2) random_filter(o->mutable_filter());
        o->set_want_contact(rng() % 2);
        break;
      }
      case 1: {
        v1::CastQuery* c = q->mutable_cast();
        random_shape(c->mutable_shape());
        if (rng() % 2) random_pose(c->mutable_pose());
        if (rng() % 4 != 0) wire::ToProto(Vec3{u(rng), u(rng), u(rng)}, c->mutable_translation());
        if (rng() % 2) random_filter(c->mutable_filter());
        c->set_all_hits(rng() % 2);
        if (rng() % 2) c->set_contact_offset(pick({0.0, 0.01, 1e3}));
        c->set_skip_started_contact(rng() % 3 == 0);
        break;
      }
      case 2: {
        v1::RayQuery* r = q->mutable_raycast();
        if (rng() % 4 != 0) wire::ToProto(Vec3{u(rng), u(rng), u(rng)}, r->mutable_origin());
        if (rng() % 4 != 0) wire::ToProto(Vec3{u(rng), u(rng), u(rng)}, r->mutable_translation());
        if (rng() % 2) random_filter(r->mutable_filter());
        r->set_all_hits(rng() % 2);
        break;
      }
      default: {
        v1::MoveQuery* m = q->mutable_move();
        random_shape(m->mutable_shape());
        wire::ToProto(Vec3{u(rng), u(rng), u(rng)}, m->mutable_displacement());
        if (rng() % 2) m->set_apply_to_id(rng() % 100);
        if (rng() % 2) random_filter(m->mutable_filter());
        if (rng() % 2) {
          v1::MoveSettings* st = m->mutable_settings();
          if (rng() % 2) wire::ToProto(Vec3{u(rng), u(rng), u(rng)}, st->mutable_up());
          if (rng() % 2) st->set_skin_width(pick({0.01, 1e3}));
          if (rng() % 2) st->set_max_iterations(1 + static_cast<uint32_t>(rng() % 8));
          if (rng() % 2) st->set_max_slope_degrees(pick({0.0, 45.0, 89.9}));
          if (rng() % 2) st->set_step_height(pick({0.0, 0.3}));
          if (rng() % 2) st->set_ground_snap_distance(pick({0.0, 0.2, 1e3}));
        }
        break;
      }
    }
    if (rng() % 2) q->set_tag(rng());
    if (rng() % 4 == 0) q->set_at_tick(pick({0.0, 3.0, 1e9}));
    if (rng() % 6 == 0 && !q->has_raycast()) {  // a sweep by collider id: no shape, no pose
      q->set_shape_from_collider(rng() % 100);
      if (q->has_overlap()) q->mutable_overlap()->clear_shape(), q->mutable_overlap()->clear_pose();
      if (q->has_cast()) q->mutable_cast()->clear_shape(), q->mutable_cast()->clear_pose();
      if (q->has_move()) q->mutable_move()->clear_shape(), q->mutable_move()->clear_pose();
    }
  };
  // One field broken: a non-finite, out-of-range or non-unit value.
  auto break_one = [&](v1::Query* q) {
    const double bad = pick({nan, inf, -inf, 2e9, -2e9});
    v1::Shape* shape = q->has_overlap() ? q->mutable_overlap()->mutable_shape()
                       : q->has_cast()  ? q->mutable_cast()->mutable_shape()
                       : q->has_move()  ? q->mutable_move()->mutable_shape()
                                        : nullptr;
    v1::Pose* pose = q->has_overlap() ? q->mutable_overlap()->mutable_pose()
                     : q->has_cast()  ? q->mutable_cast()->mutable_pose()
                     : q->has_move()  ? q->mutable_move()->mutable_pose()
                                      : nullptr;
    switch (q->has_move() && rng() % 2 ? 11 : rng() % 13) {
      case 0:
        if (pose != nullptr) pose->mutable_position()->set_y(bad);
        if (q->has_raycast()) q->mutable_raycast()->mutable_origin()->set_z(bad);
        break;
      case 1:
        if (pose != nullptr) pose->mutable_rotation()->set_w(pick({nan, 2.0, 0.999}));
        break;
      case 2:
        if (shape != nullptr && shape->has_sphere()) shape->mutable_sphere()->set_radius(-1);
        if (shape != nullptr && shape->has_box()) {
          shape->mutable_box()->mutable_half_extents()->set_x(pick({0.0, nan, 2e6}));
        }
        if (shape != nullptr && shape->has_capsule()) shape->mutable_capsule()->set_half_height(-1);
        if (shape != nullptr && shape->has_cylinder()) shape->mutable_cylinder()->set_radius(1e-8);
        break;
      case 3:
        if (shape != nullptr && shape->has_box()) shape->mutable_box()->clear_half_extents();
        break;
      case 4:
        if (q->has_cast()) q->mutable_cast()->mutable_translation()->set_x(bad);
        if (q->has_raycast()) q->mutable_raycast()->mutable_translation()->set_x(bad);
        break;
      case 5:
        if (shape != nullptr) shape->mutable_mesh();
        break;
      case 6:
        if (shape != nullptr) shape->Clear();  // no kind set
        if (q->has_overlap()) q->mutable_overlap()->clear_shape();  // no shape
        break;
      case 7:
        if (q->has_cast()) q->mutable_cast()->set_contact_offset(pick({1e3 + 1, -0.1, nan}));
        break;
      case 8:
        q->set_at_tick(pick({-1.0, nan, inf}));
        break;
      case 9:
        q->set_shape_from_collider(7);  // with a shape or pose given, or on a ray
        break;
      case 11:
        if (q->has_move()) {
          v1::MoveSettings* st = q->mutable_move()->mutable_settings();
          switch (rng() % 6) {
            case 0: wire::ToProto(Vec3{0, 0, 0}, st->mutable_up()); break;
            case 1: st->set_skin_width(pick({0.0, 1e3 + 1, nan})); break;
            case 2: st->set_max_iterations(rng() % 2 ? 0u : 65u); break;
            case 3: st->set_max_slope_degrees(pick({90.0, -1.0, nan})); break;
            case 4: st->set_step_height(pick({-0.1, inf})); break;
            default: st->set_ground_snap_distance(pick({-0.1, 2e3})); break;
          }
        } else {
          q->clear_kind();
        }
        break;
      case 10: {
        v1::QueryFilter* f = q->has_overlap()  ? q->mutable_overlap()->mutable_filter()
                             : q->has_cast()   ? q->mutable_cast()->mutable_filter()
                             : q->has_raycast() ? q->mutable_raycast()->mutable_filter()
                                                : q->mutable_move()->mutable_filter();
        for (int k = 0; k < 257; ++k) f->add_ignore_ids(k);
        break;
      }
      default:
        q->clear_kind();
        break;
    }
  };
  const auto encode = [](const Query& q) {
    v1::Query p;
    wire::ToProto(q, &p);
    return std::to_string(q.index()) + ":" + p.SerializeAsString();
  };
  std::vector<Query> out;
  int errors = 0, converted = 0;
  for (int round = 0; round < 3000; ++round) {
    google::protobuf::RepeatedPtrField<v1::Query> list;
    const int n = 1 + static_cast<int>(rng() % 16);
    for (int i = 0; i < n; ++i) {
      random_query(list.Add());
      if (rng() % 30 == 0) break_one(list.Mutable(i));
    }
    // The reference: each query on its own, under its path in the list.
    std::vector<Query> expected;
    std::string expected_error;
    for (int i = 0; i < n; ++i) {
      Result<Query> one = wire::FromProto(list.Get(i), "queries[" + std::to_string(i) + "]");
      if (!one.ok()) {
        expected_error = one.error().message;
        break;
      }
      expected.push_back(std::move(*one));
    }
    const Status st = wire::FromProto(list, &out, "queries");
    if (!expected_error.empty()) {
      ++errors;
      ASSERT_FALSE(st.ok()) << round;
      EXPECT_EQ(st.code(), ErrorCode::kInvalidArgument);
      EXPECT_EQ(st.message(), expected_error) << round;
      EXPECT_TRUE(out.empty());
      continue;
    }
    ASSERT_TRUE(st.ok()) << round << ": " << st.message();
    ASSERT_EQ(out.size(), expected.size());
    for (size_t i = 0; i < out.size(); ++i) {
      ++converted;
      EXPECT_EQ(encode(out[i]), encode(expected[i])) << round << " " << i;
      // Shape kinds and fields a proto round trip could hide.
      std::visit(
          [&](const auto& got) {
            using T = std::decay_t<decltype(got)>;
            const T& want = std::get<T>(expected[i]);
            EXPECT_EQ(got.filter.ignore, want.filter.ignore);
            EXPECT_EQ(got.at_tick, want.at_tick);
            if constexpr (!std::is_same_v<T, RayQuery>) {
              EXPECT_EQ(got.shape, want.shape);
              EXPECT_EQ(got.pose.rotation, want.pose.rotation);
            }
          },
          out[i]);
    }
  }
  // Both outcomes were exercised many times.
  EXPECT_GT(errors, 50);
  EXPECT_GT(converted, 1000);
}

}  // namespace
}  // namespace hitbox
