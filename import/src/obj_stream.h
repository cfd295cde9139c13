// An OBJ file's faces streamed through tinyobjloader's callback parser
// (LoadObjWithCallback) and cut into the objects its LoadObj returns,
// triangulated as LoadObj triangulates them but by the exact coordinates
// (ObjText's, which the importer stores), each handed on as soon as it
// ends: only the vertex positions and one object's faces are held.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "hitbox/status.h"
#include "node_builder.h"
#include "obj_text.h"

namespace hitbox::import {

/// One object of an OBJ file: a shape of LoadObj's.
struct ObjShape {
  /// Its index among LoadObj's shapes (those with no face counted).
  size_t index = 0;
  /// The "o" or "g" line's name; empty before the first.
  std::string name;
  /// Its triangles' file vertices (0-based) as LoadObj resolves them, each
  /// int cast to uint32_t: one may be negative or past the file's vertices,
  /// for the caller to check.
  std::vector<Triangle> triangles;
  /// No object follows it.
  bool last = false;
};

/// "object 'wall'", or "object #3" for a shape with no name.
std::string ObjShapeName(size_t index, const std::string& name);

/// Streams `path`'s faces and calls `on_shape` for each object with a
/// triangle as it ends, in file order. `text` is ReadObjText's, read
/// only (the last object may take its positions over). Fails
/// (its message without the path) when a quad uses a vertex not read by its
/// object's end: LoadObj drops such a face and only warns.
Status StreamObjShapes(const std::string& path, ObjText* text,
                       const std::function<void(ObjShape*)>& on_shape);

}  // namespace hitbox::import
