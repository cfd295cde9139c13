#include "service.h"

#include <algorithm>
#include <bit>
#include <span>
#include <string_view>
#include <variant>
#include <mutex>
#include <shared_mutex>
#include <thread>
#include <type_traits>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include <spdlog/spdlog.h>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include "hitbox/wire/convert.h"
#include "hitbox/wire/message_arena.h"
#include "hitbox/wire/session_limits.h"
#include "resources.h"

namespace hitbox::server {
namespace {

using google::protobuf::RepeatedPtrField;

/// Default ListColliders page size (colliders per message).
constexpr uint32_t kDefaultPageSize = 1024;
/// Bytes a hit is assumed to take in a response (a CastHit is ~100 at most,
/// an OverlapHit without contact ~25), for the per-response hit budget.
constexpr uint64_t kBytesPerHit = 64;
/// Most queries run per RunBatch call between checks of the hit budget.
constexpr size_t kQueryChunk = 1024;
/// Most bytes the results of one chunk may hold at worst (every query
/// finding max_hits hits): chunks are cut shorter to stay under it, so the
/// in-flight reservation is never far above what is really held.
constexpr uint64_t kChunkWorstBytes = 16ull << 20;
/// What to do when answers do not fit (the in-flight or the message budget).
constexpr const char* kLowerHitsAdvice =
    "retry later, or lower filter.max_hits or split the batch";
/// Bytes a query's entry in a response message takes besides its hits.
constexpr uint64_t kBytesPerResult = 16;

// Most contacts a move reports (character.h: 2 * max_iterations + 4).
uint64_t MoveContactCap(const MoveQuery& q) {
  return 2 * static_cast<uint64_t>(q.settings.max_iterations) + 4;
}

// Most bytes the hits of one query's result can hold: its vector's capacity
// once it has grown to max_hits + 1 (a query keeps one more to tell whether
// max_hits cut any; 1 for closest-hit queries).
uint64_t WorstResultBytes(const hitbox::Query& q) {
  return std::visit(
      [](const auto& x) -> uint64_t {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, OverlapQuery>) {
          return std::bit_ceil(uint64_t{x.filter.max_hits} + 1) * sizeof(OverlapHit);
        } else if constexpr (std::is_same_v<T, MoveQuery>) {
          return sizeof(MoveResult) + std::bit_ceil(MoveContactCap(x)) * sizeof(MoveContact);
        } else {
          const uint64_t hits = x.all_hits ? uint64_t{x.filter.max_hits} + 1 : 1;
          return std::bit_ceil(hits) * sizeof(CastHit);
        }
      },
      q);
}

// Bytes the hits of a result hold now.
uint64_t HeldBytes(const QueryResult& r) {
  return r.overlaps.capacity() * sizeof(OverlapHit) + r.hits.capacity() * sizeof(CastHit) +
         (r.move ? sizeof(MoveResult) + r.move->contacts.capacity() * sizeof(MoveContact) : 0);
}

// Entries of a result counted against the hit budget: hits, overlaps, and a
// move's contacts plus one for its position and ground.
uint64_t HitsOf(const QueryResult& r) {
  return r.overlaps.size() + r.hits.size() + (r.move ? r.move->contacts.size() + 1 : 0);
}

// The moves of a batch that name their character's collider (atomic
// apply), by query index; a collider named twice is refused. No heap work
// once warm (a sorted scratch list instead of a hash map).
grpc::Status CollectApplies(const std::vector<hitbox::Query>& queries, std::vector<size_t>* out) {
  out->clear();
  thread_local std::vector<std::pair<uint64_t, size_t>> named;  // (id, query index)
  named.clear();
  for (size_t i = 0; i < queries.size(); ++i) {
    const auto* m = std::get_if<MoveQuery>(&queries[i]);
    if (m == nullptr || !m->apply_to_id) continue;
    named.emplace_back(*m->apply_to_id, i);
    out->push_back(i);
  }
  std::sort(named.begin(), named.end());
  // The first query (in order) that names an id named before it.
  size_t bad = SIZE_MAX, first = 0;
  for (size_t k = 1; k < named.size(); ++k) {
    if (named[k].first == named[k - 1].first) {
      // named[k - 1] is the earliest query of this id seen so far in the run.
      size_t j = k - 1;
      while (j > 0 && named[j - 1].first == named[k].first) --j;
      if (named[k].second < bad) {
        bad = named[k].second;
        first = named[j].second;
      }
    }
  }
  if (bad != SIZE_MAX) {
    const uint64_t id = *std::get<MoveQuery>(queries[bad]).apply_to_id;
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        "queries[" + std::to_string(bad) + "].move.apply_to_id: collider " +
                            std::to_string(id) + " is already moved by queries[" +
                            std::to_string(first) + "]");
  }
  return grpc::Status::OK;
}

// NOT_FOUND naming the first move whose apply_to_id is not in the set.
grpc::Status CheckApplies(const ColliderSet& set, const std::vector<hitbox::Query>& queries,
                          const std::vector<size_t>& applies) {
  for (size_t i : applies) {
    const uint64_t id = *std::get<MoveQuery>(queries[i]).apply_to_id;
    if (set.Find(id) == nullptr) {
      return grpc::Status(grpc::StatusCode::NOT_FOUND, "queries[" + std::to_string(i) +
                                                           "].move.apply_to_id: collider " +
                                                           std::to_string(id) + " not found");
    }
  }
  return grpc::Status::OK;
}

// The change batch that puts each applied move's collider at its final pose
// (the result's position, the query pose's rotation), into `moves`.
void AppliedMoves(const std::vector<hitbox::Query>& queries,
                  const std::vector<QueryResult>& results, const std::vector<size_t>& applies,
                  std::vector<ColliderChange>* moves) {
  moves->clear();
  moves->reserve(applies.size());
  for (size_t i : applies) {
    const MoveQuery& q = std::get<MoveQuery>(queries[i]);
    moves->push_back(
        ColliderChange::Move(*q.apply_to_id, Pose{results[i].move->position, q.pose.rotation}));
  }
}

