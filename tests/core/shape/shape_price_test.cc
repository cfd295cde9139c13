// Shape::Predict*Bytes: what a shape's data will hold, from its input alone,
// against Shape::DataBytes() of the shape actually built (issue 28: a server
// prices a change batch with them before building anything).
#include "hitbox/shape/shapes.h"

#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

namespace hitbox {
namespace {

using Tri = std::array<uint32_t, 3>;

// Expects the prediction within 10% of the built shape's bytes.
void ExpectClose(size_t predicted, size_t built, const char* what) {
  const double ratio = static_cast<double>(predicted) / static_cast<double>(built);
  EXPECT_NEAR(ratio, 1.0, 0.10) << what << ": predicted " << predicted << ", built " << built;
}

// A rows x cols grid of vertices `step` apart (y from `height`), two
// triangles per cell.
TriangleMeshShape Grid(int rows, int cols, double step, double (*height)(int, int)) {
  TriangleMeshShape m;
  for (int r = 0; r < rows; ++r) {
    for (int c = 0; c < cols; ++c) m.vertices.push_back({c * step, height(r, c), r * step});
  }
  for (int r = 0; r + 1 < rows; ++r) {
    for (int c = 0; c + 1 < cols; ++c) {
      const uint32_t a = static_cast<uint32_t>(r * cols + c), b = a + 1,
                     d = a + static_cast<uint32_t>(cols), e = d + 1;
      m.triangles.push_back({a, d, b});
      m.triangles.push_back({b, d, e});
    }
  }
  return m;
}

size_t BuiltBytes(const TriangleMeshShape& m) {
  Result<Shape> s = Shape::Make(m);
  EXPECT_TRUE(s.ok()) << s.error().message;
  return s.ok() ? s->DataBytes() : 0;
}

// Meshes as case files write them (short decimals: packed vertices) and as
// glTF levels carry them (float32 binary fractions: doubles), identical
// triangles, zero-area ones, far-apart indices and tiny meshes.
TEST(ShapePriceTest, MeshMatchesBuild) {
  const auto flat = [](int, int) { return 0.0; };
  const auto bumps = [](int r, int c) { return 0.5 * ((r * 7 + c * 3) % 5); };
  const auto float_fractions = [](int r, int c) {
    return static_cast<double>(static_cast<float>(0.1f * static_cast<float>(r) +
                                                  0.0137f * static_cast<float>(c)));
  };
  std::vector<std::pair<const char*, TriangleMeshShape>> meshes;
  meshes.emplace_back("decimal grid", Grid(120, 90, 0.25, bumps));
  meshes.emplace_back("flat grid", Grid(64, 64, 1.5, flat));
  meshes.emplace_back("float32 grid", Grid(100, 100, 0.1f, float_fractions));
  {  // float32 vertices scattered like a glTF level
    TriangleMeshShape m;
    std::mt19937 rng(5);
    std::uniform_real_distribution<float> u(-50.0f, 50.0f);
    for (int i = 0; i < 3000; ++i) m.vertices.push_back({u(rng), u(rng), u(rng)});
    for (uint32_t i = 0; i + 2 < 3000; ++i) m.triangles.push_back({i, i + 1, i + 2});
    meshes.emplace_back("float32 soup", std::move(m));
  }
  {  // one triangle repeated (the 1,048,576 identical triangles, smaller)
    TriangleMeshShape m;
    m.vertices = {{0, 0, 0}, {1, 0, 0}, {0, 0, 1}};
    m.triangles.assign(100'000, Tri{0, 1, 2});
    meshes.emplace_back("identical triangles", std::move(m));
  }
  {  // zero-area triangles are dropped by the build
    TriangleMeshShape m = Grid(40, 40, 0.5, bumps);
    for (uint32_t i = 0; i < 500; ++i) m.triangles.push_back({i, i, i + 1});
    meshes.emplace_back("with zero-area triangles", std::move(m));
  }
  {  // far-apart indices: wide index differences
    TriangleMeshShape m = Grid(50, 50, 1.0, bumps);
    std::mt19937 rng(9);
    for (Tri& t : m.triangles) std::shuffle(t.begin(), t.end(), rng);
    std::shuffle(m.triangles.begin(), m.triangles.end(), rng);
    meshes.emplace_back("shuffled", std::move(m));
  }
  meshes.emplace_back("one cell", Grid(2, 2, 1.0, flat));
  meshes.emplace_back("three cells", Grid(2, 4, 1.0, bumps));
  for (const auto& [what, m] : meshes) {
    ExpectClose(Shape::PredictMeshBytes(m.vertices, m.triangles), BuiltBytes(m), what);
  }
}

// A mesh the build refuses (no triangle of non-zero area) is priced 0.
TEST(ShapePriceTest, MeshWithNothingToKeepIsZero) {
  const std::vector<Vec3> v = {{0, 0, 0}, {1, 0, 0}, {2, 0, 0}};
  const std::vector<Tri> t = {{0, 1, 2}, {0, 0, 1}};
  EXPECT_EQ(Shape::PredictMeshBytes(v, t), 0u);
  EXPECT_FALSE(Shape::Make(TriangleMeshShape{v, t}).ok());
}

// Heightfields in each storage (decimals, floats, doubles) and size.
TEST(ShapePriceTest, HeightfieldMatchesBuild) {
  std::mt19937 rng(3);
  std::uniform_real_distribution<double> u(-5.0, 5.0);
  for (const auto& [rows, cols] : {std::pair{2, 2}, {3, 5}, {65, 129}, {300, 200}}) {
    for (int storage = 0; storage < 3; ++storage) {
      HeightfieldShape h;
      h.rows = static_cast<uint32_t>(rows);
      h.cols = static_cast<uint32_t>(cols);
      h.cell_size_x = 0.5;
      h.cell_size_z = 1.0;
      for (int i = 0; i < rows * cols; ++i) {
        const double x = u(rng);
        h.heights.push_back(storage == 0   ? std::round(x * 100) / 100
                            : storage == 1 ? static_cast<double>(static_cast<float>(x))
                                           : x);
      }
      Result<Shape> built = Shape::Make(h);
      ASSERT_TRUE(built.ok()) << built.error().message;
      ExpectClose(Shape::PredictHeightfieldBytes(h.rows, h.cols, h.heights), built->DataBytes(),
                  storage == 0 ? "decimal heights" : storage == 1 ? "float heights" : "doubles");
    }
  }
}

// Hulls whose every point is a vertex (points on a sphere) are priced within
// 10%; any hull at most its price (the price is the most its points can hold).
TEST(ShapePriceTest, HullMatchesBuildAndBoundsIt) {
  std::mt19937 rng(11);
  std::normal_distribution<double> g(0.0, 1.0);
  for (int n : {4, 8, 16, 32, 33, 64, 128, 256}) {
    ConvexHull on_sphere, cloud;
    for (int i = 0; i < n; ++i) {
      Vec3 p(g(rng), g(rng), g(rng));
      on_sphere.points.push_back(p / p.Length() * 2.0);
      cloud.points.push_back(p);
    }
    Result<Shape> a = Shape::Make(on_sphere);
    Result<Shape> b = Shape::Make(cloud);
    ASSERT_TRUE(a.ok() && b.ok());
    ExpectClose(Shape::PredictHullBytes(static_cast<size_t>(n)), a->DataBytes(), "sphere hull");
    EXPECT_GE(Shape::PredictHullBytes(static_cast<size_t>(n)), a->DataBytes()) << n;
    EXPECT_GE(Shape::PredictHullBytes(static_cast<size_t>(n)), b->DataBytes()) << n;
  }
}

// Compounds of primitives and hulls, below and above the hierarchy's size.
TEST(ShapePriceTest, CompoundMatchesBuild) {
  std::mt19937 rng(13);
  std::normal_distribution<double> g(0.0, 1.0);
  for (int n : {1, 3, 8, 9, 20, 64}) {
    Compound c;
    size_t children_bytes = 0;
    for (int i = 0; i < n; ++i) {
      CompoundChild child;
      if (i % 2 == 0) {
        child.shape = *Shape::MakeBox({0.5, 0.5, 0.5});
      } else {
        ConvexHull h;
        for (int k = 0; k < 24; ++k) {
          Vec3 p(g(rng), g(rng), g(rng));
          h.points.push_back(p / p.Length());
        }
        child.shape = *Shape::Make(h);
        children_bytes += Shape::PredictHullBytes(h.points.size());
      }
      child.pose.position = Vec3(3.0 * i, 0, 0);
      c.children.push_back(child);
    }
    Result<Shape> built = Shape::Make(c);
    ASSERT_TRUE(built.ok()) << built.error().message;
    ExpectClose(Shape::PredictCompoundBytes(static_cast<size_t>(n), children_bytes),
                built->DataBytes(), "compound");
  }
}

}  // namespace
}  // namespace hitbox
