#include "memory_budget.h"

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace hitbox::server {

MemoryTrimmer::MemoryTrimmer(bool enabled, std::chrono::milliseconds delay)
    : enabled_(enabled), delay_(delay) {
  if (enabled_) thread_ = std::thread([this] { Loop(); });
}

MemoryTrimmer::~MemoryTrimmer() {
  if (!enabled_) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_one();
  thread_.join();
}

void MemoryTrimmer::Request() {
  if (!enabled_) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    requested_ = true;
  }
  cv_.notify_one();
}

void MapLargeBlocks() {
#if defined(__GLIBC__)
  mallopt(M_MMAP_THRESHOLD, 1 << 20);
#endif
}

void MemoryTrimmer::TrimNow() {
#if defined(__GLIBC__)
  malloc_trim(0);
#endif
}

void MemoryTrimmer::Loop() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    cv_.wait(lock, [this] { return stop_ || requested_; });
    if (stop_) return;
    // Let the asking call finish freeing (its request and response messages
    // go after its handler returns); requests meanwhile join this trim.
    if (cv_.wait_for(lock, delay_, [this] { return stop_; })) return;
    requested_ = false;
    lock.unlock();
    TrimNow();
    trims_.fetch_add(1, std::memory_order_relaxed);
    lock.lock();
  }
}

bool BatchReservation::WorthTrimming() const {
  return shape_bytes >= kTrimThresholdBytes || request_bytes >= kTrimThresholdBytes;
}

bool InflightMemory::TryTake(uint64_t bytes) {
  uint64_t used = used_.load(std::memory_order_relaxed);
  do {
    if (bytes > cap_ || used > cap_ - bytes) return false;
  } while (!used_.compare_exchange_weak(used, used + bytes, std::memory_order_relaxed));
  return true;
}

bool MemoryReservation::Resize(uint64_t bytes) {
  if (pool_ != nullptr) {
    if (bytes > bytes_) {
      if (!pool_->TryTake(bytes - bytes_)) return false;
    } else if (bytes < bytes_) {
      pool_->Give(bytes_ - bytes);
    }
  }
  bytes_ = bytes;
  return true;
}

Status AnswerMemoryFull(const InflightMemory& answers, const std::string& field,
                        const std::string& needs, uint64_t bytes, const char* advice) {
  return Status(ErrorCode::kResourceExhausted,
                field + ": the server's answers in flight already hold " +
                    std::to_string(answers.used()) + " of " + std::to_string(answers.cap()) +
                    " bytes (--max-inflight-bytes); " + needs + " " + std::to_string(bytes) +
                    " more: " + advice);
}

}  // namespace hitbox::server
