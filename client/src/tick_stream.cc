// The Tick stream over gRPC's callback API (grpc::ClientBidiReactor).
//
// State, all under mu_:
//   pending_      every tick accepted and not answered (its callback, or the caller's
//                 TickResult to decode into), by increasing tick number
//   queue_        requests waiting for the single outstanding write
//   writing_      a StartWrite (or StartWritesDone) is outstanding
//   ended_        the stream has a final status (OnDone started): Tick() fails at once
//   done_         OnDone finished: gRPC will never touch this object again
// One read is always outstanding from construction until the stream ends, so
// OnDone (the last reaction) comes only after the server closed the stream or
// the call was cancelled. Callbacks and Start* calls are made without holding
// mu_ (a reaction may run on another thread at any time).
#include <algorithm>
#include <condition_variable>
#include <deque>
#include <exception>
#include <mutex>
#include <utility>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "client_internal.h"
#include "hitbox/wire/convert.h"
#include "hitbox/wire/message_arena.h"
#include "hitbox/wire/packed.h"

namespace hitbox::internal {
namespace {

class TickStreamImpl final : public TickStream,
                             public grpc::ClientBidiReactor<v1::TickRequest, v1::TickResponse> {
  // A tick sent and not yet answered: `done` gets a TickResult of its own,
  // or (with `into`) the answer is decoded into the caller's and `done_into`
  // gets the status.
  struct Pending {
    TickCallback done;
    TickDoneCallback done_into;
    TickResult* into = nullptr;
    bool into_form = false;  // answered into `into` (never null once queued)
    uint64_t tick = 0;
    size_t query_count = 0;

    static Pending Value(TickCallback done) {
      Pending p;
      p.done = std::move(done);
      return p;
    }
    static Pending Into(TickResult* out, TickDoneCallback done) {
      Pending p;
      p.done_into = std::move(done);
      p.into = out;
      p.into_form = true;
      return p;
    }
  };

 public:
  explicit TickStreamImpl(TickStreamSetup setup)
      : setup_(std::move(setup)),
        stub_(v1::Hitbox::NewStub(setup_.channel)),
        max_in_flight_(std::max<size_t>(1, setup_.options.max_in_flight)) {
    setup_.Prepare(&ctx_);
    stub_->async()->Tick(&ctx_, this);
    response_ = response_arena_.Fresh<v1::TickResponse>();
    StartRead(response_);
    StartCall();
  }

  ~TickStreamImpl() override {
    std::unique_lock<std::mutex> lock(mu_);
    if (!done_) {
      lock.unlock();
      ctx_.TryCancel();
      lock.lock();
      done_cv_.wait(lock, [this] { return done_; });
    }
  }

  std::future<RpcResult<TickResult>> Tick(std::span<const ColliderChange> changes,
                                          std::span<const hitbox::Query> queries) override {
    return SendForFuture(std::nullopt, changes, queries, {});
  }

  std::future<RpcResult<TickResult>> TickAt(uint64_t tick, std::span<const ColliderChange> changes,
                                            std::span<const hitbox::Query> queries) override {
    return SendForFuture(tick, changes, queries, {});
  }

  void TickAt(uint64_t tick, std::span<const ColliderChange> changes,
              std::span<const hitbox::Query> queries, TickCallback done) override {
    Send(tick, changes, queries, {}, Pending::Value(std::move(done)));
  }

  void Tick(std::span<const ColliderChange> changes, std::span<const hitbox::Query> queries,
            TickCallback done) override {
    Send(std::nullopt, changes, queries, {}, Pending::Value(std::move(done)));
  }

  std::future<RpcResult<TickResult>> Tick(
      std::span<const ColliderChange> changes, std::span<const hitbox::Query> queries,
      std::span<const ShapeFromCollider> shapes_from) override {
    return SendForFuture(std::nullopt, changes, queries, shapes_from);
  }

  void Tick(std::span<const ColliderChange> changes, std::span<const hitbox::Query> queries,
            std::span<const ShapeFromCollider> shapes_from, TickCallback done) override {
    Send(std::nullopt, changes, queries, shapes_from, Pending::Value(std::move(done)));
  }

  void Tick(std::span<const ColliderChange> changes, std::span<const hitbox::Query> queries,
            std::span<const ShapeFromCollider> shapes_from, TickResult* out,
            TickDoneCallback done) override {
    Send(std::nullopt, changes, queries, shapes_from,
         Pending::Into(out, std::move(done)));
  }

  void TickAt(uint64_t tick, std::span<const ColliderChange> changes,
              std::span<const hitbox::Query> queries, TickResult* out,
              TickDoneCallback done) override {
    Send(tick, changes, queries, {}, Pending::Into(out, std::move(done)));
  }

  RpcStatus TickInto(std::span<const ColliderChange> changes,
                     std::span<const hitbox::Query> queries,
                     std::span<const ShapeFromCollider> shapes_from, TickResult* out) override {
    // On the caller's stack: the callback holds one pointer (std::function
    // keeps it inline), so waiting costs no heap allocation.
    struct Waiter {
      std::mutex mu;
      std::condition_variable cv;
      bool done = false;
      RpcStatus status;
    } w;
    Send(std::nullopt, changes, queries, shapes_from,
         Pending::Into(out, [wp = &w](const RpcStatus& st) {
           std::lock_guard<std::mutex> lock(wp->mu);
           wp->status = st;
           wp->done = true;
           wp->cv.notify_one();
         }));
    std::unique_lock<std::mutex> lock(w.mu);
    w.cv.wait(lock, [&w] { return w.done; });
    return w.status;
  }

  std::future<RpcResult<TickResult>> SendForFuture(std::optional<uint64_t> game_tick,
                                                   std::span<const ColliderChange> changes,
                                                   std::span<const hitbox::Query> queries,
                                                   std::span<const ShapeFromCollider> shapes_from) {
    auto promise = std::make_shared<std::promise<RpcResult<TickResult>>>();
    std::future<RpcResult<TickResult>> future = promise->get_future();
    Send(game_tick, changes, queries, shapes_from,
         Pending::Value([promise](RpcResult<TickResult> result) {
           promise->set_value(std::move(result));
         }));
    return future;
  }

  // Queues one tick numbered `game_tick` (nullopt: the next number), to be
  // answered as `entry` says.
  void Send(std::optional<uint64_t> game_tick, std::span<const ColliderChange> changes,
            std::span<const hitbox::Query> queries,
            std::span<const ShapeFromCollider> shapes_from, Pending entry) {
    // The form is settled before the first tick: packed only to a server
    // that says it takes it (an older one would drop the packed queries).
    std::call_once(form_once_, [this] { packed_ = setup_.SendsPacked(); });
    RpcStatus refused;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (ended_) {
        refused = final_status_.ok()
                      ? RpcStatus(RpcCode::kFailedPrecondition, "the tick stream has finished")
                      : final_status_;
      } else if (finishing_) {
        refused = RpcStatus(RpcCode::kFailedPrecondition, "the tick stream is finishing");
      } else if (pending_.size() >= max_in_flight_) {
        refused = RpcStatus(RpcCode::kResourceExhausted,
                            "tick stream has " + std::to_string(pending_.size()) +
                                " ticks in flight (max_in_flight " +
                                std::to_string(max_in_flight_) + ")");
      } else if (entry.into_form && entry.into == nullptr) {
        refused = RpcStatus(RpcCode::kInvalidArgument, "Tick: out is null");
      } else if (game_tick && *game_tick < next_tick_) {
        refused = RpcStatus(RpcCode::kInvalidArgument,
                            "tick " + std::to_string(*game_tick) +
                                ": the ticks of a stream must increase (the next is at least " +
                                std::to_string(next_tick_) + ")");
      } else {
        const uint64_t tick = game_tick ? *game_tick : next_tick_;
        std::unique_ptr<Outgoing> out = TakeOutgoing();
        refused = setup_.Encode(packed_, tick, changes, queries, shapes_from, &from_, out->message);
        if (refused.ok()) {
          next_tick_ = tick + 1;
          entry.tick = tick;
          entry.query_count = queries.size();
          // Ticks only increase: pending_ stays sorted by tick.
          pending_.push_back(std::move(entry));
          queue_.push_back(std::move(out));
        } else {
          spare_.push_back(std::move(out));
        }
      }
    }
    if (!refused.ok()) {
      Complete(entry, std::move(refused));
      return;
    }
    PumpWrites();
  }

