#include "session.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <mutex>

#include "hitbox/wire/convert.h"

namespace hitbox::server {
namespace {

int64_t UnixNowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

Error MemoryCapError(uint64_t used, uint64_t more, uint64_t cap, const char* what) {
  return Error{ErrorCode::kResourceExhausted,
               std::string("memory: ") + what + " needs about " + std::to_string(more) +
                   " more bytes; sessions hold " + std::to_string(used) +
                   " bytes, the cap is " + std::to_string(cap) +
                   " (--max-memory); remove colliders or delete sessions"};
}

}  // namespace

int64_t SteadyNowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

int64_t Session::last_active_unix_ms() const {
  const int64_t idle_ns = SteadyNowNs() - last_active_ns();
  return UnixNowMs() - idle_ns / 1'000'000;
}

bool Session::AddObserver(std::weak_ptr<SessionObserver> observer) {
  std::lock_guard<std::mutex> lock(observers_mu_);
  if (!gone_reason_.empty()) return false;
  std::erase_if(observers_, [](const std::weak_ptr<SessionObserver>& o) { return o.expired(); });
  observers_.push_back(std::move(observer));
  return true;
}

void Session::PublishWatchEvents(const std::vector<WatchEvent>& events, bool truncated,
                                 uint64_t revision) {
  if (events.empty()) return;
  std::lock_guard<std::mutex> lock(observers_mu_);
  for (const std::weak_ptr<SessionObserver>& o : observers_) {
    if (std::shared_ptr<SessionObserver> observer = o.lock()) {
      observer->OnWatchEvents(events, truncated, revision);
    }
  }
}

std::string Session::gone_reason() const {
  std::lock_guard<std::mutex> lock(observers_mu_);
  return gone_reason_;
}

std::vector<std::weak_ptr<SessionObserver>> Session::TakeObservers(const std::string& why) {
  std::lock_guard<std::mutex> lock(observers_mu_);
  if (gone_reason_.empty()) gone_reason_ = why;
  return std::move(observers_);
}

Result<std::shared_ptr<Session>> SessionRegistry::Create(const std::string& id,
                                                         const SessionLimits& limits,
                                                         std::string token,
                                                         int64_t created_unix_ms,
                                                         std::shared_ptr<const ColliderSet> map,
                                                         const std::string& map_id) {
  if (!id.empty()) {
    if (Status s = wire::ValidateSessionId(id); !s.ok()) return s.error();
  }
  const int64_t now_ms = created_unix_ms != 0 ? created_unix_ms : UnixNowMs();
  std::lock_guard<std::mutex> lock(mu_);
  if (sessions_.size() >= max_sessions_) {
    return Error{ErrorCode::kResourceExhausted,
                 "sessions: the server holds " + std::to_string(sessions_.size()) +
                     " sessions, at most " + std::to_string(max_sessions_) +
                     " allowed (--max-sessions)"};
  }
  std::string chosen = id;
  if (chosen.empty()) {
    do {
      chosen = "session-" + std::to_string(next_auto_id_++);
    } while (sessions_.count(chosen) != 0);
  } else if (sessions_.count(chosen) != 0) {
    return Error{ErrorCode::kAlreadyExists, "session_id: session '" + id + "' already exists"};
  }
  auto session = std::make_shared<Session>(chosen, limits, now_ms, std::move(token));
  if (map != nullptr) {
    if (Status st = session->set().SetBase(std::move(map), map_id); !st.ok()) return st.error();
  }
  // The caches its query batches make (a wide tree, merged meshes) count
  // against --max-memory like its colliders: growth is reserved first, and
  // a cache that does not fit is not made.
  session->set().SetBackgroundCaches(background_caches_);
  Session* raw = session.get();
  session->set().SetCacheReserve([this, raw](uint64_t from, uint64_t to) {
    if (to > from) {
      if (!ReserveMemory(to - from).ok()) return false;
      raw->memory_bytes_.fetch_add(to - from, std::memory_order_relaxed);
    } else {
      ReleaseMemory(from - to);
      raw->memory_bytes_.fetch_sub(from - to, std::memory_order_relaxed);
    }
    return true;
  });
  const uint64_t bytes = kSessionOverheadBytes + session->set().MemoryBytes();
  if (Status st = ReserveMemory(bytes); !st.ok()) {
    return MemoryCapError(memory_bytes(), bytes, max_memory_bytes_, "a new session");
  }
  session->memory_bytes_.store(bytes, std::memory_order_relaxed);
  sessions_.emplace(chosen, session);
  return session;
}

std::shared_ptr<Session> SessionRegistry::Find(std::string_view id) const {
  std::lock_guard<std::mutex> lock(mu_);
  const auto it = sessions_.find(id);
  if (it == sessions_.end()) return nullptr;
  // Under mu_, so RemoveIfIdle (which checks under mu_) never removes a
  // session someone just found.
  it->second->Touch();
  return it->second;
}

std::shared_ptr<Session> SessionRegistry::Remove(std::string_view id) {
  std::shared_ptr<Session> session;
  {
    std::lock_guard<std::mutex> lock(mu_);
    const auto it = sessions_.find(id);
    if (it == sessions_.end()) return nullptr;
    session = std::move(it->second);
    sessions_.erase(it);
  }
  Retire(*session, "session_id: session '" + session->id() + "' was deleted");
  return session;
}

bool SessionRegistry::RemoveIfIdle(const std::shared_ptr<Session>& session, int64_t now_ns,
                                   int64_t* idle_out) {
  const uint64_t timeout_ms = session->limits().idle_timeout_ms;
  if (timeout_ms == 0) return false;
  int64_t idle_ns = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    const auto it = sessions_.find(session->id());
    if (it == sessions_.end() || it->second != session) return false;  // deleted or re-created
    idle_ns = now_ns - session->last_active_ns();
    if (idle_ns < static_cast<int64_t>(timeout_ms) * 1'000'000) return false;
    sessions_.erase(it);
  }
  if (idle_out != nullptr) *idle_out = idle_ns;
  char idle[32];
  std::snprintf(idle, sizeof(idle), "%.1f", static_cast<double>(idle_ns) / 1e9);
  Retire(*session, "session_id: session '" + session->id() + "' expired after " + idle +
                       " s idle (limits.idle_timeout_ms " + std::to_string(timeout_ms) + ")");
  return true;
}

