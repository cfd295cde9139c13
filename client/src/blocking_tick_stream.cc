// The Tick stream on gRPC's synchronous API (TickStreamOptions::blocking): a
// tick is written and its answer read on the calling thread, which polls the
// call itself, so no gRPC thread wakes to hand the answer over.
//
// tick_mu_ is held for a whole tick (and by Finish and the destructor), so
// ticks from several threads take turns; state_mu_ guards what other threads
// read while a tick runs (done, status). Cancel needs neither:
// ClientContext::TryCancel is thread-safe and ends a tick blocked in gRPC.
#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "client_internal.h"
#include "hitbox/wire/message_arena.h"

namespace hitbox::internal {
namespace {

class BlockingTickStream final : public TickStream {
 public:
  explicit BlockingTickStream(TickStreamSetup setup)
      : setup_(std::move(setup)), stub_(v1::Hitbox::NewStub(setup_.channel)) {}

  ~BlockingTickStream() override {
    ctx_.TryCancel();
    std::lock_guard<std::mutex> lock(tick_mu_);  // a tick on another thread ends first
    if (stream_ != nullptr && !ended_.load()) (void)stream_->Finish();
  }

  std::future<RpcResult<TickResult>> Tick(std::span<const ColliderChange> changes,
                                          std::span<const hitbox::Query> queries) override {
    return Ready(RunOwned(std::nullopt, changes, queries, {}));
  }
  void Tick(std::span<const ColliderChange> changes, std::span<const hitbox::Query> queries,
            TickCallback done) override {
    CallTickCallback(done, RunOwned(std::nullopt, changes, queries, {}));
  }
  std::future<RpcResult<TickResult>> Tick(std::span<const ColliderChange> changes,
                                          std::span<const hitbox::Query> queries,
                                          std::span<const ShapeFromCollider> shapes_from) override {
    return Ready(RunOwned(std::nullopt, changes, queries, shapes_from));
  }
  void Tick(std::span<const ColliderChange> changes, std::span<const hitbox::Query> queries,
            std::span<const ShapeFromCollider> shapes_from, TickCallback done) override {
    CallTickCallback(done, RunOwned(std::nullopt, changes, queries, shapes_from));
  }
  std::future<RpcResult<TickResult>> TickAt(uint64_t tick, std::span<const ColliderChange> changes,
                                            std::span<const hitbox::Query> queries) override {
    return Ready(RunOwned(tick, changes, queries, {}));
  }
  void TickAt(uint64_t tick, std::span<const ColliderChange> changes,
              std::span<const hitbox::Query> queries, TickCallback done) override {
    CallTickCallback(done, RunOwned(tick, changes, queries, {}));
  }
  void Tick(std::span<const ColliderChange> changes, std::span<const hitbox::Query> queries,
            std::span<const ShapeFromCollider> shapes_from, TickResult* out,
            TickDoneCallback done) override {
    CallTickDone(done, Run(std::nullopt, changes, queries, shapes_from, out));
  }
  void TickAt(uint64_t tick, std::span<const ColliderChange> changes,
              std::span<const hitbox::Query> queries, TickResult* out,
              TickDoneCallback done) override {
    CallTickDone(done, Run(tick, changes, queries, {}, out));
  }
  RpcStatus TickInto(std::span<const ColliderChange> changes,
                     std::span<const hitbox::Query> queries,
                     std::span<const ShapeFromCollider> shapes_from, TickResult* out) override {
    return Run(std::nullopt, changes, queries, shapes_from, out);
  }

  size_t pending() const override { return in_flight_.load(); }
  bool done() const override { return ended_.load(); }
  RpcStatus status() const override {
    std::lock_guard<std::mutex> lock(state_mu_);
    return final_status_;
  }

  RpcStatus Finish() override {
    std::lock_guard<std::mutex> lock(tick_mu_);
    if (!ended_.load()) {
      grpc::Status status;  // OK: a stream that never opened ends as it is
      if (stream_ != nullptr) {
        stream_->WritesDone();
        // Every tick was answered; anything more the server sends is read
        // off before its status.
        v1::TickResponse* extra = response_arena_.Fresh<v1::TickResponse>();
        while (stream_->Read(extra)) extra = response_arena_.Fresh<v1::TickResponse>();
        status = stream_->Finish();
      }
      End(FromGrpc(status));
    }
    std::lock_guard<std::mutex> state(state_mu_);
    return final_status_;
  }

  void Cancel() override { ctx_.TryCancel(); }

