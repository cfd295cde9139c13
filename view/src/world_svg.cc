#include "hitbox/view/world_svg.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <numbers>
#include <optional>
#include <utility>
#include <vector>

#include "hitbox/format.h"

namespace hitbox::view {
namespace {

constexpr double kMarginPx = 20.0;
constexpr double kCaptionPx = 26.0;
constexpr int kOutlineDirections = 48;

std::string Escape(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default:
        // Control characters other than tab / newline are not allowed in XML 1.0.
        if (static_cast<unsigned char>(c) >= 0x20 || c == '\t' || c == '\n') out += c;
    }
  }
  return out;
}

struct Point2 {
  double x = 0.0;
  double y = 0.0;
};

/// World -> page for one view panel.
class Panel {
 public:
  enum class View : uint8_t { kTop, kSide };
  Panel(View view, const Aabb& world, double scale, double origin_y)
      : view_(view), world_(world), scale_(scale), origin_y_(origin_y) {}

  View view() const { return view_; }
  /// "" for the top view, "side-" for the side view (ids stay unique).
  std::string prefix() const { return view_ == View::kTop ? "" : "side-"; }
  /// Page height of the drawing area.
  double height() const {
    return (view_ == View::kTop ? world_.max.z - world_.min.z : world_.max.y - world_.min.y) * scale_;
  }
  double scale() const { return scale_; }

  Point2 Map(const Vec3& p) const {
    return {kMarginPx + (p.x - world_.min.x) * scale_,
            origin_y_ + kCaptionPx + (V(p) - VMin()) * scale_};
  }
  /// Unit world direction in the view plane at angle `a`.
  Vec3 Direction(double a) const {
    return view_ == View::kTop ? Vec3{std::cos(a), 0.0, std::sin(a)} : Vec3{std::cos(a), std::sin(a), 0.0};
  }

 private:
  /// Page-down coordinate of a world point: +Z (top view) or -Y (side view).
  double V(const Vec3& p) const { return view_ == View::kTop ? p.z : -p.y; }
  double VMin() const { return view_ == View::kTop ? world_.min.z : -world_.max.y; }

  View view_;
  Aabb world_;
  double scale_;
  double origin_y_;
};

std::string Points(const std::vector<Point2>& pts) {
  std::string s;
  for (size_t i = 0; i < pts.size(); ++i) {
    if (i > 0) s += ' ';
    s += FormatFixed(pts[i].x, 2) + "," + FormatFixed(pts[i].y, 2);
  }
  return s;
}

/// The outline of a convex shape's projection: its support points in the
/// view plane's directions, consecutive repeats removed.
std::vector<Point2> ConvexOutline(const Panel& panel, const Shape& shape, const Pose& pose) {
  std::vector<Point2> pts;
  for (int i = 0; i < kOutlineDirections; ++i) {
    const double a = 2.0 * std::numbers::pi * i / kOutlineDirections;
    const Vec3 local = shape.Support(pose.InverseTransformDirection(panel.Direction(a)));
    const Point2 p = panel.Map(pose.TransformPoint(local));
    if (!pts.empty() && std::fabs(pts.back().x - p.x) < 1e-3 && std::fabs(pts.back().y - p.y) < 1e-3) continue;
    pts.push_back(p);
  }
  while (pts.size() > 1 && std::fabs(pts.back().x - pts.front().x) < 1e-3 &&
         std::fabs(pts.back().y - pts.front().y) < 1e-3) {
    pts.pop_back();
  }
  return pts;
}

std::vector<Point2> BoundsOutline(const Panel& panel, const Aabb& b) {
  const Vec3 lo = b.min;
  const Vec3 hi = b.max;
  if (panel.view() == Panel::View::kTop) {
    return {panel.Map({lo.x, 0, lo.z}), panel.Map({hi.x, 0, lo.z}), panel.Map({hi.x, 0, hi.z}),
            panel.Map({lo.x, 0, hi.z})};
  }
  return {panel.Map({lo.x, lo.y, 0}), panel.Map({hi.x, lo.y, 0}), panel.Map({hi.x, hi.y, 0}),
          panel.Map({lo.x, hi.y, 0})};
}

