#include "reactors.h"

#include <algorithm>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "hitbox/wire/convert.h"
#include "hitbox/wire/message_arena.h"

namespace hitbox::server {
namespace {

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

// One WatchEvents stream. It observes its session: each batch's events (for
// the watches asked) are queued as one message, written one at a time; when
// the session goes, the stream ends with NOT_FOUND once the queue is
// written. A client that falls kMaxQueuedWatchEvents behind ends the stream
// with RESOURCE_EXHAUSTED rather than lose events unseen. Owns itself
// through `self_` until OnDone (the session's weak reference may notify it).
class WatchEventsReactor final : public grpc::ServerWriteReactor<v1::WatchEventsResponse>,
                                 public SessionObserver {
 public:
  static WatchEventsReactor* Start(std::shared_ptr<Session> session, std::vector<uint64_t> ids,
                                   std::unique_ptr<InFlightSlot> slot) {
    std::shared_ptr<WatchEventsReactor> r(new WatchEventsReactor(std::move(ids), std::move(slot)));
    r->self_ = r;
    if (!r->slot_->status().ok()) {
      r->End(r->slot_->status());
      return r.get();
    }
    // The headers go once the stream is registered: a client that waits for
    // them knows every later batch's events will reach it.
    bool added = false;
    {
      std::lock_guard<std::recursive_mutex> lock(r->mu_);
      added = session->AddObserver(r);
      if (added) r->StartSendInitialMetadata();
    }
    if (!added) {
      std::string why = session->gone_reason();
      if (why.empty()) why = "session_id: session '" + session->id() + "' was deleted";
      r->End(grpc::Status(grpc::StatusCode::NOT_FOUND, why));
    }
    return r.get();
  }
  static WatchEventsReactor* Refuse(const grpc::Status& error) {
    std::shared_ptr<WatchEventsReactor> r(new WatchEventsReactor({}, nullptr));
    r->self_ = r;
    r->End(error);
    return r.get();
  }

  void OnWatchEvents(const std::vector<WatchEvent>& events, bool truncated,
                     uint64_t revision) override {
    auto msg = std::make_unique<v1::WatchEventsResponse>();
    for (const WatchEvent& e : events) {
      if (!ids_.empty() && !std::binary_search(ids_.begin(), ids_.end(), e.watch_id)) continue;
      wire::ToProto(e, msg->add_events());
    }
    if (msg->events_size() == 0) return;
    msg->set_events_truncated(truncated);
    msg->set_revision(revision);
    const v1::WatchEventsResponse* write = nullptr;
    {
      std::lock_guard<std::recursive_mutex> lock(mu_);
      if (finished_ || !end_.ok()) return;
      queued_events_ += static_cast<size_t>(msg->events_size());
      if (queued_events_ > kMaxQueuedWatchEvents) {
        end_ = grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                            "WatchEvents: the client fell more than " +
                                std::to_string(kMaxQueuedWatchEvents) +
                                " events behind; the stream ends (call again)");
        if (writing_) return;  // ends once the write in progress completes
        finished_ = true;
      } else {
        queue_.push_back(std::move(msg));
        if (writing_) return;
        writing_ = true;
        write = queue_.front().get();
      }
    }
    if (write != nullptr) {
      StartWrite(write);
    } else {
      Finish(end_);
    }
  }

  void OnSessionGone(const std::string& why) override {
    {
      std::lock_guard<std::recursive_mutex> lock(mu_);
      if (finished_) return;
      if (end_.ok()) end_ = grpc::Status(grpc::StatusCode::NOT_FOUND, why);
      if (writing_) return;  // the queue is written first
      finished_ = true;
    }
    Finish(end_);
  }

  void OnWriteDone(bool ok) override {
    const v1::WatchEventsResponse* write = nullptr;
    grpc::Status end;
    {
      std::lock_guard<std::recursive_mutex> lock(mu_);
      queued_events_ -= static_cast<size_t>(queue_.front()->events_size());
      queue_.pop_front();
      if (!ok) {
        if (finished_) return;
        finished_ = true;
        end = grpc::Status(grpc::StatusCode::CANCELLED, "WatchEvents: client went away");
      } else if (!queue_.empty() && end_.error_code() != grpc::StatusCode::RESOURCE_EXHAUSTED) {
        write = queue_.front().get();
      } else {
        writing_ = false;
        if (end_.ok() || finished_) return;
        finished_ = true;
        end = end_;
      }
    }
    if (write != nullptr) {
      StartWrite(write);
    } else {
      Finish(end);
    }
  }
  void OnCancel() override {
    End(grpc::Status(grpc::StatusCode::CANCELLED, "WatchEvents: cancelled"));
  }
  void OnDone() override {
    std::shared_ptr<WatchEventsReactor> last = std::move(self_);  // may destroy this on return
  }

 private:
  WatchEventsReactor(std::vector<uint64_t> ids, std::unique_ptr<InFlightSlot> slot)
      : slot_(std::move(slot)), ids_(std::move(ids)) {
    std::sort(ids_.begin(), ids_.end());
  }
  // Finishes the call once, unless a write is in progress (its completion
  // then finishes with `status`).
  void End(const grpc::Status& status) {
    {
      std::lock_guard<std::recursive_mutex> lock(mu_);
      if (finished_) return;
      if (end_.ok()) end_ = status;
      if (writing_) return;
      finished_ = true;
    }
    Finish(status);
  }

  std::unique_ptr<InFlightSlot> slot_;  // held until OnDone
  std::vector<uint64_t> ids_;           // sorted; empty: every watch
  std::shared_ptr<WatchEventsReactor> self_;
  std::recursive_mutex mu_;
  std::deque<std::unique_ptr<v1::WatchEventsResponse>> queue_;  // front: being written
  size_t queued_events_ = 0;
  bool writing_ = false;
  bool finished_ = false;
  grpc::Status end_;  // how the stream ends once the queue is written (OK: not yet)
};

}  // namespace

grpc::ServerWriteReactor<v1::WatchEventsResponse>* StartWatchEventsReactor(
    std::shared_ptr<Session> session, std::vector<uint64_t> watch_ids,
    std::unique_ptr<InFlightSlot> slot) {
  return WatchEventsReactor::Start(std::move(session), std::move(watch_ids), std::move(slot));
}

grpc::ServerWriteReactor<v1::WatchEventsResponse>* NewWatchEventsReactor(
    const grpc::Status& error) {
  return WatchEventsReactor::Refuse(error);
}

grpc::ServerWriteReactor<v1::ListCollidersResponse>* NewListCollidersReactor(
    std::vector<Collider> snapshot, uint64_t revision, uint32_t page_size,
    std::unique_ptr<InFlightSlot> slot, std::unique_ptr<MemoryReservation> memory) {
  return new ListCollidersReactor(std::move(snapshot), revision, page_size, std::move(slot),
                                  std::move(memory));
}

grpc::ServerWriteReactor<v1::ListCollidersResponse>* NewListCollidersReactor(
    const grpc::Status& error) {
  return new ListCollidersReactor(error);
}

grpc::ServerBidiReactor<v1::TickRequest, v1::TickResponse>* StartTickReactor(
    HitboxService* service, grpc::CallbackServerContext* ctx,
    std::unique_ptr<InFlightSlot> slot) {
  return TickReactor::Start(service, ctx, std::move(slot));
}

}  // namespace hitbox::server
