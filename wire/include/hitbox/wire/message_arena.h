// MessageArena: one protobuf message at a time on a protobuf arena that is
// reset for each new message. Its blocks are sized to the largest message
// seen (by the bytes it really used), and the first one is a buffer kept from
// message to message, so once warm a message built on the thread that asked
// for it costs no heap allocation, and one parsed on another thread (a gRPC
// reader: protobuf gives each thread its own blocks) costs one block. Used
// for the Tick stream's requests and responses on both sides of the wire.
#pragma once

#include <algorithm>
#include <bit>
#include <cstddef>
#include <memory>
#include <optional>

#include <google/protobuf/arena.h>

namespace hitbox::wire {

class MessageArena {
 public:
  /// `initial_bytes`: the first block size (it grows by powers of two up to kMaxBlockBytes).
  explicit MessageArena(size_t initial_bytes = 4096) : block_(initial_bytes) {}
  MessageArena(const MessageArena&) = delete;
  MessageArena& operator=(const MessageArena&) = delete;

  /// Largest block: bigger messages take several.
  static constexpr size_t kMaxBlockBytes = size_t{8} << 20;

  /// A new empty T on the arena. Every message made by an earlier call is
  /// destroyed: the caller must be done with it.
  template <typename T>
  T* Fresh() {
    const size_t used = arena_ ? static_cast<size_t>(arena_->SpaceUsed()) : 0;
    if (!arena_ || (used > block_ && block_ < kMaxBlockBytes)) {
      // First use, or the last message did not fit one block: the next one will.
      block_ = std::min(kMaxBlockBytes, std::max(block_, std::bit_ceil(used)));
      arena_.reset();
      buffer_ = std::make_unique_for_overwrite<char[]>(block_);
      google::protobuf::ArenaOptions options;
      options.start_block_size = block_;
      options.max_block_size = block_;
      options.initial_block = buffer_.get();
      options.initial_block_size = block_;
      arena_.emplace(options);
    } else {
      arena_->Reset();  // keeps the first block; frees any other
    }
    return google::protobuf::Arena::CreateMessage<T>(&*arena_);
  }
  /// Bytes of one block.
  size_t block_bytes() const { return block_; }

 private:
  size_t block_;
  std::unique_ptr<char[]> buffer_;
  std::optional<google::protobuf::Arena> arena_;
};

}  // namespace hitbox::wire
