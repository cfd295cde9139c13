// A picture of a world as SVG: colliders seen from above (and optionally
// from a side), query rays / sweeps / overlaps and their hits on top.
// Depends on hitbox_core only; hitboxctl `view` feeds it what it reads from
// a session (and, once hitboxd has maps, the map's colliders).
//
// Views (world frame: right-handed, metres, +Y up, see shared/cases/FORMAT.md):
//   top   looking down -Y: +X to the right, +Z down the page
//   side  looking along -Z: +X to the right, +Y up the page
// ViewOptions::frame turns a world whose up is not +Y (a Z-up level) so that
// its up is the top view's "from"; the captions name the world's own axes.
// Convex shapes are drawn as the outline of their projection (support points
// in 48 directions of the view plane), compounds child by child; meshes and
// heightfields triangle by triangle up to ViewOptions::max_triangles per
// view, and those beyond the budget as a coverage grid (the cells of
// coverage_cell_px pixels their triangles cover: the true footprint, coarser).
// A picture that drew any surface coarsely says so in a <text
// id="coarse-note"> under the views (how many surfaces and triangles, the
// cell size, the budget), never silently. Map colliders are grey; the session's are coloured by layer
// (LayerColor). Every session collider is a <g id="collider-ID"> (a map
// collider <g id="map-collider-ID">) with a <title> (id, layer, kind, user
// data) that browsers show on hover; every query a <g id="query-ID">, every
// hit a <circle id="hit-QUERY-COLLIDER">. In the side view the same ids
// start with "side-", so ids stay unique.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "hitbox/world/collider_set.h"
#include "hitbox/math/math.h"
#include "hitbox/shape/shapes.h"

namespace hitbox::view {

/// One query to draw, with the answer it got.
struct QueryOverlay {
  enum class Kind : uint8_t { kRaycast, kSweep, kOverlap };
  /// Query id (from the queries file).
  uint64_t id = 0;
  Kind kind = Kind::kRaycast;
  /// Sweep / overlap shape and its start pose; a raycast uses pose.position
  /// as its origin.
  Shape shape;
  Pose pose;
  /// Raycast / sweep motion, metres (world frame).
  Vec3 translation;
  /// Sweep / raycast hits (closest first); fraction in [0, 1].
  std::vector<CastHit> hits;
  /// Overlap: the ids touched.
  std::vector<uint64_t> overlaps;
};

/// What to draw.
struct WorldPicture {
  /// Static map geometry, drawn grey under everything.
  std::vector<Collider> map;
  /// The session's own colliders, coloured by layer.
  std::vector<Collider> session;
  std::vector<QueryOverlay> queries;
  /// Shown as the picture's <title> and caption (e.g. "session arena-1").
  std::string title;
};

/// How to draw it.
struct ViewOptions {
  /// Also draw the side view under the top view.
  bool side = false;
  /// Width of a view in pixels (heights follow the world's aspect), >= 100.
  double width_px = 900.0;
  /// Mesh and heightfield triangles drawn one by one per view; the surfaces
  /// beyond this budget are drawn as a coverage grid, and the picture says so.
  uint64_t max_triangles = 200000;
  /// Cell size of the coverage grid in pixels, >= 1.
  double coverage_cell_px = 3.0;
  /// Rotation applied to the whole world before drawing: it takes the
  /// world's up direction to +Y (identity: the world is Y-up).
  Quat frame;
};

/// What a picture left out of its triangle-by-triangle drawing (per view).
struct RenderStats {
  /// Surface triangles drawn one by one.
  uint64_t triangles_drawn = 0;
  /// Surfaces (meshes, heightfields) drawn as a coverage grid, and their triangles.
  uint64_t coarse_surfaces = 0;
  uint64_t coarse_triangles = 0;
  /// Size of one grid cell in world metres.
  double cell_metres = 0.0;
};

/// The fill colour of session colliders on `layer` (0..31): "#rrggbb",
/// distinct hues around the colour wheel.
std::string LayerColor(uint32_t layer);
/// The fill colour of map colliders.
inline constexpr const char* kMapColor = "#9e9e9e";
/// The colour of query rays, sweeps and their hit markers.
inline constexpr const char* kQueryColor = "#d50000";

/// A complete, well-formed SVG document (UTF-8, no external resources);
/// `stats`, when given, gets what the top view drew coarsely.
std::string RenderSvg(const WorldPicture& picture, const ViewOptions& options = {},
                      RenderStats* stats = nullptr);

}  // namespace hitbox::view
