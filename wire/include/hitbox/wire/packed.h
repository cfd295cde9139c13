// The packed form of a tick (hitbox.v1 PackedQueries / PackedResults): a
// tick's queries and answers as columns of numbers, converted straight to
// and from the core types with no message per query. Same semantics, same
// validation and the same answers as the Query / QueryResult messages.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "hitbox/status.h"
#include "hitbox/v1/hitbox.pb.h"
#include "hitbox/wire/convert.h"
#include "hitbox/world/collider_set.h"

namespace hitbox::wire {

/// Bits of PackedQueries.flags.
inline constexpr uint32_t kPackedAllHits = 1;
inline constexpr uint32_t kPackedWantContact = 2;
inline constexpr uint32_t kPackedFromCollider = 4;
inline constexpr uint32_t kPackedRotated = 8;
inline constexpr uint32_t kPackedApplyTo = 16;
inline constexpr uint32_t kPackedSkipStartedContact = 32;

/// A query whose shape and pose come from a collider: (index of the query in
/// the tick, collider id), as Query.shape_from_collider.
using ShapeFrom = std::pair<size_t, uint64_t>;

/// The number of queries `packed` describes (its kinds).
inline size_t PackedQueryCount(const v1::PackedQueries& packed) {
  return static_cast<size_t>(packed.kinds_size());
}

/// Buffers FromPacked keeps from call to call (the decoded shapes table), so
/// that once warm it allocates nothing for a tick of primitive shapes.
struct PackedScratch {
  std::vector<Shape> shapes;
  std::string field;
};

/// A tick's queries from their packed form and the Query messages its
/// PACKED_MESSAGE entries take, into `*out` (its slots' buffers reused) in
/// tick order, and the shape-from-collider queries into `*from` (by
/// increasing index). Every check of the message form holds; errors are
/// INVALID_ARGUMENT naming the column ("packed.rays.origin[4] must be
/// finite, got nan", "packed.casts.translation: 3 values for 2 casts (3
/// each)") or the message ("queries[2]...."). The caller checks the count
/// (PackedQueryCount) against its limit first. On error `*out` is cleared.
Status FromPacked(const v1::PackedQueries& packed, const Repeated<v1::Query>& messages,
                  std::vector<Query>* out, std::vector<ShapeFrom>* from, PackedScratch* scratch);
/// The same with buffers of its own.
inline Status FromPacked(const v1::PackedQueries& packed, const Repeated<v1::Query>& messages,
                         std::vector<Query>* out, std::vector<ShapeFrom>* from) {
  PackedScratch scratch;
  return FromPacked(packed, messages, out, from, &scratch);
}

/// The shape-from-collider queries of a message-form query list.
void ShapesFromMessages(const Repeated<v1::Query>& messages, std::vector<ShapeFrom>* from);

/// Packs `queries` into `*out`, the ones without a packed form (at_tick set,
/// a move with settings other than the defaults) as PACKED_MESSAGE entries
/// appended to `*messages`. `from` is empty or has one entry per query: the
/// collider its shape and pose come from (ignored for rays).
void ToPacked(std::span<const Query> queries, std::span<const std::optional<uint64_t>> from,
              v1::PackedQueries* out, Repeated<v1::Query>* messages);

/// The answers `results` of `queries` into `*out` (tags from the queries, as
/// the message form echoes Query.tag).
void ToPacked(std::span<const Query> queries, std::span<const QueryResult> results,
              v1::PackedResults* out);

/// A packed answer into `*out`, exactly as ResultFromProto would decode the
/// QueryResult messages of the same answer, reusing its buffers (no heap
/// allocation once they are large enough). kInternal naming the column when
/// the answer is not well formed or does not hold `expected` results.
Status FromPacked(const v1::PackedResults& in, size_t expected, std::vector<QueryResult>* out);

}  // namespace hitbox::wire
