// The in-process baseline: ColliderSet::RunBatch on the scene the service is
// measured with (kept apart from loadgen.cc so that linking the gRPC parts
// does not pull in the collider set).
#include <algorithm>
#include <chrono>
#include <memory>

#include "hitbox/loadgen.h"

namespace hitbox::loadgen {

using Clock = std::chrono::steady_clock;

Result<InProcessReport> RunInProcess(const std::vector<Collider>& scene, const QueryMix& mix,
                                     size_t batch, uint64_t max_queries,
                                     std::chrono::milliseconds duration, size_t threads,
                                     uint64_t seed) {
  return RunInProcess(scene,
                      GenerateQueries(SceneBounds(scene), mix,
                                      std::max<size_t>(4096, std::max<size_t>(batch, 1) * 4), seed),
                      batch, max_queries, duration, threads);
}

Result<InProcessReport> RunInProcess(const std::vector<Collider>& scene,
                                     const std::vector<Query>& queries, size_t batch,
                                     uint64_t max_queries, std::chrono::milliseconds duration,
                                     size_t threads) {
  ColliderSet set;
  if (Status s = set.AddBulk(scene); !s.ok()) return Error(s.error());
  batch = std::max<size_t>(batch, 1);
  if (queries.size() < batch) {
    return Error{ErrorCode::kInvalidArgument, "fewer queries than one batch"};
  }
  std::unique_ptr<ThreadPool> pool;
  if (threads > 1) pool = std::make_unique<ThreadPool>(threads);
  std::vector<QueryResult> results(batch);
  InProcessReport r;
  const Clock::time_point start = Clock::now();
  size_t pos = 0;
  while (r.queries < max_queries && Clock::now() - start < duration) {
    if (pos + batch > queries.size()) pos = 0;
    for (QueryResult& qr : results) {
      qr.overlaps.clear();
      qr.hits.clear();
    }
    set.RunBatch(std::span<const Query>(queries.data() + pos, batch), results, pool.get());
    pos += batch;
    r.queries += batch;
  }
  r.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  if (r.seconds > 0) r.queries_per_s = static_cast<double>(r.queries) / r.seconds;
  return r;
}

}  // namespace hitbox::loadgen
