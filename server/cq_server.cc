#include "cq_server.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <utility>

#include <google/protobuf/descriptor.h>
#include <grpcpp/generic/async_generic_service.h>

namespace hitbox::server {
namespace {

using v1::Hitbox;

// Requests each queue keeps posted: a call that arrives finds one waiting
// (each matched request posts its successor at once), and up to this many
// calls can arrive on a queue between two of its thread's turns.
constexpr int kRequestsPerQueue = 32;

// A running call looks for its cancellation on its queue at most this often
// (see Call::Cancelled): short queries never pay for it.
constexpr int64_t kCancelPollNs = 1'000'000;

int64_t SteadyNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

std::optional<RpcApi> ParseRpcApi(std::string_view name) {
  if (name == "callback") return RpcApi::kCallback;
  if (name == "cq") return RpcApi::kCq;
  return std::nullopt;
}

const char* RpcApiName(RpcApi api) { return api == RpcApi::kCq ? "cq" : "callback"; }

/// hitbox.v1.Hitbox's Query on the asynchronous API, and nothing else: every
/// other method is marked generic here, found by the service's descriptor, so
/// HitboxService serves it as on the callback API (a method the .proto adds
/// is served there too, with no list to update).
class CqQueryServer::QueryService final : public Hitbox::WithAsyncMethod_Query<Hitbox::Service> {
 public:
  QueryService() {
    const google::protobuf::ServiceDescriptor* d =
        google::protobuf::DescriptorPool::generated_pool()->FindServiceByName(
            Hitbox::service_full_name());
    const int query = d->FindMethodByName("Query")->index();
    for (int i = 0; i < d->method_count(); ++i) {
      if (i != query) MarkMethodGeneric(i);
    }
  }
};

/// One completion queue and the thread that polls it. Every tag of a call
/// comes back on the queue its request was posted to, so a call's state is
/// only ever changed by this thread (Run), except for the done notice a
/// running query may pull early (PollReady).
class CqQueryServer::Poller {
 public:
  Poller(HitboxService* service, QueryService* async,
         std::unique_ptr<grpc::ServerCompletionQueue> cq, std::atomic<int64_t>* live_calls)
      : service_(service), async_(async), cq_(std::move(cq)), live_calls_(live_calls) {}

  HitboxService* service() const { return service_; }
  QueryService* async() const { return async_; }
  grpc::ServerCompletionQueue* cq() const { return cq_.get(); }
  /// Call states alive on every queue (CqQueryServer::Shutdown waits for 0).
  std::atomic<int64_t>& live_calls() const { return *live_calls_; }

  /// The thread's loop: handles the events PollReady put aside, then the
  /// queue's, until the queue is shut down and drained.
  void Run();
  /// Pulls the events ready on the queue without waiting (any thread, while
  /// this queue's thread is busy answering a query): a call's done notice
  /// marks that call at once (its cancellation is then known, Call::Cancelled);
  /// Run handles every pulled event afterwards, in order.
  void PollReady();
  /// Handles one event of this queue (Run's thread only).
  void Handle(void* tag, bool ok);

 private:
  bool TakeReady(void** tag, bool* ok);

  HitboxService* const service_;
  QueryService* const async_;
  const std::unique_ptr<grpc::ServerCompletionQueue> cq_;
  std::atomic<int64_t>* const live_calls_;
  std::mutex mu_;
  std::vector<std::pair<void*, bool>> ready_;  // guarded by mu_; taken from the front
  size_t ready_next_ = 0;                      // guarded by mu_
  std::atomic<bool> has_ready_{false};
};

/// One Query call: posted as a request, answered on the poller's thread when
/// matched, freed once both its Finish and its done notice came back.
class CqQueryServer::Call {
 public:
  enum Event : uintptr_t { kRequested = 0, kFinished = 1, kDone = 2 };

