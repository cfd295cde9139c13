// StartNearSets: one ring per thread, dropped when the outermost scope ends.
#include "collision/triangles/start_near.h"

namespace hitbox {
namespace start_near_detail {

Ring& ThisThread() {
  static thread_local Ring ring;
  return ring;
}

}  // namespace start_near_detail

ScopedStartNear::ScopedStartNear() { ++start_near_detail::ThisThread().scopes; }

ScopedStartNear::~ScopedStartNear() {
  start_near_detail::Ring& ring = start_near_detail::ThisThread();
  if (--ring.scopes > 0) return;
  // Past the scope a mesh's address may be reused by another mesh.
  for (StartNearSet& s : ring.set) {
    s.mesh = nullptr;
    s.triangles.clear();
  }
  ring.next = 0;
}

}  // namespace hitbox
