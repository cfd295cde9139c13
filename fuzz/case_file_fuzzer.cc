// Fuzz target: conformance case files (casefile/: LoadCaseFile), JSON and gzip
// (see json_file_input.h for the input layout). Checks: no crash or sanitizer
// error; a file LoadCaseFile accepts has one expected answer per query with
// the same id, its colliders load into a ColliderSet, and its queries pass
// ValidateQuery, run, and can be checked (CheckAll; answers may be wrong).
#include <cstddef>
#include <cstdint>

#include "fuzz_util.h"
#include "hitbox/cases/case_file.h"
#include "json_file_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace hitbox;
  const std::string& path = fuzz::WriteJsonInput(data, size);
  if (path.empty()) return 0;
  auto file = cases::LoadCaseFile(path);
  if (!file.ok()) {
    HITBOX_FUZZ_CHECK(!file.error().message.empty(), "error without a message");
    return 0;
  }
  HITBOX_FUZZ_CHECK(file->queries.size() == file->expected.size(), "%zu queries, %zu answers",
                    file->queries.size(), file->expected.size());
  // Coordinates beyond core's range pass the loader (finite only): core's
  // rejection is expected then, and nothing runs.
  bool beyond = false;
  for (size_t i = 0; i < file->queries.size(); ++i) {
    HITBOX_FUZZ_CHECK(file->queries[i].id == file->expected[i].id, "answer %zu for another query", i);
    const Status s = ColliderSet::ValidateQuery(file->queries[i].query);
    const bool out = fuzz::BeyondCoreRange(file->queries[i].query);
    HITBOX_FUZZ_CHECK(s.ok() || out, "LoadCaseFile accepted a query core rejects: %s", s.ToString().c_str());
    beyond = beyond || out;
  }
  ColliderSet set;
  const Status s = set.AddBulk(file->colliders);
  for (const Collider& c : file->colliders) beyond = beyond || fuzz::BeyondCoreRange(c);
  HITBOX_FUZZ_CHECK(s.ok() || beyond, "LoadCaseFile accepted colliders AddBulk rejects: %s",
                    s.ToString().c_str());
  if (beyond) return 0;
  const std::vector<Query> queries = cases::Queries(*file);
  std::vector<QueryResult> results(queries.size());
  set.RunBatch(queries, results);
  const cases::Report report = cases::CheckAll(*file, results);
  (void)report.ToString(*file);
  return 0;
}
