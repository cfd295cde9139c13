// What a world query's max_hits keeps, and the last touches of a result
// (internal to hitbox_core): queries keep one hit more than max_hits as they
// go, so that the public entry points can tell a cut answer (truncated) from
// one that just fits.
#pragma once

#include <cstdint>
#include <type_traits>
#include <variant>
#include <vector>

#include "hitbox/world/collider_set.h"

namespace hitbox::internal {

/// Hits a query keeps while it runs: max_hits + 1 (0: no limit).
inline uint32_t KeptHits(uint32_t max_hits) {
  return max_hits == 0 || max_hits == UINT32_MAX ? 0 : max_hits + 1;
}

/// Cuts sorted `hits` to max_hits (0: no limit); true when any were cut.
template <typename T>
bool TrimHits(std::vector<T>* hits, uint32_t max_hits) {
  if (max_hits == 0 || hits->size() <= max_hits) return false;
  hits->resize(max_hits);
  return true;
}

/// Empties `r` for a new answer to `q`, keeping its buffers: the hit lists
/// are cleared, not freed, and a move's result stays for MoveSlot to reuse
/// (any other query's is dropped).
inline void ClearResult(const Query& q, QueryResult* r) {
  r->overlaps.clear();
  r->hits.clear();
  if (!std::holds_alternative<MoveQuery>(q)) r->move.reset();
}

/// Where a move writes its answer in `r`: the MoveResult already there (its
/// contacts keep their capacity; RunMove sets every field) or a new one.
inline MoveResult* MoveSlot(QueryResult* r) { return r->move ? &*r->move : &r->move.emplace(); }

/// The answer to `q` as the caller sees it: cut to max_hits with
/// `truncated` telling whether anything was cut, and the query's tag.
inline void FinishResult(const Query& q, QueryResult* r) {
  r->truncated = false;
  std::visit(
      [r](const auto& x) {
        using T = std::decay_t<decltype(x)>;
        r->tag = x.tag;
        if constexpr (std::is_same_v<T, OverlapQuery>) {
          r->truncated = TrimHits(&r->overlaps, x.filter.max_hits);
        } else if constexpr (std::is_same_v<T, CastQuery> || std::is_same_v<T, RayQuery>) {
          if (x.all_hits) r->truncated = TrimHits(&r->hits, x.filter.max_hits);
        }
      },
      q);
}

}  // namespace hitbox::internal
