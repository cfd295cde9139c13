// Helpers shared by the service tests: building wire messages and random worlds,
// mirroring changes into an in-process ColliderSet, comparing answers.
#pragma once

#include <cstdint>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "hitbox/world/collider_set.h"
#include "hitbox/v1/hitbox.grpc.pb.h"
#include "hitbox/wire/convert.h"

namespace hitbox::testing_service {

/// A sphere collider message.
inline v1::Collider SphereMsg(uint64_t id, double radius, const Vec3& p = {}, uint32_t layer = 0) {
  v1::Collider c;
  c.set_id(id);
  c.mutable_shape()->mutable_sphere()->set_radius(radius);
  wire::ToProto(p, c.mutable_pose()->mutable_position());
  c.set_layer(layer);
  c.set_user_data(id * 100);
  return c;
}

/// Seeded random shapes, poses, colliders and queries inside a cube.
class WorldGen {
 public:
  WorldGen(uint64_t seed, double half_size) : rng_(seed), half_(half_size) {}

  double Uniform(double a, double b) { return std::uniform_real_distribution<double>(a, b)(rng_); }
  uint64_t Next() { return rng_(); }

  Shape RandomShape(double lo = 0.2, double hi = 3.0) {
    switch (rng_() % 4) {
      case 0: return *Shape::MakeSphere(Uniform(lo, hi));
      case 1: return *Shape::MakeBox({Uniform(lo, hi), Uniform(lo, hi), Uniform(lo, hi)});
      case 2: return *Shape::MakeCapsule(Uniform(lo, hi), Uniform(0, hi));
      default: return *Shape::MakeCylinder(Uniform(lo, hi), Uniform(0, hi));
    }
  }
  Vec3 RandomPoint() {
    return {Uniform(-half_, half_), Uniform(-half_, half_), Uniform(-half_, half_)};
  }
  Pose RandomPose() {
    const Quat q(Uniform(-1, 1), Uniform(-1, 1), Uniform(-1, 1), Uniform(-1, 1));
    return Pose(RandomPoint(), q.LengthSq() > 1e-6 ? q.Normalized() : Quat::Identity());
  }
  Collider RandomCollider(uint64_t id) {
    Collider c;
    c.id = id;
    c.shape = RandomShape();
    c.pose = RandomPose();
    c.layer = static_cast<uint32_t>(rng_() % 4);
    c.user_data = rng_();
    return c;
  }
  Query RandomQuery() {
    QueryFilter f;
    if (rng_() % 4 == 0) f.mask = static_cast<uint32_t>(rng_() % 16);
    switch (rng_() % 3) {
      case 0: {
        OverlapQuery q;
        q.shape = RandomShape(0.5, 8.0);
        q.pose = RandomPose();
        q.filter = f;
        q.want_contact = rng_() % 2 == 0;
        return q;
      }
      case 1: {
        CastQuery q;
        q.shape = RandomShape(0.2, 2.0);
        q.pose = RandomPose();
        q.translation = Vec3(Uniform(-1, 1), Uniform(-1, 1), Uniform(-1, 1)) * half_;
        q.filter = f;
        q.all_hits = rng_() % 3 == 0;
        return q;
      }
      default: {
        RayQuery q;
        q.origin = RandomPoint();
        q.translation = Vec3(Uniform(-1, 1), Uniform(-1, 1), Uniform(-1, 1)) * half_;
        q.filter = f;
        q.all_hits = rng_() % 3 == 0;
        return q;
      }
    }
  }

 private:
  std::mt19937_64 rng_;
  double half_;
};

/// Exact equality of two answers; describes the first difference.
inline std::string DiffResults(const QueryResult& a, const QueryResult& b) {
  std::ostringstream out;
  out.precision(17);
  if (a.overlaps.size() != b.overlaps.size()) {
    out << "overlap count " << a.overlaps.size() << " vs " << b.overlaps.size();
    return out.str();
  }
  for (size_t i = 0; i < a.overlaps.size(); ++i) {
    const OverlapHit &x = a.overlaps[i], &y = b.overlaps[i];
    if (x.id != y.id || x.user_data != y.user_data || x.contact.has_value() != y.contact.has_value()) {
      out << "overlap[" << i << "] id " << x.id << " vs " << y.id;
      return out.str();
    }
    if (x.contact && (x.contact->depth != y.contact->depth || !(x.contact->normal == y.contact->normal) ||
                      !(x.contact->point_a == y.contact->point_a) ||
                      !(x.contact->point_b == y.contact->point_b))) {
      out << "overlap[" << i << "] contact depth " << x.contact->depth << " vs " << y.contact->depth;
      return out.str();
    }
  }
  if (a.hits.size() != b.hits.size()) {
    out << "hit count " << a.hits.size() << " vs " << b.hits.size();
    return out.str();
  }
  for (size_t i = 0; i < a.hits.size(); ++i) {
    const CastHit &x = a.hits[i], &y = b.hits[i];
    if (x.id != y.id || x.user_data != y.user_data || x.fraction != y.fraction ||
        !(x.normal == y.normal) || !(x.point == y.point) ||
        x.started_overlapping() != y.started_overlapping() || x.depth != y.depth) {
      out << "hit[" << i << "] id " << x.id << " vs " << y.id << ", fraction " << x.fraction
          << " vs " << y.fraction;
      return out.str();
    }
  }
  return "";
}

/// What the server makes of ToProto(c): the core change after the wire's
/// validation and quaternion normalization (bit-identical to the server's).
inline ColliderChange ThroughWire(const ColliderChange& c) {
  v1::ColliderChange p;
  wire::ToProto(c, &p);
  Result<ColliderChange> back = wire::FromProto(p, "change");
  EXPECT_TRUE(back.ok()) << back.error().message;
  return back.ok() ? *back : c;
}
inline Query ThroughWire(const Query& q) {
  v1::Query p;
  wire::ToProto(q, &p);
  Result<Query> back = wire::FromProto(p, "query");
  EXPECT_TRUE(back.ok()) << back.error().message;
  return back.ok() ? *back : q;
}

}  // namespace hitbox::testing_service