  size_t pending() const override {
    std::lock_guard<std::mutex> lock(mu_);
    return pending_.size();
  }

  bool done() const override {
    std::lock_guard<std::mutex> lock(mu_);
    return ended_;
  }

  RpcStatus status() const override {
    std::lock_guard<std::mutex> lock(mu_);
    return final_status_;
  }

  RpcStatus Finish() override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      finishing_ = true;
    }
    PumpWrites();
    std::unique_lock<std::mutex> lock(mu_);
    done_cv_.wait(lock, [this] { return done_; });
    return final_status_;
  }

  void Cancel() override { ctx_.TryCancel(); }

  // --- Reactions (gRPC threads) ---------------------------------------------

  void OnWriteDone(bool ok) override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      writing_ = false;
      // Reused by a later tick; a few are kept (ticks are usually one or two in flight).
      if (writing_buf_ && spare_.size() < kMaxSpare) spare_.push_back(std::move(writing_buf_));
      writing_buf_.reset();
      // A failed write means the stream is broken; OnDone will report why.
      if (!ok) broken_writes_ = true;
    }
    PumpWrites();
  }

  void OnWritesDoneDone(bool /*ok*/) override {}

  void OnReadDone(bool ok) override {
    if (!ok) return;  // the stream is ending; OnDone follows
    Pending entry;
    bool found = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      const uint64_t tick = response_->tick();
      auto it = std::lower_bound(pending_.begin(), pending_.end(), tick,
                                 [](const Pending& p, uint64_t t) { return p.tick < t; });
      if (it != pending_.end() && it->tick == tick) {
        entry = std::move(*it);
        pending_.erase(it);
        found = true;
      }
    }
    if (!found) {
      response_ = response_arena_.Fresh<v1::TickResponse>();
      StartRead(response_);
      return;
    }
    if (entry.into_form) {
      // Decoded straight into the caller's result, before the response is reused.
      RpcStatus status = DecodeTickResponse(*response_, entry.query_count, entry.into);
      response_ = response_arena_.Fresh<v1::TickResponse>();  // the last one is no longer needed
      StartRead(response_);
      CallTickDone(entry.done_into, status);
      return;
    }
    RpcResult<TickResult> result = RpcStatus(RpcCode::kInternal, "unset");
    {
      TickResult out;
      RpcStatus status = DecodeTickResponse(*response_, entry.query_count, &out);
      if (status.ok()) {
        result = std::move(out);
      } else {
        result = std::move(status);
      }
    }
    response_ = response_arena_.Fresh<v1::TickResponse>();  // the last one is no longer needed
    StartRead(response_);
    CallTickCallback(entry.done, std::move(result));
  }

  void OnDone(const grpc::Status& status) override {
    std::vector<Pending> orphans;
    RpcStatus failure;
    {
      std::lock_guard<std::mutex> lock(mu_);
      final_status_ = FromGrpc(status);
      ended_ = true;
      orphans.swap(pending_);
      queue_.clear();
      failure = final_status_.ok() ? RpcStatus(RpcCode::kAborted,
                                               "the server closed the tick stream before "
                                               "answering this tick")
                                   : final_status_;
    }
    for (Pending& entry : orphans) Complete(entry, failure);
    std::lock_guard<std::mutex> lock(mu_);
    done_ = true;
    done_cv_.notify_all();
    // Nothing of *this may be touched after the lock is released: the owner
    // may destroy the stream as soon as it sees done_.
  }

 private:
  // A tick that ends without an answer: `status` to whichever callback it has.
  static void Complete(const Pending& entry, RpcStatus status) {
    if (entry.into_form) {
      CallTickDone(entry.done_into, status);
    } else {
      CallTickCallback(entry.done, std::move(status));
    }
  }

  // Starts the next queued write, or the half-close once Finish() was asked
  // and the queue is empty. At most one write is outstanding.
  void PumpWrites() {
    enum { kNothing, kWrite, kWritesDone } action = kNothing;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (writing_ || ended_ || broken_writes_ || writes_done_) return;
      if (!queue_.empty()) {
        writing_buf_ = std::move(queue_.front());
        queue_.pop_front();
        writing_ = true;
        action = kWrite;
      } else if (finishing_) {
        writes_done_ = true;
        action = kWritesDone;
      }
    }
    if (action == kWrite) {
      StartWrite(writing_buf_->message);
    } else if (action == kWritesDone) {
      StartWritesDone();
    }
  }

  const TickStreamSetup setup_;
  std::unique_ptr<v1::Hitbox::Stub> stub_;
  grpc::ClientContext ctx_;
  const size_t max_in_flight_;
  // Whether the ticks go packed (TickStreamSetup::SendsPacked), set once
  // (form_once_) before the first tick is encoded.
  std::once_flag form_once_;
  bool packed_ = false;
  // Shape-from-collider ids by query index of the tick being packed (mu_).
  std::vector<std::optional<uint64_t>> from_;

  mutable std::mutex mu_;
  std::condition_variable done_cv_;
  uint64_t next_tick_ = 1;
  static constexpr size_t kMaxSpare = 4;
  // A request on its own arena, reused from tick to tick.
  struct Outgoing {
    wire::MessageArena arena;
    v1::TickRequest* message = nullptr;
  };
  // A cleared request: a spare one when there is one. mu_ held.
  std::unique_ptr<Outgoing> TakeOutgoing() {
    std::unique_ptr<Outgoing> out;
    if (spare_.empty()) {
      out = std::make_unique<Outgoing>();
    } else {
      out = std::move(spare_.back());
      spare_.pop_back();
    }
    out->message = out->arena.Fresh<v1::TickRequest>();
    return out;
  }
  std::deque<std::unique_ptr<Outgoing>> queue_;
  std::unique_ptr<Outgoing> writing_buf_;  // owned by the outstanding StartWrite
  std::vector<std::unique_ptr<Outgoing>> spare_;
  // The response being read (owned by the outstanding StartRead), on its arena.
  wire::MessageArena response_arena_;
  v1::TickResponse* response_ = nullptr;
  // Ticks sent and not yet answered, by increasing tick.
  std::vector<Pending> pending_;
  bool writing_ = false;
  bool broken_writes_ = false;
  bool finishing_ = false;
  bool writes_done_ = false;
  bool ended_ = false;
  bool done_ = false;
  RpcStatus final_status_;
};

}  // namespace

