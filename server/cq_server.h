// The unary Query rpc on gRPC's asynchronous completion-queue API, polled by
// hitboxd's own threads (--rpc-api cq): one ServerCompletionQueue per thread,
// each call a small state machine driven by its tags (requested -> answered
// and finished, plus the call's done notice). The request handling is
// HitboxService::AnswerQuery, the same as on the callback API, so auth,
// limits, deadlines, metrics and error messages are the same.
//
// gRPC 1.51 serves each method by one API, fixed by the service object that
// registers it, and two service objects may share hitbox.v1.Hitbox only if
// each marks the other's methods "generic" (which needs a generic service
// registered too). So under --rpc-api cq HitboxService gives up Query
// (LeaveQueryToCompletionQueues) and serves every other rpc on the callback
// API as usual, while a second service object serves Query alone on the
// completion queues; the generic service only ever sees unknown methods.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string_view>
#include <thread>
#include <vector>

#include <grpcpp/generic/async_generic_service.h>
#include <grpcpp/grpcpp.h>

#include "service.h"

namespace hitbox::server {

/// The gRPC API that serves the unary Query rpc (--rpc-api).
enum class RpcApi {
  kCallback,  ///< gRPC's callback API and its threads, like every other rpc
  kCq,        ///< the completion-queue API on hitboxd's own polling threads (CqQueryServer)
};
/// "callback" or "cq"; nullopt for any other name.
std::optional<RpcApi> ParseRpcApi(std::string_view name);
/// The flag value naming `api`.
const char* RpcApiName(RpcApi api);

/// Serves Query on completion queues: built before the grpc::Server (it
/// registers its service and queues on the builder), started after it, and
/// shut down after grpc::Server::Shutdown returned.
class CqQueryServer {
 public:
  /// Takes Query from `service` (still to be registered on `builder` as
  /// usual), registers the service that serves it here, and adds `threads`
  /// (>= 1) completion queues. Call before builder->BuildAndStart();
  /// `service` outlives this.
  CqQueryServer(HitboxService* service, grpc::ServerBuilder* builder, size_t threads);
  /// Shutdown().
  ~CqQueryServer();
  CqQueryServer(const CqQueryServer&) = delete;
  CqQueryServer& operator=(const CqQueryServer&) = delete;

  /// Posts each queue's first requests and starts its polling thread; after
  /// a successful BuildAndStart.
  void Start();
  /// Waits for every call state to be freed (the calls the server matched
  /// before it stopped are answered and finished, the requests it failed
  /// come back), then shuts every queue down and returns once each is
  /// drained and its thread joined. Call after grpc::Server::Shutdown
  /// returned; idempotent.
  void Shutdown();
  /// Polling threads (one per completion queue).
  size_t threads() const { return pollers_.size(); }

  class QueryService;  // Query alone, on the asynchronous API (cq_server.cc)
  class Poller;        // one completion queue and its thread
  class Call;          // one Query call's state

 private:
  HitboxService* const service_;
  std::unique_ptr<QueryService> async_;
  std::unique_ptr<grpc::CallbackGenericService> unknown_;  // required beside async_
  std::vector<std::unique_ptr<Poller>> pollers_;
  std::vector<std::thread> threads_;
  std::atomic<int64_t> live_calls_{0};  // Call states alive (posted, running, finishing)
  bool started_ = false;
  bool stopped_ = false;
};

}  // namespace hitbox::server
