// hitbox::Client over gRPC: unary calls with the sync stub (deadline + retry
// loop on the calling thread), ListColliders with the sync reader, and the
// Tick stream with the callback API (tick_stream.cc). proto <-> core
// conversion is hitbox_wire's.
#include "hitbox/client.h"

#include <algorithm>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <thread>
#include <utility>

#include <grpcpp/grpcpp.h>

#include "client_internal.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "hitbox/v1/hitbox.grpc.pb.h"
#include "hitbox/wire/convert.h"
#include "hitbox/wire/packed.h"
#include "hitbox/wire/message_arena.h"
#include "hitbox/wire/session_limits.h"

namespace hitbox {
namespace {

namespace v1 = ::hitbox::v1;
using Clock = std::chrono::system_clock;
using Steady = std::chrono::steady_clock;

// Reads a whole PEM file; false when it cannot be read or is empty.
bool ReadFile(const std::string& path, std::string* out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::stringstream buf;
  buf << in.rdbuf();
  *out = buf.str();
  return !out->empty();
}

// The channel credentials `tls` asks for; *error names an unreadable file.
std::shared_ptr<grpc::ChannelCredentials> MakeCredentials(const TlsOptions& tls,
                                                          RpcStatus* error) {
  if (!tls.active()) return grpc::InsecureChannelCredentials();
  grpc::SslCredentialsOptions ssl;
  auto read = [&](const std::string& path, const char* field, std::string* out) {
    if (path.empty() || !error->ok()) return;
    if (!ReadFile(path, out)) {
      *error = RpcStatus(RpcCode::kFailedPrecondition,
                         std::string("tls.") + field + ": cannot read " + path);
    }
  };
  read(tls.ca_file, "ca_file", &ssl.pem_root_certs);
  read(tls.cert_file, "cert_file", &ssl.pem_cert_chain);
  read(tls.key_file, "key_file", &ssl.pem_private_key);
  if (error->ok() && tls.cert_file.empty() != tls.key_file.empty()) {
    *error = RpcStatus(RpcCode::kFailedPrecondition,
                       "tls: a client certificate needs both cert_file and key_file");
  }
  // On an error every call fails before it is sent (see Impl::Run); the
  // channel still verifies servers, so a token never goes out unprotected.
  if (!error->ok()) return grpc::SslCredentials(grpc::SslCredentialsOptions{});
  return grpc::SslCredentials(ssl);
}

std::shared_ptr<grpc::Channel> MakeChannel(const std::string& address,
                                           const ClientOptions& options, RpcStatus* error) {
  grpc::ChannelArguments args;
  if (!options.tls.server_name.empty()) {
    args.SetSslTargetNameOverride(options.tls.server_name);
  }
  args.SetMaxReceiveMessageSize(options.max_message_bytes);
  args.SetMaxSendMessageSize(options.max_message_bytes);
  const int min_ms = static_cast<int>(std::max<int64_t>(1, options.min_reconnect_backoff.count()));
  const int max_ms = static_cast<int>(
      std::max<int64_t>(min_ms, options.max_reconnect_backoff.count()));
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, min_ms);
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, min_ms);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, max_ms);
  return grpc::CreateCustomChannel(address, MakeCredentials(options.tls, error), args);
}

SessionInfo InfoFromProto(const v1::SessionInfo& s) {
  SessionInfo out;
  out.session_id = s.session_id();
  out.collider_count = s.collider_count();
  out.revision = s.revision();
  if (s.has_bounds()) out.bounds = wire::ResultFromProto(s.bounds());
  out.limits = wire::LimitsFromProto<SessionLimits>(s.limits());
  out.created_unix_ms = s.created_unix_ms();
  out.token = s.token();
  out.memory_bytes = s.memory_bytes();
  out.last_active_unix_ms = s.last_active_unix_ms();
  if (s.has_oldest_tick() && s.has_newest_tick()) {
    out.ticks = TickRange{s.oldest_tick(), s.newest_tick()};
  }
  out.map_id = s.map_id();
  out.map_collider_count = s.map_collider_count();
  for (const v1::WatchInfo& w : s.watches()) {
    SessionInfo::WatchInfo info;
    Result<Watch> watch = wire::FromProto(w.watch(), "watches");
    if (watch.ok()) info.state.watch = std::move(*watch);
    Result<Pose> pose = wire::FromProto(w.world_pose(), "world_pose");
    if (pose.ok()) info.state.world_pose = *pose;
    for (uint64_t id : w.inside()) info.state.inside.push_back({id, 0});
    info.inside_count = w.inside_count();
    out.watches.push_back(std::move(info));
  }
  return out;
}

