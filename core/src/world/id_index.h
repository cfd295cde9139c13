// IdIndex: a compact open-addressing hash map from a caller's 64-bit id to a
// dense 32-bit index. Each slot is just the index (4 bytes); the key is read
// back through a caller-supplied function (the dense array holds the ids), so
// the map costs 4 bytes per slot at load <= 3/4 (5.3 to 10.7 bytes per id).
//
// Linear probing with backward-shift deletion (no tombstones): Knuth, TAOCP
// vol. 3, 6.4 Algorithm R.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace hitbox {

class IdIndex {
 public:
  static constexpr uint32_t kEmpty = 0xFFFFFFFFu;

  /// splitmix64 finalizer (Steele, Lea, Flood 2014): good avalanche for
  /// sequential ids.
  static uint64_t Hash(uint64_t x) {
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebull;
    x ^= x >> 31;
    return x;
  }

  /// Dense index of `id`, or kEmpty. key_of(index) gives the id stored at index.
  template <typename KeyOf>
  uint32_t Find(uint64_t id, const KeyOf& key_of) const {
    if (slots_.empty()) return kEmpty;
    const size_t mask = slots_.size() - 1;
    for (size_t i = Hash(id) & mask, probes = 0; probes < slots_.size(); i = (i + 1) & mask, ++probes) {
      const uint32_t v = slots_[i];
      if (v == kEmpty) return kEmpty;
      if (key_of(v) == id) return v;
    }
    return kEmpty;
  }

  /// Inserts id -> index; `id` must not be present. Grows to keep load <= 3/4.
  template <typename KeyOf>
  void Insert(uint64_t id, uint32_t index, const KeyOf& key_of) {
    if ((size_ + 1) * 4 > slots_.size() * 3) {
      Rehash(std::max<size_t>(16, slots_.size() * 2), key_of);
    }
    InsertNoGrow(id, index);
    ++size_;
  }

  /// Points an existing id at a new dense index.
  template <typename KeyOf>
  void Update(uint64_t id, uint32_t index, const KeyOf& key_of) {
    const size_t mask = slots_.size() - 1;
    for (size_t i = Hash(id) & mask, probes = 0; probes < slots_.size(); i = (i + 1) & mask, ++probes) {
      if (slots_[i] != kEmpty && key_of(slots_[i]) == id) {
        slots_[i] = index;
        return;
      }
    }
  }

  /// Removes `id` (must be present).
  template <typename KeyOf>
  void Erase(uint64_t id, const KeyOf& key_of) {
    const size_t mask = slots_.size() - 1;
    size_t i = Hash(id) & mask;
    for (size_t probes = 0; probes < slots_.size(); i = (i + 1) & mask, ++probes) {
      if (slots_[i] == kEmpty) return;
      if (key_of(slots_[i]) == id) break;
    }
    // Backward shift: move later entries of the cluster into the hole when
    // their home slot is not cyclically in (hole, j].
    size_t hole = i;
    size_t j = i;
    for (size_t probes = 0; probes < slots_.size(); ++probes) {
      j = (j + 1) & mask;
      if (slots_[j] == kEmpty) break;
      const size_t home = Hash(key_of(slots_[j])) & mask;
      const bool in_range = hole <= j ? (hole < home && home <= j) : (hole < home || home <= j);
      if (!in_range) {
        slots_[hole] = slots_[j];
        hole = j;
      }
    }
    slots_[hole] = kEmpty;
    --size_;
  }

  /// Makes room for `n` ids without rehashing.
  template <typename KeyOf>
  void Reserve(size_t n, const KeyOf& key_of) {
    size_t cap = 16;
    while (cap * 3 < n * 4) cap *= 2;
    if (cap > slots_.size()) Rehash(cap, key_of);
  }

  void Clear() {
    slots_.assign(slots_.size(), kEmpty);
    size_ = 0;
  }
  size_t size() const { return size_; }
  size_t MemoryBytes() const { return slots_.capacity() * sizeof(uint32_t); }

 private:
  void InsertNoGrow(uint64_t id, uint32_t index) {
    const size_t mask = slots_.size() - 1;
    size_t i = Hash(id) & mask;
    while (slots_[i] != kEmpty) i = (i + 1) & mask;  // load <= 3/4: terminates
    slots_[i] = index;
  }

  template <typename KeyOf>
  void Rehash(size_t cap, const KeyOf& key_of) {
    std::vector<uint32_t> old;
    old.swap(slots_);
    slots_.assign(cap, kEmpty);
    slots_.shrink_to_fit();
    for (uint32_t v : old) {
      if (v != kEmpty) InsertNoGrow(key_of(v), v);
    }
  }

  std::vector<uint32_t> slots_;
  size_t size_ = 0;
};

}  // namespace hitbox