bool IsConvex(ShapeKind kind) { return static_cast<int>(kind) < kConvexKindCount; }

/// The triangle budget of one view and what was drawn coarsely.
struct SurfaceBudget {
  uint64_t triangles_left = 0;
  /// Coverage grid cell, page pixels.
  double cell_px = 3.0;
  RenderStats stats;
};

/// A heightfield's triangles in its local frame (shared/cases/FORMAT.md:
/// cell (r, c) is split into (p00, p01, p11) and (p00, p11, p10), pXY = p(r + Y, c + X)).
TriangleMeshShape HeightfieldTriangles(const HeightfieldShape& h) {
  TriangleMeshShape m;
  if (h.rows < 2 || h.cols < 2) return m;
  m.vertices.reserve(static_cast<size_t>(h.rows) * h.cols);
  for (uint32_t r = 0; r < h.rows; ++r) {
    for (uint32_t c = 0; c < h.cols; ++c) {
      m.vertices.push_back({c * h.cell_size_x, h.heights[static_cast<size_t>(r) * h.cols + c], r * h.cell_size_z});
    }
  }
  for (uint32_t r = 0; r + 1 < h.rows; ++r) {
    for (uint32_t c = 0; c + 1 < h.cols; ++c) {
      const uint32_t p00 = r * h.cols + c;
      const uint32_t p10 = p00 + 1;
      const uint32_t p01 = p00 + h.cols;
      const uint32_t p11 = p01 + 1;
      m.triangles.push_back({p00, p01, p11});
      m.triangles.push_back({p00, p11, p10});
    }
  }
  return m;
}