void EventsFromProto(const google::protobuf::RepeatedPtrField<v1::WatchEvent>& in,
                     std::vector<WatchEvent>* out) {
  out->clear();
  out->reserve(static_cast<size_t>(in.size()));
  for (const v1::WatchEvent& e : in) out->push_back(wire::ResultFromProto(e));
}

ApplyResult ApplyFromProto(const v1::ApplyChangesResponse& resp) {
  ApplyResult out{resp.revision(), resp.collider_count(), {}, resp.events_truncated()};
  EventsFromProto(resp.events(), &out.events);
  return out;
}

MapInfo MapFromProto(const v1::MapInfo& m) {
  MapInfo out;
  out.map_id = m.map_id();
  out.source = m.source();
  out.sha256 = m.sha256();
  out.file_bytes = m.file_bytes();
  out.collider_count = m.collider_count();
  for (const auto& [kind, n] : m.colliders_by_kind()) out.colliders_by_kind[kind] = n;
  out.triangles = m.triangles();
  if (m.has_bounds()) out.bounds = wire::ResultFromProto(m.bounds());
  out.memory_bytes = m.memory_bytes();
  out.session_count = m.session_count();
  return out;
}

// Colliders of an answer; the server's data is valid, so a failure here means
// a broken server or a version mismatch, reported as INTERNAL.
RpcStatus CollidersFromProto(const wire::Repeated<v1::Collider>& in, std::vector<Collider>* out) {
  out->reserve(out->size() + static_cast<size_t>(in.size()));
  for (int i = 0; i < in.size(); ++i) {
    Result<Collider> c = wire::FromProto(in[i], "colliders[" + std::to_string(i) + "]");
    if (!c.ok()) {
      return {RpcCode::kInternal, "the server sent an invalid collider: " + c.error().message};
    }
    out->push_back(std::move(*c));
  }
  return {};
}

void ChangesToProto(std::span<const ColliderChange> changes,
                    wire::Repeated<v1::ColliderChange>* out) {
  out->Reserve(static_cast<int>(changes.size()));
  for (const ColliderChange& c : changes) wire::ToProto(c, out->Add());
}

}  // namespace

namespace internal {

RpcStatus FromGrpc(const grpc::Status& status) {
  if (status.ok()) return {};
  return {static_cast<RpcCode>(status.error_code()), status.error_message()};
}

RpcStatus ResultsFromProto(const wire::Repeated<v1::QueryResult>& in, size_t expected,
                           std::vector<QueryResult>* out) {
  if (static_cast<size_t>(in.size()) != expected) {
    return {RpcCode::kInternal, "the server answered " + std::to_string(in.size()) +
                                    " query results for " + std::to_string(expected) +
                                    " queries"};
  }
  // Decoded into the results already there: their buffers are reused.
  out->resize(expected);
  for (size_t i = 0; i < expected; ++i) {
    wire::ResultFromProto(in.Get(static_cast<int>(i)), &(*out)[i]);
  }
  return {};
}

RpcStatus QueriesToProto(std::span<const hitbox::Query> queries,
                         std::span<const ShapeFromCollider> shapes_from,
                         wire::Repeated<v1::Query>* out) {
  const int first = out->size();
  out->Reserve(first + static_cast<int>(queries.size()));
  if (shapes_from.empty()) {
    for (size_t i = 0; i < queries.size(); ++i) {
      v1::Query* q = out->Add();
      wire::ToProto(queries[i], q);  // the query's own tag included
    }
    return {};
  }
  // Collider ids by query index (0: none), for the few that name one.
  std::vector<const ShapeFromCollider*> from(queries.size(), nullptr);
  for (size_t k = 0; k < shapes_from.size(); ++k) {
    const size_t i = shapes_from[k].query_index;
    if (i >= queries.size()) {
      return {RpcCode::kInvalidArgument,
              "shapes_from[" + std::to_string(k) + "].query_index: " + std::to_string(i) +
                  " is past the " + std::to_string(queries.size()) + " queries"};
    }
    from[i] = &shapes_from[k];
  }
  for (size_t i = 0; i < queries.size(); ++i) {
    v1::Query* q = out->Add();
    wire::ToProto(queries[i], q, /*shape_and_pose=*/from[i] == nullptr);
    if (from[i] != nullptr) q->set_shape_from_collider(from[i]->collider_id);
  }
  return {};
}

RpcStatus TickToProto(const std::string& session_id, uint64_t tick,
                      std::span<const ColliderChange> changes,
                      std::span<const hitbox::Query> queries,
                      std::span<const ShapeFromCollider> shapes_from, v1::TickRequest* out) {
  out->set_session_id(session_id);
  out->set_tick(tick);
  ChangesToProto(changes, out->mutable_changes());
  return QueriesToProto(queries, shapes_from, out->mutable_queries());
}

RpcStatus TickToPacked(const std::string& session_id, uint64_t tick,
                       std::span<const ColliderChange> changes,
                       std::span<const hitbox::Query> queries,
                       std::span<const ShapeFromCollider> shapes_from,
                       std::vector<std::optional<uint64_t>>* from, v1::TickRequest* out) {
  from->clear();
  if (!shapes_from.empty()) {
    from->resize(queries.size());
    for (size_t k = 0; k < shapes_from.size(); ++k) {
      const size_t i = shapes_from[k].query_index;
      if (i >= queries.size()) {
        return {RpcCode::kInvalidArgument,
                "shapes_from[" + std::to_string(k) + "].query_index: " + std::to_string(i) +
                    " is past the " + std::to_string(queries.size()) + " queries"};
      }
      (*from)[i] = shapes_from[k].collider_id;
    }
  }
  out->set_session_id(session_id);
  out->set_tick(tick);
  ChangesToProto(changes, out->mutable_changes());
  wire::ToPacked(queries, *from, out->mutable_packed(), out->mutable_queries());
  out->set_packed_results(true);
  return {};
}

}  // namespace internal

