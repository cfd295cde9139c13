#include "server.h"

#include <pthread.h>
#include <signal.h>

#include <climits>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <random>
#include <thread>

#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/health_check_service_interface.h>
#include <grpcpp/security/server_credentials.h>
#include <grpcpp/security/tls_certificate_provider.h>
#include <grpcpp/security/tls_credentials_options.h>
#include <spdlog/spdlog.h>

#include "hitbox/wire/convert.h"
#include "inspector_http.h"

namespace hitbox::server {
namespace {

constexpr const char* kServiceName = "hitbox.v1.Hitbox";

void SetHealth(grpc::Server* server, bool serving) {
  if (grpc::HealthCheckServiceInterface* health = server->GetHealthCheckService()) {
    health->SetServingStatus(serving);
    health->SetServingStatus(kServiceName, serving);
  }
}

// Writes the port to `path` atomically (temp file + rename).
bool WritePortFile(const std::string& path, int port) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    if (!out) return false;
    out << port << "\n";
    if (!out.flush()) return false;
  }
  return std::rename(tmp.c_str(), path.c_str()) == 0;
}

// Fails unless `path` names a readable, non-empty file (a typo fails at start,
// not at the first handshake).
Status CheckPemFile(const std::string& path, const std::string& flag) {
  std::ifstream in(path);
  std::string line;
  if (!in || !std::getline(in, line)) {
    return Error{ErrorCode::kInvalidArgument, flag + ": cannot read " + path};
  }
  return Status::Ok();
}

}  // namespace

