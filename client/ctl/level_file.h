// JSON scenes and level files (glTF, GLB, OBJ) behind one call, for `load`
// and `view --map-file`: the file's colliders, where each came from, and
// for a level its import report.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "hitbox/world/collider_set.h"
#include "hitbox/import/level_import.h"
#include "hitbox/status.h"

namespace hitbox::ctl {

/// A scene or level file, read and validated (nothing sent yet).
struct SceneInput {
  std::vector<Collider> colliders;
  /// sources[i] names colliders[i] in errors: "colliders[3] (id 7)" for a
  /// JSON scene, "node 2 'UBX_crate'" / "object 'wall'" for a level.
  std::vector<std::string> sources;
  /// Set for a level file.
  std::optional<import::ImportReport> report;
};

/// The importer's settings from the command line: --first-id and --layer,
/// and --up / --scale when given (else the level's NAME.import.json, as
/// hitboxd --maps reads it, else Y-up metres).
struct LevelOptions {
  import::ImportOptions import;
  std::optional<import::UpAxis> up;
  std::optional<double> scale;

  /// The settings for level file `path`: import::ReadImportSettings under the flags given.
  Result<import::ImportOptions> For(const std::string& path) const;
};

/// Reads `path`: a level file (import::IsLevelFile) through the importer
/// with `options`, anything else as a JSON scene. Errors name the file.
Result<SceneInput> ReadSceneInput(const std::string& path, const LevelOptions& options);

/// Bytes one collider takes on the wire, roughly (a little over, to be safe):
/// meshes, hulls and heightfields by their sizes, primitives a flat amount.
size_t WireBytesEstimate(const Collider& c);

/// Colliders per ApplyChanges message: `batch`, lowered so that a message of
/// the largest colliders stays within `budget` bytes (at least 1), so that big
/// meshes do not make a message the server refuses.
size_t BatchWithinBytes(const std::vector<Collider>& colliders, size_t batch, size_t budget);

/// Bytes per message `load` aims for (hitboxd's default limit is 64 MiB).
inline constexpr size_t kLoadMessageBudget = 16u << 20;

/// The report as JSON: file, format, colliders, counts per kind, nodes,
/// triangles, dropped_triangles, bounds {min, max} (null when empty),
/// seconds, notes.
nlohmann::json ReportToJson(const import::ImportReport& report);

/// Adds --first-id, --layer, --up and --scale (the importer's settings) to `cmd`.
void AddImportOptions(CLI::App* cmd, LevelOptions* options);

}  // namespace hitbox::ctl