  explicit Call(Poller* poller)
      : poller_(poller), memory_(&poller->service()->answer_memory()) {
    poller_->live_calls().fetch_add(1, std::memory_order_relaxed);
  }
  ~Call() { poller_->live_calls().fetch_sub(1, std::memory_order_release); }
  Call(const Call&) = delete;
  Call& operator=(const Call&) = delete;

  /// Posts the request for the next Query call on the poller's queue.
  void Request() {
    ctx_.AsyncNotifyWhenDone(Tag(kDone));
    poller_->async()->RequestQuery(&ctx_, &request_, &responder_, poller_->cq(), poller_->cq(),
                                   Tag(kRequested));
  }

  /// Answers the matched call as the callback API does (AnswerQuery) and
  /// sends the answer; its bytes stay reserved until it is sent.
  void Answer() {
    CallControl control = CallControl::Of(&ctx_);
    next_poll_ns_.store(SteadyNs() + kCancelPollNs, std::memory_order_relaxed);
    control.cancelled = [this] { return Cancelled(); };
    const grpc::Status st =
        poller_->service()->AnswerQuery(ctx_, request_, &response_, control, &memory_);
    if (st.ok()) {
      // The interceptor sees only the serialized answer here: count it as it
      // counts a callback answer.
      Metrics& metrics = poller_->service()->metrics();
      std::vector<uint64_t> per_kind;
      metrics.CountKinds(request_.queries(), &per_kind);
      metrics.AddAnswer(per_kind, response_.results());
      responder_.Finish(response_, st, Tag(kFinished));
    } else {
      responder_.FinishWithError(st, Tag(kFinished));
    }
  }

  /// The done notice arrived (the call is over: answered, cancelled or
  /// failed); IsCancelled is valid from now on. Idempotent.
  void MarkDone() {
    if (done_.load(std::memory_order_acquire)) return;
    cancelled_.store(ctx_.IsCancelled(), std::memory_order_release);
    done_.store(true, std::memory_order_release);
  }
  bool done() const { return done_.load(std::memory_order_acquire); }
  bool finished = false;  // the Finish tag came back (Run's thread only)

  /// Whether the running call was cancelled (any thread of its query): its
  /// done notice is looked for on the queue at most every kCancelPollNs.
  bool Cancelled() {
    if (cancelled_.load(std::memory_order_acquire)) return true;
    const int64_t now = SteadyNs();
    int64_t next = next_poll_ns_.load(std::memory_order_relaxed);
    if (now >= next && next_poll_ns_.compare_exchange_strong(next, now + kCancelPollNs,
                                                             std::memory_order_relaxed)) {
      poller_->PollReady();
    }
    return cancelled_.load(std::memory_order_acquire);
  }

  void* Tag(Event e) { return reinterpret_cast<void*>(reinterpret_cast<uintptr_t>(this) | e); }
  static Call* Of(void* tag, Event* e) {
    const uintptr_t bits = reinterpret_cast<uintptr_t>(tag);
    *e = static_cast<Event>(bits & 3u);
    return reinterpret_cast<Call*>(bits & ~uintptr_t{3});
  }

