// Level import: the file checked against its extension, then read by its
// format's reader (gltf_import.cc, obj_import.cc), and the report.
#include "hitbox/import/level_import.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "level_formats.h"
#include "node_builder.h"

namespace hitbox::import {
namespace {

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// What the first bytes of a file say it is, for a file whose content does not
// fit its extension: "a binary glTF (GLB)", "JSON", "a PNG image", ...
std::string SniffContent(const std::string& head) {
  auto starts = [&](const char* magic, size_t n) {
    return head.size() >= n && head.compare(0, n, magic, n) == 0;
  };
  if (starts("glTF", 4)) return "a binary glTF (GLB)";
  if (starts("\x89PNG", 4)) return "a PNG image";
  if (starts("\xff\xd8\xff", 3)) return "a JPEG image";
  if (starts("PK\x03\x04", 4)) return "a ZIP archive";
  if (starts("\x1f\x8b", 2)) return "gzip-compressed data";
  if (starts("Kaydara FBX Binary", 18)) return "a binary FBX file";
  if (starts("\x7f"
             "ELF",
             4))
    return "an executable";
  if (head.empty()) return "empty";
  size_t i = 0;
  if (starts("\xef\xbb\xbf", 3)) i = 3;  // UTF-8 byte order mark
  while (i < head.size() && std::isspace(static_cast<unsigned char>(head[i]))) ++i;
  if (i < head.size() && (head[i] == '{' || head[i] == '[')) return "JSON";
  if (head.compare(i, 5, "<?xml") == 0 || head.compare(i, 1, "<") == 0) return "XML or HTML";
  for (size_t k = i; k < head.size(); ++k) {
    const unsigned char c = static_cast<unsigned char>(head[k]);
    if (c < 9 || (c > 13 && c < 32)) return "binary data";
  }
  return "text";
}

// A file whose first bytes do not fit its extension gets an error that says
// what it looks like, before tinygltf or tinyobjloader (whose messages, like
// GLB's "Invalid magic.", do not name the problem).
Status CheckContent(const std::string& path, LevelFormat format) {
  std::ifstream in(path, std::ios::binary);
  std::string head(256, '\0');
  in.read(head.data(), static_cast<std::streamsize>(head.size()));
  head.resize(static_cast<size_t>(in.gcount()));
  const std::string is = SniffContent(head);
  const char* expected = format == LevelFormat::kGlb ? "a binary glTF (GLB, starting with 'glTF')"
                         : format == LevelFormat::kGltf ? "a glTF 2.0 JSON document"
                                                        : "a Wavefront OBJ text file";
  bool fits = false;
  switch (format) {
    case LevelFormat::kGlb: fits = is == "a binary glTF (GLB)"; break;
    case LevelFormat::kGltf: fits = is == "JSON"; break;
    case LevelFormat::kObj: fits = is == "text"; break;
  }
  if (fits) return Status::Ok();
  std::string hint;
  if (is == "a binary glTF (GLB)") hint = " (rename it .glb)";
  if (is == "JSON" && format == LevelFormat::kGlb) hint = " (a .gltf? rename it .gltf)";
  return Invalid(path + ": not " + expected + ": the file is " + is + hint);
}

}  // namespace

const char* LevelFormatName(LevelFormat format) {
  switch (format) {
    case LevelFormat::kGltf: return "gltf";
    case LevelFormat::kGlb: return "glb";
    case LevelFormat::kObj: return "obj";
  }
  return "unknown";
}

bool IsLevelFile(const std::string& path) {
  const std::string p = Lower(path);
  return EndsWith(p, ".gltf") || EndsWith(p, ".glb") || EndsWith(p, ".obj");
}

uint64_t ImportReport::colliders() const {
  uint64_t n = 0;
  for (uint64_t c : counts) n += c;
  return n;
}

std::string ImportReport::ToString() const {
  std::string s = file + " (" + LevelFormatName(format) + "): " + std::to_string(colliders()) +
                  " colliders from " + std::to_string(nodes) +
                  (format == LevelFormat::kObj ? " objects" : " nodes") + " in " +
                  FormatDouble(seconds * 1e3, 9) + " ms\n ";
  const char* sep = " ";
  for (int k = 0; k < kShapeKindCount; ++k) {
    if (counts[static_cast<size_t>(k)] == 0) continue;
    s += std::string(sep) + ShapeKindName(static_cast<ShapeKind>(k)) + " " +
         std::to_string(counts[static_cast<size_t>(k)]);
    sep = ", ";
  }
  s += "\n  triangles " + std::to_string(triangles) + " (" + std::to_string(dropped_triangles) +
       " degenerate dropped)\n";
  if (!bounds.IsEmpty()) {
    s += "  bounds [" + FormatDouble(bounds.min.x, 9) + ", " + FormatDouble(bounds.min.y, 9) +
         ", " + FormatDouble(bounds.min.z, 9) + "] .. [" + FormatDouble(bounds.max.x, 9) + ", " +
         FormatDouble(bounds.max.y, 9) + ", " + FormatDouble(bounds.max.z, 9) + "]\n";
  }
  if (up != UpAxis::kY || scale != 1.0) {
    s += std::string("  imported with up ") + UpAxisName(up) + ", scale " + FormatDouble(scale, 9) +
         "\n";
  }
  for (const std::string& w : warnings) s += "  warning: " + w + "\n";
  for (const std::string& n : notes) s += "  note: " + n + "\n";
  return s;
}

const char* UpAxisName(UpAxis up) {
  switch (up) {
    case UpAxis::kY: return "y";
    case UpAxis::kZ: return "z";
    case UpAxis::kMinusZ: return "-z";
    case UpAxis::kX: return "x";
    case UpAxis::kMinusX: return "-x";
    case UpAxis::kMinusY: return "-y";
  }
  return "y";
}

Result<UpAxis> ParseUpAxis(const std::string& text) {
  std::string t = Lower(text);
  if (!t.empty() && t[0] == '+') t.erase(0, 1);
  for (UpAxis up :
       {UpAxis::kY, UpAxis::kZ, UpAxis::kMinusZ, UpAxis::kX, UpAxis::kMinusX, UpAxis::kMinusY}) {
    if (t == UpAxisName(up)) return up;
  }
  return Invalid("up axis '" + text + "' is not one of y, z, -z, x, -x, -y");
}

Quat UpAxisRotation(UpAxis up) {
  const double h = std::sqrt(0.5);
  switch (up) {
    case UpAxis::kY: return {0, 0, 0, 1};
    case UpAxis::kZ: return {-h, 0, 0, h};       // -90 degrees about x: +z -> +y
    case UpAxis::kMinusZ: return {h, 0, 0, h};   // +90 degrees about x: -z -> +y
    case UpAxis::kX: return {0, 0, h, h};        // +90 degrees about z: +x -> +y
    case UpAxis::kMinusX: return {0, 0, -h, h};  // -90 degrees about z: -x -> +y
    case UpAxis::kMinusY: return {1, 0, 0, 0};   // 180 degrees about x
  }
  return {0, 0, 0, 1};
}

std::string ImportSettingsPath(const std::string& level_path) {
  const size_t slash = level_path.find_last_of('/');
  const size_t dot = level_path.find_last_of('.');
  const bool has_ext = dot != std::string::npos && (slash == std::string::npos || dot > slash + 1);
  return (has_ext ? level_path.substr(0, dot) : level_path) + ".import.json";
}

bool IsImportSettingsFile(const std::string& path) { return EndsWith(Lower(path), ".import.json"); }

Result<ImportOptions> ReadImportSettings(const std::string& level_path, ImportOptions base) {
  const std::string path = ImportSettingsPath(level_path);
  std::ifstream in(path, std::ios::binary);
  if (!in) return base;
  const nlohmann::json doc = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object()) {
    return Invalid(path + ": not a JSON object like {\"up\": \"z\", \"scale\": 0.0254}");
  }
  for (const auto& [key, value] : doc.items()) {
    const std::string where = path + ": \"" + key + "\"";
    if (key == "up") {
      if (!value.is_string()) return Invalid(where + " must be a string (y, z, -z, x, -x, -y)");
      auto up = ParseUpAxis(value.get<std::string>());
      if (!up.ok()) return Invalid(where + ": " + up.error().message);
      base.up = *up;
    } else if (key == "scale") {
      if (!value.is_number()) return Invalid(where + " must be a number (metres per file unit)");
      base.scale = value.get<double>();
    } else {
      return Invalid(where + " is not a setting (up, scale)");
    }
  }
  return base;
}

