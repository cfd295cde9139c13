// hitboxd's Prometheus metrics: a registry of atomic counters (Metrics), a
// gRPC server interceptor that counts calls, latencies, queries, hits and
// refusals of hitbox.v1.Hitbox without touching the rpc bodies, and the HTTP
// endpoint that serves the text exposition format (--metrics-listen).
// Every metric name, type and label is listed in docs/metrics.md.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <grpcpp/support/server_interceptor.h>
#include <grpcpp/support/status.h>

#include "hitbox/status.h"
#include "hitbox/v1/hitbox.pb.h"

namespace httplib {
class Server;
}

namespace hitbox::server {

/// Upper bounds (seconds) of the rpc latency histogram buckets, 50 µs to
/// 10 s; a +Inf bucket follows. Streams (ListColliders, Tick) count their
/// whole lifetime.
inline constexpr std::array<double, 17> kLatencyBucketsSeconds = {
    50e-6, 100e-6, 250e-6, 500e-6, 1e-3, 2.5e-3, 5e-3, 10e-3, 25e-3,
    50e-3, 100e-3, 250e-3, 500e-3, 1.0,  2.5,    5.0,  10.0};

/// Why a request was refused (label `reason` of hitbox_rejected_requests_total).
enum class RejectReason {
  kResourceExhausted,  ///< server capacity: calls or answer bytes in flight, --max-memory
  kBudget,             ///< the request's work budget (max nodes / pair tests per message)
  kAuth,               ///< UNAUTHENTICATED or PERMISSION_DENIED
  kInvalid,            ///< INVALID_ARGUMENT or OUT_OF_RANGE: a malformed request
  kLimits,             ///< a size limit: changes, queries, hits, colliders, sessions per message/server
};
inline constexpr size_t kRejectReasonCount = 5;
/// The label value of a reason ("resource_exhausted", "budget", ...).
const char* RejectReasonName(RejectReason reason);
/// The reason a failed call (or rejected tick) counts as, from its status;
/// nullopt when the status is not a refusal (OK, NOT_FOUND, CANCELLED, ...).
std::optional<RejectReason> ClassifyRejection(grpc::StatusCode code, std::string_view message);

/// Values read from the service when the endpoint is scraped.
struct MetricsGauges {
  uint64_t sessions = 0;
  uint64_t colliders = 0;
  /// Shared maps loaded (--maps).
  uint64_t maps = 0;
  /// Bytes the maps hold together (once, however many sessions use them).
  uint64_t map_memory_bytes = 0;
  /// Bytes of lag-compensation history (not implemented yet: always 0).
  uint64_t history_memory_bytes = 0;
  /// Bytes all sessions hold (--max-memory accounting).
  uint64_t session_memory_bytes = 0;
  /// Bytes of answers in flight (--max-inflight-bytes accounting).
  uint64_t answer_memory_bytes = 0;
};

/// The counters of one server. Every update is a relaxed atomic add, so
/// counting never blocks a query thread; Render reads them without locks.
class Metrics {
 public:
  /// Names the rpcs of hitbox.v1.Hitbox and the query kinds (Query's oneof)
  /// from the generated descriptors, so new ones are counted without edits.
  Metrics();
  Metrics(const Metrics&) = delete;
  Metrics& operator=(const Metrics&) = delete;