/// The page cells of `cell` pixels that a surface's projected triangles cover
/// (edges sampled at half a cell, interiors by cell centres), as one path of
/// row runs: the footprint of a surface too big to draw triangle by triangle.
std::string CoveragePath(const std::vector<Point2>& pts, const std::vector<std::array<uint32_t, 3>>& tris,
                         double cell) {
  if (pts.empty()) return "";
  double x0 = pts[0].x, x1 = x0, y0 = pts[0].y, y1 = y0;
  for (const Point2& p : pts) {
    x0 = std::min(x0, p.x);
    x1 = std::max(x1, p.x);
    y0 = std::min(y0, p.y);
    y1 = std::max(y1, p.y);
  }
  const int64_t i0 = static_cast<int64_t>(std::floor(x0 / cell));
  const int64_t j0 = static_cast<int64_t>(std::floor(y0 / cell));
  const int64_t ni = static_cast<int64_t>(std::floor(x1 / cell)) - i0 + 1;
  const int64_t nj = static_cast<int64_t>(std::floor(y1 / cell)) - j0 + 1;
  std::vector<uint8_t> grid(static_cast<size_t>(ni * nj), 0);
  auto cell_of = [&](double v, int64_t origin, int64_t n) {
    return std::clamp<int64_t>(static_cast<int64_t>(std::floor(v / cell)) - origin, 0, n - 1);
  };
  auto mark = [&](const Point2& p) {
    grid[static_cast<size_t>(cell_of(p.y, j0, nj) * ni + cell_of(p.x, i0, ni))] = 1;
  };
  for (const auto& t : tris) {
    const Point2& a = pts[t[0]];
    const Point2& b = pts[t[1]];
    const Point2& c = pts[t[2]];
    for (const auto& [p, q] : {std::pair{&a, &b}, std::pair{&b, &c}, std::pair{&c, &a}}) {
      const double len = std::hypot(q->x - p->x, q->y - p->y);
      const int n = static_cast<int>(std::ceil(len / (0.5 * cell))) + 1;
      for (int k = 0; k <= n; ++k) {
        const double f = static_cast<double>(k) / n;
        mark({p->x + (q->x - p->x) * f, p->y + (q->y - p->y) * f});
      }
    }
    const int64_t ia = cell_of(std::min({a.x, b.x, c.x}), i0, ni);
    const int64_t ib = cell_of(std::max({a.x, b.x, c.x}), i0, ni);
    const int64_t ja = cell_of(std::min({a.y, b.y, c.y}), j0, nj);
    const int64_t jb = cell_of(std::max({a.y, b.y, c.y}), j0, nj);
    if (ib - ia < 2 && jb - ja < 2) continue;  // the edges covered it
    auto edge = [](const Point2& u, const Point2& v, double x, double y) {
      return (v.x - u.x) * (y - u.y) - (v.y - u.y) * (x - u.x);
    };
    for (int64_t j = ja; j <= jb; ++j) {
      const double y = (static_cast<double>(j + j0) + 0.5) * cell;
      for (int64_t i = ia; i <= ib; ++i) {
        const double x = (static_cast<double>(i + i0) + 0.5) * cell;
        const double e0 = edge(a, b, x, y), e1 = edge(b, c, x, y), e2 = edge(c, a, x, y);
        if ((e0 >= 0 && e1 >= 0 && e2 >= 0) || (e0 <= 0 && e1 <= 0 && e2 <= 0)) {
          grid[static_cast<size_t>(j * ni + i)] = 1;
        }
      }
    }
  }
  std::string d;
  for (int64_t j = 0; j < nj; ++j) {
    for (int64_t i = 0; i < ni;) {
      if (!grid[static_cast<size_t>(j * ni + i)]) {
        ++i;
        continue;
      }
      const int64_t start = i;
      while (i < ni && grid[static_cast<size_t>(j * ni + i)]) ++i;
      const double run = static_cast<double>(i - start) * cell;
      d.append("M").append(FormatFixed(static_cast<double>(start + i0) * cell, 2)).append(",");
      d.append(FormatFixed(static_cast<double>(j + j0) * cell, 2)).append("h").append(FormatFixed(run, 2));
      d.append("v").append(FormatFixed(cell, 2)).append("h").append(FormatFixed(-run, 2)).append("z");
    }
  }
  return "<path class=\"coverage\" stroke=\"none\" d=\"" + d + "\"/>";
}

/// The SVG elements of one shape (no group): polygon, compound outlines,
/// surface path (triangles, or coverage beyond the budget) or bounds.
std::string ShapeElements(const Panel& panel, const Shape& shape, const Pose& pose, SurfaceBudget* budget) {
  if (IsConvex(shape.kind())) {
    return "<polygon points=\"" + Points(ConvexOutline(panel, shape, pose)) + "\"/>";
  }
  if (const CompoundData* compound = shape.compound()) {
    std::string s;
    for (const CompoundChild& child : compound->children()) {
      s += "<polygon points=\"" + Points(ConvexOutline(panel, child.shape, pose * child.pose)) + "\"/>";
    }
    return s;
  }
  std::optional<TriangleMeshShape> mesh = shape.mesh_input();
  if (!mesh) {
    if (const HeightfieldShape* h = shape.heightfield_input()) mesh = HeightfieldTriangles(*h);
  }
  if (!mesh || mesh->triangles.empty()) {
    return "<polygon points=\"" + Points(BoundsOutline(panel, shape.WorldBounds(pose))) + "\"/>";
  }
  std::vector<Point2> mapped(mesh->vertices.size());
  for (size_t i = 0; i < mapped.size(); ++i) mapped[i] = panel.Map(pose.TransformPoint(mesh->vertices[i]));
  const uint64_t n = mesh->triangles.size();
  if (n > budget->triangles_left) {
    ++budget->stats.coarse_surfaces;
    budget->stats.coarse_triangles += n;
    return CoveragePath(mapped, mesh->triangles, budget->cell_px);
  }
  budget->triangles_left -= n;
  budget->stats.triangles_drawn += n;
  std::string d;
  d.reserve(mesh->triangles.size() * 48);
  for (const auto& t : mesh->triangles) {
    const Point2& a = mapped[t[0]];
    const Point2& b = mapped[t[1]];
    const Point2& c = mapped[t[2]];
    for (const Point2* p : {&a, &b, &c}) {
      d += p == &a ? 'M' : 'L';
      d += FormatFixed(p->x, 2);
      d += ',';
      d += FormatFixed(p->y, 2);
    }
    d += 'Z';
  }
  return "<path d=\"" + d + "\"/>";
}

