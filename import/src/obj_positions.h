// OBJ vertex positions read again, exactly: tinyobjloader's number parser
// can land a few ulps off the decimal a file writes, so the importer takes
// each "v" line's x, y, z as the doubles nearest their text (std::from_chars,
// correctly rounded) in place of tinyobjloader's.
#pragma once

#include <string>
#include <vector>

namespace hitbox::import {

/// Overwrites `xyz` (tinyobjloader's positions, three a vertex) with the
/// correctly rounded values of the file's "v" lines, read as tinyobjloader
/// splits lines and tokens; a token that does not read whole as a number
/// (a missing coordinate, "1.5f", an out-of-range exponent) keeps
/// tinyobjloader's value. False when the file cannot be read or its "v"
/// lines are not xyz.size() / 3 of them (then `xyz` is untouched, unless
/// the file fails part way through the second of the two reads).
bool ReadObjPositions(const std::string& path, std::vector<double>* xyz);

}  // namespace hitbox::import
