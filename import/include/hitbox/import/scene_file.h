// Scene files for `hitboxctl load` and hitboxd's maps: JSON documents whose "colliders" array is
// in the collider form of ../shared/cases/FORMAT.md. A case file is a valid
// scene (its queries and answers are ignored). Files ending in .gz are read
// through zlib.
//
//   {"colliders": [
//     {"id": 1, "layer": 0, "shape": {"sphere": {"radius": 1.5}},
//      "position": [x, y, z], "rotation": [x, y, z, w], "user_data": 7}, ...]}
//
// "id" and "shape" are required; "layer" defaults to 0, "position" to the
// origin, "rotation" to identity and "user_data" (an extension) to 0. Every
// error names the entry: "colliders[12] (id 47): shape.box.half_extents[1] ...".
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "hitbox/world/collider_set.h"
#include "hitbox/status.h"

namespace hitbox::import {

/// Reads and parses a JSON file (".gz": gzip-compressed). Errors name the file
/// and, for syntax errors, the byte offset.
Result<nlohmann::json> ReadJsonFile(const std::string& path);

/// "colliders[i] (id N)" for entry `index` of `entries` (or "colliders[i]" when
/// the entry has no readable id).
std::string DescribeEntry(const nlohmann::json& entries, size_t index);

/// Converts one entry of "colliders" (index used in error messages). Checks
/// types, finiteness, sizes (as core's Shape::Make), unit quaternions
/// (tolerance 1e-6, then normalized) and layer <= 31.
Result<Collider> ParseCollider(const nlohmann::json& entry, size_t index);

/// Every collider of a scene document, in file order; also rejects duplicate ids
/// (naming both positions).
Result<std::vector<Collider>> ParseScene(const nlohmann::json& doc);

/// ReadJsonFile then ParseScene, in less memory: the file is parsed as it
/// is read (SAX), mesh vertex and triangle arrays go straight into flat
/// arrays, and each collider is parsed (its mesh built) as soon as its
/// element of "colliders" closes, then dropped from the document: one
/// collider's text and arrays are held at a time. The same colliders, and
/// the same errors, as the two steps (hitboxd's map files).
Result<std::vector<Collider>> ReadSceneFile(const std::string& path);

/// A shape in the collider form ({"box": {...}} etc.), checked as in
/// ParseCollider; errors start with `field`. Shared with query files.
Result<Shape> ParseShape(const nlohmann::json& j, const std::string& field);
/// [x, y, z], finite; errors name `field`.
Result<Vec3> ParseVec3(const nlohmann::json& j, const std::string& field);
/// [x, y, z, w], unit within 1e-6 (returned normalized); errors name `field`.
Result<Quat> ParseQuat(const nlohmann::json& j, const std::string& field);

}  // namespace hitbox::import