  /// Index of a full method name ("/hitbox.v1.Hitbox/Query"); -1 for methods
  /// of other services (health, reflection), which are not counted.
  int RpcIndex(std::string_view method) const;
  /// The rpc's short name ("Query").
  const std::string& RpcName(int rpc) const { return rpcs_[rpc]; }
  /// One finished call of `rpc` with `code` that took `seconds`.
  void ObserveCall(int rpc, grpc::StatusCode code, double seconds);
  /// Index of a query kind by its Query.kind oneof field number; -1 if unknown.
  int QueryKindIndex(int field_number) const;
  /// `count` answered queries of kind `kind` (QueryKindIndex).
  void AddQueries(int kind, uint64_t count);
  void AddHits(uint64_t hits) { hits_.fetch_add(hits, std::memory_order_relaxed); }
  /// The queries of a request counted by kind (index QueryKindIndex) into
  /// `per_kind` (cleared first), to be added once it is answered.
  void CountKinds(const google::protobuf::RepeatedPtrField<v1::Query>& queries,
                  std::vector<uint64_t>* per_kind) const;
  /// An answer sent: the queries of `per_kind` (CountKinds) and the hits of
  /// `results`. The interceptor counts the answers of Query and Tick; the
  /// completion-queue Query path (cq_server.h) counts its own, which gRPC
  /// serializes before interceptors see them.
  void AddAnswer(const std::vector<uint64_t>& per_kind,
                 const google::protobuf::RepeatedPtrField<v1::QueryResult>& results);
  /// Narrow-phase pair tests run by queries (answered or not).
  void AddPairTests(uint64_t n) { pair_tests_.fetch_add(n, std::memory_order_relaxed); }
  uint64_t pair_tests() const { return pair_tests_.load(std::memory_order_relaxed); }
  void AddRejected(RejectReason reason);
  void SessionExpired() { sessions_expired_.fetch_add(1, std::memory_order_relaxed); }
  void TickStreamOpened() { tick_streams_.fetch_add(1, std::memory_order_relaxed); }
  void TickStreamClosed() { tick_streams_.fetch_sub(1, std::memory_order_relaxed); }

  /// The Prometheus text exposition (format 0.0.4) of every metric.
  std::string Render(const MetricsGauges& gauges) const;

 private:
  static constexpr size_t kCodes = 17;  // grpc::StatusCode 0..16
  static constexpr size_t kBuckets = kLatencyBucketsSeconds.size() + 1;
  struct RpcCode {
    std::array<std::atomic<uint64_t>, kBuckets> buckets{};  // not cumulative
    std::atomic<uint64_t> sum_ns{0};
  };

  std::vector<std::string> rpcs_;
  std::vector<std::string> full_methods_;
  std::unique_ptr<RpcCode[]> calls_;  // rpcs_.size() x kCodes
  std::vector<std::string> kinds_;
  std::vector<int> kind_fields_;
  std::unique_ptr<std::atomic<uint64_t>[]> queries_;  // per kind
  std::array<std::atomic<uint64_t>, kRejectReasonCount> rejected_{};
  std::atomic<uint64_t> hits_{0};
  std::atomic<uint64_t> pair_tests_{0};
  std::atomic<uint64_t> sessions_expired_{0};
  std::atomic<int64_t> tick_streams_{0};
};

/// Creates a MetricsInterceptor for every call: calls and latency per rpc and
/// status code, queries per kind and hits from the responses of Query and
/// Tick, refusals by reason (also the in-band errors of ticks), open Tick
/// streams.
class MetricsInterceptorFactory final
    : public grpc::experimental::ServerInterceptorFactoryInterface {
 public:
  explicit MetricsInterceptorFactory(Metrics* metrics) : metrics_(metrics) {}
  grpc::experimental::Interceptor* CreateServerInterceptor(
      grpc::experimental::ServerRpcInfo* info) override;

 private:
  Metrics* metrics_;
};

/// Resident set size of this process in bytes (/proc/self/statm); 0 if unreadable.
uint64_t ProcessResidentBytes();

/// The HTTP endpoint (--http-listen): GET /metrics answers render() as
/// text/plain 0.0.4, plus the routes `add_routes` adds (the inspector), on
/// a few threads of its own (a request never runs on a query thread).
class MetricsEndpoint {
 public:
  /// Binds `host_port` ("127.0.0.1:9090", "[::]:0"; port 0 picks a free one)
  /// and starts serving. Fails, naming the address, when it cannot bind.
  /// `threads`: its workers (each open inspector stream holds one).
  static Result<std::unique_ptr<MetricsEndpoint>> Start(
      const std::string& host_port, std::function<std::string()> render,
      const std::function<void(httplib::Server*)>& add_routes = {}, size_t threads = 4);
  ~MetricsEndpoint();
  MetricsEndpoint(const MetricsEndpoint&) = delete;
  MetricsEndpoint& operator=(const MetricsEndpoint&) = delete;

  /// The bound port.
  int port() const { return port_; }

 private:
  MetricsEndpoint() = default;
  std::unique_ptr<httplib::Server> http_;
  std::thread thread_;
  int port_ = 0;
};

}  // namespace hitbox::server