struct Client::Impl {
  ClientOptions options;
  std::string address;
  std::shared_ptr<grpc::Channel> channel;
  std::unique_ptr<v1::Hitbox::Stub> stub;
  std::unique_ptr<grpc::health::v1::Health::Stub> health_stub;
  // What the server takes (the packed tick form), asked by the first tick stream.
  std::shared_ptr<internal::ServerFeatures> features;
  std::mutex rng_mu;
  std::mt19937_64 rng;
  // Set when the options could not be applied (an unreadable TLS file): every call fails with it.
  RpcStatus setup_error;
  mutable std::mutex tokens_mu;
  std::map<std::string, std::string, std::less<>> tokens;  // session id -> token

  Impl(ClientOptions opts, std::string addr, std::shared_ptr<grpc::Channel> ch)
      : options(std::move(opts)), address(std::move(addr)), channel(std::move(ch)),
        stub(v1::Hitbox::NewStub(channel)),
        health_stub(grpc::health::v1::Health::NewStub(channel)),
        features(std::make_shared<internal::ServerFeatures>(channel)),
        rng(options.jitter_seed != 0 ? options.jitter_seed
                                     : (uint64_t{std::random_device{}()} << 32) ^
                                           std::random_device{}()) {}

  // The token for a call on `session_id` (empty id: a server-wide call).
  std::string TokenFor(std::string_view session_id) const {
    if (!session_id.empty()) {
      std::lock_guard<std::mutex> lock(tokens_mu);
      const auto it = tokens.find(session_id);
      if (it != tokens.end()) return it->second;
    }
    return options.token;
  }

  void Prepare(grpc::ClientContext* ctx, Clock::time_point deadline, const CallOptions& call,
               const std::string& token) const {
    ctx->set_deadline(deadline);
    if (!token.empty()) ctx->AddMetadata("authorization", "Bearer " + token);
    if (options.wait_for_ready || call.wait_for_ready) ctx->set_wait_for_ready(true);
  }

  // Wait before attempt `failed_attempt + 1` (see RetryPolicy).
  std::chrono::milliseconds Backoff(int failed_attempt) {
    const RetryPolicy& p = options.retry;
    double ms = static_cast<double>(p.initial_backoff.count());
    const double mult = std::max(1.0, p.multiplier);
    for (int i = 1; i < failed_attempt && ms < static_cast<double>(p.max_backoff.count()); ++i) {
      ms *= mult;
    }
    ms = std::min(ms, static_cast<double>(p.max_backoff.count()));
    const double jitter = std::clamp(p.jitter, 0.0, 1.0);
    double u;
    {
      std::lock_guard<std::mutex> lock(rng_mu);
      u = std::uniform_real_distribution<double>(-1.0, 1.0)(rng);
    }
    ms *= 1.0 + jitter * u;
    return std::chrono::milliseconds(static_cast<int64_t>(std::max(0.0, ms)));
  }

