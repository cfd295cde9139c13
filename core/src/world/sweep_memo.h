// Mesh sweeps of moves answered before, kept per thread from move to move:
// a character's first probe of the ground asks, to the bit, what its last
// move's final probe asked (the move starts where that one ended).
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>
#include <vector>

#include "hitbox/collision/collide.h"
#include "hitbox/math/math.h"

namespace hitbox::internal {

/// What a move's sweep of its ball or capsule against one mesh collider
/// depends on: the set's mesh version (which changes whenever a mesh
/// collider is added, changed, moved or removed, to a value no set had
/// before) and the collider's item, the shape, its rotation, where it
/// starts and how far it goes.
struct MeshSweepKey {
  uint64_t version = 0;
  uint32_t item = 0;
  uint32_t kind = 0;
  double radius = 0.0;
  double half_height = 0.0;
  Quat rotation;
  Vec3 from;
  Vec3 translation;
};
static_assert(sizeof(MeshSweepKey) == 112, "no padding: keys compare as bytes");

/// Answers by key, direct-mapped: each with the fraction bound it was
/// found under. A pair's answer under a lower bound may be a miss where
/// this one is a hit beyond that bound, which the sweep passes over either
/// way (a hit beyond its bound cannot win), so an answer serves any sweep
/// of the same key bounded no further.
class SweepMemo {
 public:
  /// Slots (a power of two): several for each of a tick's characters.
  static constexpr uint32_t kSlots = 1024;

  /// The answer for `key` under bound `t_max`, if kept: true and *out.
  bool Find(const MeshSweepKey& key, double t_max, CastResult* out) const {
    if (entries_.empty()) return false;
    const Entry& e = entries_[SlotOf(key)];
    if (!e.used || t_max > e.t_max || std::memcmp(&e.key, &key, sizeof key) != 0) return false;
    *out = e.answer;
    return true;
  }
  /// Keeps `answer`, found for `key` under bound `t_max`.
  void Put(const MeshSweepKey& key, double t_max, const CastResult& answer) {
    if (entries_.empty()) entries_.resize(kSlots);
    Entry& e = entries_[SlotOf(key)];
    e.used = true;
    e.key = key;
    e.t_max = t_max;
    e.answer = answer;
  }

 private:
  struct Entry {
    bool used = false;
    MeshSweepKey key;
    double t_max = 0.0;
    CastResult answer;
  };
  static uint32_t SlotOf(const MeshSweepKey& key) {
    uint64_t h = key.version * 0x9E3779B97F4A7C15ull + key.item;
    for (const double x : {key.from.x, key.from.y, key.from.z, key.translation.x,
                           key.translation.y, key.translation.z}) {
      h = (h ^ std::bit_cast<uint64_t>(x)) * 0xBF58476D1CE4E5B9ull;
    }
    return static_cast<uint32_t>(h >> 40) & (kSlots - 1);
  }
  std::vector<Entry> entries_;
};

}  // namespace hitbox::internal
