// SVG pictures of a world (view/): every document is parsed with expat, so a
// malformed one fails; the cases count colliders, ids, colours, hits and
// check where things land on the page.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <set>
#include <sstream>
#include <string>

#include "hitbox/view/world_svg.h"
#include "svg_parse.h"
#include "test_util.h"

namespace hitbox::view {
namespace {

using hitbox::testing::ParseXml;
using hitbox::testing::XmlDocument;
using hitbox::testing::XmlElement;

Collider Make(uint64_t id, const Shape& shape, const Pose& pose, uint32_t layer = 0) {
  Collider c;
  c.id = id;
  c.shape = shape;
  c.pose = pose;
  c.layer = layer;
  c.user_data = id * 10;
  return c;
}

/// One collider of every kind, on layers 0..6.
std::vector<Collider> EveryKind() {
  TriangleMeshShape ramp{{{0, 0, 0}, {4, 0, 0}, {4, 2, 4}, {0, 2, 4}}, {{0, 1, 2}, {0, 2, 3}}};
  HeightfieldShape ground{3, 3, 2.0, 2.0, {0, 0, 0, 0, 1, 0, 0, 0, 0}};
  return {Make(1, *Shape::MakeSphere(1), Pose({0, 1, 0}), 0),
          Make(2, *Shape::MakeBox({1, 2, 1}), Pose({5, 2, 0}, Quat::FromAxisAngle({0, 1, 0}, 0.5)), 1),
          Make(3, *Shape::MakeCapsule(0.5, 1), Pose({-5, 1.5, 0}), 2),
          Make(4, *Shape::MakeCylinder(1, 1), Pose({0, 1, 5}), 3),
          Make(5, *Shape::Make(ConvexHull{{{0, 0, 0}, {2, 0, 0}, {0, 2, 0}, {0, 0, 2}}}), Pose({0, 0, -6}), 4),
          Make(6, *Shape::Make(ramp), Pose({6, 0, 6}), 5),
          Make(7, *Shape::Make(ground), Pose({-8, 0, -8}), 6)};
}

/// Mean of the "x,y" pairs of a polygon's points attribute.
std::pair<double, double> Centre(const XmlElement& polygon) {
  std::istringstream in(polygon.Attr("points"));
  std::string pair;
  double sx = 0, sy = 0;
  int n = 0;
  while (in >> pair) {
    double x = 0, y = 0;
    if (std::sscanf(pair.c_str(), "%lf,%lf", &x, &y) == 2) {
      sx += x;
      sy += y;
      ++n;
    }
  }
  return {n ? sx / n : 0, n ? sy / n : 0};
}

/// The first element named `name` below the element with id `id`.
const XmlElement* ChildOf(const XmlDocument& doc, const std::string& id, const std::string& name) {
  const XmlElement* parent = doc.ById(id);
  if (parent == nullptr) return nullptr;
  const int index = static_cast<int>(parent - doc.elements.data());
  for (const auto& e : doc.elements) {
    if (e.parent == index && e.name == name) return &e;
  }
  return nullptr;
}

// Every shape kind renders into a well-formed document: one group per
// collider with its id, layer colour and hover title.
TEST(WorldSvg, EveryKindIsDrawnWithIdsColoursAndTitles) {
  WorldPicture pic;
  pic.session = EveryKind();
  pic.title = "session test";
  const XmlDocument doc = ParseXml(RenderSvg(pic));
  ASSERT_TRUE(doc.ok) << doc.error;
  ASSERT_EQ(doc.elements.front().name, "svg");
  EXPECT_EQ(doc.elements.front().Attr("xmlns"), "http://www.w3.org/2000/svg");
  size_t groups = 0;
  for (const auto* g : doc.All("g")) {
    if (g->Attr("class").rfind("collider", 0) == 0) ++groups;
  }
  EXPECT_EQ(groups, pic.session.size());
  for (const Collider& c : pic.session) {
    const XmlElement* g = doc.ById("collider-" + std::to_string(c.id));
    ASSERT_NE(g, nullptr) << c.id;
    EXPECT_EQ(g->Attr("fill"), LayerColor(c.layer));
    EXPECT_EQ(g->Attr("class"), "collider session layer-" + std::to_string(c.layer));
    const std::string title = doc.TitleOf(*g);
    EXPECT_NE(title.find("collider " + std::to_string(c.id) + " · layer " + std::to_string(c.layer)),
              std::string::npos)
        << title;
    EXPECT_NE(title.find(ShapeKindName(c.shape.kind())), std::string::npos) << title;
    EXPECT_NE(title.find("user_data " + std::to_string(c.id * 10)), std::string::npos) << title;
  }
  // The mesh is drawn triangle by triangle (a path of 2 closed triangles).
  const XmlElement* mesh = ChildOf(doc, "collider-6", "path");
  ASSERT_NE(mesh, nullptr);
  const std::string d = mesh->Attr("d");
  EXPECT_EQ(std::count(d.begin(), d.end(), 'Z'), 2);
  EXPECT_EQ(doc.ById("side-view"), nullptr);
  // The legend shows each layer once.
  EXPECT_EQ(doc.All("rect").size(), 2u + 7u);  // background, frame, 7 layers
}

// The side view repeats every collider with "side-" ids; ids stay unique,
// also when a map collider has a session collider's id.
TEST(WorldSvg, SideViewHasItsOwnIds) {
  WorldPicture pic;
  pic.session = EveryKind();
  pic.map = {Make(1, *Shape::MakeBox({30, 1, 30}), Pose({0, -1, 0}))};
  ViewOptions options;
  options.side = true;
  const XmlDocument doc = ParseXml(RenderSvg(pic, options));
  ASSERT_TRUE(doc.ok) << doc.error;
  ASSERT_NE(doc.ById("top-view"), nullptr);
  ASSERT_NE(doc.ById("side-view"), nullptr);
  std::set<std::string> ids;
  for (const auto& e : doc.elements) {
    const std::string id = e.Attr("id");
    if (id.empty()) continue;
    EXPECT_TRUE(ids.insert(id).second) << "duplicate id " << id;
  }
  for (const Collider& c : pic.session) EXPECT_TRUE(ids.count("side-collider-" + std::to_string(c.id)));
}

// Top view: +x right, +z down; side view: +x right, +y up.
TEST(WorldSvg, ViewsPutThingsWhereTheyAre) {
  WorldPicture pic;
  pic.session = {Make(1, *Shape::MakeSphere(1), Pose({10, 0, 0})), Make(2, *Shape::MakeSphere(1), Pose({-10, 0, 0})),
                 Make(3, *Shape::MakeSphere(1), Pose({0, 0, 10})), Make(4, *Shape::MakeSphere(1), Pose({0, 0, -10})),
                 Make(5, *Shape::MakeSphere(1), Pose({0, 8, 0}))};
  ViewOptions options;
  options.side = true;
  const XmlDocument doc = ParseXml(RenderSvg(pic, options));
  ASSERT_TRUE(doc.ok) << doc.error;
  auto centre = [&](const std::string& id) {
    const XmlElement* p = ChildOf(doc, id, "polygon");
    EXPECT_NE(p, nullptr) << id;
    return p ? Centre(*p) : std::pair<double, double>{0, 0};
  };
  EXPECT_GT(centre("collider-1").first, centre("collider-2").first);    // +x to the right
  EXPECT_GT(centre("collider-3").second, centre("collider-4").second);  // +z down the page
  EXPECT_LT(centre("side-collider-5").second, centre("side-collider-1").second);  // +y up
  // A sphere's outline is round: its 48 support points.
  const std::string points = ChildOf(doc, "collider-1", "polygon")->Attr("points");
  EXPECT_EQ(std::count(points.begin(), points.end(), ','), 48);
}

// Map colliders are grey and under the session's; the legend names the map.
TEST(WorldSvg, MapIsGrey) {
  WorldPicture pic;
  pic.map = {Make(100, *Shape::MakeBox({20, 0.5, 20}), Pose({0, -0.5, 0})),
             Make(101, *Shape::MakeBox({1, 3, 1}), Pose({8, 3, 8}))};
  pic.session = {Make(1, *Shape::MakeSphere(1), Pose({0, 1, 0}), 4)};
  const XmlDocument doc = ParseXml(RenderSvg(pic));
  ASSERT_TRUE(doc.ok) << doc.error;
  for (const char* id : {"map-collider-100", "map-collider-101"}) {
    const XmlElement* g = doc.ById(id);
    ASSERT_NE(g, nullptr);
    EXPECT_EQ(g->Attr("fill"), kMapColor);
    EXPECT_EQ(g->Attr("class"), "collider map");
  }
  EXPECT_EQ(doc.ById("collider-1")->Attr("fill"), LayerColor(4));
  // Map groups come first (drawn below).
  EXPECT_LT(doc.ById("map-collider-100"), doc.ById("collider-1"));
}

// Rays, sweeps and overlaps are drawn with their hits, each with a title.
TEST(WorldSvg, QueriesAndHits) {
  WorldPicture pic;
  pic.session = {Make(5, *Shape::MakeBox({1, 1, 1}), Pose({5, 0, 0}))};
  QueryOverlay ray;
  ray.id = 1;
  ray.kind = QueryOverlay::Kind::kRaycast;
  ray.pose = Pose({0, 0, 0});
  ray.translation = {10, 0, 0};
  CastHit hit;
  hit.id = 5;
  hit.fraction = 0.4;
  hit.point = {4, 0, 0};
  ray.hits = {hit};
  QueryOverlay sweep;
  sweep.id = 2;
  sweep.kind = QueryOverlay::Kind::kSweep;
  sweep.shape = *Shape::MakeSphere(0.5);
  sweep.pose = Pose({0, 0, 0.5});
  sweep.translation = {10, 0, 0};
  hit.fraction = 0.35;
  hit.point = {4, 0, 0.5};
  sweep.hits = {hit};
  QueryOverlay miss;
  miss.id = 3;
  miss.pose = Pose({0, 5, 0});
  miss.translation = {0, 1, 0};
  QueryOverlay overlap;
  overlap.id = 4;
  overlap.kind = QueryOverlay::Kind::kOverlap;
  overlap.shape = *Shape::MakeSphere(1.5);
  overlap.pose = Pose({4, 0, 0});
  overlap.overlaps = {5};
  pic.queries = {ray, sweep, miss, overlap};
  const XmlDocument doc = ParseXml(RenderSvg(pic));
  ASSERT_TRUE(doc.ok) << doc.error;
  const XmlElement* h1 = doc.ById("hit-1-5");
  ASSERT_NE(h1, nullptr);
  EXPECT_EQ(h1->name, "circle");
  EXPECT_EQ(h1->Attr("fill"), kQueryColor);
  EXPECT_NE(doc.TitleOf(*h1).find("raycast query 1 hits collider 5 at fraction 0.4"), std::string::npos);
  ASSERT_NE(doc.ById("hit-2-5"), nullptr);
  EXPECT_EQ(doc.All("circle").size(), 2u);
  EXPECT_NE(doc.TitleOf(*doc.ById("query-3")).find("no hit"), std::string::npos);
  EXPECT_NE(doc.TitleOf(*doc.ById("query-4")).find("overlaps 5"), std::string::npos);
  size_t sweep_parts = 0;
  for (const auto* g : doc.All("g")) {
    if (g->Attr("class").rfind("sweep-", 0) == 0) ++sweep_parts;
  }
  EXPECT_EQ(sweep_parts, 3u);  // start, end, at the hit
  EXPECT_EQ(doc.All("line").size(), 3u);  // two rays and the sweep's path
}

// Text from outside (a session id) is escaped, so the document stays well-formed.
TEST(WorldSvg, TitlesAreEscaped) {
  WorldPicture pic;
  pic.title = "session <a&b> \"q\"";
  pic.session = {Make(1, *Shape::MakeSphere(1), Pose())};
  const XmlDocument doc = ParseXml(RenderSvg(pic));
  ASSERT_TRUE(doc.ok) << doc.error;
  EXPECT_EQ(doc.TitleOf(doc.elements.front()), pic.title);
  // The check is real: an unescaped '&' fails.
  EXPECT_FALSE(ParseXml("<svg><title>a & b</title></svg>").ok);
}

// Past the triangle budget a mesh is drawn as the cells it covers and the
// picture says so (issue 31: never silently a box); an empty world still renders.
TEST(WorldSvg, TriangleBudgetAndEmptyWorld) {
  WorldPicture pic;
  TriangleMeshShape quad{{{0, 0, 0}, {4, 0, 0}, {4, 0, 4}, {0, 0, 4}}, {{0, 1, 2}, {0, 2, 3}}};
  pic.session = {Make(1, *Shape::Make(quad), Pose())};
  ViewOptions options;
  options.max_triangles = 1;
  const XmlDocument doc = ParseXml(RenderSvg(pic, options));
  ASSERT_TRUE(doc.ok) << doc.error;
  const XmlElement* coverage = ChildOf(doc, "collider-1", "path");
  ASSERT_NE(coverage, nullptr);
  EXPECT_EQ(coverage->Attr("class"), "coverage");
  ASSERT_NE(doc.ById("coarse-note"), nullptr);
  EXPECT_NE(doc.ById("coarse-note")->text.find("1 surface (2 triangles)"), std::string::npos);
  EXPECT_TRUE(ParseXml(RenderSvg(WorldPicture{})).ok);
}

// Layer colours are 32 distinct #rrggbb values.
TEST(WorldSvg, LayerColoursAreDistinct) {
  std::set<std::string> colours;
  for (uint32_t layer = 0; layer <= kMaxLayer; ++layer) {
    const std::string c = LayerColor(layer);
    ASSERT_EQ(c.size(), 7u);
    EXPECT_EQ(c[0], '#');
    colours.insert(c);
  }
  EXPECT_EQ(colours.size(), 32u);
  EXPECT_EQ(colours.count(kMapColor), 0u);
}

}  // namespace
}  // namespace hitbox::view