void CallTickCallback(const TickCallback& done, RpcResult<TickResult> result) {
  if (!done) return;
  try {
    done(std::move(result));
  } catch (...) {
    // A throwing callback must not unwind into gRPC's threads (nor the caller's).
  }
}

void CallTickDone(const TickDoneCallback& done, const RpcStatus& status) {
  if (!done) return;
  try {
    done(status);
  } catch (...) {
    // As CallTickCallback.
  }
}

RpcStatus DecodeTickResponse(const v1::TickResponse& r, size_t query_count, TickResult* out) {
  if (r.has_error() && r.error().code() != 0) {
    return RpcStatus(static_cast<RpcCode>(r.error().code()), r.error().message());
  }
  out->tick = r.tick();
  out->revision = r.revision();
  out->events.clear();
  for (const v1::WatchEvent& e : r.events()) out->events.push_back(wire::ResultFromProto(e));
  out->events_truncated = r.events_truncated();
  if (r.has_packed()) {  // asked for (TickStreamOptions::packed)
    return RpcStatus::FromStatus(wire::FromPacked(r.packed(), query_count, &out->results));
  }
  return ResultsFromProto(r.results(), query_count, &out->results);
}

void TickStreamSetup::Prepare(grpc::ClientContext* ctx) const {
  if (options.timeout) {
    ctx->set_deadline(
        std::chrono::system_clock::now() +
        std::chrono::duration_cast<std::chrono::system_clock::duration>(*options.timeout));
  }
  if (wait_for_ready) ctx->set_wait_for_ready(true);
  if (!token.empty()) ctx->AddMetadata("authorization", "Bearer " + token);
}

bool TickStreamSetup::SendsPacked() const {
  return options.packed && features->PackedTicks(token, probe_timeout, wait_for_ready);
}

RpcStatus TickStreamSetup::Encode(bool packed, uint64_t tick,
                                  std::span<const ColliderChange> changes,
                                  std::span<const hitbox::Query> queries,
                                  std::span<const ShapeFromCollider> shapes_from,
                                  std::vector<std::optional<uint64_t>>* from,
                                  v1::TickRequest* out) const {
  return packed ? TickToPacked(session_id, tick, changes, queries, shapes_from, from, out)
                : TickToProto(session_id, tick, changes, queries, shapes_from, out);
}

std::unique_ptr<TickStream> StartTickStream(TickStreamSetup setup) {
  if (setup.options.blocking) return StartBlockingTickStream(std::move(setup));
  return std::make_unique<TickStreamImpl>(std::move(setup));
}

}  // namespace hitbox::internal
