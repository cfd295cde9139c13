// A scriptable in-process Hitbox server for client tests: it answers every
// rpc from a tiny in-memory model (no collision math), counts calls, and can
// be told to fail with UNAVAILABLE, to stall, or to misbehave on the Tick
// stream, so the client's retry, deadline and stream logic can be checked
// exactly (the real hitboxd is exercised in hitboxd_test.cc).
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "hitbox/v1/hitbox.grpc.pb.h"

namespace hitbox::testing {

namespace v1 = ::hitbox::v1;

/// How the fake's Tick handler behaves.
enum class TickMode {
  kEcho,          ///< answers each tick at once, in order
  kReversePairs,  ///< reads two ticks, answers the second first
  kStall,         ///< reads ticks, never answers, until the call is cancelled
  kBreakAfter,    ///< answers `break_after` ticks, reads one more, then ends with UNAVAILABLE
};

class FakeHitbox final : public v1::Hitbox::Service {
 public:
  /// Calls of every rpc, by name ("GetSession", ...), attempts included.
  int calls(const std::string& method) const {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = calls_.find(method);
    return it == calls_.end() ? 0 : it->second;
  }
  /// The next `n` calls (of any rpc) fail with UNAVAILABLE.
  void FailNext(int n) { fail_next_ = n; }
  /// While held, every unary call waits (a slow server) until Release().
  void Hold() {
    std::lock_guard<std::mutex> lock(mu_);
    held_ = true;
  }
  void Release() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      held_ = false;
    }
    released_.notify_all();
  }
  /// The latest deadline a ListSessions call came with.
  std::chrono::system_clock::time_point latest_deadline() const {
    std::lock_guard<std::mutex> lock(mu_);
    return latest_deadline_;
  }
  /// Set by a test while earlier streams' handlers may still read them.
  std::atomic<TickMode> tick_mode{TickMode::kEcho};
  std::atomic<int> break_after{0};
  /// GetServerInfo: unset answers UNIMPLEMENTED, as a server older than the
  /// rpc (and than the packed tick form, which this fake never decodes);
  /// set answers ServerInfo.packed_ticks with it.
  std::optional<bool> packed_ticks;

  grpc::Status CreateSession(grpc::ServerContext*, const v1::CreateSessionRequest* req,
                             v1::SessionInfo* resp) override {
    if (auto s = Enter("CreateSession"); !s.ok()) return s;
    std::lock_guard<std::mutex> lock(mu_);
    std::string id = req->session_id().empty() ? "auto-" + std::to_string(++auto_id_)
                                                : req->session_id();
    if (sessions_.count(id)) return {grpc::StatusCode::ALREADY_EXISTS, "session '" + id + "' exists"};
    v1::SessionInfo& info = sessions_[id];
    info.set_session_id(id);
    *info.mutable_limits() = req->limits();
    info.set_created_unix_ms(1234);
    *resp = info;
    return grpc::Status::OK;
  }

  grpc::Status GetSession(grpc::ServerContext*, const v1::GetSessionRequest* req,
                          v1::SessionInfo* resp) override {
    if (auto s = Enter("GetSession"); !s.ok()) return s;
    std::lock_guard<std::mutex> lock(mu_);
    auto it = sessions_.find(req->session_id());
    if (it == sessions_.end()) return NotFound(req->session_id());
    *resp = it->second;
    return grpc::Status::OK;
  }

  grpc::Status ListSessions(grpc::ServerContext* ctx, const v1::ListSessionsRequest*,
                            v1::ListSessionsResponse* resp) override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      latest_deadline_ = std::max(latest_deadline_, ctx->deadline());
    }
    if (auto s = Enter("ListSessions"); !s.ok()) return s;
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [id, info] : sessions_) *resp->add_sessions() = info;
    return grpc::Status::OK;
  }

  grpc::Status DeleteSession(grpc::ServerContext*, const v1::DeleteSessionRequest* req,
                             v1::DeleteSessionResponse*) override {
    if (auto s = Enter("DeleteSession"); !s.ok()) return s;
    std::lock_guard<std::mutex> lock(mu_);
    if (sessions_.erase(req->session_id()) == 0) return NotFound(req->session_id());
    return grpc::Status::OK;
  }

  // Keeps the added colliders (add entries only) and bumps the revision.
  grpc::Status ApplyChanges(grpc::ServerContext*, const v1::ApplyChangesRequest* req,
                            v1::ApplyChangesResponse* resp) override {
    if (auto s = Enter("ApplyChanges"); !s.ok()) return s;
    std::lock_guard<std::mutex> lock(mu_);
    auto it = sessions_.find(req->session_id());
    if (it == sessions_.end()) return NotFound(req->session_id());
    v1::SessionInfo& info = it->second;
    if (req->has_expected_revision() && req->expected_revision() != info.revision()) {
      return {grpc::StatusCode::FAILED_PRECONDITION,
              "expected_revision " + std::to_string(req->expected_revision()) + " but at " +
                  std::to_string(info.revision())};
    }
    for (const v1::ColliderChange& c : req->changes()) {
      if (c.has_add()) colliders_[req->session_id()][c.add().id()] = c.add();
    }
    info.set_revision(info.revision() + 1);
    info.set_collider_count(colliders_[req->session_id()].size());
    resp->set_revision(info.revision());
    resp->set_collider_count(info.collider_count());
    last_apply_ = *req;
    return grpc::Status::OK;
  }

  grpc::Status GetColliders(grpc::ServerContext*, const v1::GetCollidersRequest* req,
                            v1::GetCollidersResponse* resp) override {
    if (auto s = Enter("GetColliders"); !s.ok()) return s;
    std::lock_guard<std::mutex> lock(mu_);
    auto& set = colliders_[req->session_id()];
    for (uint64_t id : req->ids()) {
      auto it = set.find(id);
      if (it == set.end()) {
        return {grpc::StatusCode::NOT_FOUND, "ids[?]: collider " + std::to_string(id) + " unknown"};
      }
      *resp->add_colliders() = it->second;
    }
    resp->set_revision(sessions_[req->session_id()].revision());
    return grpc::Status::OK;
  }

  // Pages of page_size (default 2) in id order.
  grpc::Status ListColliders(grpc::ServerContext*, const v1::ListCollidersRequest* req,
                             grpc::ServerWriter<v1::ListCollidersResponse>* writer) override {
    if (auto s = Enter("ListColliders"); !s.ok()) return s;
    std::vector<v1::Collider> all;
    uint64_t revision = 0;
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (const auto& [id, c] : colliders_[req->session_id()]) all.push_back(c);
      revision = sessions_[req->session_id()].revision();
    }
    const size_t page = req->page_size() == 0 ? 2 : req->page_size();
    for (size_t i = 0; i < all.size(); i += page) {
      v1::ListCollidersResponse msg;
      msg.set_revision(revision);
      msg.set_total(all.size());
      for (size_t j = i; j < std::min(all.size(), i + page); ++j) *msg.add_colliders() = all[j];
      if (!writer->Write(msg)) break;
    }
    return grpc::Status::OK;
  }

  // One result per query: a cast hit with id = 100 + tag, fraction = 0.25,
  // or an overlap with id = 200 + tag for overlap queries.
  grpc::Status Query(grpc::ServerContext*, const v1::QueryRequest* req,
                     v1::QueryResponse* resp) override {
    if (auto s = Enter("Query"); !s.ok()) return s;
    resp->set_revision(7);
    for (const v1::Query& q : req->queries()) *resp->add_results() = Answer(q);
    return grpc::Status::OK;
  }

  grpc::Status GetServerInfo(grpc::ServerContext*, const v1::GetServerInfoRequest*,
                             v1::ServerInfo* resp) override {
    if (auto s = Enter("GetServerInfo"); !s.ok()) return s;
    if (!packed_ticks) return {grpc::StatusCode::UNIMPLEMENTED, ""};
    resp->set_packed_ticks(*packed_ticks);
    return grpc::Status::OK;
  }

  grpc::Status Tick(grpc::ServerContext* ctx,
                    grpc::ServerReaderWriter<v1::TickResponse, v1::TickRequest>* stream) override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      ++calls_["Tick"];
    }
    v1::TickRequest req;
    std::vector<v1::TickRequest> held;
    int answered = 0;
    while (stream->Read(&req)) {
      {
        std::lock_guard<std::mutex> lock(mu_);
        ++ticks_received_;
        if (req.has_packed() || req.packed_results()) ++packed_ticks_received_;
      }
      switch (tick_mode.load()) {
        case TickMode::kEcho:
          stream->Write(TickAnswer(req));
          break;
        case TickMode::kReversePairs:
          held.push_back(req);
          if (held.size() == 2) {
            stream->Write(TickAnswer(held[1]));
            stream->Write(TickAnswer(held[0]));
            held.clear();
          }
          break;
        case TickMode::kStall:
          break;
        case TickMode::kBreakAfter:
          if (answered == break_after) return {grpc::StatusCode::UNAVAILABLE, "fake: going away"};
          stream->Write(TickAnswer(req));
          ++answered;
          break;
      }
    }
    if (ctx->IsCancelled()) return grpc::Status::CANCELLED;
    return grpc::Status::OK;
  }

  /// Number of TickRequests read so far (all streams).
  int ticks_received() const {
    std::lock_guard<std::mutex> lock(mu_);
    return ticks_received_;
  }
  /// Number of them in the packed form (TickRequest.packed or packed_results).
  int packed_ticks_received() const {
    std::lock_guard<std::mutex> lock(mu_);
    return packed_ticks_received_;
  }
  /// The last ApplyChanges request accepted.
  v1::ApplyChangesRequest last_apply() const {
    std::lock_guard<std::mutex> lock(mu_);
    return last_apply_;
  }

 private:
  grpc::Status Enter(const char* method) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      ++calls_[method];
      released_.wait(lock, [&] { return !held_; });
    }
    if (fail_next_.fetch_sub(1) > 0) return {grpc::StatusCode::UNAVAILABLE, "fake: try again"};
    return grpc::Status::OK;
  }

  static grpc::Status NotFound(const std::string& id) {
    return {grpc::StatusCode::NOT_FOUND, "session '" + id + "' does not exist"};
  }

  static v1::QueryResult Answer(const v1::Query& q) {
    v1::QueryResult r;
    r.set_tag(q.tag());
    if (q.has_overlap()) {
      v1::OverlapHit* h = r.add_overlaps();
      h->set_id(200 + q.tag());
      h->set_user_data(q.tag());
    } else {
      v1::CastHit* h = r.add_hits();
      h->set_id(100 + q.tag());
      h->set_fraction(0.25);
      h->mutable_normal()->set_y(1.0);
    }
    return r;
  }

  // Tick t answers at revision 10 * t; a tick removing collider 666 is rejected.
  static v1::TickResponse TickAnswer(const v1::TickRequest& req) {
    v1::TickResponse resp;
    resp.set_tick(req.tick());
    for (int i = 0; i < req.changes_size(); ++i) {
      if (req.changes(i).has_remove() && req.changes(i).remove() == 666) {
        resp.mutable_error()->set_code(static_cast<int>(grpc::StatusCode::NOT_FOUND));
        resp.mutable_error()->set_message("changes[" + std::to_string(i) +
                                          "].remove: collider 666 does not exist");
        return resp;
      }
    }
    resp.set_revision(10 * req.tick());
    for (const v1::Query& q : req.queries()) *resp.add_results() = Answer(q);
    return resp;
  }

  mutable std::mutex mu_;
  std::map<std::string, int> calls_;
  std::map<std::string, v1::SessionInfo> sessions_;
  std::map<std::string, std::map<uint64_t, v1::Collider>> colliders_;
  v1::ApplyChangesRequest last_apply_;
  int auto_id_ = 0;
  int ticks_received_ = 0;
  int packed_ticks_received_ = 0;
  std::atomic<int> fail_next_{0};
  bool held_ = false;
  std::condition_variable released_;
  std::chrono::system_clock::time_point latest_deadline_;
};

/// A FakeHitbox served on a loopback port.
class FakeServer {
 public:
  FakeServer() {
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port_);
    builder.RegisterService(&service_);
    server_ = builder.BuildAndStart();
  }
  ~FakeServer() { Stop(); }
  void Stop() {
    service_.Release();  // held calls answer, so Shutdown's wait ends
    if (server_) {
      server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
      server_->Wait();
      server_.reset();
    }
  }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }
  std::shared_ptr<grpc::Channel> InProcessChannel() {
    return server_->InProcessChannel(grpc::ChannelArguments());
  }
  FakeHitbox& service() { return service_; }
  bool started() const { return server_ != nullptr && port_ > 0; }

 private:
  FakeHitbox service_;
  int port_ = 0;
  std::unique_ptr<grpc::Server> server_;
};

}  // namespace hitbox::testing
