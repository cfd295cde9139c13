// Writing colliders as a scene file (the inverse of scene_file.h's
// ParseScene): what `hitboxctl import -o level.json` produces.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "hitbox/world/collider_set.h"
#include "hitbox/status.h"

namespace hitbox::ctl {

/// One collider in the collider form of FORMAT.md (doubles written so they
/// read back to the same value). kInvalidArgument for a shape kind the scene
/// format has no form for.
Result<nlohmann::json> ColliderToJson(const Collider& c);

/// {"colliders": [...]} for `colliders`, in order.
Result<nlohmann::json> SceneToJson(const std::vector<Collider>& colliders);

/// Writes `doc` to `path`; a scene document gets one collider a line.
Status WriteJsonFile(const std::string& path, const nlohmann::json& doc);

}  // namespace hitbox::ctl