Result<Level> ImportLevel(const std::string& path, const ImportOptions& options) {
  const auto t0 = std::chrono::steady_clock::now();
  if (options.layer > kMaxLayer) return Invalid("layer must be in [0, 31]");
  if (!(options.scale >= 1.0 / kMaxImportScale && options.scale <= kMaxImportScale)) {
    return Invalid(path + ": scale " + FormatDouble(options.scale, 9) + " is outside [1e-6, 1e6]");
  }
  const std::string lower = Lower(path);
  if (!std::ifstream(path, std::ios::binary).good()) {
    return Error{ErrorCode::kNotFound, "cannot open " + path};
  }
  Level level;
  level.report.file = path;
  Status status;
  if (EndsWith(lower, ".glb")) {
    level.report.format = LevelFormat::kGlb;
  } else if (EndsWith(lower, ".gltf")) {
    level.report.format = LevelFormat::kGltf;
  } else if (EndsWith(lower, ".obj")) {
    level.report.format = LevelFormat::kObj;
  } else {
    return Invalid(path + ": not a level file (expected .gltf, .glb or .obj)");
  }
  if (Status s = CheckContent(path, level.report.format); !s.ok()) return s.error();
  switch (level.report.format) {
    case LevelFormat::kGlb: status = ImportGltf(path, /*binary=*/true, options, &level); break;
    case LevelFormat::kGltf: status = ImportGltf(path, /*binary=*/false, options, &level); break;
    case LevelFormat::kObj: status = ImportObj(path, options, &level); break;
  }
  if (!status.ok()) return status.error();
  if (level.colliders.empty())
    return Invalid(path + ": no collision geometry (no node with triangles)");
  level.report.up = options.up;
  level.report.scale = options.scale;
  const Vec3 size = level.report.bounds.max - level.report.bounds.min;
  const double extent = std::max({size.x, size.y, size.z});
  if (extent > kImplausibleExtent) {
    level.report.warnings.push_back(
        "the level spans " + FormatDouble(extent / 1000.0, 9) + " km (over " +
        FormatDouble(kImplausibleExtent / 1000.0, 9) +
        " km): implausible for metres; is the file in other units (--scale 0.01 for centimetres, "
        "0.0254 for inches)?");
  }
  level.report.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return level;
}

}  // namespace hitbox::import
