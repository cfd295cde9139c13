#include "level_file.h"

#include <algorithm>

#include "hitbox/import/scene_file.h"

namespace hitbox::ctl {

using import::DescribeEntry;
using import::ParseScene;
using import::ReadJsonFile;

Result<import::ImportOptions> LevelOptions::For(const std::string& path) const {
  auto options = import::ReadImportSettings(path, import);
  if (!options.ok()) return options;
  if (up) options->up = *up;
  if (scale) options->scale = *scale;
  return options;
}

Result<SceneInput> ReadSceneInput(const std::string& path, const LevelOptions& level_options) {
  SceneInput in;
  if (import::IsLevelFile(path)) {
    auto options = level_options.For(path);
    if (!options.ok()) return options.error();
    auto level = import::ImportLevel(path, *options);
    if (!level.ok()) return level.error();
    in.colliders = std::move(level->colliders);
    in.sources = std::move(level->sources);
    in.report = std::move(level->report);
    return in;
  }
  auto doc = ReadJsonFile(path);
  if (!doc.ok()) return doc.error();
  auto scene = ParseScene(*doc);
  if (!scene.ok()) return Error{scene.error().code, path + ": " + scene.error().message};
  in.colliders = std::move(*scene);
  const nlohmann::json& entries = doc->at("colliders");
  in.sources.reserve(in.colliders.size());
  for (size_t i = 0; i < in.colliders.size(); ++i) in.sources.push_back(DescribeEntry(entries, i));
  return in;
}

size_t WireBytesEstimate(const Collider& c) {
  constexpr size_t kFixed = 128;  // id, layer, user data, pose, framing
  constexpr size_t kPoint = 3 * 9;
  if (const std::optional<TriangleMeshShape> m = c.shape.mesh_input()) {
    return kFixed + m->vertices.size() * kPoint + m->triangles.size() * 3 * 5;
  }
  if (const HeightfieldShape* h = c.shape.heightfield_input()) return kFixed + h->heights.size() * 9;
  if (const ConvexHullData* h = c.shape.hull()) return kFixed + h->input_points().size() * kPoint;
  return kFixed;
}

size_t BatchWithinBytes(const std::vector<Collider>& colliders, size_t batch, size_t budget) {
  size_t largest = 1;
  for (const Collider& c : colliders) largest = std::max(largest, WireBytesEstimate(c));
  return std::max<size_t>(1, std::min(batch, budget / largest));
}

nlohmann::json ReportToJson(const import::ImportReport& r) {
  nlohmann::json counts = nlohmann::json::object();
  for (int k = 0; k < kShapeKindCount; ++k) {
    if (r.counts[static_cast<size_t>(k)] > 0) {
      counts[ShapeKindName(static_cast<ShapeKind>(k))] = r.counts[static_cast<size_t>(k)];
    }
  }
  nlohmann::json bounds = nullptr;
  if (!r.bounds.IsEmpty()) {
    bounds = {{"min", {r.bounds.min.x, r.bounds.min.y, r.bounds.min.z}},
              {"max", {r.bounds.max.x, r.bounds.max.y, r.bounds.max.z}}};
  }
  return {{"file", r.file},
          {"format", import::LevelFormatName(r.format)},
          {"colliders", r.colliders()},
          {"counts", counts},
          {"nodes", r.nodes},
          {"triangles", r.triangles},
          {"dropped_triangles", r.dropped_triangles},
          {"bounds", bounds},
          {"seconds", r.seconds},
          {"up", import::UpAxisName(r.up)},
          {"scale", r.scale},
          {"warnings", r.warnings},
          {"notes", r.notes}};
}

void AddImportOptions(CLI::App* cmd, LevelOptions* level) {
  import::ImportOptions* options = &level->import;
  cmd->add_option_function<std::string>(
      "--up",
      [level](const std::string& text) {
        auto up = import::ParseUpAxis(text);
        if (!up.ok()) throw CLI::ValidationError("--up", up.error().message);
        level->up = *up;
      },
      "level files: the file's up axis, turned to +Y: y (glTF's own; the default), z, -z, x, "
      "-x, -y (default: the level's NAME.import.json, else y)");
  cmd->add_option_function<double>(
         "--scale", [level](double s) { level->scale = s; },
         "level files: metres per file unit, after --up (inches 0.0254, centimetres 0.01; "
         "default: NAME.import.json, else 1)")
      ->check(CLI::Range(1.0 / import::kMaxImportScale, import::kMaxImportScale));
  cmd->add_option("--first-id", options->first_id,
                  "level files: id of the first collider (the rest follow in file order)")
      ->capture_default_str();
  cmd->add_option("--layer", options->layer,
                  "level files: layer of colliders whose glTF extras name none")
      ->check(CLI::Range(0u, kMaxLayer))
      ->capture_default_str();
}

}  // namespace hitbox::ctl
