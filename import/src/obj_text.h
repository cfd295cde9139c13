// What the OBJ importer reads from a file's lines itself, before
// tinyobjloader's callbacks stream its faces (obj_stream.h): the vertex
// positions exactly (tinyobjloader's number parser can land a few ulps off
// the decimal a file writes: std::from_chars is correctly rounded), the
// syntax errors LoadObj reports and its callback parser does not, and what
// each object's faces will need. Lines and tokens are split as tinyobjloader
// splits them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "hitbox/status.h"
#include "node_vertices.h"

namespace hitbox::import {

/// The lines from one "o" or "g" line to the next (the first from the top).
struct ObjSection {
  /// At most this many triangles come of its faces: n - 2 a face of n >= 3.
  uint64_t triangles = 0;
  /// It has an "l" or "p" line with a vertex: LoadObj keeps such an object
  /// when an "o" line ends it, even with no face.
  bool lines = false;
};

/// An OBJ file's text as the importer needs it beside tinyobjloader.
struct ObjText {
  /// Each "v" line's x, y, z: as the doubles nearest their text (where a
  /// token does not read whole as a number, "1.5f", a missing one, an
  /// exponent out of range, tinyobjloader's value of it); or, when every
  /// coordinate is a short decimal ("-12", "0.5", "3.141593": k <= 9 digits
  /// after the point, no exponent) whose q of q / divisor fits an int32, as
  /// those decimals over 10^K for the file's most digits K (half the bytes,
  /// the same doubles).
  NodeVertices positions;
  /// One a section, in file order.
  std::vector<ObjSection> sections;
};

/// Reads `path` into `text`. Fails with tinyobjloader's LoadObj message (a
/// line number in it, no path) on the first line LoadObj would refuse: a
/// face, line or point index of 0 (or not a number), a bad "vw" line.
Status ReadObjText(const std::string& path, ObjText* text);

}  // namespace hitbox::import