// Undoes an applied change batch: every id it touched gets back its state
// from `before` (the first entry per id is its state before the batch), and
// the set its revision.
void RollBack(ColliderSet& set, const std::vector<std::pair<uint64_t, std::optional<Collider>>>& before,
              uint64_t revision) {
  std::vector<ColliderChange> undo;
  std::unordered_set<uint64_t> seen;
  for (const auto& [id, old] : before) {
    if (!seen.insert(id).second) continue;
    const bool now = set.Find(id) != nullptr;
    if (old && now) undo.push_back(ColliderChange::Replace(*old));
    if (old && !now) undo.push_back(ColliderChange::Add(*old));
    if (!old && now) undo.push_back(ColliderChange::Remove(id));
  }
  const Status st = set.Apply(undo);
  if (!st.ok()) spdlog::error("tick rollback failed (a bug): {}", st.ToString());
  set.RestoreRevision(revision);
}

// Sweep by collider id (Query.shape_from_collider): each such query takes its
// collider's shape and pose, and ignores the collider. NOT_FOUND naming the
// first unknown id; INVALID_ARGUMENT for a collider-only shape (mesh,
// heightfield, compound). The caller holds the session lock (either mode).
grpc::Status ShapesFromColliders(const ColliderSet& set, const RepeatedPtrField<v1::Query>& in,
                                 std::vector<hitbox::Query>* queries) {
  for (int i = 0; i < in.size(); ++i) {
    const v1::Query& m = in.Get(i);
    if (!m.has_shape_from_collider()) continue;
    const uint64_t id = m.shape_from_collider();
    const Collider* c = set.Find(id);
    const auto field = [&] {
      return "queries[" + std::to_string(i) + "].shape_from_collider: collider " +
             std::to_string(id);
    };
    if (c == nullptr) return grpc::Status(grpc::StatusCode::NOT_FOUND, field() + " not found");
    const ShapeKind kind = c->shape.kind();
    if (kind == ShapeKind::kMesh || kind == ShapeKind::kHeightfield ||
        kind == ShapeKind::kCompound) {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                          field() + " has a collider-only shape (mesh, heightfield or "
                                    "compound), not a query shape");
    }
    std::visit(
        [&](auto& x) {
          if constexpr (!std::is_same_v<std::decay_t<decltype(x)>, RayQuery>) {
            x.shape = c->shape;
            x.pose = c->pose;
            x.filter.ignore.push_back(id);
          }
        },
        (*queries)[static_cast<size_t>(i)]);
  }
  return grpc::Status::OK;
}

// The state before a batch of every id it touches, for RollBack.
std::vector<std::pair<uint64_t, std::optional<Collider>>> Capture(
    const ColliderSet& set, const std::vector<ColliderChange>& changes) {
  std::vector<std::pair<uint64_t, std::optional<Collider>>> before;
  before.reserve(changes.size());
  for (const ColliderChange& c : changes) {
    const Collider* old = set.Find(c.collider.id);
    before.emplace_back(c.collider.id, old ? std::optional<Collider>(*old) : std::nullopt);
  }
  return before;
}

// The session limits a change batch is checked against (ColliderSet::CheckBatch).
BatchLimits BatchLimitsOf(const SessionLimits& l) {
  BatchLimits b;
  b.max_colliders = l.max_colliders;
  b.max_mesh_triangles = l.max_mesh_triangles;
  b.max_heightfield_samples = l.max_heightfield_samples;
  b.max_hull_points = l.max_hull_points;
  return b;
}

// Frees the results' memory (not only their sizes).
void Release(std::vector<QueryResult>* results) { std::vector<QueryResult>().swap(*results); }

grpc::Status Grpc(grpc::StatusCode code, std::string message) {
  return grpc::Status(code, std::move(message));
}

QueryFilter* FilterOf(hitbox::Query& q) {
  return std::visit([](auto& x) { return &x.filter; }, q);
}

// Streams a snapshot of a session's colliders, one page per write; the next
// page is built only after the previous write completed (flow control).
class ListCollidersReactor final : public grpc::ServerWriteReactor<v1::ListCollidersResponse> {
 public:
  ListCollidersReactor(std::vector<Collider> snapshot, uint64_t revision, uint32_t page_size,
                       std::unique_ptr<InFlightSlot> slot,
                       std::unique_ptr<MemoryReservation> memory)
      : slot_(std::move(slot)), memory_(std::move(memory)), snapshot_(std::move(snapshot)),
        revision_(revision), page_size_(page_size) {
    NextWrite();
  }
  /// Ends the call at once with an error.
  explicit ListCollidersReactor(const grpc::Status& error) { Finish(error); }

  void OnWriteDone(bool ok) override {
    if (!ok) {
      Finish(grpc::Status(grpc::StatusCode::CANCELLED, "ListColliders: client went away"));
      return;
    }
    NextWrite();
  }
  void OnDone() override { delete this; }

 private:
  void NextWrite() {
    if (sent_any_ && next_ >= snapshot_.size()) {
      Finish(grpc::Status::OK);
      return;
    }
    page_.Clear();
    page_.set_revision(revision_);
    page_.set_total(snapshot_.size());
    const size_t end = std::min(snapshot_.size(), next_ + page_size_);
    page_.mutable_colliders()->Reserve(static_cast<int>(end - next_));
    for (; next_ < end; ++next_) wire::ToProto(snapshot_[next_], page_.add_colliders());
    sent_any_ = true;
    StartWrite(&page_);
  }

  std::unique_ptr<InFlightSlot> slot_;  // held (--max-in-flight) until OnDone
  // The snapshot's bytes in the answer-memory budget, until OnDone.
  std::unique_ptr<MemoryReservation> memory_;
  std::vector<Collider> snapshot_;
  uint64_t revision_ = 0;
  uint32_t page_size_ = kDefaultPageSize;
  size_t next_ = 0;
  bool sent_any_ = false;
  v1::ListCollidersResponse page_;
};