  // Runs attempt(ctx) until it succeeds, fails with anything but UNAVAILABLE,
  // is not retryable, runs out of attempts, or the next wait would pass the
  // deadline. `retryable` may be cleared by the attempt (e.g. once a stream
  // has delivered data).
  // `session_id` picks the token sent (TokenFor).
  template <typename Attempt>
  RpcStatus Run(std::string_view method, bool retryable, const CallOptions& call,
                std::string_view session_id, Attempt&& attempt) {
    if (!setup_error.ok()) return setup_error;
    const std::string token = TokenFor(session_id);
    const auto timeout = call.timeout.value_or(
        std::chrono::duration_cast<std::chrono::nanoseconds>(options.default_timeout));
    // gRPC gets a wall-clock deadline; local checks use the steady clock.
    const Clock::time_point deadline =
        Clock::now() + std::chrono::duration_cast<Clock::duration>(timeout);
    const Steady::time_point steady_deadline =
        Steady::now() + std::chrono::duration_cast<Steady::duration>(timeout);
    const int max_attempts = std::max(1, options.retry.max_attempts);
    for (int n = 1;; ++n) {
      grpc::ClientContext ctx;
      Prepare(&ctx, deadline, call, token);
      // gRPC rounds deadlines up to whole milliseconds; a call whose deadline
      // has already passed is not sent at all.
      if (Steady::now() >= steady_deadline) {
        return {RpcCode::kDeadlineExceeded,
                std::string(method) + ": the deadline passed before attempt " +
                    std::to_string(n) + " could be sent"};
      }
      const RpcStatus status = internal::FromGrpc(attempt(&ctx, &retryable));
      if (status.ok() || status.code() != RpcCode::kUnavailable || !retryable ||
          !call.allow_retry || n >= max_attempts) {
        return status;
      }
      const std::chrono::milliseconds wait = Backoff(n);
      if (Steady::now() + wait >= steady_deadline) return status;
      if (options.on_retry) options.on_retry(method, n, status, wait);
      std::this_thread::sleep_for(wait);
    }
  }

  template <typename Request, typename Response>
  RpcStatus Unary(std::string_view method, bool retryable, const CallOptions& call,
                  grpc::Status (v1::Hitbox::Stub::*fn)(grpc::ClientContext*, const Request&,
                                                        Response*),
                  const Request& request, Response* response) {
    std::string_view session_id;
    if constexpr (requires { request.session_id(); }) session_id = request.session_id();
    if constexpr (std::is_same_v<Request, v1::CreateSessionRequest>) session_id = {};
    return Run(method, retryable, call, session_id, [&](grpc::ClientContext* ctx, bool*) {
      response->Clear();
      return (stub.get()->*fn)(ctx, request, response);
    });
  }

  std::unique_ptr<TickStream> OpenTickStream(std::string session_id,
                                             const TickStreamOptions& tick_options) {
    std::string token = TokenFor(session_id);
    auto probe_timeout =
        std::chrono::duration_cast<std::chrono::nanoseconds>(options.default_timeout);
    if (tick_options.timeout) probe_timeout = std::min(probe_timeout, *tick_options.timeout);
    return internal::StartTickStream({channel, std::move(session_id), tick_options,
                                      options.wait_for_ready, std::move(token), features,
                                      probe_timeout});
  }
};

Client::Client(const std::string& address, ClientOptions options) {
  RpcStatus error;
  std::shared_ptr<grpc::Channel> channel = MakeChannel(address, options, &error);
  impl_ = std::make_unique<Impl>(std::move(options), address, std::move(channel));
  impl_->setup_error = std::move(error);
}

Client::Client(std::shared_ptr<grpc::Channel> channel, ClientOptions options)
    : impl_(std::make_unique<Impl>(std::move(options), std::string(), std::move(channel))) {}

Client::~Client() = default;

const ClientOptions& Client::options() const { return impl_->options; }
const std::string& Client::address() const { return impl_->address; }

// --- Sessions ---------------------------------------------------------------

RpcResult<SessionInfo> Client::CreateSession(const SessionSpec& spec, const CallOptions& call) {
  v1::CreateSessionRequest req;
  req.set_session_id(spec.session_id);
  req.set_map_id(spec.map_id);
  wire::LimitsToProto(spec.limits, req.mutable_limits());
  v1::SessionInfo resp;
  // With an explicit id a retry cannot create a second session (at worst it
  // answers ALREADY_EXISTS); without one it could, so it is never retried.
  const bool retryable = !spec.session_id.empty();
  RpcStatus s = impl_->Unary("CreateSession", retryable, call,
                             &v1::Hitbox::Stub::CreateSession, req, &resp);
  if (!s.ok()) return s;
  if (!resp.token().empty()) SetSessionToken(resp.session_id(), resp.token());
  return InfoFromProto(resp);
}

void Client::SetSessionToken(std::string session_id, std::string token) {
  std::lock_guard<std::mutex> lock(impl_->tokens_mu);
  if (token.empty()) {
    impl_->tokens.erase(session_id);
  } else {
    impl_->tokens[std::move(session_id)] = std::move(token);
  }
}

std::string Client::SessionToken(std::string_view session_id) const {
  return impl_->TokenFor(session_id);
}

RpcResult<SessionInfo> Client::CreateSession(std::string session_id, const CallOptions& call) {
  return CreateSession(SessionSpec{std::move(session_id), {}, {}}, call);
}

