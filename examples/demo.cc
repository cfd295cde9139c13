// hitbox-demo: a few narrow-phase queries printed to stdout.
#include <cstdio>

#include "hitbox/collision/collide.h"

int main() {
  using namespace hitbox;
  const Shape sphere = *Shape::MakeSphere(0.5);
  const Shape box = *Shape::MakeBox({1, 1, 1});
  const Shape capsule = *Shape::MakeCapsule(0.3, 0.9);
  const Pose box_pose({0, 0, 0}, Quat::FromAxisAngle({0, 1, 0}, 0.3));

  std::printf("sphere at (1.4,0,0) overlaps box: %s\n",
              Overlap(sphere, Pose({1.4, 0, 0}), box, box_pose) ? "yes" : "no");
  const CastResult cast = Cast(capsule, Pose({-5, 0, 0}), {10, 0, 0}, box, box_pose);
  std::printf("capsule cast from (-5,0,0) by (10,0,0): %s fraction=%.6f normal=%s\n",
              cast.hit() ? "hit" : "miss", cast.fraction, ToString(cast.normal).c_str());
  const CastResult ray = Raycast({0, 10, 0}, {0, -20, 0}, box, box_pose);
  std::printf("ray down onto box: %s fraction=%.6f point=%s\n", ray.hit() ? "hit" : "miss",
              ray.fraction, ToString(ray.point).c_str());
  return 0;
}