// One Tick stream: reads a request only after the previous response was
// written, so a client that stops reading is never buffered without bound;
// the tick runs on the callback thread and takes only its session's lock.
//
// It observes its session: when the session is deleted or expires, a stream
// waiting for the client's next tick ends at once with NOT_FOUND; one busy
// with a tick ends when that tick's write completes (or the tick itself finds
// the session gone). The reactor owns itself through `self_` until OnDone, so
// the session's weak reference can keep it alive while notifying it.
class TickReactor final : public grpc::ServerBidiReactor<v1::TickRequest, v1::TickResponse>,
                          public SessionObserver {
 public:
  static TickReactor* Start(HitboxService* service, grpc::CallbackServerContext* ctx,
                            std::unique_ptr<InFlightSlot> slot) {
    std::shared_ptr<TickReactor> r(new TickReactor(service, ctx, std::move(slot)));
    r->self_ = r;
    if (!r->slot_->status().ok()) {  // --max-in-flight: the stream counts for its whole life
      r->End(r->slot_->status());
      return r.get();
    }
    r->stream_.observer = r;
    r->NextRead();
    return r.get();
  }

  void OnReadDone(bool ok) override {
    {
      std::lock_guard<std::recursive_mutex> lock(mu_);
      reading_ = false;
      if (finished_) return;  // ended by OnSessionGone while the read was pending
    }
    if (!ok) {  // the client finished writing (or the call was cancelled)
      End(grpc::Status::OK);
      return;
    }
    // Auth (auth.h) when a tick names a session the stream was not yet
    // allowed on; a refusal ends the stream with its status.
    if (!request_->session_id().empty() && request_->session_id() != authorized_) {
      if (grpc::Status st = service_->AuthorizeTick(ctx_, request_->session_id()); !st.ok()) {
        End(st);
        return;
      }
      authorized_ = request_->session_id();
    }
    response_ = response_arena_.Fresh<v1::TickResponse>();
    if (grpc::Status st = service_->DoTick(&stream_, *request_, response_, call_); !st.ok()) {
      End(st);  // the session is gone
      return;
    }
    StartWrite(response_);
  }
  void OnWriteDone(bool ok) override {
    if (!ok) {
      End(grpc::Status(grpc::StatusCode::CANCELLED, "Tick: client went away"));
      return;
    }
    NextRead();
  }
  void OnDone() override {
    std::shared_ptr<TickReactor> last = std::move(self_);  // may destroy this on return
  }

  void OnSessionGone(const std::string& why) override {
    {
      std::lock_guard<std::recursive_mutex> lock(mu_);
      if (finished_) return;
      gone_ = why;
      if (!reading_) return;  // a tick is in progress: it ends the stream when done
      finished_ = true;
    }
    // The pending read then completes with ok = false; no lock held here, as
    // gRPC may run that reaction on this thread.
    Finish(grpc::Status(grpc::StatusCode::NOT_FOUND, why));
  }

 private:
  TickReactor(HitboxService* service, grpc::CallbackServerContext* ctx,
              std::unique_ptr<InFlightSlot> slot)
      : service_(service), ctx_(ctx), call_(CallControl::Of(ctx)), slot_(std::move(slot)) {}

  // Starts the next read, or ends the stream if its session went away meanwhile.
  void NextRead() {
    std::string gone;
    {
      // Held across StartRead, so OnSessionGone finishes only after the read
      // is started (never a read after Finish).
      std::lock_guard<std::recursive_mutex> lock(mu_);
      if (finished_) return;
      if (gone_.empty()) {
        reading_ = true;
        request_ = request_arena_.Fresh<v1::TickRequest>();  // the last tick is done with
        StartRead(request_);
        return;
      }
      gone = gone_;
    }
    End(grpc::Status(grpc::StatusCode::NOT_FOUND, gone));
  }
  // Finishes the call once (whoever comes first).
  void End(const grpc::Status& status) {
    {
      std::lock_guard<std::recursive_mutex> lock(mu_);
      if (finished_) return;
      finished_ = true;
    }
    Finish(status);
  }

  HitboxService* const service_;
  grpc::CallbackServerContext* const ctx_;
  const CallControl call_;
  const std::unique_ptr<InFlightSlot> slot_;  // held until OnDone
  std::string authorized_;  // the session id this stream's caller was allowed on
  std::shared_ptr<TickReactor> self_;
  HitboxService::TickStream stream_;
  // The tick being read and the response being written, each on its arena.
  wire::MessageArena request_arena_;
  wire::MessageArena response_arena_;
  v1::TickRequest* request_ = nullptr;
  v1::TickResponse* response_ = nullptr;
  std::recursive_mutex mu_;
  bool reading_ = false;   // a StartRead is outstanding; guarded by mu_
  bool finished_ = false;  // Finish was called or claimed; guarded by mu_
  std::string gone_;       // why the session went away; guarded by mu_
};

// One Query call: holds the bytes of its answer in the in-flight budget until
// the response has been sent.
class QueryReactor final : public grpc::ServerUnaryReactor {
 public:
  explicit QueryReactor(InflightMemory* inflight) : memory_(inflight) {}
  MemoryReservation* memory() { return &memory_; }
  void OnDone() override { delete this; }

 private:
  MemoryReservation memory_;
};

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

MemoryTrimmer::MemoryTrimmer(bool enabled, std::chrono::milliseconds delay)
    : enabled_(enabled), delay_(delay) {
  if (enabled_) thread_ = std::thread([this] { Loop(); });
}

MemoryTrimmer::~MemoryTrimmer() {
  if (!enabled_) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_one();
  thread_.join();
}

void MemoryTrimmer::Request() {
  if (!enabled_) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    requested_ = true;
  }
  cv_.notify_one();
}

void MemoryTrimmer::TrimNow() {
#if defined(__GLIBC__)
  malloc_trim(0);
#endif
}

void MemoryTrimmer::Loop() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    cv_.wait(lock, [this] { return stop_ || requested_; });
    if (stop_) return;
    // Let the asking call finish freeing (its request and response messages
    // go after its handler returns); requests meanwhile join this trim.
    if (cv_.wait_for(lock, delay_, [this] { return stop_; })) return;
    requested_ = false;
    lock.unlock();
    TrimNow();
    trims_.fetch_add(1, std::memory_order_relaxed);
    lock.lock();
  }
}

bool BatchReservation::WorthTrimming() const {
  return shape_bytes >= kTrimThresholdBytes || request_bytes >= kTrimThresholdBytes;
}

bool InflightMemory::TryTake(uint64_t bytes) {
  uint64_t used = used_.load(std::memory_order_relaxed);
  do {
    if (bytes > cap_ || used > cap_ - bytes) return false;
  } while (!used_.compare_exchange_weak(used, used + bytes, std::memory_order_relaxed));
  return true;
}