const char* HealthStatusName(HealthStatus status) {
  switch (status) {
    case HealthStatus::kUnknown: return "UNKNOWN";
    case HealthStatus::kServing: return "SERVING";
    case HealthStatus::kNotServing: return "NOT_SERVING";
    case HealthStatus::kServiceUnknown: return "SERVICE_UNKNOWN";
  }
  return "UNKNOWN";
}

RpcResult<HealthStatus> Client::CheckHealth(std::string_view service, const CallOptions& call) {
  grpc::health::v1::HealthCheckRequest req;
  req.set_service(std::string(service));
  grpc::health::v1::HealthCheckResponse resp;
  RpcStatus s = impl_->Run("Health.Check", true, call, {}, [&](grpc::ClientContext* ctx, bool*) {
    resp.Clear();
    return impl_->health_stub->Check(ctx, req, &resp);
  });
  if (!s.ok()) return s;
  return static_cast<HealthStatus>(resp.status());
}

RpcResult<SessionInfo> Client::GetSession(std::string_view session_id, const CallOptions& call) {
  v1::GetSessionRequest req;
  req.set_session_id(std::string(session_id));
  v1::SessionInfo resp;
  RpcStatus s = impl_->Unary("GetSession", true, call, &v1::Hitbox::Stub::GetSession, req, &resp);
  if (!s.ok()) return s;
  return InfoFromProto(resp);
}

RpcResult<std::vector<SessionInfo>> Client::ListSessions(const CallOptions& call) {
  v1::ListSessionsRequest req;
  v1::ListSessionsResponse resp;
  RpcStatus s =
      impl_->Unary("ListSessions", true, call, &v1::Hitbox::Stub::ListSessions, req, &resp);
  if (!s.ok()) return s;
  std::vector<SessionInfo> out;
  out.reserve(static_cast<size_t>(resp.sessions_size()));
  for (const v1::SessionInfo& info : resp.sessions()) out.push_back(InfoFromProto(info));
  return out;
}

RpcResult<std::vector<MapInfo>> Client::ListMaps(const CallOptions& call) {
  v1::ListMapsRequest req;
  v1::ListMapsResponse resp;
  RpcStatus s = impl_->Unary("ListMaps", true, call, &v1::Hitbox::Stub::ListMaps, req, &resp);
  if (!s.ok()) return s;
  std::vector<MapInfo> out;
  for (const v1::MapInfo& m : resp.maps()) out.push_back(MapFromProto(m));
  return out;
}

RpcResult<MapInfo> Client::GetMap(std::string_view map_id, const CallOptions& call) {
  v1::GetMapRequest req;
  req.set_map_id(std::string(map_id));
  v1::MapInfo resp;
  RpcStatus s = impl_->Unary("GetMap", true, call, &v1::Hitbox::Stub::GetMap, req, &resp);
  if (!s.ok()) return s;
  return MapFromProto(resp);
}

RpcStatus Client::DeleteSession(std::string_view session_id, const CallOptions& call) {
  v1::DeleteSessionRequest req;
  req.set_session_id(std::string(session_id));
  v1::DeleteSessionResponse resp;
  RpcStatus s =
      impl_->Unary("DeleteSession", false, call, &v1::Hitbox::Stub::DeleteSession, req, &resp);
  if (s.ok()) SetSessionToken(std::string(session_id), {});
  return s;
}

// --- Colliders --------------------------------------------------------------

RpcResult<ApplyResult> Client::ApplyChanges(std::string_view session_id,
                                            std::span<const ColliderChange> changes,
                                            std::optional<uint64_t> expected_revision,
                                            const CallOptions& call) {
  v1::ApplyChangesRequest req;
  req.set_session_id(std::string(session_id));
  ChangesToProto(changes, req.mutable_changes());
  if (expected_revision) req.set_expected_revision(*expected_revision);
  v1::ApplyChangesResponse resp;
  RpcStatus s =
      impl_->Unary("ApplyChanges", false, call, &v1::Hitbox::Stub::ApplyChanges, req, &resp);
  if (!s.ok()) return s;
  return ApplyFromProto(resp);
}

RpcResult<ApplyResult> Client::AddColliders(std::string_view session_id,
                                            std::span<const Collider> colliders,
                                            const CallOptions& call) {
  std::vector<ColliderChange> changes;
  changes.reserve(colliders.size());
  for (const Collider& c : colliders) changes.push_back(ColliderChange::Add(c));
  return ApplyChanges(session_id, changes, std::nullopt, call);
}

RpcResult<ApplyResult> Client::MoveCollider(std::string_view session_id, uint64_t collider_id,
                                            const Pose& pose, const CallOptions& call) {
  const ColliderChange change = ColliderChange::Move(collider_id, pose);
  return ApplyChanges(session_id, std::span<const ColliderChange>(&change, 1), std::nullopt, call);
}

