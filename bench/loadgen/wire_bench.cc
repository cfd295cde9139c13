// Cost of the service's per-batch work outside the collider set: proto ->
// core conversion of queries (with validation), core -> proto of results, and
// the protobuf (de)serialization, next to ColliderSet::RunBatch itself, on a
// generated 50,000-collider scene. Explains the service / in-process ratio.
#include <benchmark/benchmark.h>

#include "hitbox/loadgen.h"
#include "hitbox/v1/hitbox.pb.h"
#include "hitbox/wire/convert.h"

namespace hitbox {
namespace {

struct Fixture {
  std::vector<Collider> scene = loadgen::GenerateScene(loadgen::SceneOptions{});
  std::vector<Query> queries =
      loadgen::GenerateQueries(loadgen::SceneBounds(scene), loadgen::QueryMix{}, 4096, 7);
  ColliderSet set;
  Fixture() { (void)set.AddBulk(scene); }
};

Fixture& F() {
  static Fixture f;
  return f;
}

v1::QueryRequest Request(size_t n) {
  v1::QueryRequest req;
  req.set_session_id("bench");
  for (size_t i = 0; i < n; ++i) wire::ToProto(F().queries[i], req.add_queries());
  return req;
}

// Validating proto -> core conversion of a batch of queries.
void BM_QueriesFromProto(benchmark::State& state) {
  const v1::QueryRequest req = Request(static_cast<size_t>(state.range(0)));
  std::vector<Query> out;
  for (auto _ : state) {
    benchmark::DoNotOptimize(wire::FromProto(req.queries(), &out));
  }
  state.SetItemsProcessed(state.iterations() * state.range(0));
}
BENCHMARK(BM_QueriesFromProto)->Arg(1)->Arg(16)->Arg(256);

// Parsing a serialized QueryRequest (what gRPC does on receive).
void BM_ParseQueryRequest(benchmark::State& state) {
  const std::string bytes = Request(static_cast<size_t>(state.range(0))).SerializeAsString();
  v1::QueryRequest req;
  for (auto _ : state) benchmark::DoNotOptimize(req.ParseFromString(bytes));
  state.SetItemsProcessed(state.iterations() * state.range(0));
}
BENCHMARK(BM_ParseQueryRequest)->Arg(1)->Arg(16)->Arg(256);

// The collider set answering the batch (single thread).
void BM_RunBatch(benchmark::State& state) {
  const size_t n = static_cast<size_t>(state.range(0));
  std::vector<QueryResult> results(n);
  size_t pos = 0;
  for (auto _ : state) {
    if (pos + n > F().queries.size()) pos = 0;
    F().set.RunBatch(std::span<const Query>(F().queries.data() + pos, n), results);
    pos += n;
  }
  state.SetItemsProcessed(state.iterations() * state.range(0));
}
BENCHMARK(BM_RunBatch)->Arg(1)->Arg(16)->Arg(256);

// core -> proto of the answers plus serialization (what gRPC sends).
void BM_ResultsToProtoAndSerialize(benchmark::State& state) {
  const size_t n = static_cast<size_t>(state.range(0));
  std::vector<QueryResult> results(n);
  F().set.RunBatch(std::span<const Query>(F().queries.data(), n), results);
  std::string bytes;
  for (auto _ : state) {
    v1::QueryResponse resp;
    for (size_t i = 0; i < n; ++i) wire::ToProto(results[i], i, resp.add_results());
    resp.SerializeToString(&bytes);
    benchmark::DoNotOptimize(bytes);
  }
  state.SetItemsProcessed(state.iterations() * state.range(0));
}
BENCHMARK(BM_ResultsToProtoAndSerialize)->Arg(1)->Arg(16)->Arg(256);

}  // namespace
}  // namespace hitbox

BENCHMARK_MAIN();
