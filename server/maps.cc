// Loading the maps of --maps DIR: scene files through hitbox_import's JSON
// reader, level files through its importer, each into one ColliderSet built
// top-down; SHA-256 of the file bytes through OpenSSL's libcrypto.
#include "maps.h"

#include <malloc.h>
#include <openssl/evp.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

#include "hitbox/import/level_import.h"
#include "hitbox/import/scene_file.h"

namespace hitbox::server {
namespace {

namespace fs = std::filesystem;

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// A file a map can be made of: a JSON scene or a level file (not a level's
// NAME.import.json settings, which go with NAME.glb).
bool IsMapFile(const fs::path& p) {
  const std::string ext = Lower(p.extension().string());
  if (import::IsImportSettingsFile(p.string())) return false;
  return ext == ".json" || import::IsLevelFile(p.string());
}

// SHA-256 of the file at `path` as lower-case hex, read in blocks (the file
// is never held whole) with its size in *size; "" when it cannot be read or
// libcrypto fails.
std::string Sha256File(const std::string& path, uint64_t* size) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return "";
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  bool ok = ctx != nullptr && EVP_DigestInit_ex(ctx, EVP_sha256(), nullptr) == 1;
  std::vector<char> block(1 << 16);
  *size = 0;
  while (ok && in) {
    in.read(block.data(), static_cast<std::streamsize>(block.size()));
    const size_t got = static_cast<size_t>(in.gcount());
    *size += got;
    ok = EVP_DigestUpdate(ctx, block.data(), got) == 1;
  }
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  ok = ok && !in.bad() && EVP_DigestFinal_ex(ctx, digest, &len) == 1;
  EVP_MD_CTX_free(ctx);
  if (!ok) return "";
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (unsigned int i = 0; i < len; ++i) {
    out += kHex[digest[i] >> 4];
    out += kHex[digest[i] & 15];
  }
  return out;
}

uint64_t Triangles(const Shape& s) {
  if (s.kind() == ShapeKind::kMesh) return s.mesh_input_triangles();
  if (const HeightfieldShape* h = s.heightfield_input()) {
    return h->rows < 2 || h->cols < 2 ? 0 : 2ull * (h->rows - 1) * (h->cols - 1);
  }
  return 0;
}

// "map PATH: what" (the importers' messages start with the path already).
Error FileError(const std::string& path, const std::string& what) {
  const bool named = what.compare(0, path.size(), path) == 0;
  return Error{ErrorCode::kInvalidArgument, "map " + (named ? what : path + ": " + what)};
}

}  // namespace

Result<std::shared_ptr<const Map>> LoadMapFile(const std::string& path) {
  auto map = std::make_shared<Map>();
  map->id = fs::path(path).stem().string();
  map->source = path;
  if (!std::ifstream(path, std::ios::binary)) return FileError(path, "cannot be read");
  map->sha256 = Sha256File(path, &map->file_bytes);
  std::vector<Collider> colliders;
  if (import::IsLevelFile(path)) {
    // Up axis and units from the level's NAME.import.json, when it has one.
    Result<import::ImportOptions> options = import::ReadImportSettings(path);
    if (!options.ok()) return FileError(path, options.error().message);
    Result<import::Level> level = import::ImportLevel(path, *options);
    if (!level.ok()) return FileError(path, level.error().message);
    colliders = std::move(level->colliders);
  } else {
    // Parsed as read, mesh arrays flat (no document tree of the meshes).
    Result<std::vector<Collider>> scene = import::ReadSceneFile(path);
    if (!scene.ok()) return FileError(path, scene.error().message);
    colliders = std::move(*scene);
  }
  auto set = std::make_shared<ColliderSet>();
  // Shared by every session on it: no batch waits for its merged meshes.
  set->SetBackgroundCaches(true);
  if (Status st = set->AddBulk(colliders); !st.ok()) return FileError(path, st.message());
  for (const Collider& c : colliders) {
    ++map->counts[static_cast<size_t>(c.shape.kind())];
    map->triangles += Triangles(c.shape);
  }
  map->bounds = set->Bounds();
  map->set = std::move(set);
  return std::shared_ptr<const Map>(std::move(map));
}

Result<std::shared_ptr<const MapLibrary>> MapLibrary::Load(const std::string& dir) {
  auto lib = std::make_shared<MapLibrary>();
  if (dir.empty()) return std::shared_ptr<const MapLibrary>(std::move(lib));
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    return Error{ErrorCode::kInvalidArgument, "--maps " + dir + ": not a directory"};
  }
  std::vector<fs::path> files;
  for (const fs::directory_entry& e : fs::directory_iterator(dir, ec)) {
    if (e.is_regular_file() && IsMapFile(e.path())) files.push_back(e.path());
  }
  if (ec) return Error{ErrorCode::kInvalidArgument, "--maps " + dir + ": " + ec.message()};
  std::sort(files.begin(), files.end());
  for (const fs::path& f : files) {
    Result<std::shared_ptr<const Map>> map = LoadMapFile(f.string());
    if (!map.ok()) return map.error();
    if (lib->Find((*map)->id) != nullptr) {
      return FileError(f.string(), "another file of " + dir + " is also named '" + (*map)->id +
                                       "' (a map is named by its file name without extension)");
    }
    lib->maps_.push_back(std::move(*map));
    std::sort(lib->maps_.begin(), lib->maps_.end(),
              [](const auto& a, const auto& b) { return a->id < b->id; });
  }
  // Parsing a large scene (a JSON document tree, the file's bytes) peaks at
  // several times the map's size; give those freed pages back to the OS so
  // the process keeps about the maps themselves (glibc).
  malloc_trim(0);
  return std::shared_ptr<const MapLibrary>(std::move(lib));
}

std::shared_ptr<const Map> MapLibrary::Find(std::string_view id) const {
  const auto it = std::lower_bound(maps_.begin(), maps_.end(), id,
                                   [](const auto& m, std::string_view k) { return m->id < k; });
  return it != maps_.end() && (*it)->id == id ? *it : nullptr;
}

uint64_t MapLibrary::memory_bytes() const {
  uint64_t total = 0;
  for (const auto& m : maps_) total += m->memory_bytes();
  return total;
}

}  // namespace hitbox::server
