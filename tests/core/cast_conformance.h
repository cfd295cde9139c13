// Brute-force conformance check of the pairwise Cast() / Raycast() against the
// shared case files (/work/shared/cases, read at test time, never copied):
// every sweep / raycast query is cast against every candidate collider and
// the earliest contact must match the expected answer as FORMAT.md says.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "hitbox/collision/collide.h"
#include "hitbox/shape/shapes.h"

namespace hitbox::testing {

struct CaseCollider {
  uint64_t id = 0;
  int layer = 0;
  Shape shape;
  Pose pose;
  Aabb bounds;
};

inline Vec3 JsonVec(const nlohmann::json& j) {
  return {j.at(0).get<double>(), j.at(1).get<double>(), j.at(2).get<double>()};
}
inline Quat JsonQuat(const nlohmann::json& j) {
  return {j.at(0).get<double>(), j.at(1).get<double>(), j.at(2).get<double>(),
          j.at(3).get<double>()};
}
inline Shape JsonShape(const nlohmann::json& j) {
  if (j.contains("sphere")) return *Shape::MakeSphere(j["sphere"]["radius"].get<double>());
  if (j.contains("box")) return *Shape::MakeBox(JsonVec(j["box"]["half_extents"]));
  if (j.contains("capsule")) {
    return *Shape::MakeCapsule(j["capsule"]["radius"].get<double>(),
                               j["capsule"]["half_height"].get<double>());
  }
  return *Shape::MakeCylinder(j["cylinder"]["radius"].get<double>(),
                              j["cylinder"]["half_height"].get<double>());
}

/// Counts of a conformance run, for the test log.
struct ConformanceStats {
  int sweeps = 0;
  int raycasts = 0;
  int failures = 0;
};

/// Checks every sweep (when `sweeps`) or raycast (otherwise) query of `path`.
inline ConformanceStats CheckCaseFile(const std::string& path, bool sweeps, int max_failures = 20) {
  ConformanceStats stats;
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << "cannot open " << path;
  if (!in.good()) return stats;
  const nlohmann::json doc = nlohmann::json::parse(in);
  std::vector<CaseCollider> colliders;
  for (const auto& c : doc.at("colliders")) {
    CaseCollider cc;
    cc.id = c.at("id").get<uint64_t>();
    cc.layer = c.at("layer").get<int>();
    cc.shape = JsonShape(c.at("shape"));
    cc.pose = Pose(JsonVec(c.at("position")), JsonQuat(c.at("rotation")));
    cc.bounds = cc.shape.WorldBounds(cc.pose).Expanded(1e-6);
    colliders.push_back(cc);
  }
  const auto& queries = doc.at("queries");
  const auto& expected = doc.at("expected");
  for (size_t qi = 0; qi < queries.size(); ++qi) {
    const auto& q = queries[qi];
    const auto& ex = expected[qi];
    const bool is_sweep = q.contains("sweep");
    const bool is_ray = q.contains("raycast");
    if (!(sweeps ? is_sweep : is_ray)) continue;
    const auto& body = is_sweep ? q["sweep"] : q["raycast"];
    const uint32_t mask = body.contains("mask") ? body["mask"].get<uint32_t>() : 0xffffffffu;
    const Vec3 translation = JsonVec(body.at("translation"));
    Shape shape;
    Pose pose;
    Aabb swept;
    if (is_sweep) {
      shape = JsonShape(body.at("shape"));
      pose = Pose(JsonVec(body.at("position")), JsonQuat(body.at("rotation")));
      swept = shape.WorldBounds(pose).Swept(translation);
      ++stats.sweeps;
    } else {
      pose = Pose(JsonVec(body.at("origin")));
      swept = Aabb(pose.position, pose.position).Swept(translation);
      ++stats.raycasts;
    }
    double best = 2.0;
    uint64_t best_id = 0;
    CastResult best_result;
    for (const CaseCollider& c : colliders) {
      if ((mask & (1u << c.layer)) == 0 || !swept.Overlaps(c.bounds)) continue;
      const CastResult r = is_sweep ? Cast(shape, pose, translation, c.shape, c.pose)
                                    : Raycast(pose.position, translation, c.shape, c.pose);
      if (r.hit() && r.fraction < best) {
        best = r.fraction;
        best_id = c.id;
        best_result = r;
      }
    }
    const uint64_t qid = q.at("id").get<uint64_t>();
    std::string problem;
    if (ex.at("hit").is_null()) {
      if (best <= 1.0) {
        problem = "expected no hit, got id " + std::to_string(best_id) + " at fraction " +
                  std::to_string(best);
      }
    } else {
      const uint64_t want = ex["hit"].get<uint64_t>();
      const double frac = ex.at("fraction").get<double>();
      const double tol = ex.at("tolerance").get<double>();
      bool id_ok = best_id == want;
      if (ex.contains("also")) {
        for (const auto& a : ex["also"]) id_ok |= a.get<uint64_t>() == best_id;
      }
      if (best > 1.0) {
        problem = "expected id " + std::to_string(want) + " at " + std::to_string(frac) +
                  ", got no hit";
      } else if (!id_ok || std::fabs(best - frac) > tol) {
        char buf[200];
        std::snprintf(buf, sizeof(buf), "expected id %llu at %.9g, got id %llu at %.9g",
                      static_cast<unsigned long long>(want), frac,
                      static_cast<unsigned long long>(best_id), best);
        problem = buf;
      } else if (best > 0.0) {
        const double len = best_result.normal.Length();
        if (std::fabs(len - 1.0) > 1e-9 || Dot(best_result.normal, translation) > 1e-6) {
          problem = "bad normal " + ToString(best_result.normal);
        }
      }
    }
    if (!problem.empty()) {
      ++stats.failures;
      if (stats.failures <= max_failures) {
        ADD_FAILURE() << path << " query " << qid << ": " << problem
                      << (is_sweep ? " shape=" + shape.ToString() : std::string())
                      << " pose=" << ToString(pose) << " translation=" << ToString(translation);
      }
    }
  }
  return stats;
}

}  // namespace hitbox::testing