std::string ColliderTitle(const Collider& c, const char* where) {
  return std::string(where) + " collider " + std::to_string(c.id) + " · layer " + std::to_string(c.layer) +
         " · " + ShapeKindName(c.shape.kind()) + " · user_data " + std::to_string(c.user_data) +
         " · at [" + FormatDouble(c.pose.position.x, 6) + ", " + FormatDouble(c.pose.position.y, 6) + ", " +
         FormatDouble(c.pose.position.z, 6) + "]";
}

std::string ColliderGroup(const Panel& panel, const Collider& c, bool map, SurfaceBudget* budget) {
  const std::string fill = map ? kMapColor : LayerColor(c.layer);
  std::string s = "<g id=\"" + panel.prefix() + (map ? "map-collider-" : "collider-") + std::to_string(c.id) +
                  "\" class=\"collider " +
                  (map ? "map" : "session layer-" + std::to_string(c.layer)) + "\" fill=\"" + fill + "\">";
  s += "<title>" + Escape(ColliderTitle(c, map ? "map" : "session")) + "</title>";
  s += ShapeElements(panel, c.shape, c.pose, budget);
  s += "</g>\n";
  return s;
}

std::string Circle(const std::string& id, const Point2& p, const std::string& title) {
  return "<circle id=\"" + id + "\" class=\"hit\" cx=\"" + FormatFixed(p.x, 2) + "\" cy=\"" + FormatFixed(p.y, 2) +
         "\" r=\"4\" fill=\"" + kQueryColor + "\" stroke=\"#ffffff\" stroke-width=\"1\"><title>" +
         Escape(title) + "</title></circle>";
}

std::string Line(const Point2& a, const Point2& b, const char* extra) {
  return "<line x1=\"" + FormatFixed(a.x, 2) + "\" y1=\"" + FormatFixed(a.y, 2) + "\" x2=\"" + FormatFixed(b.x, 2) + "\" y2=\"" + FormatFixed(b.y, 2) +
         "\"" + extra + "/>";
}

std::string QueryGroup(const Panel& panel, const QueryOverlay& q) {
  const std::string qid = std::to_string(q.id);
  const char* kind = q.kind == QueryOverlay::Kind::kRaycast ? "raycast"
                     : q.kind == QueryOverlay::Kind::kSweep ? "sweep"
                                                            : "overlap";
  std::string title = std::string(kind) + " query " + qid;
  if (q.kind == QueryOverlay::Kind::kOverlap) {
    title.append(q.overlaps.empty() ? std::string(": no overlap") : std::string(": overlaps"));
    for (uint64_t id : q.overlaps) title.append(" ").append(std::to_string(id));
  } else if (q.hits.empty()) {
    title += ": no hit";
  } else {
    title += ": hits collider " + std::to_string(q.hits.front().id) + " at fraction " +
             FormatDouble(q.hits.front().fraction, 6);
  }
  std::string s = "<g id=\"" + panel.prefix() + "query-" + qid + "\" class=\"query " + kind + "\" stroke=\"" +
                  kQueryColor + "\" fill=\"none\" stroke-width=\"1.5\"><title>" + Escape(title) + "</title>";
  if (q.kind == QueryOverlay::Kind::kOverlap) {
    SurfaceBudget budget;
    s += ShapeElements(panel, q.shape, q.pose, &budget);
  } else {
    const Vec3 start = q.pose.position;
    const Vec3 end = start + q.translation;
    s += Line(panel.Map(start), panel.Map(end), " stroke-dasharray=\"6 4\"");
    if (q.kind == QueryOverlay::Kind::kSweep) {
      SurfaceBudget budget;
      s += "<g class=\"sweep-start\">" + ShapeElements(panel, q.shape, q.pose, &budget) + "</g>";
      s += "<g class=\"sweep-end\" stroke-dasharray=\"2 3\">" +
           ShapeElements(panel, q.shape, Pose(end, q.pose.rotation), &budget) + "</g>";
      if (!q.hits.empty()) {
        const Pose at(start + q.translation * q.hits.front().fraction, q.pose.rotation);
        s += "<g class=\"sweep-hit\" stroke-width=\"2.5\">" + ShapeElements(panel, q.shape, at, &budget) + "</g>";
      }
    }
    for (const CastHit& h : q.hits) {
      s += Circle(panel.prefix() + "hit-" + qid + "-" + std::to_string(h.id), panel.Map(h.point),
                  std::string(kind) + " query " + qid + " hits collider " + std::to_string(h.id) +
                      " at fraction " + FormatDouble(h.fraction, 6) + " (point [" + FormatDouble(h.point.x, 6) + ", " +
                      FormatDouble(h.point.y, 6) + ", " + FormatDouble(h.point.z, 6) + "])");
    }
  }
  s += "</g>\n";
  return s;
}

