// Conformance case files (format "hitbox-cases/1", see shared/cases/FORMAT.md):
// loading (.json or .json.gz) into core types, and checking a ColliderSet's
// answers against the expected ones. Query files (`hitboxctl query --file`)
// use the same query and answer forms plus character moves, and are read one
// query at a time (StreamQueryFile).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "hitbox/world/collider_set.h"
#include "hitbox/status.h"

namespace hitbox::cases {

/// The kind of a case query. Moves appear in query files only (not in the
/// shared case files): {"move": {"shape", "position", "displacement", ...}}.
enum class QueryKind : uint8_t { kOverlap = 0, kSweep = 1, kRaycast = 2, kMove = 3 };
inline constexpr int kQueryKindCount = 4;
/// "overlap", "sweep", "raycast" or "move".
const char* QueryKindName(QueryKind kind);

/// One query of a case file.
struct CaseQuery {
  /// Query id from the file (unique within the file).
  uint64_t id = 0;
  QueryKind kind = QueryKind::kOverlap;
  /// OverlapQuery, CastQuery (closest hit), RayQuery (closest hit) or MoveQuery.
  Query query;
};

/// The expected answer of one query.
struct Expected {
  uint64_t id = 0;
  /// Overlap: colliders that must be reported.
  std::vector<uint64_t> hits;
  /// Overlap: colliders within 1e-6 of touching (either answer is right).
  std::vector<uint64_t> maybe;
  /// Sweep / raycast: whether the answer has a "hit" field (null or an id).
  bool hit_given = false;
  /// Sweep / raycast: first collider hit; nullopt = nothing within the translation.
  std::optional<uint64_t> hit;
  /// Sweep / raycast: fraction of the translation at first contact, in [0, 1].
  double fraction = 0.0;
  /// Sweep / raycast: allowed |reported - fraction|; move: allowed distance
  /// of the reported end position from `position`, metres. Default 1e-4.
  double tolerance = 0.0;
  /// Move: where the shape ends (world metres); unset in other answers.
  std::optional<Vec3> position;
  /// Sweep / raycast: colliders touched within tolerance of the same fraction.
  std::vector<uint64_t> also;
};

/// A loaded case file.
struct CaseFile {
  /// File name without folder.
  std::string name;
  std::string scenario;
  std::vector<Collider> colliders;
  std::vector<CaseQuery> queries;
  /// expected[i] answers queries[i] (same id, checked at load).
  std::vector<Expected> expected;
  /// Rewind files (FORMAT.md "Rewind"): the ticks [oldest = first, newest =
  /// last] of the histories; unset for files without histories. `colliders`
  /// then holds every collider at its pose of the first tick (the batch of
  /// tick `first`), and tick_moves[k] the moves of tick first + 1 + k (every
  /// collider with a history, to its entry at that tick). Queries may carry
  /// at_tick.
  std::optional<TickRange> ticks;
  std::vector<std::vector<ColliderChange>> tick_moves;
};

/// Most ticks of a case file's histories.
inline constexpr uint64_t kMaxCaseTicks = 64;

/// Loads a file's world into an empty set as a game would: AddBulk of the
/// colliders (at tick `first` when the file has histories), then one Apply
/// per later tick. The set keeps at least the file's ticks of history.
Status LoadWorld(const CaseFile& file, ColliderSet* set);

/// Reads a case file; .gz files are decompressed with zlib. Errors name the
/// file and the JSON path of the bad field.
[[nodiscard]] Result<CaseFile> LoadCaseFile(const std::string& path);

/// The case files (*.json, *.json.gz) in `dir`, sorted by name.
std::vector<std::string> ListCaseFiles(const std::string& dir);

/// Files of `<cases>/next/` (issue 10's new shape kinds) whose kinds are
/// supported so far; the rest of that folder is skipped until its kind lands.
inline constexpr const char* kSupportedNextCaseFiles[] = {
    "convex.json", "mesh_level.json", "heightfield.json", "compound.json", "big_level.json"};

/// ListCaseFiles(dir) plus the supported files of dir/next that exist, plus
/// every file of dir/rewind (issue 15: pose histories and at_tick queries),
/// plus every file of the real levels folder beside dir (dir/../levels).
std::vector<std::string> ListSupportedCaseFiles(const std::string& dir);

/// Verdict on one answer.
struct Verdict {
  bool ok = true;
  /// Why not, with ids and fractions (empty when ok).
  std::string reason;
};

/// Checks a result by FORMAT.md's rules: overlap reports every `hits` id and
/// nothing outside hits ∪ maybe; sweep / raycast report `hit` or one of
/// `also` within `tolerance` of `fraction` (nothing when hit is null), with a
/// unit normal not pointing along the motion unless the fraction is 0; a
/// move ends within `tolerance` of `position`. An answer whose form does not
/// fit the query's kind (no "hit" for a raycast, ...) fails, saying so.
Verdict CheckAnswer(const CaseQuery& query, const Expected& expected, const QueryResult& result);

/// Verdicts on every answer of a file, counted per query kind.
struct Report {
  int total[kQueryKindCount] = {};
  int passed[kQueryKindCount] = {};
  /// Number of wrong answers.
  size_t failed = 0;
  /// The first wrong answers: "<file> query <id> (<kind>): <reason>".
  std::vector<std::string> failures;

  bool ok() const { return failed == 0; }
  /// "<file>: N colliders" then one "  <kind>  passed / total passed" line per
  /// kind present, then the listed failures.
  std::string ToString(const CaseFile& file) const;
};

/// Checks results[i] against file.expected[i] for every query with
/// CheckAnswer, keeping the first `max_failures` failures.
Report CheckAll(const CaseFile& file, std::span<const QueryResult> results,
                size_t max_failures = 25);

/// The queries of a file as a batch (in file order).
std::vector<Query> Queries(const CaseFile& file);

/// What StreamQueryFile hands over, one entry at a time, in document order.
/// A callback's error stops the reading and is returned.
struct QueryFileVisitor {
  /// queries[index], parsed (at_tick kept as given; the server checks it).
  /// Null: the queries are skipped.
  std::function<Status(size_t index, CaseQuery query)> on_query;
  /// expected[index], parsed in whichever form it has (overlap lists,
  /// sweep/raycast "hit", move "position"); CheckAnswer judges the form
  /// against the query's kind. Null: the answers are skipped.
  std::function<Status(size_t index, Expected expected)> on_expected;
};

/// Reads a query file (.json or .json.gz): a JSON object with a "queries"
/// array in the case-file query form plus moves, optionally "expected"
/// (case-file answers plus {"id", "position", "tolerance"} for moves); any
/// other member ("colliders" of a case file, ...) is skipped. Each entry is
/// parsed as the reader reaches it and then dropped, so memory stays small
/// whatever the file's size. Errors name the file and the entry
/// ("q.json: queries[3].sweep.shape: missing").
[[nodiscard]] Status StreamQueryFile(const std::string& path, const QueryFileVisitor& visitor);

}  // namespace hitbox::cases
