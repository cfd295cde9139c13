// The two level formats' readers, each in its own file (gltf_import.cc,
// obj_import.cc): a file read into `level`'s colliders and report.
// Internal to hitbox_import.
#pragma once

#include <string>

#include "hitbox/import/level_import.h"

namespace hitbox::import {

/// A .gltf (`binary` false) or .glb.
Status ImportGltf(const std::string& path, bool binary, const ImportOptions& options, Level* level);
/// A Wavefront .obj.
Status ImportObj(const std::string& path, const ImportOptions& options, Level* level);

}  // namespace hitbox::import
