#include "hitbox/view/world_svg.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numbers>

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

/// The SVG elements of one shape (no group): polygon, mesh path or bounds.
std::string ShapeElements(const Panel& panel, const Shape& shape, const Pose& pose,
                          uint64_t* triangle_budget) {
  if (IsConvex(shape.kind())) {
    return "<polygon points=\"" + Points(ConvexOutline(panel, shape, pose)) + "\"/>";
  }
  const std::optional<TriangleMeshShape> mesh =
      shape.mesh_input_triangles() <= *triangle_budget ? shape.mesh_input() : std::nullopt;
  if (mesh) {
    *triangle_budget -= mesh->triangles.size();
    std::vector<Point2> mapped(mesh->vertices.size());
    for (size_t i = 0; i < mapped.size(); ++i) mapped[i] = panel.Map(pose.TransformPoint(mesh->vertices[i]));
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
  return "<polygon points=\"" + Points(BoundsOutline(panel, shape.WorldBounds(pose))) + "\"/>";
}

std::string ColliderTitle(const Collider& c, const char* where) {
  return std::string(where) + " collider " + std::to_string(c.id) + " · layer " +
         std::to_string(c.layer) + " · " + ShapeKindName(c.shape.kind()) + " · user_data " +
         std::to_string(c.user_data) + " · at [" + FormatDouble(c.pose.position.x, 6) + ", " +
         FormatDouble(c.pose.position.y, 6) + ", " + FormatDouble(c.pose.position.z, 6) + "]";
}

std::string ColliderGroup(const Panel& panel, const Collider& c, bool map, uint64_t* budget) {
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
  return "<circle id=\"" + id + "\" class=\"hit\" cx=\"" + FormatFixed(p.x, 2) + "\" cy=\"" +
         FormatFixed(p.y, 2) + "\" r=\"4\" fill=\"" + kQueryColor +
         "\" stroke=\"#ffffff\" stroke-width=\"1\"><title>" + Escape(title) + "</title></circle>";
}

std::string Line(const Point2& a, const Point2& b, const char* extra) {
  return "<line x1=\"" + FormatFixed(a.x, 2) + "\" y1=\"" + FormatFixed(a.y, 2) + "\" x2=\"" +
         FormatFixed(b.x, 2) + "\" y2=\"" + FormatFixed(b.y, 2) + "\"" + extra + "/>";
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
    uint64_t budget = 0;
    s += ShapeElements(panel, q.shape, q.pose, &budget);
  } else {
    const Vec3 start = q.pose.position;
    const Vec3 end = start + q.translation;
    s += Line(panel.Map(start), panel.Map(end), " stroke-dasharray=\"6 4\"");
    if (q.kind == QueryOverlay::Kind::kSweep) {
      uint64_t budget = 0;
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
                      " at fraction " + FormatDouble(h.fraction, 6) + " (point [" +
                      FormatDouble(h.point.x, 6) + ", " + FormatDouble(h.point.y, 6) + ", " +
                      FormatDouble(h.point.z, 6) + "])");
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

std::string RenderSvg(const WorldPicture& pic, const ViewOptions& options) {
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
  const double doc_height = legend_y + 24.0 + kMarginPx;

  std::string s;
  s += "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  s += "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"" +
       FormatFixed(doc_width, 2) + "\" height=\"" + FormatFixed(doc_height, 2) +
       "\" viewBox=\"0 0 " + FormatFixed(doc_width, 2) + " " + FormatFixed(doc_height, 2) +
       "\" font-family=\"sans-serif\" font-size=\"13\">\n";
  s += "<title>" + Escape(pic.title.empty() ? "hitbox world" : pic.title) + "</title>\n";
  s += "<rect id=\"background\" width=\"100%\" height=\"100%\" fill=\"#ffffff\"/>\n";
  const std::string counts = std::to_string(pic.map.size()) + " map + " + std::to_string(pic.session.size()) +
                             " session colliders, " + std::to_string(pic.queries.size()) + " queries";
  for (const Panel& panel : panels) {
    const bool top = panel.view() == Panel::View::kTop;
    const Point2 corner = top ? panel.Map({world.min.x, 0, world.min.z}) : panel.Map({world.min.x, world.max.y, 0});
    s += "<g id=\"" + std::string(top ? "top-view" : "side-view") + "\">\n";
    s += "<text x=\"" + FormatFixed(kMarginPx, 2) + "\" y=\"" + FormatFixed(corner.y - 8.0, 2) +
         "\">" +
         Escape((pic.title.empty() ? std::string() : pic.title + " · ") +
                (top ? "top view (from +y: x to the right, z down)"
                     : "side view (from +z: x to the right, y up)") +
                " · " + counts) +
         "</text>\n";
    s += "<rect class=\"frame\" x=\"" + FormatFixed(corner.x, 2) + "\" y=\"" +
         FormatFixed(corner.y, 2) + "\" width=\"" + FormatFixed(size.x * scale, 2) +
         "\" height=\"" + FormatFixed(panel.height(), 2) +
         "\" fill=\"#fafafa\" stroke=\"#bdbdbd\"/>\n";
    uint64_t budget = options.max_triangles;
    s += "<g class=\"map\" stroke=\"#616161\" stroke-width=\"0.5\" fill-opacity=\"0.6\">\n";
    for (const Collider& c : pic.map) s += ColliderGroup(panel, c, true, &budget);
    s += "</g>\n<g class=\"session\" stroke=\"#212121\" stroke-width=\"0.75\" fill-opacity=\"0.55\">\n";
    for (const Collider& c : pic.session) s += ColliderGroup(panel, c, false, &budget);
    s += "</g>\n<g class=\"queries\">\n";
    for (const QueryOverlay& q : pic.queries) s += QueryGroup(panel, q);
    s += "</g>\n</g>\n";
  }
  s += "<g id=\"legend\">";
  double x = kMarginPx;
  if (!pic.map.empty()) {
    s += "<rect x=\"" + FormatFixed(x, 2) + "\" y=\"" + FormatFixed(legend_y, 2) +
         "\" width=\"12\" height=\"12\" fill=\"" + kMapColor + "\"/><text x=\"" +
         FormatFixed(x + 16, 2) + "\" y=\"" + FormatFixed(legend_y + 11, 2) + "\">map</text>";
    x += 60;
  }
  for (uint32_t layer : layers) {
    s += "<rect class=\"legend-layer\" x=\"" + FormatFixed(x, 2) + "\" y=\"" +
         FormatFixed(legend_y, 2) + "\" width=\"12\" height=\"12\" fill=\"" + LayerColor(layer) +
         "\"/><text x=\"" + FormatFixed(x + 16, 2) + "\" y=\"" + FormatFixed(legend_y + 11, 2) +
         "\">layer " + std::to_string(layer) + "</text>";
    x += 76;
  }
  s += "</g>\n</svg>\n";
  return s;
}

}  // namespace hitbox::view