bool MemoryReservation::Resize(uint64_t bytes) {
  if (pool_ != nullptr) {
    if (bytes > bytes_) {
      if (!pool_->TryTake(bytes - bytes_)) return false;
    } else if (bytes < bytes_) {
      pool_->Give(bytes_ - bytes);
    }
  }
  bytes_ = bytes;
  return true;
}

CallControl CallControl::Of(grpc::ServerContextBase* ctx) {
  CallControl c;
  const std::chrono::system_clock::time_point deadline = ctx->deadline();
  const auto now = std::chrono::system_clock::now();
  // No deadline reads as a time centuries away: keep max() then.
  if (deadline < now + std::chrono::hours(24 * 365)) {
    c.deadline = std::chrono::steady_clock::now() +
                 std::chrono::duration_cast<std::chrono::steady_clock::duration>(deadline - now);
  }
  c.cancelled = [ctx] { return ctx->IsCancelled(); };
  return c;
}

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
  reaper_ = std::thread([this] { ReaperLoop(); });
}

HitboxService::~HitboxService() {
  {
    std::lock_guard<std::mutex> lock(reaper_mu_);
    reaper_stop_ = true;
  }
  reaper_cv_.notify_one();
  reaper_.join();
}

void HitboxService::KickReaper() {
  {
    std::lock_guard<std::mutex> lock(reaper_mu_);
    reaper_kick_ = true;
  }
  reaper_cv_.notify_one();
}

void HitboxService::ReaperLoop() {
  // Never sleeps less than this between passes (a session that could not be
  // removed must not make the loop spin).
  constexpr int64_t kMinSleepNs = 5'000'000;
  std::unique_lock<std::mutex> lock(reaper_mu_);
  while (!reaper_stop_) {
    reaper_kick_ = false;
    lock.unlock();
    const int64_t now = SteadyNowNs();
    const int64_t next = ReapIdleSessions(now);
    lock.lock();
    const auto woken = [this] { return reaper_stop_ || reaper_kick_; };
    if (next == INT64_MAX) {
      reaper_cv_.wait(lock, woken);
    } else {
      const int64_t at = std::max(next, now + kMinSleepNs);
      reaper_cv_.wait_until(
          lock, std::chrono::steady_clock::time_point(std::chrono::nanoseconds(at)), woken);
    }
  }
}

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

grpc::Status HitboxService::ConvertQueries(const Session& s,
                                           const RepeatedPtrField<v1::Query>& in,
                                           std::vector<hitbox::Query>* out) const {
  const uint32_t max = s.limits().max_queries_per_message;
  if (static_cast<uint64_t>(in.size()) > max) {
    return Grpc(grpc::StatusCode::RESOURCE_EXHAUSTED,
                "queries: " + std::to_string(in.size()) + " queries, at most " +
                    std::to_string(max) + " per message (limits.max_queries_per_message)");
  }
  if (Status st = wire::FromProto(in, out, "queries"); !st.ok()) return wire::ToGrpcStatus(st);
  const uint32_t cap = s.limits().max_hits_per_query;
  for (hitbox::Query& q : *out) {
    QueryFilter* f = FilterOf(q);
    if (f->max_hits == 0 || f->max_hits > cap) f->max_hits = cap;
  }
  return grpc::Status::OK;
}

namespace {

// Bytes a batch adds to a session in colliders (moves, replaces and removes
// never grow the set): bytes_per_collider per new collider, less the room
// the session already holds (capacity left by removes).
uint64_t ColliderGrowth(const Session& s, uint64_t colliders_after, uint64_t bytes_per_collider) {
  const uint64_t now = s.set().size();
  if (colliders_after <= now) return 0;
  const uint64_t added = colliders_after - now;
  const uint64_t after = kSessionOverheadBytes + colliders_after * bytes_per_collider;
  return std::min(added * bytes_per_collider,
                  after > s.memory_bytes() ? after - s.memory_bytes() : 0);
}

// RESOURCE_EXHAUSTED naming changes[i]'s shape and the geometry limit it passes.
grpc::Status OverGeometryLimit(int i, const v1::ColliderChange& c, const char* what, uint64_t n,
                               uint64_t max, const char* limit) {
  return Grpc(grpc::StatusCode::RESOURCE_EXHAUSTED,
              "changes[" + std::to_string(i) + "]." + (c.has_add() ? "add" : "replace") +
                  ".shape: " + what + " has " + std::to_string(n) + ", at most " +
                  std::to_string(max) + " (limits." + limit + ")");
}

}  // namespace

