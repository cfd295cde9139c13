// The idle reaper: a thread that deletes sessions idle past their timeout.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>

namespace hitbox::server {

/// Calls `reap(now_ns)` (SteadyNowNs()) on a thread of its own, which does
/// the deleting and returns the steady time (ns) at which the next session
/// could expire (INT64_MAX: none); sleeps until then, or until Kick.
class IdleReaper {
 public:
  explicit IdleReaper(std::function<int64_t(int64_t now_ns)> reap);
  /// Stops and joins the thread.
  ~IdleReaper();
  IdleReaper(const IdleReaper&) = delete;
  IdleReaper& operator=(const IdleReaper&) = delete;
  /// Wakes the thread to reap and recompute its deadline (a session was
  /// created or restored with an idle timeout).
  void Kick();

 private:
  void Loop();

  const std::function<int64_t(int64_t)> reap_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;  // guarded by mu_
  bool kick_ = false;  // guarded by mu_
  std::thread thread_;
};

}  // namespace hitbox::server