RpcResult<ApplyResult> Client::RemoveColliders(std::string_view session_id,
                                               std::span<const uint64_t> collider_ids,
                                               const CallOptions& call) {
  std::vector<ColliderChange> changes;
  changes.reserve(collider_ids.size());
  for (uint64_t id : collider_ids) changes.push_back(ColliderChange::Remove(id));
  return ApplyChanges(session_id, changes, std::nullopt, call);
}

RpcResult<ColliderSnapshot> Client::GetColliders(std::string_view session_id,
                                                 std::span<const uint64_t> collider_ids,
                                                 const CallOptions& call) {
  v1::GetCollidersRequest req;
  req.set_session_id(std::string(session_id));
  req.mutable_ids()->Add(collider_ids.begin(), collider_ids.end());
  v1::GetCollidersResponse resp;
  RpcStatus s =
      impl_->Unary("GetColliders", true, call, &v1::Hitbox::Stub::GetColliders, req, &resp);
  if (!s.ok()) return s;
  ColliderSnapshot out;
  out.revision = resp.revision();
  if (RpcStatus c = CollidersFromProto(resp.colliders(), &out.colliders); !c.ok()) return c;
  return out;
}

RpcResult<ColliderSnapshot> Client::ListColliders(std::string_view session_id, uint32_t page_size,
                                                  const CallOptions& call, bool include_map) {
  ColliderSnapshot out;
  bool first = true;
  // Collecting everything makes the whole stream idempotent: a retry starts over.
  RpcStatus conversion;
  v1::ListCollidersRequest req;
  req.set_session_id(std::string(session_id));
  req.set_page_size(page_size);
  req.set_include_map(include_map);
  RpcStatus s = impl_->Run("ListColliders", true, call, session_id,
                           [&](grpc::ClientContext* ctx, bool*) {
    out = ColliderSnapshot{};
    first = true;
    std::unique_ptr<grpc::ClientReader<v1::ListCollidersResponse>> reader =
        impl_->stub->ListColliders(ctx, req);
    v1::ListCollidersResponse page;
    while (reader->Read(&page)) {
      if (first) {
        out.revision = page.revision();
        out.colliders.reserve(static_cast<size_t>(std::min<uint64_t>(page.total(), 1u << 20)));
        first = false;
      }
      conversion = CollidersFromProto(page.colliders(), &out.colliders);
      if (!conversion.ok()) {
        ctx->TryCancel();
        break;
      }
    }
    return reader->Finish();
  });
  if (!conversion.ok()) return conversion;
  if (!s.ok()) return s;
  return out;
}

RpcStatus Client::ListColliders(std::string_view session_id, const ColliderPageCallback& on_page,
                                uint32_t page_size, const CallOptions& call) {
  v1::ListCollidersRequest req;
  req.set_session_id(std::string(session_id));
  req.set_page_size(page_size);
  RpcStatus conversion;
  bool stopped = false;
  RpcStatus s =
      impl_->Run("ListColliders", true, call, session_id,
                 [&](grpc::ClientContext* ctx, bool* retryable) {
        std::unique_ptr<grpc::ClientReader<v1::ListCollidersResponse>> reader =
            impl_->stub->ListColliders(ctx, req);
        v1::ListCollidersResponse msg;
        while (reader->Read(&msg)) {
          *retryable = false;  // the caller has seen data: a retry would repeat it
          ColliderPage page;
          page.revision = msg.revision();
          page.total = msg.total();
          conversion = CollidersFromProto(msg.colliders(), &page.colliders);
          if (!conversion.ok() || !on_page(page)) {
            stopped = true;
            ctx->TryCancel();
            break;
          }
        }
        return reader->Finish();
      });
  if (!conversion.ok()) return conversion;
  if (stopped) return {};
  return s;
}

// --- Watches ----------------------------------------------------------------

RpcStatus Client::WatchEvents(std::string_view session_id, std::span<const uint64_t> watch_ids,
                              const WatchEventCallback& on_batch, const CallOptions& call,
                              const std::function<void()>& on_registered) {
  v1::WatchEventsRequest req;
  req.set_session_id(std::string(session_id));
  req.mutable_watch_ids()->Assign(watch_ids.begin(), watch_ids.end());
  bool stopped = false;
  RpcStatus s = impl_->Run("WatchEvents", false, call, session_id,
                           [&](grpc::ClientContext* ctx, bool* retryable) {
    *retryable = false;  // events already handed out would be lost or repeated
    std::unique_ptr<grpc::ClientReader<v1::WatchEventsResponse>> reader =
        impl_->stub->WatchEvents(ctx, req);
    reader->WaitForInitialMetadata();  // sent once the stream is registered (or it failed)
    if (on_registered) on_registered();
    v1::WatchEventsResponse msg;
    WatchEventBatch batch;
    while (reader->Read(&msg)) {
      batch.revision = msg.revision();
      batch.events_truncated = msg.events_truncated();
      EventsFromProto(msg.events(), &batch.events);
      if (!on_batch(batch)) {
        stopped = true;
        ctx->TryCancel();
        break;
      }
    }
    return reader->Finish();
  });
  if (stopped) return {};
  return s;
}

