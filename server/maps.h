// Shared maps of hitboxd (--maps DIR): every scene or level file of a
// directory loaded once at start as an immutable collider set with its own
// prebuilt tree. Sessions created on a map layer their own colliders over it
// (ColliderSet::SetBase); the map's memory is counted once, here.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "hitbox/world/collider_set.h"
#include "hitbox/shape/shapes.h"
#include "hitbox/status.h"

namespace hitbox::server {

/// One loaded map. Immutable once loaded; shared by every session on it.
struct Map {
  /// The file name without its extension ("arena" for arena.glb).
  std::string id;
  /// The file it was read from, as found in the directory.
  std::string source;
  /// SHA-256 of the file's bytes, 64 lower-case hex digits.
  std::string sha256;
  /// Size of the file, bytes.
  uint64_t file_bytes = 0;
  /// Colliders per ShapeKind (indexed by the kind's value).
  std::array<uint64_t, kShapeKindCount> counts{};
  /// Triangles of its mesh and heightfield colliders.
  uint64_t triangles = 0;
  /// Union of the colliders' world bounds (empty when none).
  Aabb bounds;
  /// The colliders, tree built top-down at load.
  std::shared_ptr<const ColliderSet> set;
  /// Heap bytes of the set (colliders, shape data, tree, id index, and the
  /// caches its query batches made since: ColliderSet::MemoryBytes).
  uint64_t memory_bytes() const { return set->MemoryBytes(); }
};

/// The maps of one server, sorted by id. Thread-safe after Load (read-only).
class MapLibrary {
 public:
  /// Loads every .json (scene), .gltf, .glb and .obj file of `dir` (not its
  /// subdirectories; other files, e.g. a .gltf's .bin buffers, are skipped).
  /// Any bad file fails the whole load with an error naming the file; two
  /// files with the same stem are an error. An empty `dir`: no maps.
  [[nodiscard]] static Result<std::shared_ptr<const MapLibrary>> Load(const std::string& dir);

  /// The map named `id`, or nullptr.
  std::shared_ptr<const Map> Find(std::string_view id) const;
  /// Every map, sorted by id.
  const std::vector<std::shared_ptr<const Map>>& maps() const { return maps_; }
  /// Bytes all maps hold together.
  uint64_t memory_bytes() const;

 private:
  std::vector<std::shared_ptr<const Map>> maps_;
};

/// Reads one scene or level file into a map named by its stem (for Load and
/// tests). Errors name the file.
[[nodiscard]] Result<std::shared_ptr<const Map>> LoadMapFile(const std::string& path);

}  // namespace hitbox::server
