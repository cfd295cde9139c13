// hitbox-batch-once: one kind of a case file's queries through
// ColliderSet::RunBatch on the calling thread, `--reps` times, then every
// answer checked against the file (exit 1 on a mismatch); also the set's
// MemoryBytes before and after the batches (which make caches: a wide tree,
// merged meshes). A fixed amount of work for instruction counts, e.g. the
// sweep batch of big.json (`--warm N` first runs N batches outside the
// counted function: the caches they make are then in place):
//
//   valgrind --tool=callgrind --toggle-collect='*RunKindBatch*'
//       build/bin/hitbox-batch-once ../shared/cases/big.json sweep
//
//   hitbox-batch-once FILE KIND [--reps N] [--warm N] [--warm-kind KIND2]
//                     [--ignore ID]
//   KIND: overlap, sweep or raycast; --warm-kind: the warm batches are the
//   file's KIND2 queries (e.g. rays, cheap under callgrind, to make a
//   level's merged meshes before its sweeps are counted), then one of KIND;
//   --ignore adds ID to every query's
//   ignore list (as a game's queries ignore their own player); --rewind
//   asks every query at a past tick (the world then as loaded: same answers);
//   --skip-started-contact: sweeps skip the contact of a hit at their start
#include <CLI/CLI.hpp>

#include <cstdio>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

#include "hitbox/cases/case_file.h"
#include "hitbox/world/collider_set.h"

namespace hitbox {
namespace {

// Kept out of line so that callgrind can count exactly this (--toggle-collect).
__attribute__((noinline)) void RunKindBatch(const ColliderSet& set, const std::vector<Query>& qs,
                                            std::vector<QueryResult>& results, int reps) {
  for (int i = 0; i < reps; ++i) set.RunBatch(qs, results, nullptr);
}

int Main(int argc, char** argv) {
  CLI::App app{"One kind of a case file's queries through RunBatch on one thread"};
  std::string path, kind_name, warm_kind_name;
  int reps = 1, warm = 0;
  std::vector<uint64_t> ignore;
  bool rewind = false;
  app.add_option("file", path, "case file (.json or .json.gz)")->required();
  app.add_option("kind", kind_name, "overlap, sweep or raycast")->required();
  app.add_option("--reps", reps, "batches to run (>= 1)")->check(CLI::Range(1, 1000000));
  app.add_option("--warm", warm, "batches run before, not counted")
      ->check(CLI::Range(0, 1000000));
  app.add_option("--warm-kind", warm_kind_name, "the warm batches' kind (default: KIND)");
  app.add_option("--ignore", ignore, "collider ids every query ignores");
  app.add_flag("--rewind", rewind, "ask every query at a past tick (at_tick)");
  bool skip_started_contact = false;
  app.add_flag("--skip-started-contact", skip_started_contact,
               "sweeps skip the contact of a hit at their start (depth 0)");
  CLI11_PARSE(app, argc, argv);
  if (warm_kind_name.empty()) warm_kind_name = kind_name;
  int kind = -1, warm_kind = -1;
  for (int k = 0; k < cases::kQueryKindCount; ++k) {
    const std::string name = cases::QueryKindName(static_cast<cases::QueryKind>(k));
    if (kind_name == name) kind = k;
    if (warm_kind_name == name) warm_kind = k;
  }
  if (kind < 0 || warm_kind < 0) {
    std::fprintf(stderr, "kind: expected overlap, sweep or raycast, got '%s'\n",
                 (kind < 0 ? kind_name : warm_kind_name).c_str());
    return 2;
  }
  Result<cases::CaseFile> loaded = cases::LoadCaseFile(path);
  if (!loaded.ok()) {
    std::fprintf(stderr, "%s\n", loaded.error().message.c_str());
    return 2;
  }
  const cases::CaseFile& file = *loaded;
  ColliderSet set;
  if (const Status s = cases::LoadWorld(file, &set); !s.ok()) {
    std::fprintf(stderr, "load: %s\n", s.ToString().c_str());
    return 2;
  }
  if (rewind) {
    // Two ticks of an unchanged world: queries at 1.5 see it as loaded.
    for (const uint64_t tick : {1u, 2u}) {
      if (const Status s = set.Apply({}, tick); !s.ok()) {
        std::fprintf(stderr, "tick: %s\n", s.ToString().c_str());
        return 2;
      }
    }
  }
  const std::vector<Query> all = cases::Queries(file);
  std::vector<Query> qs, warm_qs;
  std::vector<size_t> index;
  for (size_t i = 0; i < all.size(); ++i) {
    if (static_cast<int>(file.queries[i].kind) == warm_kind) warm_qs.push_back(all[i]);
    if (static_cast<int>(file.queries[i].kind) != kind) continue;
    qs.push_back(all[i]);
    std::visit(
        [&](auto& q) {
          q.filter.ignore.insert(q.filter.ignore.end(), ignore.begin(), ignore.end());
          if constexpr (!std::is_same_v<std::decay_t<decltype(q)>, MoveQuery>) {
            if (rewind) q.at_tick = 1.5;
          }
          if constexpr (std::is_same_v<std::decay_t<decltype(q)>, CastQuery>) {
            q.skip_started_contact = skip_started_contact;
          }
        },
        qs.back());
    index.push_back(i);
  }
  std::vector<QueryResult> results(qs.size());
  const size_t bytes_before = set.MemoryBytes();
  if (warm_kind != kind) {
    std::vector<QueryResult> warm_results(warm_qs.size());
    for (int i = 0; i < warm; ++i) set.RunBatch(warm_qs, warm_results, nullptr);
    // One of KIND too: its answers' storage in place, as after --warm alone.
    if (warm > 0) set.RunBatch(qs, results, nullptr);
  } else {
    for (int i = 0; i < warm; ++i) set.RunBatch(qs, results, nullptr);
  }
  RunKindBatch(set, qs, results, reps);
  size_t mismatches = 0;
  for (size_t j = 0; j < qs.size(); ++j) {
    const cases::Verdict v =
        cases::CheckAnswer(file.queries[index[j]], file.expected[index[j]], results[j]);
    if (!v.ok && mismatches++ < 20) {
      std::fprintf(stderr, "MISMATCH query %llu: %s\n",
                   static_cast<unsigned long long>(file.queries[index[j]].id), v.reason.c_str());
    }
  }
  std::printf("%s: %zu queries x %d, %zu mismatches\n", kind_name.c_str(), qs.size(), reps,
              mismatches);
  std::printf("memory_bytes %zu -> %zu, merged_triangles %llu\n", bytes_before, set.MemoryBytes(),
              static_cast<unsigned long long>(set.GetTreeStats().merged_triangles));
  return mismatches == 0 ? 0 : 1;
}

}  // namespace
}  // namespace hitbox

int main(int argc, char** argv) { return hitbox::Main(argc, argv); }