/// World bounds of everything drawn.
Aabb WorldExtent(const WorldPicture& pic) {
  Aabb b;
  for (const auto* set : {&pic.map, &pic.session}) {
    for (const Collider& c : *set) b = b.Union(c.shape.WorldBounds(c.pose));
  }
  for (const QueryOverlay& q : pic.queries) {
    if (q.kind == QueryOverlay::Kind::kRaycast) {
      b = b.Union(q.pose.position).Union(q.pose.position + q.translation);
    } else {
      b = b.Union(q.shape.WorldBounds(q.pose).Swept(q.translation));
    }
  }
  if (b.IsEmpty()) b = Aabb(Vec3::Splat(-1.0), Vec3::Splat(1.0));
  // Pad by 5 % of the largest side (at least 0.5 m) so outlines stay inside.
  const Vec3 size = b.max - b.min;
  const double pad = std::max(0.5, 0.05 * std::max({size.x, size.y, size.z}));
  return b.Expanded(pad);
}

/// "x", "-z", ... for the world axis closest to `v`; "+x" with `sign`.
std::string AxisName(const Vec3& v, bool sign) {
  const double ax = std::fabs(v.x), ay = std::fabs(v.y), az = std::fabs(v.z);
  const double c = ax >= ay && ax >= az ? v.x : ay >= az ? v.y : v.z;
  const char* name = ax >= ay && ax >= az ? "x" : ay >= az ? "y" : "z";
  return std::string(c < 0 ? "-" : sign ? "+" : "") + name;
}

/// The picture turned by `r` about the origin (poses, motions, hit points, normals).
WorldPicture Turned(const WorldPicture& pic, const Quat& r) {
  WorldPicture out = pic;
  auto turn = [&](Pose& p) { p = Pose(r.Rotate(p.position), (r * p.rotation).Normalized()); };
  for (auto* set : {&out.map, &out.session}) {
    for (Collider& c : *set) turn(c.pose);
  }
  for (QueryOverlay& q : out.queries) {
    turn(q.pose);
    q.translation = r.Rotate(q.translation);
    for (CastHit& h : q.hits) {
      h.point = r.Rotate(h.point);
      h.normal = r.Rotate(h.normal);
    }
  }
  return out;
}

}  // namespace

