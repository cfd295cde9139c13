// Fuzz target: level import (import/: hitbox_import's ImportLevel), the OBJ
// and glTF bytes that tinyobjloader and tinygltf parse and the walk over what
// they read. Input: a format byte (% 3: .obj, .glb, .gltf), an options byte
// (bit 7: max_mesh_triangles = 1 + bits 0..2, so meshes are split), then the
// file's bytes, written to a scratch file with that extension.
// Checks: no crash or sanitizer report; a refusal is kInvalidArgument or
// kNotFound with a message; an accepted level keeps its promises (level_import.h):
// ids from first_id on, one source per collider, the report's counts, mesh
// colliders within max_mesh_triangles, and every collider uploads: it
// round-trips the wire (ToProto, FromProto) and AddBulk takes them all.
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz_util.h"
#include "hitbox/world/collider_set.h"
#include "hitbox/import/level_import.h"
#include "hitbox/v1/hitbox.pb.h"
#include "hitbox/wire/convert.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace hitbox;
  using namespace hitbox::fuzz;
  if (size < 2) return 0;
  static const char* const kSuffix[3] = {".obj", ".glb", ".gltf"};
  static const ScratchFile files[3] = {ScratchFile(kSuffix[0]), ScratchFile(kSuffix[1]),
                                       ScratchFile(kSuffix[2])};
  const ScratchFile& file = files[data[0] % 3];
  import::ImportOptions options;
  options.first_id = 5;
  if (data[1] & 0x80) options.max_mesh_triangles = 1 + (data[1] & 7);
  file.Write(data + 2, size - 2);
  Result<import::Level> level = import::ImportLevel(file.path(), options);
  if (!level.ok()) {
    HITBOX_FUZZ_CHECK(level.error().code == ErrorCode::kInvalidArgument ||
                          level.error().code == ErrorCode::kNotFound,
                      "refused with code %d: %s", static_cast<int>(level.error().code),
                      level.error().message.c_str());
    HITBOX_FUZZ_CHECK(!level.error().message.empty(), "refused without a message");
    return 0;
  }
  const import::Level& l = *level;
  HITBOX_FUZZ_CHECK(l.sources.size() == l.colliders.size(), "%zu sources for %zu colliders",
                    l.sources.size(), l.colliders.size());
  HITBOX_FUZZ_CHECK(l.report.colliders() == l.colliders.size(), "report counts %llu of %zu",
                    (unsigned long long)l.report.colliders(), l.colliders.size());
  uint64_t triangles = 0;
  for (size_t i = 0; i < l.colliders.size(); ++i) {
    const Collider& c = l.colliders[i];
    HITBOX_FUZZ_CHECK(c.id == options.first_id + i, "collider %zu has id %llu", i,
                      (unsigned long long)c.id);
    if (c.shape.kind() == ShapeKind::kMesh) {
      const TriangleMeshShape m = *c.shape.mesh_input();
      HITBOX_FUZZ_CHECK(m.triangles.size() <= options.max_mesh_triangles,
                        "mesh collider %zu of %zu triangles (at most %llu)", i, m.triangles.size(),
                        (unsigned long long)options.max_mesh_triangles);
      triangles += m.triangles.size();
    }
    v1::Collider p;
    wire::ToProto(c, &p);
    Result<Collider> back = wire::FromProto(p, "collider");
    HITBOX_FUZZ_CHECK(back.ok(), "imported %s (%s) does not upload: %s", l.sources[i].c_str(),
                      ShapeKindName(c.shape.kind()), back.error().message.c_str());
  }
  HITBOX_FUZZ_CHECK(triangles == l.report.triangles, "report says %llu triangles, meshes hold %llu",
                    (unsigned long long)l.report.triangles, (unsigned long long)triangles);
  ColliderSet set;
  const Status st = set.AddBulk(l.colliders);
  HITBOX_FUZZ_CHECK(st.ok(), "AddBulk refuses the level: %s", st.ToString().c_str());
  HITBOX_FUZZ_CHECK(set.TreeValidate().empty(), "tree after AddBulk");
  (void)l.report.ToString();
  return 0;
}
