#include "session.h"

#include <chrono>
#include <mutex>

#include "hitbox/wire/convert.h"

namespace hitbox::server {

Result<std::shared_ptr<Session>> SessionRegistry::Create(const std::string& id,
                                                         const SessionLimits& limits,
                                                         std::string token) {
  if (!id.empty()) {
    if (Status s = wire::ValidateSessionId(id); !s.ok()) return s.error();
  }
  const int64_t now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                             std::chrono::system_clock::now().time_since_epoch())
                             .count();
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
  sessions_.emplace(chosen, session);
  return session;
}

std::shared_ptr<Session> SessionRegistry::Find(std::string_view id) const {
  std::lock_guard<std::mutex> lock(mu_);
  const auto it = sessions_.find(id);
  return it == sessions_.end() ? nullptr : it->second;
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
  // Wait for in-flight work on the session, then flag it for streams holding it.
  std::unique_lock<std::shared_mutex> lock(session->mutex());
  session->MarkDeleted();
  return session;
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

}  // namespace hitbox::server
