#include "service.h"

#include <algorithm>
#include <mutex>
#include <shared_mutex>
#include <string_view>
#include <type_traits>
#include <utility>

#include <google/protobuf/descriptor.h>
#include <spdlog/spdlog.h>

#include "hitbox/wire/convert.h"
#include "hitbox/wire/packed.h"
#include "hitbox/wire/session_limits.h"
#include "reactors.h"
#include "resources.h"

namespace hitbox::server {
namespace {

using google::protobuf::RepeatedPtrField;

grpc::Status Grpc(grpc::StatusCode code, std::string message) {
  return grpc::Status(code, std::move(message));
}

// Bytes one collider adds to a ColliderSet, amortised over vector growth:
// measured on 1000 spheres added one batch at a time and in bulk.
uint64_t MeasureBytesPerCollider() {
  constexpr int kCount = 1000;
  std::vector<Collider> colliders(kCount);
  for (int i = 0; i < kCount; ++i) {
    colliders[i].id = static_cast<uint64_t>(i) + 1;
    colliders[i].shape = *Shape::MakeSphere(1);
    colliders[i].pose = Pose({3.0 * i, 0, 0});
  }
  ColliderSet bulk;
  (void)bulk.AddBulk(colliders);
  ColliderSet one_by_one;
  for (const Collider& c : colliders) {
    const ColliderChange add[] = {ColliderChange::Add(c)};
    (void)one_by_one.Apply(add);
  }
  const size_t most = std::max(bulk.MemoryBytes(), one_by_one.MemoryBytes());
  return std::max<uint64_t>(1, (most + kCount - 1) / kCount);
}

}  // namespace

void ResultsToProto(const std::vector<QueryResult>& results, const RepeatedPtrField<v1::Query>& queries,
                    RepeatedPtrField<v1::QueryResult>* out) {
  out->Reserve(static_cast<int>(results.size()));
  for (size_t i = 0; i < results.size(); ++i) {
    wire::ToProto(results[i], queries.Get(static_cast<int>(i)).tag(), out->Add());
  }
}

HitboxService::HitboxService(const ServiceOptions& options, std::unique_ptr<SessionStore> store)
    : options_(options),
      answer_memory_(options.limits.max_inflight_bytes),
      build_memory_(options.limits.max_build_bytes),
      trimmer_(options.malloc_trim, std::chrono::milliseconds(100)),
      sessions_(options.limits.max_sessions, options.limits.max_memory_bytes),
      auth_(options.auth, &sessions_),
      in_flight_(options.auth.max_in_flight) {
  sessions_.set_background_caches(options.background_caches);
  threads_ = options.threads;
  if (threads_ == 0) {
    const CpuBudget cpus = ProcessCpuBudget();
    threads_ = cpus.usable;
    spdlog::info("query threads: {} (--threads 0: the CPUs this process may use; affinity {}, "
                 "cgroup quota {})",
                 threads_, cpus.affinity,
                 cpus.cgroup_quota == 0 ? std::string("none") : std::to_string(cpus.cgroup_quota));
  }
  if (threads_ > 1) pool_ = std::make_unique<ThreadPool>(threads_);
  store_ = std::move(store);
  bytes_per_collider_ = MeasureBytesPerCollider();
  TxnEnv env;
  env.sessions = &sessions_;
  env.answer_memory = &answer_memory_;
  env.build_memory = &build_memory_;
  env.trimmer = &trimmer_;
  env.store = store_.get();
  env.pool = pool_.get();
  env.metrics = &metrics_;
  env.bytes_per_collider = bytes_per_collider_;
  env.max_message_bytes = options_.limits.max_message_bytes;
  env.record_query_ticks = options_.record_query_ticks;
  txn_ = std::make_unique<SessionTxn>(env);
  reaper_ = std::make_unique<IdleReaper>(
      [this](int64_t now_ns) { return ReapIdleSessions(now_ns); });
}

HitboxService::~HitboxService() { reaper_.reset(); }  // before what it reaps goes

void HitboxService::KickReaper() { reaper_->Kick(); }

int64_t HitboxService::ReapIdleSessions(int64_t now_ns) {
  int64_t next = INT64_MAX;
  for (const std::shared_ptr<Session>& s : sessions_.List()) {
    const uint64_t timeout_ms = s->limits().idle_timeout_ms;
    if (timeout_ms == 0) continue;
    int64_t idle_ns = 0;
    if (sessions_.RemoveIfIdle(s, now_ns, &idle_ns)) {
      if (store_) store_->Remove(*s);
      metrics_.SessionExpired();
      spdlog::info("session '{}' expired after {:.1f} s idle (idle timeout {} ms; {} colliders, "
                   "revision {}; {} sessions left)",
                   s->id(), static_cast<double>(idle_ns) / 1e9, timeout_ms, s->set().size(),
                   s->set().revision(), sessions_.size());
      ReleaseSessionMemory(*s);
      continue;
    }
    next = std::min(next, s->last_active_ns() + static_cast<int64_t>(timeout_ms) * 1'000'000);
  }
  return next;
}

void HitboxService::ReleaseSessionMemory(Session& s) {
  // The session is marked deleted: every user checks that under its lock
  // before touching the set, so the set is dropped now, not when the last
  // stream or call lets go of the Session object.
  uint64_t bytes = 0;
  {
    std::unique_lock<std::shared_mutex> lock(s.mutex());
    bytes = s.set().MemoryBytes();
    s.set().Drop();
  }
  if (bytes >= kTrimThresholdBytes) trimmer_.Request();
}

grpc::Status HitboxService::Rejected(const char* rpc, const std::string& session,
                                     grpc::Status status) const {
  if (!status.ok()) {
    spdlog::warn("{} rejected (session '{}'): {}: {}", rpc, session,
                 wire::GrpcCodeName(status.error_code()), status.error_message());
  }
  return status;
}

grpc::Status HitboxService::Admit(const grpc::ServerContextBase& ctx,
                                  const grpc::Status& slot, Access access,
                                  const std::string& session_id, const char* rpc) const {
  if (!slot.ok()) return Rejected(rpc, session_id, slot);
  grpc::Status st = auth_.Authorize(ctx, access, session_id);
  if (!st.ok()) {
    // The id is the caller's, unchecked: log it only when well formed.
    const bool valid = session_id.empty() || wire::ValidateSessionId(session_id).ok();
    spdlog::warn("{} denied (session '{}', peer {}): {}: {}", rpc,
                 valid ? session_id : std::string("(malformed id)"), PeerOf(ctx),
                 wire::GrpcCodeName(st.error_code()), st.error_message());
  }
  return st;
}

grpc::Status HitboxService::Resolve(const std::string& id, std::shared_ptr<Session>* out) const {
  if (Status s = wire::ValidateSessionId(id); !s.ok()) return wire::ToGrpcStatus(s);
  *out = sessions_.Find(id);
  if (*out == nullptr) {
    return Grpc(grpc::StatusCode::NOT_FOUND, "session_id: session '" + id + "' not found");
  }
  return grpc::Status::OK;
}

size_t HitboxService::RecoverSessions() {
  if (store_ == nullptr) return 0;
  store_->set_maps(options_.maps);
  const size_t n = store_->Recover(sessions_, options_.limits.session);
  KickReaper();  // restored sessions may have idle timeouts
  return n;
}

void HitboxService::Describe(const Session& s, v1::SessionInfo* info) const {
  info->set_session_id(s.id());
  {
    std::shared_lock<std::shared_mutex> lock(s.mutex());
    info->set_collider_count(s.set().size());
    info->set_revision(s.set().revision());
    if (s.set().size() > 0) wire::ToProto(s.set().Bounds(), info->mutable_bounds());
  }
  wire::LimitsToProto(s.limits(), info->mutable_limits());
  {
    std::shared_lock<std::shared_mutex> lock(s.mutex());
    if (const std::optional<TickRange> ticks = s.set().Ticks()) {
      info->set_oldest_tick(ticks->oldest);
      info->set_newest_tick(ticks->newest);
    }
  }
  info->set_created_unix_ms(s.created_unix_ms());
  info->set_memory_bytes(s.memory_bytes());
  info->set_last_active_unix_ms(s.last_active_unix_ms());
  if (const ColliderSet* map = s.set().base(); map != nullptr) {
    info->set_map_id(s.set().base_name());
    info->set_map_collider_count(map->size());
  }
  std::shared_lock<std::shared_mutex> lock(s.mutex());
  DescribeWatches(s.set(), info);
}

void DescribeWatches(const ColliderSet& set, v1::SessionInfo* info) {
  set.ForEachWatch([&](const WatchState& w) {
    v1::WatchInfo* out = info->add_watches();
    wire::ToProto(w.watch, out->mutable_watch());
    wire::ToProto(w.world_pose, out->mutable_world_pose());
    const size_t listed = std::min(w.inside.size(), kMaxListedInside);
    for (size_t i = 0; i < listed; ++i) out->add_inside(w.inside[i].id);
    out->set_inside_count(w.inside.size());
  });
}

// ---------------------------------------------------------------------------
// rpc bodies

grpc::Status HitboxService::DoCreateSession(const v1::CreateSessionRequest& req,
                                            v1::SessionInfo* resp) {
  const SessionLimits& max = options_.limits.session;
  SessionLimits limits = max;
  const v1::SessionLimits& in = req.limits();
  // Each limit asked for (0: the server's) may lower the server's, never raise it.
  grpc::Status st;
  wire::ForEachLimit<SessionLimits>([&](std::string_view name, auto member, auto get, auto) {
    const uint64_t want = (in.*get)();
    if (!st.ok() || want == 0) return;
    uint64_t server_max = max.*member;
    // 0 on the server means "never", so any session value lowers it.
    if (name == "idle_timeout_ms" && server_max == 0) server_max = UINT64_MAX;
    if (name == "history_ticks") server_max = options_.limits.max_history_ticks;
    if (want > server_max) {
      st = Grpc(grpc::StatusCode::INVALID_ARGUMENT,
                "limits." + std::string(name) + ": " + std::to_string(want) +
                    " exceeds the server maximum " + std::to_string(server_max));
      return;
    }
    limits.*member = static_cast<std::decay_t<decltype(limits.*member)>>(want);
  });
  if (!st.ok()) return st;
  // history_ticks 0: the server's default, at most --max-history-ticks.
  limits.history_ticks = std::min(limits.history_ticks, options_.limits.max_history_ticks);
  std::shared_ptr<const Map> map;
  if (!req.map_id().empty()) {
    if (st = ResolveMap(req.map_id(), &map); !st.ok()) return st;
  }
  Result<std::string> token = NewSessionToken();
  if (!token.ok()) return wire::ToGrpcStatus(token.status());
  Result<std::shared_ptr<Session>> created =
      sessions_.Create(req.session_id(), limits, std::move(*token), 0,
                       map != nullptr ? map->set : nullptr, req.map_id());
  if (!created.ok()) return wire::ToGrpcStatus(created.status());
  const Session& s = **created;
  if (store_) {
    if (Status stored = store_->Create(s); !stored.ok()) {
      sessions_.Remove(s.id());
      return wire::ToGrpcStatus(stored);
    }
  }
  if (limits.idle_timeout_ms != 0) KickReaper();
  spdlog::info("session '{}' created (map '{}', max_colliders={}, max_changes={}, "
               "max_queries={}, max_hits={}, idle_timeout_ms={}; {} sessions, {} bytes)",
               s.id(), req.map_id(), limits.max_colliders, limits.max_changes_per_message,
               limits.max_queries_per_message, limits.max_hits_per_query, limits.idle_timeout_ms,
               sessions_.size(), sessions_.memory_bytes());
  Describe(s, resp);
  resp->set_token(s.token());
  return grpc::Status::OK;
}

grpc::Status HitboxService::DoGetSession(const v1::GetSessionRequest& req, v1::SessionInfo* resp) {
  std::shared_ptr<Session> s;
  if (grpc::Status st = Resolve(req.session_id(), &s); !st.ok()) return st;
  Describe(*s, resp);
  return grpc::Status::OK;
}

grpc::Status HitboxService::DoListSessions(v1::ListSessionsResponse* resp) {
  for (const std::shared_ptr<Session>& s : sessions_.List()) Describe(*s, resp->add_sessions());
  return grpc::Status::OK;
}

grpc::Status HitboxService::DoDeleteSession(const v1::DeleteSessionRequest& req) {
  if (Status s = wire::ValidateSessionId(req.session_id()); !s.ok()) {
    return wire::ToGrpcStatus(s);
  }
  std::shared_ptr<Session> s = sessions_.Remove(req.session_id());
  if (s == nullptr) {
    return Grpc(grpc::StatusCode::NOT_FOUND,
                "session_id: session '" + req.session_id() + "' not found");
  }
  if (store_) store_->Remove(*s);
  spdlog::info("session '{}' deleted ({} colliders, revision {}; {} sessions left)", s->id(),
               s->set().size(), s->set().revision(), sessions_.size());
  ReleaseSessionMemory(*s);
  return grpc::Status::OK;
}

grpc::Status HitboxService::DoApplyChanges(const v1::ApplyChangesRequest& req,
                                           v1::ApplyChangesResponse* resp,
                                           const CallControl& call) {
  std::shared_ptr<Session> s;
  if (grpc::Status st = Resolve(req.session_id(), &s); !st.ok()) return st;
  const std::optional<uint64_t> expected =
      req.has_expected_revision() ? std::optional<uint64_t>(req.expected_revision()) : std::nullopt;
  const std::optional<uint64_t> tick =
      req.has_tick() ? std::optional<uint64_t>(req.tick()) : std::nullopt;
  TxnOutcome out;
  if (Status st = txn_->Apply(*s, req.changes(), tick, expected, call, &out); !st.ok()) {
    return wire::ToGrpcStatus(st);
  }
  resp->set_revision(out.revision);
  resp->set_collider_count(out.collider_count);
  for (const WatchEvent& e : out.events) wire::ToProto(e, resp->add_events());
  resp->set_events_truncated(out.events_truncated);
  return grpc::Status::OK;
}

grpc::Status HitboxService::DoGetColliders(const v1::GetCollidersRequest& req,
                                           v1::GetCollidersResponse* resp) {
  std::shared_ptr<Session> s;
  if (grpc::Status st = Resolve(req.session_id(), &s); !st.ok()) return st;
  const uint32_t max = std::max(s->limits().max_queries_per_message, options_.limits.max_page_size);
  if (static_cast<uint64_t>(req.ids_size()) > max) {
    return Grpc(grpc::StatusCode::RESOURCE_EXHAUSTED,
                "ids: " + std::to_string(req.ids_size()) + " ids, at most " + std::to_string(max) +
                    " per message (use ListColliders for more)");
  }
  std::vector<Collider> found;
  found.reserve(req.ids_size());
  {
    std::shared_lock<std::shared_mutex> lock(s->mutex());
    if (s->deleted()) {
      return Grpc(grpc::StatusCode::NOT_FOUND,
                  "session_id: session '" + req.session_id() + "' was deleted");
    }
    for (int i = 0; i < req.ids_size(); ++i) {
      const Collider* c = s->set().Find(req.ids(i));
      if (c == nullptr) {
        return Grpc(grpc::StatusCode::NOT_FOUND, "ids[" + std::to_string(i) + "]: collider " +
                                                     std::to_string(req.ids(i)) + " not found");
      }
      found.push_back(*c);
    }
    resp->set_revision(s->set().revision());
  }
  for (const Collider& c : found) wire::ToProto(c, resp->add_colliders());
  return grpc::Status::OK;
}

grpc::Status HitboxService::DoQuery(const v1::QueryRequest& req, v1::QueryResponse* resp,
                                    const CallControl& call, MemoryReservation* mem) {
  std::shared_ptr<Session> s;
  if (grpc::Status st = Resolve(req.session_id(), &s); !st.ok()) return st;
  MemoryReservation local(&answer_memory_);
  if (mem == nullptr) mem = &local;
  TxnScratch scratch;
  TxnOutcome out;
  const google::protobuf::RepeatedPtrField<v1::ColliderChange> no_changes;
  if (Status st =
          txn_->Run(*s, {no_changes, req.queries(), std::nullopt}, call, &scratch, mem, &out);
      !st.ok()) {
    return wire::ToGrpcStatus(st);
  }
  resp->set_revision(out.revision);
  ResultsToProto(scratch.results, req.queries(), resp->mutable_results());
  // The results are freed here; the response message stays reserved.
  uint64_t result_bytes = 0;
  for (const QueryResult& r : scratch.results) result_bytes += HeldBytes(r);
  mem->Resize(mem->bytes() - std::min(mem->bytes(), result_bytes));
  return grpc::Status::OK;
}

grpc::Status HitboxService::DoTick(TickStream* stream, const v1::TickRequest& req,
                                   v1::TickResponse* resp, const CallControl& call) {
  resp->set_tick(req.tick());
  stream->memory.set_pool(&answer_memory_);
  auto fail = [&](const grpc::Status& st) {
    Rejected("Tick", stream->session_id.empty() ? req.session_id() : stream->session_id, st);
    resp->clear_results();
    if (stream->session_deleted) {  // the stream ends with this status
      resp->Clear();
      return st;
    }
    resp->mutable_error()->set_code(static_cast<int32_t>(st.error_code()));
    resp->mutable_error()->set_message(st.error_message());
    return grpc::Status::OK;
  };
  // Bind / check the session id: the stream binds to the first session it
  // names that exists (a tick naming an unknown one is answered NOT_FOUND
  // and binds nothing).
  if (!req.session_id().empty()) {
    if (stream->session_id.empty()) {
      if (Status s = wire::ValidateSessionId(req.session_id()); !s.ok()) {
        return fail(wire::ToGrpcStatus(s));
      }
      if (sessions_.Find(req.session_id()) == nullptr) {
        return fail(Grpc(grpc::StatusCode::NOT_FOUND,
                         "session_id: session '" + req.session_id() + "' not found"));
      }
      stream->session_id = req.session_id();
    } else if (req.session_id() != stream->session_id) {
      return fail(Grpc(grpc::StatusCode::INVALID_ARGUMENT,
                       "session_id: this stream is bound to session '" + stream->session_id +
                           "', got '" + req.session_id() + "'"));
    }
  }
  if (stream->session_id.empty()) {
    return fail(Grpc(grpc::StatusCode::INVALID_ARGUMENT,
                     "session_id: the first tick of a stream must name the session"));
  }
  const auto deleted = [&] {
    std::string why = stream->session ? stream->session->gone_reason() : std::string();
    if (why.empty()) why = "session_id: session '" + stream->session_id + "' was deleted";
    stream->session.reset();
    stream->session_deleted = true;
    return Grpc(grpc::StatusCode::NOT_FOUND, why);
  };
  if (stream->session_deleted) return fail(deleted());
  if (stream->session == nullptr) {
    stream->session = sessions_.Find(stream->session_id);
    if (stream->session == nullptr) {
      return fail(Grpc(grpc::StatusCode::NOT_FOUND,
                       "session_id: session '" + stream->session_id + "' not found"));
    }
    if (!stream->observer.expired() && !stream->session->AddObserver(stream->observer)) {
      return fail(deleted());
    }
  }
  // Keeps the session alive for this tick even if deleted() resets the stream's pointer.
  const std::shared_ptr<Session> session = stream->session;
  Session& s = *session;
  s.Touch();
  if (s.deleted()) return fail(deleted());

  TxnOutcome out;
  const Status st =
      txn_->Run(s, {req.changes(), req.queries(), req.tick(), req.has_packed() ? &req.packed() : nullptr},
                call, stream, &stream->memory, &out);
  if (out.session_gone) return fail(deleted());
  if (!st.ok()) return fail(wire::ToGrpcStatus(st));
  resp->set_revision(out.revision);
  if (req.packed_results()) {
    wire::ToPacked(stream->queries, stream->results, resp->mutable_packed());
  } else if (req.has_packed()) {  // tags from the decoded queries
    RepeatedPtrField<v1::QueryResult>* results = resp->mutable_results();
    results->Reserve(static_cast<int>(stream->results.size()));
    for (size_t i = 0; i < stream->results.size(); ++i) {
      const uint64_t tag = std::visit([](const auto& q) { return q.tag; }, stream->queries[i]);
      wire::ToProto(stream->results[i], tag, results->Add());
    }
  } else {
    ResultsToProto(stream->results, req.queries(), resp->mutable_results());
  }
  for (const WatchEvent& e : out.events) wire::ToProto(e, resp->add_events());
  resp->set_events_truncated(out.events_truncated);
  return grpc::Status::OK;
}

// ---------------------------------------------------------------------------
// Callback API entry points.

grpc::ServerUnaryReactor* HitboxService::CreateSession(grpc::CallbackServerContext* ctx,
                                                       const v1::CreateSessionRequest* req,
                                                       v1::SessionInfo* resp) {
  auto* reactor = ctx->DefaultReactor();
  const InFlightSlot slot(in_flight_);
  grpc::Status st = Admit(*ctx, slot.status(), Access::kCreate, req->session_id(), "CreateSession");
  if (st.ok()) st = Rejected("CreateSession", req->session_id(), DoCreateSession(*req, resp));
  reactor->Finish(st);
  return reactor;
}

grpc::ServerUnaryReactor* HitboxService::GetServerInfo(grpc::CallbackServerContext* ctx,
                                                       const v1::GetServerInfoRequest* /*req*/,
                                                       v1::ServerInfo* resp) {
  auto* reactor = ctx->DefaultReactor();
  const InFlightSlot slot(in_flight_);
  const grpc::Status st = Admit(*ctx, slot.status(), Access::kRead, "", "GetServerInfo");
  if (st.ok()) resp->set_packed_ticks(true);
  reactor->Finish(st);
  return reactor;
}

grpc::ServerUnaryReactor* HitboxService::GetSession(grpc::CallbackServerContext* ctx,
                                                    const v1::GetSessionRequest* req,
                                                    v1::SessionInfo* resp) {
  auto* reactor = ctx->DefaultReactor();
  const InFlightSlot slot(in_flight_);
  grpc::Status st = Admit(*ctx, slot.status(), Access::kSession, req->session_id(), "GetSession");
  if (st.ok()) {
    st = DoGetSession(*req, resp);
    if (st.error_code() != grpc::StatusCode::NOT_FOUND) st = Rejected("GetSession", req->session_id(), st);
  }
  reactor->Finish(st);
  return reactor;
}

grpc::ServerUnaryReactor* HitboxService::ListSessions(grpc::CallbackServerContext* ctx,
                                                      const v1::ListSessionsRequest*,
                                                      v1::ListSessionsResponse* resp) {
  auto* reactor = ctx->DefaultReactor();
  const InFlightSlot slot(in_flight_);
  grpc::Status st = Admit(*ctx, slot.status(), Access::kAdmin, "", "ListSessions");
  if (st.ok()) st = DoListSessions(resp);
  reactor->Finish(st);
  return reactor;
}

grpc::ServerUnaryReactor* HitboxService::DeleteSession(grpc::CallbackServerContext* ctx,
                                                       const v1::DeleteSessionRequest* req,
                                                       v1::DeleteSessionResponse*) {
  auto* reactor = ctx->DefaultReactor();
  const InFlightSlot slot(in_flight_);
  grpc::Status st = Admit(*ctx, slot.status(), Access::kSession, req->session_id(), "DeleteSession");
  if (st.ok()) st = Rejected("DeleteSession", req->session_id(), DoDeleteSession(*req));
  reactor->Finish(st);
  return reactor;
}

grpc::ServerUnaryReactor* HitboxService::ApplyChanges(grpc::CallbackServerContext* ctx,
                                                      const v1::ApplyChangesRequest* req,
                                                      v1::ApplyChangesResponse* resp) {
  auto* reactor = ctx->DefaultReactor();
  const InFlightSlot slot(in_flight_);
  grpc::Status st = Admit(*ctx, slot.status(), Access::kSession, req->session_id(), "ApplyChanges");
  if (st.ok()) {
    st = Rejected("ApplyChanges", req->session_id(),
                  DoApplyChanges(*req, resp, CallControl::Of(ctx)));
  }
  reactor->Finish(st);
  return reactor;
}

grpc::ServerUnaryReactor* HitboxService::GetColliders(grpc::CallbackServerContext* ctx,
                                                      const v1::GetCollidersRequest* req,
                                                      v1::GetCollidersResponse* resp) {
  auto* reactor = ctx->DefaultReactor();
  const InFlightSlot slot(in_flight_);
  grpc::Status st = Admit(*ctx, slot.status(), Access::kSession, req->session_id(), "GetColliders");
  if (st.ok()) st = Rejected("GetColliders", req->session_id(), DoGetColliders(*req, resp));
  reactor->Finish(st);
  return reactor;
}

grpc::ServerWriteReactor<v1::WatchEventsResponse>* HitboxService::WatchEvents(
    grpc::CallbackServerContext* ctx, const v1::WatchEventsRequest* req) {
  auto slot = std::make_unique<InFlightSlot>(in_flight_);  // held for the whole stream
  if (grpc::Status st =
          Admit(*ctx, slot->status(), Access::kSession, req->session_id(), "WatchEvents");
      !st.ok()) {
    return NewWatchEventsReactor(st);
  }
  std::shared_ptr<Session> s;
  if (grpc::Status st = Resolve(req->session_id(), &s); !st.ok()) {
    return NewWatchEventsReactor(Rejected("WatchEvents", req->session_id(), st));
  }
  if (static_cast<uint64_t>(req->watch_ids_size()) > s->limits().max_watches) {
    return NewWatchEventsReactor(Rejected(
        "WatchEvents", req->session_id(),
        Grpc(grpc::StatusCode::INVALID_ARGUMENT,
             "watch_ids: " + std::to_string(req->watch_ids_size()) + " ids, at most " +
                 std::to_string(s->limits().max_watches) + " (limits.max_watches)")));
  }
  std::vector<uint64_t> ids(req->watch_ids().begin(), req->watch_ids().end());
  return StartWatchEventsReactor(std::move(s), std::move(ids), std::move(slot));
}

grpc::ServerWriteReactor<v1::ListCollidersResponse>* HitboxService::ListColliders(
    grpc::CallbackServerContext* ctx, const v1::ListCollidersRequest* req) {
  auto slot = std::make_unique<InFlightSlot>(in_flight_);  // held for the whole stream
  if (grpc::Status st =
          Admit(*ctx, slot->status(), Access::kSession, req->session_id(), "ListColliders");
      !st.ok()) {
    return NewListCollidersReactor(st);
  }
  std::shared_ptr<Session> s;
  if (grpc::Status st = Resolve(req->session_id(), &s); !st.ok()) {
    return NewListCollidersReactor(Rejected("ListColliders", req->session_id(), st));
  }
  uint32_t page = req->page_size() == 0 ? kDefaultPageSize : req->page_size();
  page = std::min(page, options_.limits.max_page_size);
  std::vector<Collider> snapshot;
  uint64_t revision = 0;
  auto memory = std::make_unique<MemoryReservation>(&answer_memory_);
  {
    std::shared_lock<std::shared_mutex> lock(s->mutex());
    if (s->deleted()) {
      return NewListCollidersReactor(Rejected(
          "ListColliders", req->session_id(),
          Grpc(grpc::StatusCode::NOT_FOUND,
               "session_id: session '" + req->session_id() + "' was deleted")));
    }
    // The snapshot is held until the last page is sent: it counts against
    // the answers in flight like query results do.
    const ColliderSet* map = req->include_map() ? s->set().base() : nullptr;
    const uint64_t bytes = (s->set().size() + (map ? map->size() : 0)) * sizeof(Collider);
    if (!memory->Resize(bytes)) {
      return NewListCollidersReactor(Rejected(
          "ListColliders", req->session_id(),
          wire::ToGrpcStatus(AnswerMemoryFull(answer_memory_, "ListColliders",
                                              "this snapshot needs", bytes, "retry later"))));
    }
    snapshot.reserve(s->set().size());
    s->set().ForEach([&](const Collider& c) { snapshot.push_back(c); });
    if (map != nullptr) map->ForEach([&](const Collider& c) { snapshot.push_back(c); });
    revision = s->set().revision();
  }
  std::sort(snapshot.begin(), snapshot.end(),
            [](const Collider& a, const Collider& b) { return a.id < b.id; });
  return NewListCollidersReactor(std::move(snapshot), revision, page, std::move(slot),
                                  std::move(memory));
}

grpc::ServerUnaryReactor* HitboxService::Query(grpc::CallbackServerContext* ctx,
                                               const v1::QueryRequest* req,
                                               v1::QueryResponse* resp) {
  auto* reactor = new QueryReactor(&answer_memory_);
  reactor->Finish(AnswerQuery(*ctx, *req, resp, CallControl::Of(ctx), reactor->memory()));
  return reactor;
}

void HitboxService::LeaveQueryToCompletionQueues() {
  const google::protobuf::ServiceDescriptor* d =
      google::protobuf::DescriptorPool::generated_pool()->FindServiceByName(
          v1::Hitbox::service_full_name());
  MarkMethodGeneric(d->FindMethodByName("Query")->index());
}

grpc::Status HitboxService::AnswerQuery(const grpc::ServerContextBase& ctx,
                                        const v1::QueryRequest& req, v1::QueryResponse* resp,
                                        const CallControl& call, MemoryReservation* mem) {
  const InFlightSlot slot(in_flight_);
  grpc::Status st = Admit(ctx, slot.status(), Access::kSession, req.session_id(), "Query");
  if (st.ok()) st = Rejected("Query", req.session_id(), DoQuery(req, resp, call, mem));
  return st;
}

grpc::ServerBidiReactor<v1::TickRequest, v1::TickResponse>* HitboxService::Tick(
    grpc::CallbackServerContext* ctx) {
  return StartTickReactor(this, ctx, std::make_unique<InFlightSlot>(in_flight_));
}

grpc::Status HitboxService::AuthorizeTick(grpc::CallbackServerContext* ctx,
                                          const std::string& session_id) {
  // The stream already holds its in-flight slot (TickReactor).
  return Admit(*ctx, grpc::Status::OK, Access::kSession, session_id, "Tick");
}

}  // namespace hitbox::server