Result<std::shared_ptr<grpc::ServerCredentials>> MakeServerCredentials(
    const ServerOptions& options) {
  if (options.tls_cert.empty() && options.tls_key.empty()) {
    if (!options.tls_client_ca.empty()) {
      return Error{ErrorCode::kInvalidArgument,
                   "--tls-client-ca needs --tls-cert and --tls-key (mutual TLS is TLS)"};
    }
    return grpc::InsecureServerCredentials();
  }
  if (options.tls_cert.empty() || options.tls_key.empty()) {
    return Error{ErrorCode::kInvalidArgument, "TLS needs both --tls-cert and --tls-key"};
  }
  if (Status s = CheckPemFile(options.tls_cert, "--tls-cert"); !s.ok()) return s.error();
  if (Status s = CheckPemFile(options.tls_key, "--tls-key"); !s.ok()) return s.error();
  if (!options.tls_client_ca.empty()) {
    if (Status s = CheckPemFile(options.tls_client_ca, "--tls-client-ca"); !s.ok()) {
      return s.error();
    }
  }
  // The provider re-reads the files every tls_reload_seconds (certificate
  // rotation without a restart).
  auto provider = std::make_shared<grpc::experimental::FileWatcherCertificateProvider>(
      options.tls_key, options.tls_cert, options.tls_client_ca,
      std::max(1u, options.tls_reload_seconds));
  grpc::experimental::TlsServerCredentialsOptions tls(provider);
  tls.watch_identity_key_cert_pairs();
  if (!options.tls_client_ca.empty()) {
    tls.watch_root_certs();
    tls.set_cert_request_type(GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
  } else {
    tls.set_cert_request_type(GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE);
  }
  std::shared_ptr<grpc::ServerCredentials> creds = grpc::experimental::TlsServerCredentials(tls);
  if (creds == nullptr) {
    return Error{ErrorCode::kInvalidArgument, "cannot set up TLS with the given files"};
  }
  return creds;
}

Result<std::unique_ptr<HitboxServer>> HitboxServer::Start(const ServerOptions& options) {
  Result<std::shared_ptr<grpc::ServerCredentials>> creds = MakeServerCredentials(options);
  if (!creds.ok()) return creds.error();
  std::unique_ptr<SessionStore> store;
  if (!options.persist.data_dir.empty()) {
    Result<std::unique_ptr<SessionStore>> opened = SessionStore::Open(options.persist);
    if (!opened.ok()) return opened.error();
    store = std::move(*opened);
  }
  ServiceOptions service_options = options.service;
  if (!options.maps_dir.empty()) {
    Result<std::shared_ptr<const MapLibrary>> maps = MapLibrary::Load(options.maps_dir);
    if (!maps.ok()) return maps.error();
    for (const auto& m : (*maps)->maps()) {
      spdlog::info("map '{}' loaded from {}: {} colliders, {} triangles, {} bytes", m->id,
                   m->source, m->set->size(), m->triangles, m->memory_bytes());
    }
    service_options.maps = std::move(*maps);
  }
  std::unique_ptr<HitboxServer> s(new HitboxServer());
  s->service_ = std::make_unique<HitboxService>(service_options, std::move(store));
  // Before the port opens: no call sees a half-restored server.
  const size_t restored = s->service_->RecoverSessions();
  if (!options.persist.data_dir.empty()) {
    spdlog::info("persistence: --data-dir {} (--fsync {}): {} sessions restored",
                 options.persist.data_dir, FsyncPolicyName(options.persist.fsync), restored);
  }
  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  builder.AddListeningPort(options.listen, *creds, &s->port_);
  if (options.max_streams_per_connection > 0) {
    builder.AddChannelArgument(GRPC_ARG_MAX_CONCURRENT_STREAMS,
                               static_cast<int>(std::min<uint32_t>(
                                   options.max_streams_per_connection, INT_MAX)));
  }
  if (options.rpc_api == RpcApi::kCq) {
    // Takes Query onto completion queues; the service keeps every other rpc.
    s->cq_ = std::make_unique<CqQueryServer>(s->service_.get(), &builder, s->service_->threads());
  }
  builder.RegisterService(s->service_.get());
  std::vector<std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>> interceptors;
  interceptors.push_back(std::make_unique<MetricsInterceptorFactory>(&s->service_->metrics()));
  builder.experimental().SetInterceptorCreators(std::move(interceptors));
  if (!options.http_listen.empty()) {
    // Bound before the gRPC port, so a taken HTTP port fails the start cleanly.
    HitboxServer* self = s.get();
    s->inspector_ = std::make_unique<InspectorApi>(s->service_.get());
    const InspectorApi* api = s->inspector_.get();
    Result<std::unique_ptr<MetricsEndpoint>> endpoint = MetricsEndpoint::Start(
        options.http_listen, [self] { return self->RenderMetrics(); },
        [api](httplib::Server* http) { AddInspectorRoutes(http, api); },
        4 + kMaxInspectorStreams);  // 4 for requests, one per open stream
    if (!endpoint.ok()) return endpoint.error();
    s->metrics_ = std::move(*endpoint);
  }
  const uint64_t max_bytes = options.service.limits.max_message_bytes;
  builder.SetMaxReceiveMessageSize(static_cast<int>(std::min<uint64_t>(max_bytes, INT_MAX)));
  s->server_ = builder.BuildAndStart();
  if (s->server_ == nullptr || s->port_ == 0) {
    return Error{ErrorCode::kFailedPrecondition, "cannot listen on " + options.listen};
  }
  if (s->cq_ != nullptr) s->cq_->Start();
  SetHealth(s->server_.get(), true);
  return s;
}

std::string HitboxServer::RenderMetrics() {
  MetricsGauges g;
  const std::vector<std::shared_ptr<Session>> sessions = service_->sessions().List();
  g.sessions = sessions.size();
  for (const std::shared_ptr<Session>& session : sessions) g.colliders += session->collider_count();
  g.session_memory_bytes = service_->sessions().memory_bytes();
  g.answer_memory_bytes = service_->answer_memory().used();
  if (const auto& maps = service_->options().maps; maps != nullptr) {
    g.maps = maps->maps().size();
    g.map_memory_bytes = maps->memory_bytes();
  }
  return service_->metrics().Render(g);
}

HitboxServer::~HitboxServer() {
  if (inspector_ != nullptr) inspector_->Stop();  // open streams end at once
  metrics_.reset();
  if (server_ != nullptr) {
    server_->Shutdown(std::chrono::system_clock::now());
    server_->Wait();
  }
  if (cq_ != nullptr) cq_->Shutdown();  // no call left: drain the queues
  server_.reset();
}

std::shared_ptr<grpc::Channel> HitboxServer::InProcessChannel() {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(-1);
  return server_->InProcessChannel(args);
}

void HitboxServer::Shutdown(std::chrono::milliseconds grace) {
  SetHealth(server_.get(), false);
  if (inspector_ != nullptr) inspector_->Stop();
  server_->Shutdown(std::chrono::system_clock::now() + grace);
  if (cq_ != nullptr) cq_->Shutdown();  // every call is done: drain the queues
}

void HitboxServer::Wait() { server_->Wait(); }

Status CreateDemoSession(HitboxService& service, std::string* token, std::string* summary) {
  // On the demo map (examples/maps/arena.glb, served by `hitbox.sh run` with
  // --maps) when it is loaded: the arena's floor, walls and props are the
  // map's, and the session adds its own colliders from id 1001 on.
  const MapLibrary* maps = service.options().maps.get();
  const std::shared_ptr<const Map> arena = maps != nullptr ? maps->Find(kDemoMap) : nullptr;
  v1::CreateSessionRequest create;
  create.set_session_id("demo");
  if (arena != nullptr) create.set_map_id(kDemoMap);
  v1::SessionInfo info;
  if (grpc::Status st = service.DoCreateSession(create, &info); !st.ok()) {
    return wire::FromGrpcStatus(st);
  }
  if (token != nullptr) *token = info.token();
  // Without the map: a floor, then 300 seeded colliders of every kind above
  // it, on layers 0..3. On the map: the same 300 (ids 1002..1301), no floor.
  const uint64_t base = arena != nullptr ? 1000 : 0;
  std::mt19937_64 rng(2024);
  std::uniform_real_distribution<double> pos(-40.0, 40.0), height(0.5, 20.0), size(0.3, 2.5),
      angle(-M_PI, M_PI);
  v1::ApplyChangesRequest req;
  req.set_session_id("demo");
  if (arena == nullptr) {
    Collider floor;
    floor.id = 1;
    floor.shape = *Shape::MakeBox({50, 0.5, 50});
    floor.pose = Pose({0, -0.5, 0});
    wire::ToProto(floor, req.add_changes()->mutable_add());
  }
  for (uint64_t id = 2; id <= 301; ++id) {
    Collider c;
    c.id = base + id;
    switch (id % 4) {
      case 0: c.shape = *Shape::MakeSphere(size(rng)); break;
      case 1: c.shape = *Shape::MakeBox({size(rng), size(rng), size(rng)}); break;
      case 2: c.shape = *Shape::MakeCapsule(size(rng) * 0.5, size(rng)); break;
      default: c.shape = *Shape::MakeCylinder(size(rng), size(rng) * 0.5); break;
    }
    c.pose = Pose({pos(rng), height(rng), pos(rng)},
                  Quat::FromAxisAngle(Vec3(0.3, 1.0, 0.2).Normalized(), angle(rng)));
    c.layer = static_cast<uint32_t>(id % 4);
    c.user_data = 1000 + id;
    wire::ToProto(c, req.add_changes()->mutable_add());
  }
  v1::ApplyChangesResponse resp;
  if (grpc::Status st = service.DoApplyChanges(req, &resp); !st.ok()) {
    return wire::FromGrpcStatus(st);
  }
  if (summary != nullptr) {
    *summary = arena != nullptr
                   ? "is on map '" + std::string(kDemoMap) + "' (" +
                         std::to_string(arena->set->size()) + " colliders, " +
                         std::to_string(arena->triangles) + " triangles) and holds 300 " +
                         "colliders of its own"
                   : "holds 301 colliders";
  }
  return Status::Ok();
}

int RunServer(const ServerOptions& options) {
  // Block the stop signals in every thread (gRPC's threads inherit the mask);
  // one thread takes them with sigwait, so no work runs in a signal handler.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  Result<std::unique_ptr<HitboxServer>> started = HitboxServer::Start(options);
  if (!started.ok()) {
    spdlog::error("{}", started.error().message);
    return 1;
  }
  HitboxServer& server = **started;
  const ServerLimits& l = options.service.limits;
  const size_t threads = server.service().threads();
  const std::string host = options.listen.substr(0, options.listen.rfind(':'));
  const AuthOptions& auth = options.service.auth;
  const Authorizer& authorizer = server.service().authorizer();
  spdlog::info("security: {}; tokens {}; admin token {}; client certificates {}; sessions "
               "created by {}; max {} streams per connection, {} calls in flight",
               options.tls_cert.empty() ? "plaintext (no TLS)" : "TLS",
               authorizer.credentials_configured() ? "enforced"
                                                   : "not enforced (no credentials configured)",
               auth.admin_token.empty() ? "not configured" : "configured",
               auth.client_certs ? "required" : "not required",
               !auth.open_create && !auth.admin_token.empty() ? "the admin only" : "anyone",
               options.max_streams_per_connection, auth.max_in_flight);
  if (authorizer.protected_mode()) {
    spdlog::warn("protected mode: no credentials configured (--admin-token-file, "
                 "--tls-client-ca), so only loopback clients are served; pass --insecure to "
                 "serve every client without credentials");
  } else if (auth.insecure && auth.admin_token.empty() && !auth.client_certs) {
    spdlog::warn("--insecure: every client that reaches {} is served without credentials",
                 options.listen);
  }
  spdlog::info(
      "hitboxd listening on {} (port {}); limits: max_sessions={} max_colliders={} "
      "max_changes={} max_queries={} max_hits={} max_message_bytes={} max_memory={} "
      "session_idle_timeout={}; query threads={}; Query on the {} API; shutdown grace={}ms",
      options.listen, server.port(), l.max_sessions, l.session.max_colliders,
      l.session.max_changes_per_message, l.session.max_queries_per_message,
      l.session.max_hits_per_query, l.max_message_bytes,
      l.max_memory_bytes == 0 ? std::string("none") : std::to_string(l.max_memory_bytes),
      l.session.idle_timeout_ms == 0 ? std::string("never")
                                     : std::to_string(l.session.idle_timeout_ms) + "ms",
      threads,
      options.rpc_api == RpcApi::kCq
          ? "completion-queue (" + std::to_string(threads) + " polling threads)"
          : std::string("callback"),
      options.shutdown_grace.count());
  if (server.metrics_port() != 0) {
    const std::string http_host = options.http_listen.substr(0, options.http_listen.rfind(':'));
    spdlog::info("http: metrics at http://{}:{}/metrics, inspector at http://{}:{}/ "
                 "(docs/inspector.md); queries recorded: {}",
                 http_host, server.metrics_port(), http_host, server.metrics_port(),
                 options.service.record_query_ticks == 0
                     ? std::string("none (--record-queries N)")
                     : "the last " + std::to_string(options.service.record_query_ticks) +
                           " per session");
  }
  if (options.demo && server.service().sessions().Find("demo") != nullptr) {
    spdlog::info("demo: session 'demo' was restored from --data-dir; kept as it is");
  } else if (options.demo) {
    std::string token;
    std::string summary;
    if (Status s = CreateDemoSession(server.service(), &token, &summary); !s.ok()) {
      spdlog::error("demo world: {}", s.ToString());
    } else {
      const std::string addr =
          (host == "0.0.0.0" || host == "[::]" ? std::string("localhost") : host) + ":" +
          std::to_string(server.port());
      spdlog::info("demo: session 'demo' {}; its token is {}", summary, token);
      spdlog::info("demo: try: grpcurl {} -H 'authorization: Bearer {}' -d "
                   "'{{\"session_id\":\"demo\",\"queries\":[{{\"raycast\":{{\"origin\":{{\"x\":-45,"
                   "\"y\":5}},\"translation\":{{\"x\":90}}}}}}]}}' {} hitbox.v1.Hitbox/Query",
                   options.tls_cert.empty() ? "-plaintext" : "-cacert CA.pem", token, addr);
    }
  }
  if (!options.port_file.empty() && !WritePortFile(options.port_file, server.port())) {
    spdlog::error("cannot write the port file {}", options.port_file);
    server.Shutdown(std::chrono::milliseconds(0));
    server.Wait();
    return 1;
  }
  std::thread stopper([&] {
    int sig = 0;
    sigwait(&stop_signals, &sig);
    spdlog::info("received {}: health NOT_SERVING, finishing in-flight calls (grace {}ms)",
                 sig == SIGINT ? "SIGINT" : "SIGTERM", options.shutdown_grace.count());
    server.Shutdown(options.shutdown_grace);
  });
  server.Wait();
  stopper.join();
  spdlog::info("hitboxd stopped");
  return 0;
}

}  // namespace hitbox::server
