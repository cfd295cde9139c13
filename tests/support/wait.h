// Waiting on a condition in tests: WaitUntil polls a predicate until it holds.
// Its deadline only guards against a hang; no test result depends on it.
#pragma once

#include <chrono>
#include <thread>

namespace hitbox::testing {

/// The longest a test waits for something that should happen soon.
inline constexpr std::chrono::seconds kHangGuard{30};

/// Calls `done` until it returns true (then true) or `guard` has passed
/// (then false, so the caller's assertion fails instead of hanging).
template <typename Predicate>
bool WaitUntil(Predicate&& done, std::chrono::milliseconds guard = kHangGuard) {
  const auto give_up = std::chrono::steady_clock::now() + guard;
  while (!done()) {
    if (std::chrono::steady_clock::now() > give_up) return false;
    // The state polled here (counters, files, another process) has no
    // notification to wait on; a millisecond between looks keeps a core free.
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

}  // namespace hitbox::testing