grpc::Status HitboxService::PrepareChanges(const Session& s,
                                           const RepeatedPtrField<v1::ColliderChange>& in,
                                           std::optional<uint64_t> tick,
                                           std::optional<uint64_t> expected_revision,
                                           const CallControl& call,
                                           std::vector<ColliderChange>* out,
                                           BatchReservation* held) {
  const SessionLimits& limits = s.limits();
  if (static_cast<uint64_t>(in.size()) > limits.max_changes_per_message) {
    return Grpc(grpc::StatusCode::RESOURCE_EXHAUSTED,
                "changes: " + std::to_string(in.size()) + " changes, at most " +
                    std::to_string(limits.max_changes_per_message) +
                    " per message (limits.max_changes_per_message)");
  }
  // Primitives, moves and removes: nothing to build, converted at once.
  if (!wire::NeedsBuild(in)) return wire::ToGrpcStatus(wire::FromProto(in, out, "changes"));

  // The parsed request's big arrays, freed after the call whatever happens.
  for (const v1::ColliderChange& c : in) {
    const v1::Collider& col = c.has_add() ? c.add() : c.replace();
    if (col.shape().has_mesh()) {
      held->request_bytes += static_cast<uint64_t>(col.shape().mesh().indices_size()) * 4 +
                             static_cast<uint64_t>(col.shape().mesh().vertices_size()) * 48;
    } else if (col.shape().has_heightfield()) {
      held->request_bytes += static_cast<uint64_t>(col.shape().heightfield().heights_size()) * 8;
    }
  }
  // 1. The whole batch checked, and priced, without building anything.
  std::vector<ColliderChange> skeletons;
  std::vector<wire::ChangeCost> costs;
  if (Status st = wire::CheckChanges(in, &skeletons, &costs); !st.ok()) {
    return wire::ToGrpcStatus(st);
  }
  // 2. Its geometry against the session's limits, its build work against its budget.
  uint64_t work = 0, shape_bytes = 0;
  for (int i = 0; i < in.size(); ++i) {
    const wire::ChangeCost& c = costs[static_cast<size_t>(i)];
    if (c.mesh_triangles > limits.max_mesh_triangles) {
      return OverGeometryLimit(i, in.Get(i), "the mesh", c.mesh_triangles,
                               limits.max_mesh_triangles, "max_mesh_triangles");
    }
    if (c.heightfield_samples > limits.max_heightfield_samples) {
      return OverGeometryLimit(i, in.Get(i), "the heightfield", c.heightfield_samples,
                               limits.max_heightfield_samples, "max_heightfield_samples");
    }
    if (c.hull_points > limits.max_hull_points) {
      return OverGeometryLimit(i, in.Get(i), "a convex hull", c.hull_points,
                               limits.max_hull_points, "max_hull_points");
    }
    work += c.build_work;
    shape_bytes += c.shape_bytes;
  }
  if (limits.max_build_work_per_message != 0 && work > limits.max_build_work_per_message) {
    return Grpc(grpc::StatusCode::RESOURCE_EXHAUSTED,
                "changes: building this batch's shapes takes " + std::to_string(work) +
                    " units of work (mesh triangles + hull points + compound children + "
                    "heightfield samples / 16), more than its budget of " +
                    std::to_string(limits.max_build_work_per_message) +
                    " (limits.max_build_work_per_message): split it over several requests");
  }
  // 3. Ids, revision, tick and collider count against the set as it is now
  // (checked again when the batch is applied), and the batch's growth.
  uint64_t growth = 0;
  {
    std::shared_lock<std::shared_mutex> lock(s.mutex());
    if (s.deleted()) {
      return Grpc(grpc::StatusCode::NOT_FOUND, "session_id: session '" + s.id() + "' was deleted");
    }
    BatchPlan plan;
    if (Status st = s.set().CheckBatch(skeletons, tick, expected_revision, BatchLimitsOf(limits),
                                       &plan);
        !st.ok()) {
      return wire::ToGrpcStatus(st);
    }
    // The shapes it replaces or removes give their bytes back.
    uint64_t freed = 0;
    std::unordered_set<uint64_t> seen;
    for (const ColliderChange& c : skeletons) {
      if (c.kind != ColliderChange::Kind::kReplace && c.kind != ColliderChange::Kind::kRemove) {
        continue;
      }
      const Collider* old = s.set().Find(c.collider.id);
      if (old != nullptr && seen.insert(c.collider.id).second) freed += old->shape.DataBytes();
    }
    growth = ColliderGrowth(s, plan.colliders_after, bytes_per_collider_) +
             (shape_bytes > freed ? shape_bytes - freed : 0);
  }
  // 4. Reserved against --max-memory and the build budget before any build.
  if (Status st = sessions_.ReserveMemory(growth); !st.ok()) return wire::ToGrpcStatus(st);
  held->priced = true;
  held->memory = growth;
  held->shape_bytes = shape_bytes;
  if (!held->building.Resize(shape_bytes)) {
    held->ReleaseMemory();
    return Grpc(grpc::StatusCode::RESOURCE_EXHAUSTED,
                "changes: building this batch's shapes needs about " +
                    std::to_string(shape_bytes) + " bytes; the batches being built hold " +
                    std::to_string(build_memory_.used()) + " of " +
                    std::to_string(build_memory_.cap()) +
                    " bytes (--max-build-bytes): retry later, or split the batch");
  }
  // 5. The builds, one shape at a time; the call may stop them in between.
  const auto before_build = [&](int i) -> Status {
    if (call.cancelled && call.cancelled()) {
      return Status(ErrorCode::kCancelled, "changes: the call was cancelled before changes[" +
                                               std::to_string(i) + "] was built");
    }
    if (std::chrono::steady_clock::now() >= call.deadline) {
      return Status(ErrorCode::kDeadlineExceeded,
                    "changes: the call's deadline passed before changes[" + std::to_string(i) +
                        "] was built");
    }
    shapes_built_.fetch_add(1, std::memory_order_relaxed);
    return Status::Ok();
  };
  if (Status st = wire::FromProto(in, out, "changes", before_build); !st.ok()) {
    std::vector<ColliderChange>().swap(*out);  // what was built goes now
    return wire::ToGrpcStatus(st);
  }
  return grpc::Status::OK;
}

grpc::Status HitboxService::ApplyLocked(Session& s, const std::vector<ColliderChange>& changes,
                                        std::optional<uint64_t> tick,
                                        std::optional<uint64_t> expected_revision,
                                        BatchReservation* held) {
  ColliderSet& set = s.set();
  // The batch policy (revision, tick, ids by entry, geometry and collider
  // limits) is core's: ColliderSet::CheckBatch.
  BatchPlan plan;
  if (Status st = set.CheckBatch(changes, tick, expected_revision, BatchLimitsOf(s.limits()),
                                 &plan);
      !st.ok()) {
    return wire::ToGrpcStatus(st);
  }
  if (changes.empty()) return grpc::Status::OK;
  // A priced batch reserved its growth (colliders and shapes) before its
  // builds; otherwise its growth in colliders is reserved now.
  uint64_t growth = 0;
  if (held != nullptr && held->priced) {
    growth = held->memory;
    held->memory = 0;  // settled below
  } else {
    growth = ColliderGrowth(s, plan.colliders_after, bytes_per_collider_);
    if (Status reserved = sessions_.ReserveMemory(growth); !reserved.ok()) {
      return wire::ToGrpcStatus(reserved);
    }
  }
  const Status st = set.ApplyBatch(changes, tick, plan);
  sessions_.SettleMemory(s, growth);
  return wire::ToGrpcStatus(st);
}

