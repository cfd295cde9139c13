// The inspector page's files (server/inspector/ and Debian's three.js),
// embedded in hitboxd at build time (embed_assets.cmake): nothing is
// fetched or read from disk at run time.
#pragma once

#include <cstddef>
#include <string_view>

namespace hitbox::server {

/// One embedded file.
struct InspectorAsset {
  /// URL path ("/", "/inspector.js", "/three/three.min.js").
  std::string_view path;
  std::string_view content_type;
  std::string_view data;
};

/// The file served at `path`, or nullptr.
const InspectorAsset* FindInspectorAsset(std::string_view path);

}  // namespace hitbox::server
