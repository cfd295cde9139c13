// Starting and stopping hitboxd: RunServer (used by main) and HitboxServer
// (used by RunServer and by in-process tests).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include <grpcpp/grpcpp.h>

#include "hitbox/status.h"
#include "cq_server.h"
#include "inspector_api.h"
#include "metrics.h"
#include "service.h"

namespace hitbox::server {

/// Everything hitboxd's flags configure.
struct ServerOptions {
  /// Listen address, host:port ("127.0.0.1:0" picks a free port).
  std::string listen = "0.0.0.0:50051";
  ServiceOptions service;
  /// How long in-flight calls may run on after SIGINT/SIGTERM before being cancelled.
  std::chrono::milliseconds shutdown_grace{5000};
  /// Session files (--data-dir, --fsync); data_dir empty: sessions live in memory only.
  PersistOptions persist;
  /// Directory of shared maps (--maps, maps.h); empty: none. A bad file
  /// fails Start with an error naming it.
  std::string maps_dir;
  /// Create session "demo" with a small mixed world at start (unless restored from --data-dir).
  bool demo = false;
  /// When not empty, the bound port is written to this file once listening.
  std::string port_file;
  /// TLS: the server's certificate chain and private key (PEM files). Both
  /// empty: plaintext. The files are re-read every tls_reload_seconds, so a
  /// renewed certificate is served without a restart.
  std::string tls_cert;
  std::string tls_key;
  /// CA bundle (PEM) of client certificates: set, every client must present a
  /// certificate it signed (mutual TLS). Needs tls_cert/tls_key.
  std::string tls_client_ca;
  /// How often the TLS files are checked for changes, seconds (>= 1).
  unsigned tls_reload_seconds = 60;
  /// Most concurrent streams (calls) per client connection
  /// (GRPC_ARG_MAX_CONCURRENT_STREAMS); further calls wait for a free one. 0: no cap.
  uint32_t max_streams_per_connection = 256;
  /// When not empty, HOST:PORT of the HTTP endpoint (--http-listen, alias
  /// --metrics-listen): GET /metrics (docs/metrics.md) and the inspector at
  /// / (docs/inspector.md); port 0 picks a free one.
  std::string http_listen;
  /// The gRPC API that serves the unary Query rpc (--rpc-api, cq_server.h);
  /// every other rpc is on the callback API (docs/operations.md "Threads").
  /// Completion queues by default: a long Query then runs on hitboxd's own
  /// threads, not on gRPC's few callback threads, which Tick streams, the
  /// other rpcs and cancellations need (callback costs a served tick less).
  RpcApi rpc_api = RpcApi::kCq;
};

/// A running gRPC server with the Hitbox service, health checking and reflection.
class HitboxServer {
 public:
  /// Builds and starts the server. Fails when the address cannot be bound.
  static Result<std::unique_ptr<HitboxServer>> Start(const ServerOptions& options);
  ~HitboxServer();

  /// The bound port (the chosen one when listening on port 0).
  int port() const { return port_; }
  HitboxService& service() { return *service_; }
  /// The bound port of the HTTP endpoint (0: --http-listen not set).
  int metrics_port() const { return metrics_ == nullptr ? 0 : metrics_->port(); }
  /// The metrics text as the endpoint serves it.
  std::string RenderMetrics();
  /// A channel to this server that skips the network.
  std::shared_ptr<grpc::Channel> InProcessChannel();
  /// Health goes NOT_SERVING, then in-flight calls get until now + grace to
  /// finish before they are cancelled. Returns when the server has stopped.
  void Shutdown(std::chrono::milliseconds grace);
  /// Blocks until Shutdown() completed.
  void Wait();

 private:
  HitboxServer() = default;
  std::unique_ptr<HitboxService> service_;
  std::unique_ptr<InspectorApi> inspector_;   // answers the endpoint's /api/
  std::unique_ptr<MetricsEndpoint> metrics_;  // stopped before the service goes
  // Query's completion queues (--rpc-api cq; else null): shut down after the
  // server, destroyed after it.
  std::unique_ptr<CqQueryServer> cq_;
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
};

/// The server credentials `options` ask for: insecure, TLS, or mutual TLS.
/// Fails when a TLS file is missing or unreadable.
Result<std::shared_ptr<grpc::ServerCredentials>> MakeServerCredentials(const ServerOptions& options);

/// Adds the demo world (a few hundred mixed colliders) as session "demo".
/// `token`, when given, receives the session's token.
/// On map kDemoMap when --maps loaded it (see scripts/make_demo_map.py).
/// `summary` (optional) says what it holds, for the log.
Status CreateDemoSession(HitboxService& service, std::string* token = nullptr,
                         std::string* summary = nullptr);
/// The map the demo session is created on when it is loaded.
inline constexpr const char* kDemoMap = "arena";

/// Starts the server, waits for SIGINT or SIGTERM, shuts down gracefully.
/// Returns the process exit code (0 after a clean shutdown).
int RunServer(const ServerOptions& options);

}  // namespace hitbox::server
