// The demo map (examples/maps/arena.glb, what `bash scripts/hitbox.sh run`
// serves): a character standing on its ramp with gravity alone stays put.
#include <gtest/gtest.h>

#include <string>

#include "hitbox/import/level_import.h"
#include "hitbox/world/character.h"
#include "hitbox/world/collider_set.h"

namespace hitbox {
namespace {

// The move the issue reproduced with `hitboxctl move demo1 --capsule 0.4,0.5
// --pos 16,2.95,-30 --displacement 0,-0.05,0`, each result fed back: it crept
// 11.8 mm down the 14 degree ramp a tick. Now not a bit in 600 ticks.
TEST(DemoMap, CharacterStandsStillOnTheRamp) {
  const std::string path = std::string(HITBOX_SOURCE_DIR) + "/examples/maps/arena.glb";
  Result<import::Level> level = import::ImportLevel(path);
  ASSERT_TRUE(level.ok()) << level.error().message;
  ColliderSet set;
  ASSERT_TRUE(set.AddBulk(level->colliders).ok());
  MoveQuery q;
  q.shape = *Shape::MakeCapsule(0.4, 0.5);
  q.pose = Pose{{16, 2.95, -30}};
  q.displacement = {0, -0.05, 0};
  MoveResult r;
  for (int tick = 0; tick < 2; ++tick) {  // settles onto the ramp at the skin
    set.Move(q, &r);
    q.pose.position = r.position;
  }
  ASSERT_TRUE(r.on_ground);
  EXPECT_GT(r.ground_normal.y, 0.9);
  EXPECT_LT(r.ground_normal.y, 0.999);  // the ramp, not flat ground
  const Vec3 rest = r.position;
  for (int tick = 0; tick < 600; ++tick) {
    set.Move(q, &r);
    ASSERT_EQ(r.position, rest) << "tick " << tick;
    ASSERT_FALSE(r.blocked) << "tick " << tick;
    ASSERT_TRUE(r.on_ground) << "tick " << tick;
    q.pose.position = r.position;
  }
}

}  // namespace
}  // namespace hitbox
