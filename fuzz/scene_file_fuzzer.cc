// Fuzz target: hitboxctl scene files (client/ctl/scene_file.cc), JSON and
// gzip (see json_file_input.h for the input layout). Checks: no crash or
// sanitizer error; a scene ParseScene accepts loads into a ColliderSet
// (AddBulk), since its validation mirrors core's.
#include <cstddef>
#include <cstdint>

#include "fuzz_util.h"
#include "json_file_input.h"
#include "hitbox/import/scene_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace hitbox;
  const std::string& path = fuzz::WriteJsonInput(data, size);
  if (path.empty()) return 0;
  auto doc = import::ReadJsonFile(path);
  if (!doc.ok()) {
    HITBOX_FUZZ_CHECK(!doc.error().message.empty(), "error without a message");
    return 0;
  }
  if (doc->is_object() && doc->contains("colliders")) {
    const auto& entries = doc->at("colliders");
    for (size_t i = 0; i < 3; ++i) (void)import::DescribeEntry(entries, i);
  }
  auto scene = import::ParseScene(*doc);
  if (!scene.ok()) {
    HITBOX_FUZZ_CHECK(!scene.error().message.empty(), "error without a message");
    return 0;
  }
  ColliderSet set;
  const Status s = set.AddBulk(*scene);
  if (!s.ok()) {
    // Positions beyond core's range pass ParseScene (finite only); the server rejects them.
    bool beyond = false;
    for (const Collider& c : *scene) beyond = beyond || fuzz::BeyondCoreRange(c);
    HITBOX_FUZZ_CHECK(beyond, "ParseScene accepted a scene AddBulk rejects: %s", s.ToString().c_str());
    return 0;
  }
  HITBOX_FUZZ_CHECK(set.size() == scene->size(), "size after AddBulk");
  HITBOX_FUZZ_CHECK(set.TreeValidate().empty(), "tree after AddBulk");
  return 0;
}