 private:
  // One tick into `out`, on this thread; its status.
  RpcStatus Run(std::optional<uint64_t> game_tick, std::span<const ColliderChange> changes,
                std::span<const hitbox::Query> queries,
                std::span<const ShapeFromCollider> shapes_from, TickResult* out) {
    std::lock_guard<std::mutex> lock(tick_mu_);
    if (ended_.load()) {
      std::lock_guard<std::mutex> state(state_mu_);
      return final_status_.ok()
                 ? RpcStatus(RpcCode::kFailedPrecondition, "the tick stream has finished")
                 : final_status_;
    }
    if (out == nullptr) return RpcStatus(RpcCode::kInvalidArgument, "Tick: out is null");
    if (game_tick && *game_tick < next_tick_) {
      return RpcStatus(RpcCode::kInvalidArgument,
                       "tick " + std::to_string(*game_tick) +
                           ": the ticks of a stream must increase (the next is at least " +
                           std::to_string(next_tick_) + ")");
    }
    // The form is settled before the first tick, as on the callback API.
    if (!form_known_) {
      packed_ = setup_.SendsPacked();
      form_known_ = true;
    }
    const uint64_t tick = game_tick ? *game_tick : next_tick_;
    v1::TickRequest* request = request_arena_.Fresh<v1::TickRequest>();
    const RpcStatus encoded =
        setup_.Encode(packed_, tick, changes, queries, shapes_from, &from_, request);
    if (!encoded.ok()) return encoded;
    next_tick_ = tick + 1;
    in_flight_.store(1);
    const RpcStatus answered = Exchange(*request, tick, queries.size(), out);
    in_flight_.store(0);
    return answered;
  }

  // Writes `request` (tick `tick`) and reads its answer into `out`; a broken
  // stream ends here with its status.
  RpcStatus Exchange(const v1::TickRequest& request, uint64_t tick, size_t query_count,
                     TickResult* out) {
    if (stream_ == nullptr) {
      setup_.Prepare(&ctx_);  // the stream opens here: its deadline counts from now
      stream_ = stub_->Tick(&ctx_);
    }
    if (stream_->Write(request)) {
      for (;;) {
        v1::TickResponse* response = response_arena_.Fresh<v1::TickResponse>();
        if (!stream_->Read(response)) break;
        // None but this tick is in flight: another tick's answer is passed over.
        if (response->tick() == tick) return DecodeTickResponse(*response, query_count, out);
      }
    }
    const RpcStatus final_status = FromGrpc(stream_->Finish());
    End(final_status);
    return final_status.ok() ? RpcStatus(RpcCode::kAborted,
                                         "the server closed the tick stream before "
                                         "answering this tick")
                             : final_status;
  }

  void End(RpcStatus status) {
    std::lock_guard<std::mutex> state(state_mu_);
    final_status_ = std::move(status);
    ended_.store(true);
  }

  RpcResult<TickResult> RunOwned(std::optional<uint64_t> game_tick,
                                 std::span<const ColliderChange> changes,
                                 std::span<const hitbox::Query> queries,
                                 std::span<const ShapeFromCollider> shapes_from) {
    TickResult out;
    RpcStatus status = Run(game_tick, changes, queries, shapes_from, &out);
    if (!status.ok()) return status;
    return out;
  }

  static std::future<RpcResult<TickResult>> Ready(RpcResult<TickResult> result) {
    std::promise<RpcResult<TickResult>> promise;
    promise.set_value(std::move(result));
    return promise.get_future();
  }

  const TickStreamSetup setup_;
  std::unique_ptr<v1::Hitbox::Stub> stub_;
  grpc::ClientContext ctx_;

  std::mutex tick_mu_;  // held for a whole tick; guards what follows
  std::unique_ptr<grpc::ClientReaderWriter<v1::TickRequest, v1::TickResponse>> stream_;
  bool form_known_ = false;
  bool packed_ = false;
  uint64_t next_tick_ = 1;
  // The request and the answer, each on an arena reused from tick to tick.
  wire::MessageArena request_arena_;
  wire::MessageArena response_arena_;
  // Shape-from-collider ids by query index of the tick being packed.
  std::vector<std::optional<uint64_t>> from_;

  std::atomic<size_t> in_flight_{0};
  std::atomic<bool> ended_{false};
  mutable std::mutex state_mu_;
  RpcStatus final_status_;  // (state_mu_)
};

}  // namespace

std::unique_ptr<TickStream> StartBlockingTickStream(TickStreamSetup setup) {
  return std::make_unique<BlockingTickStream>(std::move(setup));
}

}  // namespace hitbox::internal