// --- Queries ----------------------------------------------------------------

RpcResult<QueryBatchResult> Client::Query(std::string_view session_id,
                                          std::span<const hitbox::Query> queries,
                                          const CallOptions& call) {
  return Query(session_id, queries, {}, call);
}

RpcResult<QueryBatchResult> Client::Query(std::string_view session_id,
                                          std::span<const hitbox::Query> queries,
                                          std::span<const ShapeFromCollider> shapes_from,
                                          const CallOptions& call) {
  v1::QueryRequest req;
  req.set_session_id(std::string(session_id));
  if (RpcStatus s = internal::QueriesToProto(queries, shapes_from, req.mutable_queries());
      !s.ok()) {
    return s;
  }
  v1::QueryResponse resp;
  const bool applies = std::any_of(queries.begin(), queries.end(), [](const hitbox::Query& q) {
    const auto* m = std::get_if<MoveQuery>(&q);
    return m != nullptr && m->apply_to_id.has_value();
  });
  RpcStatus s = impl_->Unary("Query", /*idempotent=*/!applies, call, &v1::Hitbox::Stub::Query,
                             req, &resp);
  if (!s.ok()) return s;
  QueryBatchResult out;
  out.revision = resp.revision();
  if (RpcStatus r = internal::ResultsFromProto(resp.results(), queries.size(), &out.results);
      !r.ok()) {
    return r;
  }
  return out;
}

RpcStatus Client::Query(std::string_view session_id, std::span<const hitbox::Query> queries,
                        std::span<const ShapeFromCollider> shapes_from, QueryBatchResult* out,
                        const CallOptions& call) {
  if (out == nullptr) return {RpcCode::kInvalidArgument, "Query: out is null"};
  // The request and the response on one arena, freed at once.
  wire::MessageArena arena;
  v1::QueryRequest* req = arena.Fresh<v1::QueryRequest>();
  req->set_session_id(std::string(session_id));
  if (RpcStatus s = internal::QueriesToProto(queries, shapes_from, req->mutable_queries());
      !s.ok()) {
    return s;
  }
  v1::QueryResponse* resp =
      google::protobuf::Arena::CreateMessage<v1::QueryResponse>(req->GetArena());
  const bool applies = std::any_of(queries.begin(), queries.end(), [](const hitbox::Query& q) {
    const auto* m = std::get_if<MoveQuery>(&q);
    return m != nullptr && m->apply_to_id.has_value();
  });
  RpcStatus s = impl_->Unary("Query", /*idempotent=*/!applies, call, &v1::Hitbox::Stub::Query,
                             *req, resp);
  if (!s.ok()) return s;
  out->revision = resp->revision();
  return internal::ResultsFromProto(resp->results(), queries.size(), &out->results);
}

RpcResult<ApplyResult> Client::ApplyTick(std::string_view session_id, uint64_t tick,
                                         std::span<const ColliderChange> changes,
                                         const CallOptions& call) {
  v1::ApplyChangesRequest req;
  req.set_session_id(std::string(session_id));
  ChangesToProto(changes, req.mutable_changes());
  req.set_tick(tick);
  v1::ApplyChangesResponse resp;
  RpcStatus s =
      impl_->Unary("ApplyChanges", false, call, &v1::Hitbox::Stub::ApplyChanges, req, &resp);
  if (!s.ok()) return s;
  return ApplyFromProto(resp);
}

RpcResult<QueryBatchResult> Client::Rewound::Query(std::string_view session_id,
                                                   std::span<const hitbox::Query> queries,
                                                   const CallOptions& call) const {
  std::vector<hitbox::Query> at(queries.begin(), queries.end());
  for (hitbox::Query& q : at) {
    std::visit([this](auto& x) { if (!x.at_tick) x.at_tick = tick_; }, q);
  }
  return client_->Query(session_id, at, call);
}

RpcResult<std::vector<OverlapHit>> Client::Rewound::Overlap(std::string_view session_id,
                                                            const Shape& shape, const Pose& pose,
                                                            const QueryFilter& filter,
                                                            bool want_contact,
                                                            const CallOptions& call) const {
  const hitbox::Query q = OverlapQuery{shape, pose, filter, want_contact, tick_};
  RpcResult<QueryBatchResult> r = client_->Query(session_id, std::span(&q, 1), call);
  if (!r.ok()) return r.status();
  return std::move(r->results.front().overlaps);
}