std::string LayerColor(uint32_t layer) {
  // Hues by the golden angle so neighbouring layers differ, layer 0 blue
  // (red is the queries' colour); HSL(h, 65 %, 45 %).
  const double h = std::fmod(210.0 + layer * 137.50776405, 360.0) / 60.0;
  const double s = 0.65;
  const double l = 0.45;
  const double c = (1.0 - std::fabs(2.0 * l - 1.0)) * s;
  const double x = c * (1.0 - std::fabs(std::fmod(h, 2.0) - 1.0));
  double r = 0, g = 0, b = 0;
  switch (static_cast<int>(h)) {
    case 0: r = c; g = x; break;
    case 1: r = x; g = c; break;
    case 2: g = c; b = x; break;
    case 3: g = x; b = c; break;
    case 4: r = x; b = c; break;
    default: r = c; b = x; break;
  }
  const double m = l - 0.5 * c;
  auto byte = [&](double v) { return static_cast<unsigned>(std::lround(std::clamp(v + m, 0.0, 1.0) * 255.0)); };
  char buf[8];
  std::snprintf(buf, sizeof(buf), "#%02x%02x%02x", byte(r), byte(g), byte(b));
  return buf;
}

std::string RenderSvg(const WorldPicture& original, const ViewOptions& options, RenderStats* stats_out) {
  const Quat frame = options.frame.Normalized();
  const bool turned = !(frame.x == 0.0 && frame.y == 0.0 && frame.z == 0.0);
  const WorldPicture turned_picture = turned ? Turned(original, frame) : WorldPicture{};
  const WorldPicture& pic = turned ? turned_picture : original;
  const Aabb world = WorldExtent(pic);
  const double width = std::max(100.0, options.width_px);
  const Vec3 size = world.max - world.min;
  // One scale for both views, so the largest side of the world fits the width.
  const double scale = width / std::max({size.x, size.y, size.z});
  std::vector<Panel> panels;
  double y = kMarginPx;
  panels.emplace_back(Panel::View::kTop, world, scale, y);
  y += kCaptionPx + panels.back().height() + kMarginPx;
  if (options.side) {
    panels.emplace_back(Panel::View::kSide, world, scale, y);
    y += kCaptionPx + panels.back().height() + kMarginPx;
  }
  const double doc_width = size.x * scale + 2.0 * kMarginPx;
  const double legend_y = y;
  std::vector<uint32_t> layers;
  for (const Collider& c : pic.session) layers.push_back(c.layer);
  std::sort(layers.begin(), layers.end());
  layers.erase(std::unique(layers.begin(), layers.end()), layers.end());

  // Axis names in the world's own frame (the picture may be turned).
  const Quat back = frame.Conjugate();
  auto axis = [&](const Vec3& page_axis, bool sign) { return AxisName(turned ? back.Rotate(page_axis) : page_axis, sign); };
  const std::string top_caption = "top view (from " + axis({0, 1, 0}, true) + ": " + axis({1, 0, 0}, false) +
                                  " to the right, " + axis({0, 0, 1}, false) + " down)";
  const std::string side_caption = "side view (from " + axis({0, 0, 1}, true) + ": " + axis({1, 0, 0}, false) +
                                   " to the right, " + axis({0, 1, 0}, false) + " up)";

  std::string body;
  const std::string counts = std::to_string(pic.map.size()) + " map + " + std::to_string(pic.session.size()) +
                             " session colliders, " + std::to_string(pic.queries.size()) + " queries";
  RenderStats stats;
  for (const Panel& panel : panels) {
    const bool top = panel.view() == Panel::View::kTop;
    const Point2 corner = top ? panel.Map({world.min.x, 0, world.min.z}) : panel.Map({world.min.x, world.max.y, 0});
    std::string& s = body;
    s += "<g id=\"" + std::string(top ? "top-view" : "side-view") + "\">\n";
    s += "<text x=\"" + FormatFixed(kMarginPx, 2) + "\" y=\"" + FormatFixed(corner.y - 8.0, 2) + "\">" +
         Escape((pic.title.empty() ? std::string() : pic.title + " · ") + (top ? top_caption : side_caption) +
                " · " + counts) +
         "</text>\n";
    s += "<rect class=\"frame\" x=\"" + FormatFixed(corner.x, 2) + "\" y=\"" + FormatFixed(corner.y, 2) + "\" width=\"" +
         FormatFixed(size.x * scale, 2) + "\" height=\"" + FormatFixed(panel.height(), 2) +
         "\" fill=\"#fafafa\" stroke=\"#bdbdbd\"/>\n";
    SurfaceBudget budget;
    budget.triangles_left = options.max_triangles;
    budget.cell_px = std::max(1.0, options.coverage_cell_px);
    s += "<g class=\"map\" stroke=\"#616161\" stroke-width=\"0.5\" fill-opacity=\"0.6\">\n";
    for (const Collider& c : pic.map) s += ColliderGroup(panel, c, true, &budget);
    s += "</g>\n<g class=\"session\" stroke=\"#212121\" stroke-width=\"0.75\" fill-opacity=\"0.55\">\n";
    for (const Collider& c : pic.session) s += ColliderGroup(panel, c, false, &budget);
    s += "</g>\n<g class=\"queries\">\n";
    for (const QueryOverlay& q : pic.queries) s += QueryGroup(panel, q);
    s += "</g>\n</g>\n";
    if (top) stats = budget.stats;
  }
  stats.cell_metres = std::max(1.0, options.coverage_cell_px) / scale;
  if (stats_out != nullptr) *stats_out = stats;

  body += "<g id=\"legend\">";
  double x = kMarginPx;
  if (!pic.map.empty()) {
    body += "<rect x=\"" + FormatFixed(x, 2) + "\" y=\"" + FormatFixed(legend_y, 2) + "\" width=\"12\" height=\"12\" fill=\"" +
            kMapColor + "\"/><text x=\"" + FormatFixed(x + 16, 2) + "\" y=\"" + FormatFixed(legend_y + 11, 2) + "\">map</text>";
    x += 60;
  }
  for (uint32_t layer : layers) {
    body += "<rect class=\"legend-layer\" x=\"" + FormatFixed(x, 2) + "\" y=\"" + FormatFixed(legend_y, 2) +
            "\" width=\"12\" height=\"12\" fill=\"" + LayerColor(layer) + "\"/><text x=\"" + FormatFixed(x + 16, 2) +
            "\" y=\"" + FormatFixed(legend_y + 11, 2) + "\">layer " + std::to_string(layer) + "</text>";
    x += 76;
  }
  body += "</g>\n";
  double doc_height = legend_y + 24.0 + kMarginPx;
  if (stats.coarse_surfaces > 0) {
    // Said in the picture: what was not drawn triangle by triangle, and why.
    body += "<text id=\"coarse-note\" x=\"" + FormatFixed(kMarginPx, 2) + "\" y=\"" + FormatFixed(legend_y + 30, 2) + "\">" +
            Escape("coarse: " + std::to_string(stats.coarse_surfaces) + " surface" +
                   (stats.coarse_surfaces == 1 ? "" : "s") + " (" + std::to_string(stats.coarse_triangles) +
                   " triangles) over the budget of " + std::to_string(options.max_triangles) +
                   " triangles per view drawn as the " + FormatDouble(stats.cell_metres, 3) +
                   " m cells they cover; " + std::to_string(stats.triangles_drawn) +
                   " triangles drawn one by one") +
            "</text>\n";
    doc_height += 22.0;
  }
  body += "</svg>\n";

  std::string s;
  s.reserve(body.size() + 512);
  s += "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  s += "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"" + FormatFixed(doc_width, 2) + "\" height=\"" +
       FormatFixed(doc_height, 2) + "\" viewBox=\"0 0 " + FormatFixed(doc_width, 2) + " " + FormatFixed(doc_height, 2) +
       "\" font-family=\"sans-serif\" font-size=\"13\">\n";
  s += "<title>" + Escape(original.title.empty() ? "hitbox world" : original.title) + "</title>\n";
  s += "<rect id=\"background\" width=\"100%\" height=\"100%\" fill=\"#ffffff\"/>\n";
  s += body;
  return s;
}

}  // namespace hitbox::view