grpc::Status HitboxService::PersistLocked(
    Session& s, const RepeatedPtrField<v1::ColliderChange>& changes,
    const std::vector<ColliderChange>& moved, std::optional<uint64_t> tick,
    const std::vector<std::pair<uint64_t, std::optional<Collider>>>& before, uint64_t revision) {
  if (store_ == nullptr || (changes.empty() && moved.empty())) return grpc::Status::OK;
  grpc::Status st;
  if (moved.empty()) {
    st = store_->Append(s, changes, tick, revision);
  } else {  // one record, as the batch was one revision: the changes, then the applied moves
    RepeatedPtrField<v1::ColliderChange> all = changes;
    for (const ColliderChange& c : moved) wire::ToProto(c, all.Add());
    st = store_->Append(s, all, tick, revision);
  }
  if (!st.ok()) {
    RollBack(s.set(), before, revision);
    sessions_.SettleMemory(s, 0);
  }
  return st;
}

size_t HitboxService::RecoverSessions() {
  if (store_ == nullptr) return 0;
  store_->set_maps(options_.maps);
  const size_t n = store_->Recover(sessions_, options_.limits.session);
  KickReaper();  // restored sessions may have idle timeouts
  return n;
}

uint64_t HitboxService::HitBudget() const {
  return std::max<uint64_t>(1, options_.limits.max_message_bytes / kBytesPerHit);
}

grpc::Status HitboxService::RunLocked(const Session& s, const std::vector<hitbox::Query>& queries,
                                      std::vector<QueryResult>* results, const CallControl& call,
                                      MemoryReservation* mem) const {
  // Results reused from an earlier tick keep their capacity (RunBatch clears
  // them, and a move's result keeps its contacts' buffer): count it.
  results->resize(queries.size());
  uint64_t held = 0;
  for (QueryResult& r : *results) {
    r.overlaps.clear();
    r.hits.clear();
    held += HeldBytes(r);
  }
  if (Status st = s.set().CheckQueryTicks(queries); !st.ok()) {
    Release(results);
    mem->Reset();
    return wire::ToGrpcStatus(st);
  }
  const SessionLimits& limits = s.limits();
  QueryBudget budget;
  budget.deadline = call.deadline;
  budget.cancelled = call.cancelled;
  QueryWork used;
  const uint64_t hit_budget = HitBudget();
  uint64_t hits = 0;
  auto fail = [&](grpc::Status st) {
    Release(results);
    mem->Reset();
    return st;
  };
  for (size_t start = 0; start < queries.size();) {
    // A chunk: up to kQueryChunk queries whose worst-case answers fit in
    // kChunkWorstBytes (at least one query).
    size_t end = start;
    uint64_t worst = 0;
    while (end < queries.size() && end - start < kQueryChunk) {
      const uint64_t w = WorstResultBytes(queries[end]) + sizeof(QueryResult);
      if (end > start && worst + w > kChunkWorstBytes) break;
      worst += w;
      ++end;
    }
    const std::string range =
        "queries[" + std::to_string(start) + ".." + std::to_string(end - 1) + "]";
    if (!mem->Resize(held + worst)) {
      return fail(AnswerMemoryFull("queries", range + " could need", worst, kLowerHitsAdvice));
    }
    budget.max_nodes = limits.max_nodes_per_message == 0
                           ? 0
                           : limits.max_nodes_per_message - used.nodes;
    budget.max_pair_tests = limits.max_pair_tests_per_message == 0
                                ? 0
                                : limits.max_pair_tests_per_message - used.pair_tests;
    uint64_t held_before = 0;
    for (size_t i = start; i < end; ++i) held_before += HeldBytes((*results)[i]);
    QueryWork work;
    const Status st =
        s.set().RunBatch(std::span<const hitbox::Query>(queries).subspan(start, end - start),
                         std::span<QueryResult>(*results).subspan(start, end - start),
                         pool_.get(), budget, &work);
    used.nodes += work.nodes;
    used.pair_tests += work.pair_tests;
    metrics_.AddPairTests(work.pair_tests);
    if (!st.ok()) {
      switch (st.code()) {
        case ErrorCode::kDeadlineExceeded:
          return fail(Grpc(grpc::StatusCode::DEADLINE_EXCEEDED,
                           "queries: the call's deadline passed while answering " + range));
        case ErrorCode::kCancelled:
          return fail(Grpc(grpc::StatusCode::CANCELLED,
                           "queries: the call was cancelled while answering " + range));
        default: break;
      }
      const bool nodes_out = budget.max_nodes != 0 && work.nodes > budget.max_nodes;
      return fail(Grpc(
          grpc::StatusCode::RESOURCE_EXHAUSTED,
          nodes_out
              ? "queries: the request needs more than its work budget of " +
                    std::to_string(limits.max_nodes_per_message) +
                    " tree nodes (limits.max_nodes_per_message), passed while answering " +
                    range + ": use smaller query shapes or shorter casts, a narrower filter.mask, "
                    "or fewer queries per request"
              : "queries: the request needs more than its work budget of " +
                    std::to_string(limits.max_pair_tests_per_message) +
                    " pair tests (limits.max_pair_tests_per_message), passed while answering " +
                    range + ": lower filter.max_hits, use smaller query shapes or a narrower "
                    "filter.mask, or send fewer queries per request"));
    }
    uint64_t held_after = 0;
    for (size_t i = start; i < end; ++i) {
      held_after += HeldBytes((*results)[i]);
      hits += HitsOf((*results)[i]);
    }
    held = held - held_before + held_after;
    mem->Resize(held);  // never grows: the chunk's worst case was reserved
    if (hits > hit_budget) {
      return fail(Grpc(grpc::StatusCode::RESOURCE_EXHAUSTED,
                       "queries: the answers to queries[0.." + std::to_string(end - 1) +
                           "] already hold " + std::to_string(hits) + " hits, more than the " +
                           std::to_string(hit_budget) +
                           " that fit in one message (--max-message-bytes); lower "
                           "filter.max_hits or split the batch"));
    }
    start = end;
  }
  return grpc::Status::OK;
}

grpc::Status HitboxService::ReserveResponse(const std::vector<QueryResult>& results,
                                            MemoryReservation* mem) const {
  uint64_t bytes = results.size() * kBytesPerResult;
  for (const QueryResult& r : results) {
    bytes += HitsOf(r) * kBytesPerHit;
  }
  if (mem->Resize(mem->bytes() + bytes)) return grpc::Status::OK;
  return AnswerMemoryFull("queries", "the response needs", bytes, kLowerHitsAdvice);
}