RpcResult<std::optional<CastHit>> Client::Rewound::Sweep(std::string_view session_id,
                                                         const Shape& shape, const Pose& pose,
                                                         const Vec3& translation,
                                                         const QueryFilter& filter,
                                                         const CallOptions& call) const {
  const hitbox::Query q = CastQuery{shape, pose, translation, filter, false, tick_};
  RpcResult<QueryBatchResult> r = client_->Query(session_id, std::span(&q, 1), call);
  if (!r.ok()) return r.status();
  const std::vector<CastHit>& hits = r->results.front().hits;
  if (hits.empty()) return std::optional<CastHit>();
  return std::optional<CastHit>(hits.front());
}

RpcResult<std::optional<CastHit>> Client::Rewound::Raycast(std::string_view session_id,
                                                           const Vec3& origin,
                                                           const Vec3& translation,
                                                           const QueryFilter& filter,
                                                           const CallOptions& call) const {
  const hitbox::Query q = RayQuery{origin, translation, filter, false, tick_};
  RpcResult<QueryBatchResult> r = client_->Query(session_id, std::span(&q, 1), call);
  if (!r.ok()) return r.status();
  const std::vector<CastHit>& hits = r->results.front().hits;
  if (hits.empty()) return std::optional<CastHit>();
  return std::optional<CastHit>(hits.front());
}

RpcResult<std::vector<OverlapHit>> Client::Overlap(std::string_view session_id,
                                                   const Shape& shape, const Pose& pose,
                                                   const QueryFilter& filter, bool want_contact,
                                                   const CallOptions& call) {
  const hitbox::Query q = OverlapQuery{shape, pose, filter, want_contact};
  RpcResult<QueryBatchResult> r = Query(session_id, std::span<const hitbox::Query>(&q, 1), call);
  if (!r.ok()) return r.status();
  return std::move(r->results.front().overlaps);
}

RpcResult<std::vector<CastHit>> Client::SweepAll(std::string_view session_id, const Shape& shape,
                                                 const Pose& pose, const Vec3& translation,
                                                 const QueryFilter& filter,
                                                 const CallOptions& call) {
  const hitbox::Query q = CastQuery{shape, pose, translation, filter, /*all_hits=*/true};
  RpcResult<QueryBatchResult> r = Query(session_id, std::span<const hitbox::Query>(&q, 1), call);
  if (!r.ok()) return r.status();
  return std::move(r->results.front().hits);
}

RpcResult<std::optional<CastHit>> Client::Sweep(std::string_view session_id, const Shape& shape,
                                                const Pose& pose, const Vec3& translation,
                                                const QueryFilter& filter,
                                                const CallOptions& call) {
  const hitbox::Query q = CastQuery{shape, pose, translation, filter, /*all_hits=*/false};
  RpcResult<QueryBatchResult> r = Query(session_id, std::span<const hitbox::Query>(&q, 1), call);
  if (!r.ok()) return r.status();
  const std::vector<CastHit>& hits = r->results.front().hits;
  if (hits.empty()) return std::optional<CastHit>();
  return std::optional<CastHit>(hits.front());
}

RpcResult<std::optional<CastHit>> Client::Raycast(std::string_view session_id, const Vec3& origin,
                                                  const Vec3& translation,
                                                  const QueryFilter& filter,
                                                  const CallOptions& call) {
  const hitbox::Query q = RayQuery{origin, translation, filter, /*all_hits=*/false};
  RpcResult<QueryBatchResult> r = Query(session_id, std::span<const hitbox::Query>(&q, 1), call);
  if (!r.ok()) return r.status();
  const std::vector<CastHit>& hits = r->results.front().hits;
  if (hits.empty()) return std::optional<CastHit>();
  return std::optional<CastHit>(hits.front());
}

RpcResult<MoveResult> Client::Move(std::string_view session_id, const MoveQuery& query,
                                   const CallOptions& call) {
  const hitbox::Query q = query;
  RpcResult<QueryBatchResult> r = Query(session_id, std::span<const hitbox::Query>(&q, 1), call);
  if (!r.ok()) return r.status();
  std::optional<MoveResult>& move = r->results.front().move;
  if (!move) return RpcStatus(RpcCode::kInternal, "the server's answer to a move has no move result");
  return std::move(*move);
}

// --- Tick stream ------------------------------------------------------------

std::unique_ptr<TickStream> Client::OpenTickStream(std::string session_id,
                                                   const TickStreamOptions& options) {
  return impl_->OpenTickStream(std::move(session_id), options);
}

}  // namespace hitbox
