#include "level_file.h"

#include "scene_file.h"

namespace hitbox::ctl {

Result<SceneInput> ReadSceneInput(const std::string& path, const import::ImportOptions& options) {
  SceneInput in;
  if (import::IsLevelFile(path)) {
    auto level = import::ImportLevel(path, options);
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
          {"notes", r.notes}};
}

void AddImportOptions(CLI::App* cmd, import::ImportOptions* options) {
  cmd->add_option("--first-id", options->first_id,
                  "level files: id of the first collider (the rest follow in file order)")
      ->capture_default_str();
  cmd->add_option("--layer", options->layer,
                  "level files: layer of colliders whose glTF extras name none")
      ->check(CLI::Range(0u, kMaxLayer))
      ->capture_default_str();
}

}  // namespace hitbox::ctl
