// The picture of a world rendered by a real browser: the demo map
// (examples/maps/arena.glb, imported as hitboxd --maps does) with session
// colliders on several layers and a few queries, drawn by RenderSvg, then
// screenshotted by Debian's headless chromium and decoded with libpng. The
// picture must not be blank: grey map, colours of the layers and the red
// query marks all show, where the SVG puts them.
#include <gtest/gtest.h>
#include <png.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "hitbox/world/collider_set.h"
#include "hitbox/import/level_import.h"
#include "hitbox/view/world_svg.h"
#include "process.h"
#include "temp_dir.h"

namespace hitbox::view {
namespace {

namespace fs = std::filesystem;

/// The first chromium binary on PATH ("" when none).
std::string FindChromium() {
  for (const char* name : {"chromium", "chromium-browser"}) {
    const char* path_env = std::getenv("PATH");
    std::string paths = path_env != nullptr ? path_env : "/usr/bin:/bin";
    size_t start = 0;
    while (start <= paths.size()) {
      const size_t end = std::min(paths.find(':', start), paths.size());
      const fs::path candidate = fs::path(paths.substr(start, end - start)) / name;
      if (access(candidate.c_str(), X_OK) == 0) return candidate.string();
      start = end + 1;
    }
  }
  return "";
}

struct Rgba {
  uint8_t r, g, b, a;
};

/// An RGBA picture decoded with libpng's simplified API (empty on failure).
struct Picture {
  uint32_t width = 0, height = 0;
  std::vector<Rgba> pixels;
  const Rgba& At(uint32_t x, uint32_t y) const { return pixels[size_t{y} * width + x]; }
};

Picture ReadPng(const std::string& file) {
  Picture p;
  png_image image{};
  image.version = PNG_IMAGE_VERSION;
  if (png_image_begin_read_from_file(&image, file.c_str()) == 0) return p;
  image.format = PNG_FORMAT_RGBA;
  p.pixels.resize(PNG_IMAGE_SIZE(image) / 4);
  if (png_image_finish_read(&image, nullptr, p.pixels.data(), 0, nullptr) == 0) {
    png_image_free(&image);
    return {};
  }
  p.width = image.width;
  p.height = image.height;
  return p;
}

Collider Make(uint64_t id, const Shape& shape, const Pose& pose, uint32_t layer) {
  Collider c;
  c.id = id;
  c.shape = shape;
  c.pose = pose;
  c.layer = layer;
  return c;
}

/// Saturation-ish: how far the pixel is from grey, 0..255.
int Chroma(const Rgba& p) {
  return std::max({p.r, p.g, p.b}) - std::min({p.r, p.g, p.b});
}

TEST(BrowserRenderTest, DemoArenaRendersInChromium) {
  const std::string chromium = FindChromium();
  if (chromium.empty()) {
    // `bash scripts/hitbox.sh test` installs chromium, so CI always runs this.
    GTEST_SKIP() << "no chromium on PATH";
  }
  // The map, as hitboxd --maps loads it.
  Result<import::Level> level =
      import::ImportLevel(std::string(HITBOX_SOURCE_DIR) + "/examples/maps/arena.glb");
  ASSERT_TRUE(level.ok()) << level.error().message;
  WorldPicture picture;
  picture.title = "browser test";
  picture.map = level->colliders;
  ASSERT_GT(picture.map.size(), 30u);
  // Session colliders on layers 0..3, clear of the map's centre line.
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> pos(-40, 40);
  for (uint64_t id = 1001; id <= 1040; ++id) {
    const Shape shape = id % 2 == 0 ? *Shape::MakeSphere(2.0) : *Shape::MakeBox({2, 1, 2});
    picture.session.push_back(
        Make(id, shape, Pose({pos(rng), 1.0, pos(rng)}), static_cast<uint32_t>(id % 4)));
  }
  // Rays across the arena, answered by a real set of map + session.
  ColliderSet set;
  std::vector<Collider> all = picture.map;
  all.insert(all.end(), picture.session.begin(), picture.session.end());
  ASSERT_TRUE(set.AddBulk(all).ok());
  for (uint64_t q = 1; q <= 6; ++q) {
    QueryOverlay ray;
    ray.id = q;
    ray.kind = QueryOverlay::Kind::kRaycast;
    ray.pose = Pose({-45.0, 1.0, -40.0 + 15.0 * static_cast<double>(q)});
    ray.translation = {90.0, 0.0, 0.0};
    RayQuery rq;
    rq.origin = ray.pose.position;
    rq.translation = ray.translation;
    set.Raycast(rq, &ray.hits);
    picture.queries.push_back(ray);
  }
  const std::string svg = RenderSvg(picture);

  const hitbox::testing::TempDir dir("browser");
  ASSERT_FALSE(dir.path().empty());
  const std::string svg_file = dir.Write("world.svg", svg);
  const std::string png_file = dir.file("world.png");
  const std::vector<std::string> argv = {
      chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
      "--hide-scrollbars", "--user-data-dir=" + dir.file("profile"),
      "--window-size=940,1010", "--screenshot=" + png_file, "file://" + svg_file};
  const hitbox::testing::RunResult run = hitbox::testing::RunProcess(argv);
  const std::string log = run.out + run.err;
  ASSERT_EQ(run.code, 0) << "chromium failed:\n" << log;
  const Picture png = ReadPng(png_file);
  ASSERT_EQ(png.width, 940u) << log;
  ASSERT_EQ(png.height, 1010u);

  // Count kinds of pixels inside the top view's frame (x 20..920, y 46..946).
  size_t white = 0, grey = 0, coloured = 0, red = 0, total = 0;
  for (uint32_t y = 50; y < 940; ++y) {
    for (uint32_t x = 25; x < 915; ++x) {
      const Rgba& p = png.At(x, y);
      ++total;
      if (p.r > 245 && p.g > 245 && p.b > 245) {
        ++white;
      } else if (Chroma(p) < 12) {
        ++grey;
      } else {
        ++coloured;
        if (p.r > 180 && p.g < 90 && p.b < 90) ++red;
      }
    }
  }
  std::printf("frame: %zu px, white %zu, grey %zu, coloured %zu (red %zu)\n", total, white, grey,
              coloured, red);
  // Not blank: the grey floor covers most of the frame, the session's
  // colours and the red rays show.
  EXPECT_GT(grey, total / 3) << "the map is not drawn";
  EXPECT_GT(coloured, total / 50) << "the session's colliders are not drawn";
  EXPECT_GT(red, 200u) << "the query rays and hits are not drawn";
  EXPECT_LT(white, total / 2);
  // The caption above the frame is dark text on white.
  size_t dark = 0;
  for (uint32_t y = 20; y < 44; ++y) {
    for (uint32_t x = 20; x < 400; ++x) {
      const Rgba& p = png.At(x, y);
      if (p.r < 100 && p.g < 100 && p.b < 100) ++dark;
    }
  }
  EXPECT_GT(dark, 100u) << "no caption";
}

}  // namespace
}  // namespace hitbox::view
