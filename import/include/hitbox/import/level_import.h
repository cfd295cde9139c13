// Level import: game levels in glTF 2.0 (.gltf, .glb) or Wavefront OBJ
// turned into colliders, with a report; the rules (frames, names, extras,
// limits) are in docs/import.md.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "hitbox/world/collider_set.h"
#include "hitbox/math/math.h"
#include "hitbox/shape/shapes.h"
#include "hitbox/status.h"

namespace hitbox::import {

/// Most triangles one imported mesh collider holds by default: the wire's
/// kMaxWireMeshTriangles (hitboxctl checks they are equal at compile time).
inline constexpr uint64_t kDefaultMaxMeshTriangles = 1ull << 20;

/// The file formats ImportLevel reads.
enum class LevelFormat : uint8_t { kGltf = 0, kGlb = 1, kObj = 2 };
/// "gltf", "glb" or "obj".
const char* LevelFormatName(LevelFormat format);

/// True when `path` ends in .gltf, .glb or .obj (any case): a level file
/// rather than a JSON scene.
bool IsLevelFile(const std::string& path);

/// The axis of a level file that points up; the import turns it to +Y.
enum class UpAxis : uint8_t { kY = 0, kZ, kMinusZ, kX, kMinusX, kMinusY };
/// "y", "z", "-z", "x", "-x" or "-y".
const char* UpAxisName(UpAxis up);
/// Parses UpAxisName's names ("+z" too, any case).
[[nodiscard]] Result<UpAxis> ParseUpAxis(const std::string& text);
/// The rotation that takes `up` to +Y (a right-handed turn of 90 or 180
/// degrees; kZ: (x, y, z) -> (x, z, -y), Blender's Z-up to glTF's Y-up).
Quat UpAxisRotation(UpAxis up);

/// A level whose bounds span more than this (metres, on any axis) gets a
/// warning: levels are at most a few kilometres of interior.
inline constexpr double kImplausibleExtent = 10000.0;
/// Largest ImportOptions::scale accepted (and 1 / it the smallest).
inline constexpr double kMaxImportScale = 1e6;
/// Instances one glTF node may draw (EXT_mesh_gpu_instancing): each is a
/// collider of its own.
inline constexpr size_t kMaxNodeInstances = size_t{1} << 20;

/// Settings of one import.
struct ImportOptions {
  /// Id of the first collider; the rest follow in file order (glTF: depth
  /// first from the scene's root nodes; OBJ: object order).
  uint64_t first_id = 1;
  /// Layer of colliders whose extras name none, in [0, 31].
  uint32_t layer = 0;
  /// Most triangles in one mesh collider (larger meshes are split), >= 1.
  uint64_t max_mesh_triangles = kDefaultMaxMeshTriangles;
  /// The file's up axis, turned to +Y (glTF's own is +Y; OBJ taken as +Y).
  UpAxis up = UpAxis::kY;
  /// Metres per file unit, applied after `up`, in [1 / kMaxImportScale,
  /// kMaxImportScale] (inches: 0.0254, centimetres: 0.01).
  double scale = 1.0;
};

/// File name of a level's import settings: PATH without its extension plus
/// ".import.json" ("maps/arena.glb" -> "maps/arena.import.json").
std::string ImportSettingsPath(const std::string& level_path);
/// True for a name ending in ".import.json" (not a map or scene itself).
bool IsImportSettingsFile(const std::string& path);
/// `base` with the settings of the file ImportSettingsPath(level_path) when it
/// exists: {"up": "z", "scale": 0.0254}, both optional, anything else an
/// error naming the file and member. hitboxd --maps reads it for each level.
[[nodiscard]] Result<ImportOptions> ReadImportSettings(const std::string& level_path,
                                                       ImportOptions base = {});

/// What an import made, for people and for the server's map listing.
struct ImportReport {
  /// The file as given, and its format.
  std::string file;
  LevelFormat format = LevelFormat::kGltf;
  /// Colliders made, per ShapeKind (indexed by the kind's value).
  std::array<uint64_t, kShapeKindCount> counts{};
  /// Nodes (glTF; an instanced node's instances each count) or objects
  /// (OBJ) with geometry that were looked at.
  uint64_t nodes = 0;
  /// Triangles kept in mesh colliders.
  uint64_t triangles = 0;
  /// Degenerate triangles dropped (a repeated vertex, or an area below 1e-9
  /// of the square of the longest edge).
  uint64_t dropped_triangles = 0;
  /// World bounds of every collider made (empty when none).
  Aabb bounds;
  /// Wall-clock seconds spent reading and converting (hitboxctl import adds
  /// writing the output).
  double seconds = 0.0;
  /// The up axis and scale the level was imported with.
  UpAxis up = UpAxis::kY;
  double scale = 1.0;
  /// What looks wrong but was imported anyway: bounds implausible for metres.
  std::vector<std::string> warnings;
  /// One line per decision worth knowing: a primitive that became a hull,
  /// a reduced hull, a split mesh, a node without triangles.
  std::vector<std::string> notes;

  /// Total colliders made.
  uint64_t colliders() const;
  /// A few lines for a terminal: counts, triangles, bounds, time, warnings, notes.
  std::string ToString() const;
};

/// An imported level: its colliders, where each came from, and the report.
struct Level {
  /// In id order (first_id, first_id + 1, ...).
  std::vector<Collider> colliders;
  /// sources[i]: the node or object colliders[i] came from, e.g.
  /// "node 3 'UBX_crate'" (for error messages that name the node).
  std::vector<std::string> sources;
  ImportReport report;
};

/// Reads a level file (format from its extension). kInvalidArgument with a
/// message naming the file and the node/object/line for anything wrong;
/// kNotFound when the file cannot be read. Nothing is returned half-made.
[[nodiscard]] Result<Level> ImportLevel(const std::string& path, const ImportOptions& options = {});

}  // namespace hitbox::import
