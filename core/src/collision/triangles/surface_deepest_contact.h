// The deepest contact of a convex with a triangle surface, deciding triangles
// in order of an upper bound of their depth (a lazily refined max-heap).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <utility>
#include <vector>

#include "collision/triangles/cylinder_triangle.h"
#include "collision/triangles/start_near.h"
#include "collision/triangles/surface_overlap.h"
#include "hitbox/math/math.h"

namespace hitbox {

namespace surface_detail {
/// A triangle waiting in SurfaceDeepestContactConvex's heap.
struct DeepestCandidate {
  Vec3 v[3];
  uint32_t triangle;
  uint8_t stage;  // refinements of its bound done so far
  int32_t sat;    // index of its box SAT result in DeepestScratch::sats, or -1
  bool sat_answer;  // a box core, and TrianglePolytopePenetration answers (not flat)
  bool supports;  // the core's supports along -n and +n (its unit normal) in `support`
  Vec3 support[2];
};
/// A heap entry: an upper bound on the triangle's contact depth.
struct DeepestEntry {
  double bound;
  uint32_t triangle;
  uint32_t index;  // into DeepestScratch::candidates
};
/// A triangle near a capsule, with an upper bound on its contact depth.
struct RoundedCandidate {
  Vec3 v[3];
  uint32_t triangle;
  double bound;
};
struct DeepestScratch {
  std::vector<DeepestCandidate> candidates;
  std::vector<RoundedCandidate> rounded;
  std::vector<DeepestEntry> heap;
  std::vector<TriangleConvexPenetration> sats;
  std::vector<DeepestEntry> deferred;
};
/// A lower bound on the distance of segment [p0, p1] to triangle v: for
/// any two points of them, their offset along the unit normal is at least
/// how far the ends' heights stay on one side, and along an edge's in-plane
/// normal at least the gap between the two's spans there, the two square to
/// each other. 0 on a sliver (not WideFace), whose normal is rounding.
inline double SegmentTriangleDistanceLower(const Vec3& p0, const Vec3& p1, const Vec3 v[3]) {
  const Vec3 ab = v[1] - v[0], ac = v[2] - v[0], bc = v[2] - v[1];
  const Vec3 face = Cross(ab, ac);
  const double face2 = face.LengthSq();
  if (!WideFace(ab, ac, bc, face2) || !(face2 > 0.0)) return 0.0;
  const double len = std::sqrt(face2);
  const Vec3 n = face / len;
  const double h0 = Dot(p0 - v[0], n), h1 = Dot(p1 - v[0], n);
  const double over = h0 > 0.0 && h1 > 0.0   ? std::min(h0, h1)
                      : h0 < 0.0 && h1 < 0.0 ? std::min(-h0, -h1)
                                             : 0.0;
  double gap = 0.0;
  for (int i = 0; i < 3; ++i) {
    const Vec3 e = v[(i + 1) % 3] - v[i];
    const double el = e.Length();
    if (!(el > 0.0)) continue;
    const Vec3 m = Cross(e, n) / el;  // unit: e is square to n
    const double w = Dot(v[(i + 2) % 3] - v[i], m);
    const double d0 = Dot(p0 - v[i], m), d1 = Dot(p1 - v[i], m);
    gap = std::max(gap, std::max(std::min(d0, d1) - std::max(0.0, w),
                                 std::min(0.0, w) - std::max(d0, d1)));
  }
  const double lower = std::sqrt(over * over + gap * gap);
  return lower == lower ? lower : 0.0;
}

/// VisitNearTriangles, or the triangles a sweep that started inside this
/// mesh recorded around its start (FindStartNear) when they cover the near
/// box: the same triangles, in another order, which the deepest contact
/// does not depend on.
template <typename Surface, typename Convex, typename Fn>
void VisitNearTrianglesOrStart(const Surface& surface, const Convex& convex, Fn&& fn) {
  if constexpr (std::is_same_v<Surface, TriangleMesh>) {
    const Aabb near_box = convex.bounds().Expanded(kSweepGap);
    if (const StartNearSet* set = FindStartNear(&surface, near_box)) {
      internal::WorkTally tally;
      for (const StartNearTriangle& t : set->triangles) {
        if (!tally.Count()) return;  // the batch stops (budget, deadline)
        if (!Aabb().Union(t.v[0]).Union(t.v[1]).Union(t.v[2]).Overlaps(near_box)) continue;
        if (!fn(t.k, t.v)) return;
      }
      return;
    }
  }
  VisitNearTriangles(surface, convex, fn);
}
}  // namespace surface_detail

/// The deepest of SurfaceContactsConvex's contacts (ties: the lowest input
/// triangle) without computing every one: each candidate's depth is bounded
/// above by overlaps along cheap axes (the triangle's normal, a box's axes,
/// the axis to the triangle, the SAT depth), triangles are decided deepest
/// bound first from a lazily refined max-heap, and the rest are skipped once
/// none can beat the deepest contact by 4e-9 * scale. False when none touches.
template <typename Surface, typename Convex>
bool SurfaceDeepestContactConvex(const Surface& surface, const Convex& convex,
                                 SurfaceContactHit* out) {
  using surface_detail::VisitNearTrianglesOrStart;
  using Candidate = surface_detail::DeepestCandidate;
  using Entry = surface_detail::DeepestEntry;
  // Scratch kept per thread between calls (no allocation per query).
  static thread_local surface_detail::DeepestScratch scratch;
  std::vector<Candidate>& candidates = scratch.candidates;
  std::vector<Entry>& heap = scratch.heap;
  std::vector<TriangleConvexPenetration>& sats = scratch.sats;
  std::vector<Entry>& deferred = scratch.deferred;
  candidates.clear();
  heap.clear();
  sats.clear();
  deferred.clear();
  bool any = false;
  // The deepest contact wins; on equal depths, the lowest triangle.
  const auto keep = [&](const SurfaceContactHit& m) {
    if (!any || m.depth > out->depth || (m.depth == out->depth && m.triangle < out->triangle)) {
      *out = m;
    }
    any = true;
  };
  if constexpr (requires { convex.rounded(); }) {
    if (convex.rounded() != Convex::Rounded::kNone) {
      if (convex.rounded() == Convex::Rounded::kBall) {
        // A ball: its closed-form contact costs little more than a bound
        // would; every touching triangle is decided in the hierarchy's order,
        // but for those whose box lies too far from the centre to come within
        // the slack (4e-9 * scale, as below) of the deepest so far: the
        // distance to the box is at most the distance to the triangle, so
        // their depth is at most the radius less it.
        const Vec3 centre = convex.segment()[0];
        const double slack = 4e-9 * convex.scale();
        VisitNearTrianglesOrStart(surface, convex, [&](uint32_t k, const Vec3 v[3]) {
          if (any) {
            const double reach = convex.margin() - out->depth + slack;
            double gap2 = 0.0;
            for (int a = 0; a < 3; ++a) {
              const double lo = std::min(v[0][a], std::min(v[1][a], v[2][a]));
              const double hi = std::max(v[0][a], std::max(v[1][a], v[2][a]));
              const double g = std::max(std::max(lo - centre[a], centre[a] - hi), 0.0);
              gap2 += g * g;
            }
            if (reach >= 0.0 && gap2 > reach * reach) return true;
          }
          SurfaceContactHit m;
          if (TriangleTouchContact(v, surface.OriginalIndex(k), convex, nullptr, &m)) keep(m);
          return true;
        });
        return any;
      }
      // A capsule: the segment-triangle distance is the cost. The contact is
      // at most the radius less a lower bound of that distance: first the
      // gap between the segment's box and the triangle's (a few compares),
      // then, for a triangle that can still come within the slack of the
      // deepest so far, SegmentTriangleDistanceLower (most of those beside a
      // capsule on a floor are passed over on one or the other); the
      // deepest wins whatever the order.
      std::vector<surface_detail::RoundedCandidate>& near = scratch.rounded;
      near.clear();
      const Vec3* seg = convex.segment();
      const Aabb seg_box = Aabb().Union(seg[0]).Union(seg[1]);
      VisitNearTrianglesOrStart(surface, convex, [&](uint32_t k, const Vec3 v[3]) {
        double gap2 = 0.0;
        for (int a = 0; a < 3; ++a) {
          const double lo = std::min(v[0][a], std::min(v[1][a], v[2][a]));
          const double hi = std::max(v[0][a], std::max(v[1][a], v[2][a]));
          const double g = std::max(std::max(lo - seg_box.max[a], seg_box.min[a] - hi), 0.0);
          gap2 += g * g;
        }
        near.push_back({{v[0], v[1], v[2]},
                        surface.OriginalIndex(k),
                        convex.margin() - std::sqrt(gap2)});
        return true;
      });
      // The highest box bound first (typically the deepest), then the rest.
      size_t top = 0;
      for (size_t i = 1; i < near.size(); ++i) {
        if (near[i].bound > near[top].bound) top = i;
      }
      if (!near.empty()) std::swap(near[0], near[top]);
      const double slack = 4e-9 * convex.scale();
      for (const surface_detail::RoundedCandidate& c : near) {
        if (any && c.bound + slack < out->depth) continue;
        if (any && convex.margin() -
                           surface_detail::SegmentTriangleDistanceLower(seg[0], seg[1], c.v) +
                           slack <
                       out->depth) {
          continue;
        }
        SurfaceContactHit m;
        if (TriangleTouchContact(c.v, c.triangle, convex, nullptr, &m)) keep(m);
      }
      return any;
    }
  }
  TrianglePolytopeCore polytope;
  bool polytope_core = false;
  if constexpr (requires { convex.PolytopeCore(&polytope); }) {
    polytope_core = convex.PolytopeCore(&polytope) && polytope.axes == 3;
  }
  // Should the batch stop (budget, deadline), the triangles visited so far
  // are decided, as SurfaceContactsConvex does.
  const Aabb& bounds = convex.bounds();
  VisitNearTrianglesOrStart(surface, convex, [&](uint32_t k, const Vec3 v[3]) {
    Candidate c;
    c.supports = false;
    std::copy(v, v + 3, c.v);
    double bound = std::numeric_limits<double>::infinity();
    // A box on a triangle TrianglePolytopePenetration answers (its own
    // test, SatCrossAxis's).
    c.sat_answer = false;
    if (polytope_core) {
      const Vec3 e1 = c.v[1] - c.v[0], e2 = c.v[2] - c.v[0];
      c.sat_answer = internal::SatNotParallel(Cross(e1, e2).LengthSq(), e1, e2);
    }
    if (c.sat_answer) {
      // The overlaps along x, y and z of the bounds (no support calls).
      for (int a = 0; a < 3; ++a) {
        const double lo = std::min(c.v[0][a], std::min(c.v[1][a], c.v[2][a]));
        const double hi = std::max(c.v[0][a], std::max(c.v[1][a], c.v[2][a]));
        bound = std::min(bound, std::min(bounds.max[a] - lo, hi - bounds.min[a]));
      }
    } else {
      const Vec3 cross = Cross(c.v[1] - c.v[0], c.v[2] - c.v[0]);
      const double len = cross.Length();
      // Vec3::Normalized() written out: its length also tells whether this n
      // is TriangleConvexEpa's cross / length (for the supports below).
      const Vec3 n = len > 1e-150 ? cross / len : cross.Normalized();
      if (n.LengthSq() > 0.0) {
        const double d = Dot(n, c.v[0]);
        c.support[1] = convex(n);
        c.support[0] = convex(-n);
        const double above = Dot(n, c.support[1]) + convex.margin() - d;
        const double below = d - Dot(n, c.support[0]) + convex.margin();
        bound = std::min(above, below);
        // The prism's n (TriangleConvexEpa's cross / its length) is this one.
        c.supports = len > 1e-150;
      }
    }
    c.triangle = surface.OriginalIndex(k);
    c.stage = 0;
    c.sat = -1;
    heap.push_back({bound, c.triangle, static_cast<uint32_t>(candidates.size())});
    candidates.push_back(c);
    return true;
  });
  // Max-heap on the bound; ties: the lowest triangle first.
  const auto lower = [](const Entry& a, const Entry& b) {
    return a.bound < b.bound || (a.bound == b.bound && a.triangle > b.triangle);
  };
  std::make_heap(heap.begin(), heap.end(), lower);
  // Refinements: a box's face normals, its overlap along the axis from its
  // centre, then its SAT depth; a cylinder's along its own axes, then a
  // cylinder's or a hull's overlap along the axis from its inner segment
  // (TriangleInnerOverlap).
  Vec3 inner[2];
  convex.InnerSegment(inner);
  // A cylinder core: first its own axes (CylinderTriangleOverlap, no
  // support calls), where a triangle beside its side is nearly apart.
  bool cylinder_core = false;
  PlacedCylinder cylinder;
  if constexpr (requires { convex.is_cylinder(); }) {
    if (!polytope_core && convex.is_cylinder()) {
      cylinder_core = true;
      cylinder = convex.cylinder();
    }
  }
  const uint8_t final_stage = polytope_core ? 3 : cylinder_core ? 2 : 1;
  const double slack = 4e-9 * convex.scale();
  const double apart = 1e-9 * convex.scale();
  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), lower);
    Entry e = heap.back();
    heap.pop_back();
    if (any && e.bound + slack < out->depth) break;  // no deeper contact remains
    Candidate& c = candidates[e.index];
    // Its turn on a loose bound: tighten it, and decide it now only if it
    // stays the highest.
    bool requeued = false, done = false;
    while (c.stage < final_stage) {
      double tight = std::numeric_limits<double>::infinity();
      if (cylinder_core && c.stage == 0) {
        tight = CylinderTriangleOverlap(c.v, cylinder);
      } else if (!polytope_core || c.stage == 1) {
        // A bound on the contact's depth: when the cores are certainly apart
        // along the axis, GJK's closest points give the contact, no deeper
        // than the overlap, nor than 0; for a box when the triangle has a
        // SAT answer (TrianglePolytopePenetration valid), the exact depth, at
        // most any axis's overlap; else, but for a sliver, EPA's answer,
        // which counts this axis among its directions (TriangleConvexEpa's
        // inner axis), so at most max(overlap, margin) + 1e-9 * scale, within
        // the slack, even where it stalls on a curved face. On a sliver a
        // stalled EPA reports more than the depth, up to the overlap along
        // its last normal or the triangle's own: no bound.
        const double overlap = TriangleInnerOverlap(c.v, convex, inner);
        if (overlap < convex.margin() - apart) {
          tight = std::max(overlap, 0.0);
        } else if (c.sat_answer) {  // (a box core only)
          tight = overlap;
        } else if (EpaTakesInnerAxis(c.v)) {
          tight = std::max(overlap, convex.margin());
        }
      } else if (c.stage == 0) {
        // The box's own face normals (three axes, no support calls).
        for (int k = 0; k < 3; ++k) {
          const Vec3& a = polytope.axis[k];
          const double t0 = Dot(a, c.v[0]), t1 = Dot(a, c.v[1]), t2 = Dot(a, c.v[2]);
          const double mid = Dot(a, polytope.center);
          const double reach = polytope.half[k] + convex.margin();
          tight = std::min(tight, std::min(std::max(t0, std::max(t1, t2)) - (mid - reach),
                                           mid + reach - std::min(t0, std::min(t1, t2))));
        }
      } else {
        const TriangleConvexPenetration sat =
            TrianglePolytopePenetration(c.v, polytope, convex.margin());
        if (sat.valid) {
          tight = sat.depth;
          c.sat = static_cast<int32_t>(sats.size());
          sats.push_back(sat);
        }
      }
      ++c.stage;
      if (!(tight < e.bound)) continue;
      e.bound = tight;
      if (!heap.empty() && lower(e, heap.front())) {
        heap.push_back(e);
        std::push_heap(heap.begin(), heap.end(), lower);
        requeued = true;
        break;
      }
      // Still the highest: every bound left is at most this one.
      if (any && e.bound + slack < out->depth) {
        done = true;
        break;
      }
    }
    if (done) break;
    if (requeued) continue;
    SurfaceContactHit m;
    if (!polytope_core) {
      // A cylinder or a hull: TrianglePrismContact's contact now (a
      // cylinder's closed form, or the prism's: a face contact, exactly the
      // bound along the normal); else (an edge or vertex contact, typically
      // shallower than the bound) GJK and EPA later, when the deepest contact
      // so far can stop EPA early (TriangleConvexEpa's stop_below).
      if (!TrianglePrismContact(c.v, c.triangle, convex, &m,
                                c.supports ? c.support : nullptr)) {
        deferred.push_back(e);
        continue;
      }
    } else if (!TriangleTouchContact(c.v, c.triangle, convex,
                                     c.sat >= 0 ? &sats[c.sat] : nullptr, &m)) {
      continue;
    }
    keep(m);
  }
  // Highest bound first, as they came out of the heap.
  for (const Entry& e : deferred) {
    if (any && e.bound + slack < out->depth) break;
    const Candidate& c = candidates[e.index];
    SurfaceContactHit m;
    const TouchAnswer t = TriangleTouchAfterPrism(
        c.v, c.triangle, convex, &m,
        any ? out->depth - slack : -std::numeric_limits<double>::infinity());
    if (t == TouchAnswer::kTouching) keep(m);
  }
  return any;
}

/// Whether the contact offset `skin` > 0 keeps the first contact `s` of the
/// convex translating by `translation` with triangle `tri`
/// (CastSettings::contact_offset): its depth when started inside (GJK, or
/// TriangleCoresPenetration when the cores overlap) plus the approach over the rest of the
/// translation must reach the skin.

}  // namespace hitbox
