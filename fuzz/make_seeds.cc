// Writes the binary seed corpora of the collider_set, service, wire and geometry targets
// into <out>/<target>/ (usage: hitbox-fuzz-seeds fuzz/corpus). The JSON seeds
// of scene_file and case_file come from make_json_seeds.py. Seeds are
// small valid inputs plus a few with extreme doubles; rerun after changing an
// input layout.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include "fuzz_util.h"
#include "hitbox/v1/hitbox.pb.h"
#include "hitbox/wire/convert.h"

namespace hitbox::fuzz {
namespace {

namespace fs = std::filesystem;

void Save(const fs::path& dir, const std::string& name, const std::string& bytes) {
  fs::create_directories(dir);
  std::ofstream(dir / name, std::ios::binary) << bytes;
}
void Save(const fs::path& dir, const std::string& name, const std::vector<uint8_t>& bytes) {
  Save(dir, name, std::string(bytes.begin(), bytes.end()));
}

std::vector<Collider> SampleColliders() {
  const Quat tilt = Quat::FromAxisAngle({1, 1, 0}, 0.6);
  return {
      {1, *Shape::MakeSphere(1.0), Pose({0, 0, 0}), 0, 11},
      {2, *Shape::MakeBox({1, 0.5, 2}), Pose({3, 0, 0}, tilt), 1, 12},
      {3, *Shape::MakeCapsule(0.5, 1.0), Pose({0, 3, 0}), 2, 13},
      {4, *Shape::MakeCylinder(0.75, 0.5), Pose({-3, 0, 1}, tilt), 3, 14},
      {5, *Shape::MakeSphere(0.25), Pose({0, 0, -4}), 0, 15},
  };
}

// collider_set: op byte, then the op's fields (see collider_set_fuzzer.cc).
void WriteCollider(ByteWriter& w, const Collider& c) {
  w.U8(static_cast<uint8_t>(c.id));
  w.WriteShape(c.shape);
  w.WritePose(c.pose);
  w.U8(static_cast<uint8_t>(c.layer));
  w.U64(c.user_data);
}
void AddBatch(ByteWriter& w, const std::vector<Collider>& cs) {
  w.U8(0);
  w.U8(static_cast<uint8_t>(cs.size()));
  for (const Collider& c : cs) {
    w.U8(0);  // add
    WriteCollider(w, c);
  }
}
void Filter(ByteWriter& w) { w.U8(0); }
void OverlapOp(ByteWriter& w, const Shape& s, const Pose& p, bool contact) {
  w.U8(4);
  w.U8(0);  // 1 query
  w.U8(0);
  w.WriteShape(s);
  w.WritePose(p);
  Filter(w);
  w.U8(contact ? 1 : 0);
}
void CastOp(ByteWriter& w, const Shape& s, const Pose& p, const Vec3& t, bool all) {
  w.U8(4);
  w.U8(0);
  w.U8(1);
  w.WriteShape(s);
  w.WritePose(p);
  w.WriteVec3(t);
  Filter(w);
  w.U8(all ? 1 : 0);
}
void RayOp(ByteWriter& w, const Vec3& o, const Vec3& t, bool all) {
  w.U8(4);
  w.U8(0);
  w.U8(2);
  w.WriteVec3(o);
  w.WriteVec3(t);
  Filter(w);
  w.U8(all ? 1 : 0);
}

void ColliderSetSeeds(const fs::path& dir) {
  const auto cs = SampleColliders();
  {
    ByteWriter w;
    AddBatch(w, cs);
    OverlapOp(w, *Shape::MakeSphere(2.0), Pose({1, 0, 0}), true);
    CastOp(w, *Shape::MakeBox({0.5, 0.5, 0.5}), Pose({-10, 0, 0}), {20, 0, 0}, true);
    RayOp(w, {0, -10, 0}, {0, 20, 0}, false);
    Save(dir, "seed-add-and-query", w.data());
  }
  {
    ByteWriter w;
    AddBatch(w, cs);
    w.U8(1);  // a batch: move 2, replace 3, remove 5, add 5 again
    w.U8(4);
    w.U8(2);
    WriteCollider(w, {2, Shape(), Pose({5, 5, 5}), 0, 0});
    w.U8(1);
    WriteCollider(w, {3, *Shape::MakeBox({2, 2, 2}), Pose({0, 3, 0}), 1, 33});
    w.U8(3);
    WriteCollider(w, {5, Shape(), Pose(), 0, 0});
    w.U8(0);
    WriteCollider(w, {5, *Shape::MakeCylinder(1, 0), Pose({0, 0, 4}), 2, 55});
    w.U8(7);  // rebuild
    CastOp(w, *Shape::MakeCapsule(0.3, 0.4), Pose({0, 0, -10}), {0, 0, 20}, false);
    Save(dir, "seed-changes-rebuild", w.data());
  }
  {
    ByteWriter w;  // ticked batches (op 2) moving colliders past the window of 4, rewound rays
    AddBatch(w, cs);
    for (int t = 0; t < 9; ++t) {
      w.U8(2);
      w.U8(2);
      w.U8(2);  // move 1
      WriteCollider(w, {1, Shape(), Pose({0.5 * t, 0, 0}), 0, 0});
      w.U8(2);  // move 2
      WriteCollider(w, {2, Shape(), Pose({3, 0.25 * t, 0}), 0, 0});
      w.U8(6);  // two rays, the second rewound
      w.U8(1);
      for (int k = 0; k < 2; ++k) {
        w.U8(2);
        w.WriteVec3({-10, 0.1 * k, 0});
        w.WriteVec3({20, 0, 0});
        Filter(w);
        w.U8(0);
      }
    }
    Save(dir, "seed-history", w.data());
  }
  {
    ByteWriter w;  // AddBulk, then queries
    w.U8(3);
    w.U8(static_cast<uint8_t>(cs.size()));
    for (const Collider& c : cs) WriteCollider(w, c);
    OverlapOp(w, *Shape::MakeCylinder(5, 5), Pose(), false);
    RayOp(w, {-10, 0.1, 0.2}, {20, 0, 0}, true);
    Save(dir, "seed-bulk", w.data());
  }
  {
    ByteWriter w;  // extreme doubles: 1e308 radius, 5e-324, denormal, NaN position, inf
    w.U8(0);
    w.U8(4);
    w.U8(0);
    w.U8(10);
    w.U8(0);
    w.Double(1e308);
    w.WritePose(Pose({1e300, 0, -1e300}));
    w.U8(0);
    w.U64(0);
    w.U8(0);
    w.U8(11);
    w.U8(1);
    w.Double(5e-324);
    w.Double(1e-310);
    w.Double(2.2250738585072014e-308);
    w.WritePose(Pose({0, 0, 0}));
    w.U8(1);
    w.U64(1);
    w.U8(0);
    w.U8(12);
    w.U8(0);
    w.Double(1.0);
    w.Double(std::numeric_limits<double>::quiet_NaN());
    w.Double(0);
    w.Double(0);
    w.U8(0);
    w.U8(2);
    w.U64(2);
    w.U8(0);
    w.U8(13);
    w.U8(2);
    w.Double(1e200);
    w.Double(1e200);
    w.WritePose(Pose({std::numeric_limits<double>::infinity(), 0, 0}));
    w.U8(3);
    w.U64(3);
    RayOp(w, {-1e308, 0, 0}, {1e308, 0, 0}, true);
    w.U8(4);  // OverlapOp of a sphere of radius 1e300 (refused by Shape::Make)
    w.U8(0);
    w.U8(0);
    w.U8(0);
    w.Double(1e300);
    w.WritePose(Pose());
    Filter(w);
    w.U8(1);
    w.U8(7);
    Save(dir, "seed-extremes", w.data());
  }
  {
    // The first runs' NaN findings, now refused by the ranges (issue 9): a
    // rotated capsule of half height 1e308 (NaN world bounds, an inverted
    // tree leaf), then a rebuild and a ray.
    ByteWriter w;
    w.U8(0);  // apply: 1 change
    w.U8(1);
    w.U8(0);  // add
    w.U8(3);  // id
    w.U8(2);  // capsule
    w.Double(1.0);
    w.Double(1e308);
    w.WritePose(Pose({0, 0, 0}, Quat::FromAxisAngle({1, 0, 1}, 0.5)));
    w.U8(0);
    w.U64(0);
    w.U8(7);  // rebuild
    RayOp(w, {-10, 0, 0}, {20, 0, 0}, true);
    Save(dir, "regress-nan-bounds-huge-capsule", w.data());
  }
  {
    // A unit sphere at x = -2.7e154 moving by 1e300 against a cylinder (NaN
    // fraction from the narrow-phase Cast).
    ByteWriter w;
    AddBatch(w, {{1, *Shape::MakeCylinder(0.5, 1.0), Pose({0, 0, 0}), 0, 0}});
    CastOp(w, *Shape::MakeSphere(1.0), Pose({-2.7e154, 0, 0}), {1e300, 0, 0}, true);
    CastOp(w, *Shape::MakeSphere(1.0), Pose({-1e9, 0, 0}), {1e9, 0, 0}, true);  // in range
    Save(dir, "regress-nan-fraction-huge-cast", w.data());
  }
}

// service: [selector][u16 length][request bytes] per call.
void Call(std::string* out, uint8_t selector, const google::protobuf::Message& m) {
  const std::string bytes = m.SerializeAsString();
  out->push_back(static_cast<char>(selector));
  out->push_back(static_cast<char>(bytes.size() & 0xFF));
  out->push_back(static_cast<char>(bytes.size() >> 8));
  *out += bytes;
}

v1::ApplyChangesRequest AddAll() {
  v1::ApplyChangesRequest req;
  req.set_session_id("fuzz");
  for (const Collider& c : SampleColliders()) {
    wire::ToProto(ColliderChange::Add(c), req.add_changes());
  }
  return req;
}

std::vector<Query> SampleQueries() {
  OverlapQuery o;
  o.shape = *Shape::MakeSphere(2.0);
  o.want_contact = true;
  CastQuery c;
  c.shape = *Shape::MakeBox({0.5, 0.5, 0.5});
  c.pose = Pose({-10, 0, 0});
  c.translation = {20, 0, 0};
  c.all_hits = true;
  RayQuery r;
  r.origin = {0, -10, 0};
  r.translation = {0, 20, 0};
  r.filter.mask = 0x5;
  r.filter.ignore = {3};
  return {o, c, r};
}

v1::QueryRequest QueryAll() {
  v1::QueryRequest req;
  req.set_session_id("fuzz");
  uint64_t tag = 1;
  for (const Query& q : SampleQueries()) {
    v1::Query* m = req.add_queries();
    wire::ToProto(q, m);
    m->set_tag(tag++);
  }
  return req;
}

void ServiceSeeds(const fs::path& dir) {
  {
    std::string s;
    Call(&s, 4, AddAll());
    Call(&s, 6, QueryAll());
    v1::GetCollidersRequest get;
    get.set_session_id("fuzz");
    get.add_ids(2);
    get.add_ids(9);
    Call(&s, 5, get);
    Save(dir, "seed-apply-query-get", s);
  }
  {
    std::string s;
    v1::TickRequest tick;
    tick.set_session_id("fuzz");
    tick.set_tick(1);
    for (const Collider& c : SampleColliders()) wire::ToProto(ColliderChange::Add(c), tick.add_changes());
    Call(&s, 7, tick);
    v1::TickRequest t2;
    t2.set_tick(2);
    wire::ToProto(ColliderChange::Move(1, Pose({0, 1, 0})), t2.add_changes());
    const v1::QueryRequest all = QueryAll();
    for (const auto& q : all.queries()) *t2.add_queries() = q;
    Call(&s, 7, t2);
    v1::DeleteSessionRequest del;
    del.set_session_id("fuzz");
    Call(&s, 3, del);
    Call(&s, 7, t2);
    Save(dir, "seed-tick-delete", s);
  }
  {
    std::string s;
    v1::CreateSessionRequest create;
    create.set_session_id("other");
    create.mutable_limits()->set_max_colliders(3);
    create.mutable_limits()->set_max_hits_per_query(1);
    Call(&s, 0, create);
    v1::ApplyChangesRequest add = AddAll();
    add.set_session_id("other");
    Call(&s, 4, add);
    add.mutable_changes()->DeleteSubrange(3, 2);
    add.set_expected_revision(0);
    Call(&s, 4, add);
    v1::QueryRequest q = QueryAll();
    q.set_session_id("other");
    Call(&s, 6, q);
    Call(&s, 2, v1::ListSessionsRequest());
    v1::GetSessionRequest get;
    get.set_session_id("other");
    Call(&s, 1, get);
    Save(dir, "seed-limits", s);
  }
  {
    std::string s;  // bad values: NaN radius, 1e308 sizes, non-unit quaternion
    v1::ApplyChangesRequest req;
    req.set_session_id("fuzz");
    v1::Collider* c = req.add_changes()->mutable_add();
    c->set_id(1);
    c->mutable_shape()->mutable_sphere()->set_radius(1e308);
    v1::Collider* d = req.add_changes()->mutable_add();
    d->set_id(2);
    d->mutable_shape()->mutable_box()->mutable_half_extents()->set_x(5e-324);
    d->mutable_shape()->mutable_box()->mutable_half_extents()->set_y(1);
    d->mutable_shape()->mutable_box()->mutable_half_extents()->set_z(1);
    d->mutable_pose()->mutable_rotation()->set_w(2);
    Call(&s, 4, req);
    Call(&s, 6, QueryAll());
    Save(dir, "seed-extremes", s);
  }
  {
    std::string s;  // rewind: moves over more ticks than the window (8), a
                    // removal and a re-add, a jump past the window, rewound queries
    const std::vector<Collider> cs = SampleColliders();
    v1::TickRequest first;
    first.set_session_id("fuzz");
    first.set_tick(1);
    for (const Collider& c : cs) wire::ToProto(ColliderChange::Add(c), first.add_changes());
    Call(&s, 7, first);
    const v1::QueryRequest all = QueryAll();
    for (uint64_t t = 2; t <= 14; ++t) {
      v1::TickRequest tick;
      tick.set_tick(t);
      const double x = 0.5 * static_cast<double>(t);
      wire::ToProto(ColliderChange::Move(1, Pose({x, 0, 0})), tick.add_changes());
      wire::ToProto(ColliderChange::Move(2, Pose({3, 0.25 * x, 0})), tick.add_changes());
      if (t == 6) wire::ToProto(ColliderChange::Remove(3), tick.add_changes());
      if (t == 7) wire::ToProto(ColliderChange::Add(cs[2]), tick.add_changes());
      for (const auto& q : all.queries()) {
        v1::Query* m = tick.add_queries();
        *m = q;
        m->set_at_tick(static_cast<double>(t) - 3.0 + 0.25 * static_cast<double>(t % 4));
      }
      Call(&s, 7, tick);
    }
    v1::TickRequest far;
    far.set_tick(40);
    wire::ToProto(ColliderChange::Move(1, Pose({-2, 0, 0})), far.add_changes());
    Call(&s, 7, far);
    v1::QueryRequest rewound = all;
    for (auto& q : *rewound.mutable_queries()) q.set_at_tick(36.5);
    Call(&s, 6, rewound);
    Save(dir, "seed-history", s);
  }
}

// The structured form of the service target (selector & 0x40).
void StructuredCall(std::string* out, uint8_t rpc, const ByteWriter& body) {
  out->push_back(static_cast<char>(rpc | 0x40));
  out->push_back(static_cast<char>(body.data().size() & 0xFF));
  out->push_back(static_cast<char>(body.data().size() >> 8));
  out->append(body.data().begin(), body.data().end());
}

void StructuredChanges(ByteWriter& w) {
  const auto cs = SampleColliders();
  w.U8(static_cast<uint8_t>(cs.size()));
  for (const Collider& c : cs) {
    w.U8(0);  // add
    w.U8(static_cast<uint8_t>(c.id));
    w.WriteShape(c.shape);
    w.WritePose(c.pose);
    w.U8(static_cast<uint8_t>(c.layer));
    w.U8(static_cast<uint8_t>(c.user_data));
  }
}

void StructuredQueries(ByteWriter& w) {
  w.U8(3);
  w.U8(8);  // overlap with contacts
  w.U8(0);
  w.WriteShape(*Shape::MakeSphere(2.0));
  w.WritePose(Pose({1, 0, 0}));
  w.U8(8);  // all-hits cast
  w.U8(1);
  w.WriteShape(*Shape::MakeBox({0.5, 0.5, 0.5}));
  w.WritePose(Pose({-10, 0, 0}));
  w.WriteVec3({20, 0, 0});
  w.U8(1 | 4);  // ray with a mask and an ignored id
  w.U32(0x5);
  w.U8(3);
  w.U8(2);
  w.WriteVec3({0, -10, 0});
  w.WriteVec3({0, 20, 0});
}

void StructuredServiceSeeds(const fs::path& dir) {
  std::string s;
  ByteWriter apply;
  apply.U8(0);
  StructuredChanges(apply);
  StructuredCall(&s, 4, apply);
  ByteWriter query;
  query.U8(0);
  StructuredQueries(query);
  StructuredCall(&s, 6, query);
  ByteWriter tick;
  tick.U8(0);
  tick.U8(1);
  tick.U8(0);  // no changes
  StructuredQueries(tick);
  StructuredCall(&s, 7, tick);
  Save(dir, "seed-structured", s);

  // Ticks that move collider 1 and ask rewound rays (query flag 16: at_tick).
  std::string h;
  ByteWriter add;
  add.U8(0);
  add.U8(1);
  StructuredChanges(add);
  add.U8(0);  // no queries
  StructuredCall(&h, 7, add);
  for (uint8_t t = 2; t <= 13; ++t) {
    ByteWriter w;
    w.U8(0);
    w.U8(t);
    w.U8(1);
    w.U8(2);  // move
    w.U8(1);
    w.WriteShape(*Shape::MakeSphere(1.0));
    w.WritePose(Pose({0.5 * t, 0, 0}));
    w.U8(0);
    w.U8(0);
    w.U8(1);
    w.U8(16);  // a rewound ray
    w.U8(2);
    w.WriteVec3({-10, 0, 0});
    w.WriteVec3({20, 0, 0});
    w.U8(static_cast<uint8_t>(t - 2));
    w.U8(128);
    StructuredCall(&h, 7, w);
  }
  Save(dir, "seed-structured-history", h);
}

void WireSeeds(const fs::path& dir) {
  const auto cs = SampleColliders();
  auto save = [&](const std::string& name, uint8_t sel, const google::protobuf::Message& m) {
    Save(dir, name, std::string(1, static_cast<char>(sel)) + m.SerializeAsString());
  };
  for (size_t i = 0; i < cs.size(); ++i) {
    v1::ColliderChange ch;
    wire::ToProto(i % 2 ? ColliderChange::Replace(cs[i]) : ColliderChange::Add(cs[i]), &ch);
    save("seed-change-" + std::to_string(i), 0, ch);
    v1::Collider c;
    wire::ToProto(cs[i], &c);
    save("seed-collider-" + std::to_string(i), 2, c);
  }
  v1::ColliderChange mv;
  wire::ToProto(ColliderChange::Move(7, Pose({1, 2, 3}, Quat::FromAxisAngle({0, 0, 1}, 1))), &mv);
  save("seed-change-move", 0, mv);
  v1::ColliderChange rm;
  wire::ToProto(ColliderChange::Remove(7), &rm);
  save("seed-change-remove", 0, rm);
  const auto qs = SampleQueries();
  for (size_t i = 0; i < qs.size(); ++i) {
    v1::Query q;
    wire::ToProto(qs[i], &q);
    save("seed-query-" + std::to_string(i), 1, q);
  }
  QueryResult r;
  CastHit hit;
  hit.state = CastState::kHit;
  hit.fraction = 0.25;
  hit.normal = {0, 1, 0};
  hit.point = {1, 2, 3};
  hit.id = 4;
  hit.user_data = 5;
  r.hits.push_back(hit);
  v1::QueryResult rp;
  wire::ToProto(r, 9, &rp);
  save("seed-result", 3, rp);
}

// geometry: kind byte, the shape, then queries (see geometry_fuzzer.cc).
void PointRaw(ByteWriter& w, const Vec3& p) { w.U8(0); w.WriteVec3(p); }
void PointGrid(ByteWriter& w, int x, int y, int z) {
  w.U8(2);
  w.U8(static_cast<uint8_t>(static_cast<int8_t>(x)));
  w.U8(static_cast<uint8_t>(static_cast<int8_t>(y)));
  w.U8(static_cast<uint8_t>(static_cast<int8_t>(z)));
}
void GeometryQueries(ByteWriter& w) {
  w.U8(4);
  w.U8(0);  // raycast aimed at the shape
  w.WritePose(Pose({0.5, 0.25, 0}, Quat::FromAxisAngle({0, 1, 0}, 0.3)));
  w.WriteVec3({-20, 3, 1});
  w.WriteVec3({40, -6, -2});
  w.U8(1);
  w.U8(0);  // aim offsets: the centre of the local bounds
  w.U8(0);
  w.U8(0);  // raycast as given
  w.WritePose(Pose({0, 0, 0}));
  w.WriteVec3({0.3, 10, 0.2});
  w.WriteVec3({0, -20, 0.1});
  w.U8(0);
  w.U8(1);  // overlap and contact of a sphere
  w.WritePose(Pose({0, 0, 0}));
  w.WriteShape(*Shape::MakeSphere(0.5));
  w.WritePose(Pose({0.5, 0.5, 0.5}));
  w.U8(2);  // sweep of a capsule
  w.WritePose(Pose({0, 0, 0}));
  w.WriteShape(*Shape::MakeCapsule(0.25, 0.5));
  w.WritePose(Pose({-5, 0.5, 0.5}, Quat::FromAxisAngle({0, 0, 1}, 0.4)));
  w.WriteVec3({10, 0, 0});
}

void GeometrySeeds(const fs::path& dir) {
  {
    ByteWriter w;  // hull: a unit cube's corners plus its centre
    w.U8(0);
    w.U8(9);
    w.Double(1.0);
    for (int i = 0; i < 8; ++i) PointRaw(w, {i & 1 ? 1.0 : -1.0, i & 2 ? 1.0 : -1.0, i & 4 ? 1.0 : -1.0});
    PointRaw(w, {0, 0, 0});
    GeometryQueries(w);
    Save(dir, "seed-hull-cube", w.data());
  }
  {
    ByteWriter w;  // hull: 60 points on a sphere of radius 2 (hill-climbing Support)
    w.U8(0);
    w.U8(60);
    w.Double(2.0);
    for (int i = 0; i < 60; ++i) {
      w.U8(7);
      w.U8(static_cast<uint8_t>(i * 37));
      w.U8(static_cast<uint8_t>(i * 91 + 5));
      w.U8(static_cast<uint8_t>(i * 53 + 11));
    }
    GeometryQueries(w);
    Save(dir, "seed-hull-sphere", w.data());
  }
  {
    ByteWriter w;  // hull: duplicates, collinear, coplanar and near-duplicate points
    w.U8(0);
    w.U8(12);
    w.Double(0.5);
    PointGrid(w, 0, 0, 0);
    PointGrid(w, 4, 0, 0);
    PointGrid(w, 0, 4, 0);
    PointGrid(w, 0, 0, 4);
    w.U8(3); w.U8(1);                      // duplicate
    w.U8(4); w.U8(0); w.U8(1); w.U8(8);    // collinear
    w.U8(5); w.U8(0); w.U8(1); w.U8(2); w.U8(5); w.U8(6);  // coplanar
    w.U8(6); w.U8(3); w.U8(1); w.U8(255); w.U8(2);         // a few ulps away
    PointGrid(w, 2, 2, 2);
    PointGrid(w, 1, 1, 1);
    w.U8(3); w.U8(9);
    w.U8(4); w.U8(3); w.U8(2); w.U8(20);
    GeometryQueries(w);
    Save(dir, "seed-hull-degenerate", w.data());
  }
  {
    ByteWriter w;  // hull: coplanar points (refused)
    w.U8(0);
    w.U8(6);
    w.Double(1.0);
    for (int i = 0; i < 6; ++i) PointGrid(w, i, i * i % 5, 0);
    Save(dir, "seed-hull-coplanar", w.data());
  }
  {
    ByteWriter w;  // hull: 262 points (over the limit of 256)
    w.U8(0);
    w.U8(255);
    w.U8(7);
    w.Double(1.0);
    for (int i = 0; i < 262; ++i) PointGrid(w, i % 7, (i / 7) % 7, i / 49);
    Save(dir, "seed-hull-too-many", w.data());
  }
  {
    ByteWriter w;  // hull: extreme coordinates
    w.U8(0);
    w.U8(5);
    w.Double(1.0);
    PointRaw(w, {1e6, 0, 0});
    PointRaw(w, {-1e6, 1e-300, 0});
    PointRaw(w, {0, 1e6, 5e-324});
    PointRaw(w, {0, 0, 1e308});
    PointRaw(w, {std::numeric_limits<double>::quiet_NaN(), 0, 1});
    Save(dir, "seed-hull-extremes", w.data());
  }
  {
    ByteWriter w;  // mesh: a quad of two triangles, a degenerate one, a bad index
    w.U8(1);
    w.U8(0);  // explicit
    w.Double(1.0);
    w.U8(5);
    PointGrid(w, -4, 0, -4);
    PointGrid(w, 4, 0, -4);
    PointGrid(w, 4, 0, 4);
    PointGrid(w, -4, 0, 4);
    PointGrid(w, 0, 3, 0);
    w.U8(4);
    for (int i : {0, 1, 2, 0, 2, 3, 0, 0, 1, 2, 4, 1}) w.U8(static_cast<uint8_t>(i));
    GeometryQueries(w);
    Save(dir, "seed-mesh-quad", w.data());
    ByteWriter b;  // the same with an index beyond the vertices
    b.U8(1);
    b.U8(0);
    b.Double(1.0);
    b.U8(3);
    PointGrid(b, 0, 0, 0);
    PointGrid(b, 1, 0, 0);
    PointGrid(b, 0, 0, 1);
    b.U8(1);
    b.U8(0);
    b.U8(1);
    b.U8(0xF8);
    b.U32(7);
    Save(dir, "seed-mesh-bad-index", b.data());
  }
  {
    ByteWriter w;  // mesh: a 12 x 10 grid of quads with varied heights
    w.U8(1);
    w.U8(1);
    w.Double(0.5);
    w.U8(12);
    w.U8(10);
    w.Double(0.0);
    w.Double(0.25);
    w.Double(-0.5);
    w.Double(1.0);
    w.U8(3);
    GeometryQueries(w);
    Save(dir, "seed-mesh-grid", w.data());
  }
  {
    ByteWriter w;  // heightfield: 6 x 7 samples
    w.U8(2);
    w.U8(0);
    w.U8(6);
    w.U8(7);
    w.Double(0.75);
    w.Double(0.5);
    w.U8(3);  // 4 values
    w.Double(0.0);
    w.Double(0.5);
    w.Double(-0.25);
    w.Double(1.25);
    for (int i = 0; i < 42; ++i) w.U8(static_cast<uint8_t>(i * 7 % 4));
    GeometryQueries(w);
    Save(dir, "seed-heightfield", w.data());
  }
  {
    ByteWriter w;  // heightfield: 2^20 x 2^20 samples claimed (refused)
    w.U8(2);
    w.U8(1);
    w.U32(1u << 20);
    w.U32(1u << 20);
    w.Double(1.0);
    w.Double(1.0);
    w.U8(0);
    w.Double(0.0);
    Save(dir, "seed-heightfield-huge", w.data());
  }
  {
    ByteWriter w;  // compound: sphere, rotated box, a hull
    w.U8(3);
    w.U8(3);
    w.U8(0);
    w.WriteShape(*Shape::MakeSphere(0.5));
    w.WritePose(Pose({0, 1, 0}));
    w.U8(1);
    w.WriteShape(*Shape::MakeBox({1, 0.25, 0.5}));
    w.WritePose(Pose({1, 0, 0}, Quat::FromAxisAngle({0, 1, 0}, 0.7)));
    w.U8(7);
    w.U8(0);  // 4 points
    w.Double(1.0);
    PointGrid(w, 0, 0, 0);
    PointGrid(w, 1, 0, 0);
    PointGrid(w, 0, 1, 0);
    PointGrid(w, 0, 0, 1);
    w.WritePose(Pose({-2, 0, 0}));
    GeometryQueries(w);
    Save(dir, "seed-compound", w.data());
  }
  {
    ByteWriter w;  // compound: a mesh child (refused)
    w.U8(3);
    w.U8(2);
    w.U8(0);
    w.WriteShape(*Shape::MakeSphere(0.5));
    w.WritePose(Pose({0, 1, 0}));
    w.U8(6);
    w.WriteVec3({0, 0, 0});
    w.WritePose(Pose({0, 0, 0}));
    Save(dir, "seed-compound-mesh-child", w.data());
  }
}

}  // namespace
}  // namespace hitbox::fuzz

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s CORPUS_DIR\n", argv[0]);
    return 2;
  }
  const std::filesystem::path out = argv[1];
  hitbox::fuzz::ColliderSetSeeds(out / "collider_set");
  hitbox::fuzz::ServiceSeeds(out / "service");
  hitbox::fuzz::StructuredServiceSeeds(out / "service");
  hitbox::fuzz::WireSeeds(out / "wire");
  hitbox::fuzz::GeometrySeeds(out / "geometry");
  return 0;
}