 private:
  Poller* const poller_;
  grpc::ServerContext ctx_;
  v1::QueryRequest request_;
  v1::QueryResponse response_;
  grpc::ServerAsyncResponseWriter<v1::QueryResponse> responder_{&ctx_};
  MemoryReservation memory_;
  std::atomic<bool> done_{false};
  std::atomic<bool> cancelled_{false};
  std::atomic<int64_t> next_poll_ns_{0};
};
static_assert(alignof(CqQueryServer::Call) >= 4, "the low two bits of a Call* carry the event");

void CqQueryServer::Poller::Run() {
  void* tag = nullptr;
  bool ok = false;
  for (;;) {
    if (has_ready_.load(std::memory_order_acquire) && TakeReady(&tag, &ok)) {
      Handle(tag, ok);
      continue;
    }
    if (!cq_->Next(&tag, &ok)) break;
    Handle(tag, ok);
  }
  // Shut down and drained; PollReady cannot have run meanwhile (no call was
  // left running), but hand on whatever it pulled before.
  while (TakeReady(&tag, &ok)) Handle(tag, ok);
}

bool CqQueryServer::Poller::TakeReady(void** tag, bool* ok) {
  std::lock_guard<std::mutex> lock(mu_);
  if (ready_next_ == ready_.size()) return false;
  *tag = ready_[ready_next_].first;
  *ok = ready_[ready_next_].second;
  if (++ready_next_ == ready_.size()) {
    ready_.clear();
    ready_next_ = 0;
    has_ready_.store(false, std::memory_order_release);
  }
  return true;
}

void CqQueryServer::Poller::PollReady() {
  void* tag = nullptr;
  bool ok = false;
  // gpr_inf_past: only what is ready now (plus one non-blocking poll of the network).
  while (cq_->AsyncNext(&tag, &ok, gpr_inf_past(GPR_CLOCK_MONOTONIC)) ==
         grpc::CompletionQueue::GOT_EVENT) {
    Call::Event e;
    Call* call = Call::Of(tag, &e);
    if (e == Call::kDone) call->MarkDone();
    std::lock_guard<std::mutex> lock(mu_);
    ready_.emplace_back(tag, ok);
    has_ready_.store(true, std::memory_order_release);
  }
}

void CqQueryServer::Poller::Handle(void* tag, bool ok) {
  Call::Event e;
  Call* call = Call::Of(tag, &e);
  switch (e) {
    case Call::kRequested:
      if (!ok) {
        // The server is shutting down: the request was never matched, so
        // no other tag of it will come.
        delete call;
        return;
      }
      // Keep a request posted for the next call before answering this one
      // (after Server::Shutdown the new request just comes back not ok).
      (new Call(this))->Request();
      call->Answer();
      return;
    case Call::kFinished:
      call->finished = true;
      if (call->done()) delete call;
      return;
    case Call::kDone:
      call->MarkDone();
      if (call->finished) delete call;
      return;
  }
}

CqQueryServer::CqQueryServer(HitboxService* service, grpc::ServerBuilder* builder,
                             size_t threads)
    : service_(service), async_(std::make_unique<QueryService>()),
      unknown_(std::make_unique<grpc::CallbackGenericService>()) {
  service->LeaveQueryToCompletionQueues();
  builder->RegisterService(async_.get());
  // Methods marked generic need a generic service; only calls of methods no
  // service has reach it, and it answers them UNIMPLEMENTED as a server without one does.
  builder->RegisterCallbackGenericService(unknown_.get());
  threads = std::max<size_t>(1, threads);
  for (size_t i = 0; i < threads; ++i) {
    pollers_.push_back(
        std::make_unique<Poller>(service_, async_.get(), builder->AddCompletionQueue(),
                                 &live_calls_));
  }
}

CqQueryServer::~CqQueryServer() { Shutdown(); }

void CqQueryServer::Start() {
  if (started_ || stopped_) return;
  started_ = true;
  for (auto& p : pollers_) {
    for (int i = 0; i < kRequestsPerQueue; ++i) (new Call(p.get()))->Request();
  }
  threads_.reserve(pollers_.size());
  for (auto& p : pollers_) threads_.emplace_back([poller = p.get()] { poller->Run(); });
}

void CqQueryServer::Shutdown() {
  if (stopped_) return;
  stopped_ = true;
  if (started_) {
    // grpc::Server::Shutdown returned: no call is matched any more, every
    // posted request comes back (failed, or matched before and then answered
    // and finished), and a request posted now fails at once. Nothing may be
    // posted to a queue after its Shutdown, so the queues go once the last
    // call state is freed (the polling threads free them).
    while (live_calls_.load(std::memory_order_acquire) != 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
  for (auto& p : pollers_) p->cq()->Shutdown();
  if (started_) {
    for (std::thread& t : threads_) t.join();
  } else {
    for (auto& p : pollers_) p->Run();  // nothing was posted: returns at once
  }
}

}  // namespace hitbox::server
