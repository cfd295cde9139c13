#include "reaper.h"

#include <algorithm>
#include <chrono>
#include <utility>

#include "session.h"

namespace hitbox::server {

IdleReaper::IdleReaper(std::function<int64_t(int64_t)> reap) : reap_(std::move(reap)) {
  thread_ = std::thread([this] { Loop(); });
}

IdleReaper::~IdleReaper() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_one();
  thread_.join();
}

void IdleReaper::Kick() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    kick_ = true;
  }
  cv_.notify_one();
}

void IdleReaper::Loop() {
  // Never sleeps less than this between passes (a session that could not be
  // removed must not make the loop spin).
  constexpr int64_t kMinSleepNs = 5'000'000;
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop_) {
    kick_ = false;
    lock.unlock();
    const int64_t now = SteadyNowNs();
    const int64_t next = reap_(now);
    lock.lock();
    const auto woken = [this] { return stop_ || kick_; };
    if (next == INT64_MAX) {
      cv_.wait(lock, woken);
    } else {
      const int64_t at = std::max(next, now + kMinSleepNs);
      cv_.wait_until(lock, std::chrono::steady_clock::time_point(std::chrono::nanoseconds(at)),
                     woken);
    }
  }
}

}  // namespace hitbox::server