void SessionRegistry::Retire(Session& s, const std::string& why) {
  {
    // Wait for in-flight work on the session, then flag it for streams holding it.
    std::unique_lock<std::shared_mutex> lock(s.mutex());
    s.MarkDeleted();
    memory_bytes_.fetch_sub(s.memory_bytes(), std::memory_order_relaxed);
  }
  // No session lock held here: an observer may finish its stream at once.
  for (const std::weak_ptr<SessionObserver>& o : s.TakeObservers(why)) {
    if (std::shared_ptr<SessionObserver> observer = o.lock()) observer->OnSessionGone(why);
  }
}

std::vector<std::shared_ptr<Session>> SessionRegistry::List() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::shared_ptr<Session>> out;
  out.reserve(sessions_.size());
  for (const auto& [id, s] : sessions_) out.push_back(s);
  return out;
}

size_t SessionRegistry::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return sessions_.size();
}

Status SessionRegistry::ReserveMemory(uint64_t bytes) {
  if (bytes == 0) return Status::Ok();  // no growth passes even over the cap
  uint64_t used = memory_bytes_.load(std::memory_order_relaxed);
  do {
    if (max_memory_bytes_ != 0 && (used > max_memory_bytes_ || bytes > max_memory_bytes_ - used)) {
      return MemoryCapError(used, bytes, max_memory_bytes_, "this batch");
    }
  } while (!memory_bytes_.compare_exchange_weak(used, used + bytes, std::memory_order_relaxed));
  return Status::Ok();
}

uint64_t SessionRegistry::ReserveUpTo(uint64_t bytes) {
  uint64_t used = memory_bytes_.load(std::memory_order_relaxed);
  uint64_t take = 0;
  do {
    const uint64_t free =
        max_memory_bytes_ == 0 ? bytes : (used >= max_memory_bytes_ ? 0 : max_memory_bytes_ - used);
    take = std::min(bytes, free);
  } while (!memory_bytes_.compare_exchange_weak(used, used + take, std::memory_order_relaxed));
  return take;
}

void SessionRegistry::SettleMemory(Session& s, uint64_t reserved) {
  const uint64_t before = s.memory_bytes();
  const uint64_t after = kSessionOverheadBytes + s.set().MemoryBytes();
  s.memory_bytes_.store(after, std::memory_order_relaxed);
  s.collider_count_.store(s.set().size(), std::memory_order_relaxed);
  // Unsigned wrap-around makes this the signed change after - before - reserved.
  memory_bytes_.fetch_add(after - before - reserved, std::memory_order_relaxed);
}

}  // namespace hitbox::server
