// ThreadPool: fixed worker threads that share the indices of one
// ParallelFor at a time through an atomic counter; the calling thread works
// too. A ParallelFor issued while another is running (from another thread, or
// nested) runs inline on its caller instead of waiting.
#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include "hitbox/world/collider_set.h"

namespace hitbox {

struct ThreadPool::Impl {
  std::vector<std::thread> workers;
  std::mutex busy;  // held by the thread running a ParallelFor

  std::mutex m;
  std::condition_variable wake;
  std::condition_variable done;
  uint64_t generation = 0;
  bool stop = false;
  // The current job (valid while active > 0 or the caller is in ParallelFor).
  const std::function<void(size_t)>* fn = nullptr;
  size_t count = 0;
  std::atomic<size_t> next{0};
  size_t active = 0;  // workers still inside the current job

  void Drain() {
    for (;;) {
      const size_t i = next.fetch_add(1, std::memory_order_relaxed);
      if (i >= count) return;
      (*fn)(i);
    }
  }

  void Worker() {
    uint64_t seen = 0;
    for (;;) {
      {
        std::unique_lock<std::mutex> lock(m);
        wake.wait(lock, [&] { return stop || generation != seen; });
        if (stop) return;
        seen = generation;
      }
      Drain();
      {
        std::lock_guard<std::mutex> lock(m);
        if (--active == 0) done.notify_one();
      }
    }
  }
};

ThreadPool::ThreadPool(size_t threads) : impl_(std::make_unique<Impl>()) {
  if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency());
  // The caller is one of the `threads`; start threads - 1 workers.
  for (size_t i = 1; i < threads; ++i) impl_->workers.emplace_back([this] { impl_->Worker(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(impl_->m);
    impl_->stop = true;
  }
  impl_->wake.notify_all();
  for (std::thread& t : impl_->workers) t.join();
}

size_t ThreadPool::size() const { return impl_->workers.size() + 1; }

void ThreadPool::ParallelFor(size_t count, const std::function<void(size_t)>& fn) {
  Impl& p = *impl_;
  std::unique_lock<std::mutex> busy(p.busy, std::try_to_lock);
  if (!busy.owns_lock() || p.workers.empty() || count < 2) {
    for (size_t i = 0; i < count; ++i) fn(i);
    return;
  }
  {
    std::lock_guard<std::mutex> lock(p.m);
    p.fn = &fn;
    p.count = count;
    p.next.store(0, std::memory_order_relaxed);
    p.active = p.workers.size();
    ++p.generation;
  }
  p.wake.notify_all();
  p.Drain();
  std::unique_lock<std::mutex> lock(p.m);
  p.done.wait(lock, [&] { return p.active == 0; });
  p.fn = nullptr;
}

}  // namespace hitbox
