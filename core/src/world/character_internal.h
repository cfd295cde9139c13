// The collide-and-slide controller behind ColliderSet::Move, written against
// a small world interface so the collider set can supply its sweeps (with
// its work accounting) and tests can drive it directly.
#pragma once

#include "hitbox/world/collider_set.h"

namespace hitbox::internal {

/// The world a move sweeps through.
class MoveWorld {
 public:
  /// Closest hit of the move's shape (at the move's rotation) swept from
  /// `from` by `translation`, with the move's filter; a pair that starts
  /// touching while the motion leaves it is skipped. False on a miss.
  virtual bool Sweep(const Vec3& from, const Vec3& translation, CastHit* hit) = 0;
  /// Sweep, for a probe of the ground that a character's next move asks
  /// again (it starts where this move ends): the world may keep the answer.
  virtual bool Probe(const Vec3& from, const Vec3& translation, CastHit* hit) = 0;

 protected:
  ~MoveWorld() = default;
};

/// Runs the move `q` (validated: finite, unit up after normalizing, settings
/// in range) against `world` into *out, every field of which it sets (the
/// contacts are cleared, not freed, so a reused result allocates nothing).
void RunMove(const MoveQuery& q, MoveWorld& world, MoveResult* out);

/// v.Normalized() without its square root and divisions when v is a unit
/// vector already (squared length exactly 1: then the same bits).
inline Vec3 UnitOf(const Vec3& v) { return v.LengthSq() == 1.0 ? v : v.Normalized(); }
/// q.Normalized(), likewise.
inline Quat UnitOf(const Quat& q) { return q.LengthSq() == 1.0 ? q : q.Normalized(); }

/// Whether a set's moves on this thread gather the tree leaves near them
/// once and test only those on each sweep (true), or walk the tree on every
/// sweep: the same answers, which tests compare.
inline bool& MoveGatherOnThisThread() {
  thread_local bool on = true;
  return on;
}

/// Whether, with the gather on, a ball or capsule move on this thread also
/// gathers the triangles of the meshes near it once and sweeps those alone
/// (where their order cannot change the answer: GatheredCast) instead of
/// walking each mesh on every sweep: the same answers, which tests compare.
inline bool& MoveGatherTrianglesOnThisThread() {
  thread_local bool on = true;
  return on;
}

/// Whether, with the triangles gathered, the ground probes of moves on this
/// thread keep their answers from each mesh and give them again when a
/// later probe asks the same (SweepMemo) instead of sweeping: the same
/// answers, which tests compare.
inline bool& MoveMemoOnThisThread() {
  thread_local bool on = true;
  return on;
}

/// What moves on this thread did with mesh triangles (tests read them to
/// see the gathered path taken and how much a move gathers and decodes).
struct MoveCounts {
  uint64_t gathered_mesh_sweeps = 0;  ///< mesh sweeps answered from gathered triangles
  uint64_t mesh_gathers = 0;          ///< meshes gathered
  uint64_t gathered_triangles = 0;    ///< triangles gathered
  uint64_t decoded_triangles = 0;     ///< not found among those earlier moves decoded
  uint64_t memo_answers = 0;          ///< mesh sweeps answered as an earlier move's (SweepMemo)
};
inline MoveCounts& MoveCountsOnThisThread() {
  thread_local MoveCounts counts;
  return counts;
}

}  // namespace hitbox::internal