grpc::Status HitboxService::AnswerMemoryFull(const std::string& field, const std::string& needs,
                                             uint64_t bytes, const char* advice) const {
  return Grpc(grpc::StatusCode::RESOURCE_EXHAUSTED,
              field + ": the server's answers in flight already hold " +
                  std::to_string(answer_memory_.used()) + " of " +
                  std::to_string(answer_memory_.cap()) + " bytes (--max-inflight-bytes); " +
                  needs + " " + std::to_string(bytes) + " more: " + advice);
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
    if (grpc::Status stored = store_->Create(s); !stored.ok()) {
      sessions_.Remove(s.id());
      return stored;
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
  std::vector<ColliderChange> changes;
  BatchReservation held(&sessions_, &build_memory_);
  // A big batch, applied or refused, frees big buffers (its request, its
  // builds' scratch, what it refused or replaced): give them back after.
  struct TrimAfter {
    MemoryTrimmer& trimmer;
    const BatchReservation& held;
    ~TrimAfter() {
      if (held.WorthTrimming()) trimmer.Request();
    }
  } trim_after{trimmer_, held};
  if (grpc::Status st = PrepareChanges(*s, req.changes(), tick, expected, call, &changes, &held);
      !st.ok()) {
    return st;
  }
  std::unique_lock<std::shared_mutex> lock(s->mutex());
  if (s->deleted()) {
    return Grpc(grpc::StatusCode::NOT_FOUND,
                "session_id: session '" + req.session_id() + "' was deleted");
  }
  const uint64_t revision = s->set().revision();
  std::vector<std::pair<uint64_t, std::optional<Collider>>> before;
  if (store_) before = Capture(s->set(), changes);
  if (grpc::Status st = ApplyLocked(*s, changes, tick, expected, &held); !st.ok()) return st;
  if (grpc::Status st = PersistLocked(*s, req.changes(), {}, tick, before, revision); !st.ok()) {
    return st;
  }
  resp->set_revision(s->set().revision());
  resp->set_collider_count(s->set().size());
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
  std::vector<hitbox::Query> queries;
  if (grpc::Status st = ConvertQueries(*s, req.queries(), &queries); !st.ok()) return st;
  MemoryReservation local(&answer_memory_);
  if (mem == nullptr) mem = &local;
  std::vector<size_t> applies;
  if (grpc::Status st = CollectApplies(queries, &applies); !st.ok()) return st;
  std::vector<QueryResult> results;
  const auto gone = [&] {
    return Grpc(grpc::StatusCode::NOT_FOUND,
                "session_id: session '" + req.session_id() + "' was deleted");
  };
  if (applies.empty()) {
    std::shared_lock<std::shared_mutex> lock(s->mutex());
    if (s->deleted()) return gone();
    if (grpc::Status st = ShapesFromColliders(s->set(), req.queries(), &queries); !st.ok()) {
      return st;
    }
    if (grpc::Status st = RunLocked(*s, queries, &results, call, mem); !st.ok()) return st;
    resp->set_revision(s->set().revision());
  } else {
    // Moves applied to their colliders: the answers and the update happen
    // under one write lock, and the update only once everything else passed.
    std::unique_lock<std::shared_mutex> lock(s->mutex());
    if (s->deleted()) return gone();
    if (grpc::Status st = CheckApplies(s->set(), queries, applies); !st.ok()) return st;
    if (grpc::Status st = ShapesFromColliders(s->set(), req.queries(), &queries); !st.ok()) {
      return st;
    }
    if (grpc::Status st = RunLocked(*s, queries, &results, call, mem); !st.ok()) return st;
    if (grpc::Status st = ReserveResponse(results, mem); !st.ok()) {
      mem->Reset();
      return st;
    }
    std::vector<ColliderChange> moved;
    AppliedMoves(queries, results, applies, &moved);
    const uint64_t revision = s->set().revision();
    std::vector<std::pair<uint64_t, std::optional<Collider>>> before;
    if (store_) before = Capture(s->set(), moved);
    grpc::Status st = ApplyLocked(*s, moved, std::nullopt, std::nullopt);
    // Committed: logged before the response is sent (or undone on a write failure).
    if (st.ok()) st = PersistLocked(*s, {}, moved, std::nullopt, before, revision);
    if (!st.ok()) {
      mem->Reset();
      return st;
    }
    resp->set_revision(s->set().revision());
  }
  if (applies.empty()) {
    if (grpc::Status st = ReserveResponse(results, mem); !st.ok()) {
      mem->Reset();
      return st;
    }
  }
  ResultsToProto(results, req.queries(), resp->mutable_results());
  // The results are freed here; the response message stays reserved.
  uint64_t result_bytes = 0;
  for (const QueryResult& r : results) result_bytes += HeldBytes(r);
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

  std::vector<ColliderChange>& changes = stream->changes;
  const std::optional<uint64_t> tick = req.tick();  // the tick of these changes
  BatchReservation held(&sessions_, &build_memory_);
  struct TrimAfter {
    MemoryTrimmer& trimmer;
    const BatchReservation& held;
    std::vector<ColliderChange>& changes;
    ~TrimAfter() {
      if (held.WorthTrimming()) {
        std::vector<ColliderChange>().swap(changes);  // the scratch keeps no shapes
        trimmer.Request();
      }
    }
  } trim_after{trimmer_, held, changes};
  if (grpc::Status st = PrepareChanges(s, req.changes(), tick, std::nullopt, call, &changes, &held);
      !st.ok()) {
    return fail(st);
  }
  std::vector<hitbox::Query>& queries = stream->queries;
  if (grpc::Status st = ConvertQueries(s, req.queries(), &queries); !st.ok()) return fail(st);

  std::vector<size_t>& applies = stream->applies;
  if (grpc::Status st = CollectApplies(queries, &applies); !st.ok()) return fail(st);

  std::vector<QueryResult>& results = stream->results;
  bool reserved = false;
  std::vector<ColliderChange>& moved = stream->moved;  // applied character moves
  moved.clear();
  if (!changes.empty() || !applies.empty()) {
    // The queries run after the changes are applied; RunLocked refuses them
    // by the hits they do return (HitBudget), and `undo` below then takes
    // the changes back, so a refused tick changes nothing.
    std::unique_lock<std::shared_mutex> lock(s.mutex());
    if (s.deleted()) return fail(deleted());
    // The queries may still fail (work budget, deadline, memory): remember
    // what the changes touch, so that such a tick changes nothing either.
    const uint64_t revision = s.set().revision();
    std::vector<std::pair<uint64_t, std::optional<Collider>>> before;
    if (!queries.empty() || store_) before = Capture(s.set(), changes);
    if (grpc::Status st = ApplyLocked(s, changes, tick, std::nullopt, &held); !st.ok()) {
      return fail(st);
    }
    // Any later failure leaves the set as it was before the tick (history
    // included: RollBack restores the revision).
    const auto undo = [&](const grpc::Status& st) {
      if (!changes.empty()) {
        RollBack(s.set(), before, revision);
        sessions_.SettleMemory(s, 0);  // back to what the set holds now
      }
      return fail(st);
    };
    if (grpc::Status st = CheckApplies(s.set(), queries, applies); !st.ok()) return undo(st);
    if (grpc::Status st = ShapesFromColliders(s.set(), req.queries(), &queries); !st.ok()) {
      return undo(st);
    }
    if (grpc::Status st = RunLocked(s, queries, &results, call, &stream->memory); !st.ok()) {
      return undo(st);
    }
    if (!applies.empty()) {
      if (grpc::Status st = ReserveResponse(results, &stream->memory); !st.ok()) return undo(st);
      reserved = true;
      AppliedMoves(queries, results, applies, &moved);
      // A tick is one batch (one revision, one step of history): its changes
      // are taken back and applied again followed by the applied moves.
      std::vector<ColliderChange>* batch = &moved;
      std::vector<ColliderChange> with_changes;
      if (!changes.empty()) {
        RollBack(s.set(), before, revision);
        with_changes = changes;
        with_changes.insert(with_changes.end(), moved.begin(), moved.end());
        batch = &with_changes;
      }
      if (store_) {  // a failed log write undoes all
        std::vector<std::pair<uint64_t, std::optional<Collider>>> more = Capture(s.set(), moved);
        before.insert(before.end(), more.begin(), more.end());
      }
      if (grpc::Status st = ApplyLocked(s, *batch, tick, std::nullopt); !st.ok()) {
        sessions_.SettleMemory(s, 0);
        return fail(st);
      }
    }
    // Committed: logged before the response is sent (or undone on a write failure).
    if (grpc::Status st = PersistLocked(s, req.changes(), moved, tick, before, revision);
        !st.ok()) {
      Release(&results);
      stream->memory.Reset();
      return fail(st);
    }
    resp->set_revision(s.set().revision());
  } else {
    std::shared_lock<std::shared_mutex> lock(s.mutex());
    if (s.deleted()) return fail(deleted());
    if (grpc::Status st = ShapesFromColliders(s.set(), req.queries(), &queries); !st.ok()) {
      return fail(st);
    }
    if (grpc::Status st = RunLocked(s, queries, &results, call, &stream->memory); !st.ok()) {
      return fail(st);
    }
    resp->set_revision(s.set().revision());
  }
  if (!reserved) {
    if (grpc::Status st = ReserveResponse(results, &stream->memory); !st.ok()) return fail(st);
  }
  ResultsToProto(results, req.queries(), resp->mutable_results());
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

grpc::ServerWriteReactor<v1::ListCollidersResponse>* HitboxService::ListColliders(
    grpc::CallbackServerContext* ctx, const v1::ListCollidersRequest* req) {
  auto slot = std::make_unique<InFlightSlot>(in_flight_);  // held for the whole stream
  if (grpc::Status st =
          Admit(*ctx, slot->status(), Access::kSession, req->session_id(), "ListColliders");
      !st.ok()) {
    return new ListCollidersReactor(st);
  }
  std::shared_ptr<Session> s;
  if (grpc::Status st = Resolve(req->session_id(), &s); !st.ok()) {
    return new ListCollidersReactor(Rejected("ListColliders", req->session_id(), st));
  }
  uint32_t page = req->page_size() == 0 ? kDefaultPageSize : req->page_size();
  page = std::min(page, options_.limits.max_page_size);
  std::vector<Collider> snapshot;
  uint64_t revision = 0;
  auto memory = std::make_unique<MemoryReservation>(&answer_memory_);
  {
    std::shared_lock<std::shared_mutex> lock(s->mutex());
    if (s->deleted()) {
      return new ListCollidersReactor(Rejected(
          "ListColliders", req->session_id(),
          Grpc(grpc::StatusCode::NOT_FOUND,
               "session_id: session '" + req->session_id() + "' was deleted")));
    }
    // The snapshot is held until the last page is sent: it counts against
    // the answers in flight like query results do.
    const ColliderSet* map = req->include_map() ? s->set().base() : nullptr;
    const uint64_t bytes = (s->set().size() + (map ? map->size() : 0)) * sizeof(Collider);
    if (!memory->Resize(bytes)) {
      return new ListCollidersReactor(Rejected(
          "ListColliders", req->session_id(),
          AnswerMemoryFull("ListColliders", "this snapshot needs", bytes, "retry later")));
    }
    snapshot.reserve(s->set().size());
    s->set().ForEach([&](const Collider& c) { snapshot.push_back(c); });
    if (map != nullptr) map->ForEach([&](const Collider& c) { snapshot.push_back(c); });
    revision = s->set().revision();
  }
  std::sort(snapshot.begin(), snapshot.end(),
            [](const Collider& a, const Collider& b) { return a.id < b.id; });
  return new ListCollidersReactor(std::move(snapshot), revision, page, std::move(slot),
                                  std::move(memory));
}

grpc::ServerUnaryReactor* HitboxService::Query(grpc::CallbackServerContext* ctx,
                                               const v1::QueryRequest* req,
                                               v1::QueryResponse* resp) {
  auto* reactor = new QueryReactor(&answer_memory_);
  reactor->Finish(AnswerQuery(*ctx, *req, resp, CallControl::Of(ctx), reactor->memory()));
  return reactor;
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
  return TickReactor::Start(this, ctx, std::make_unique<InFlightSlot>(in_flight_));
}

grpc::Status HitboxService::AuthorizeTick(grpc::CallbackServerContext* ctx,
                                          const std::string& session_id) {
  // The stream already holds its in-flight slot (TickReactor).
  return Admit(*ctx, grpc::Status::OK, Access::kSession, session_id, "Tick");
}

}  // namespace hitbox::server
