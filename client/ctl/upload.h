// Uploading many colliders to a session in batches under its limits (used by
// `load` and `check`).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "hitbox/client.h"

namespace hitbox::ctl {

/// Outcome of Upload.
struct UploadResult {
  /// OK, or the error of the first rejected batch (nothing after it was sent).
  RpcStatus status;
  /// Colliders accepted before the error (all of them on success).
  size_t loaded = 0;
  /// Index in `colliders` of the entry the server blamed (its "changes[K]"
  /// prefix plus the batch start); unset when the error names no entry.
  std::optional<size_t> bad_index;
  /// First and one-past-last index of the rejected batch.
  size_t batch_begin = 0;
  size_t batch_end = 0;
  /// Number of ApplyChanges calls that succeeded.
  size_t batches = 0;
  /// Revision and collider count after the last accepted batch.
  ApplyResult last;
};

/// Adds `colliders` to `session` in AddColliders calls of at most `batch`
/// entries, showing a progress bar on a terminal when `progress`; with a
/// `tick`, every batch is a change batch of that game tick.
UploadResult Upload(Client& client, const std::string& session,
                    const std::vector<Collider>& colliders, size_t batch, bool progress,
                    std::optional<uint64_t> tick = std::nullopt);

/// Removes colliders[0, count) again (best effort after a failed upload).
RpcStatus RemoveUploaded(Client& client, const std::string& session,
                         const std::vector<Collider>& colliders, size_t count, size_t batch);

/// The batch size to use: `wanted` capped by a session limit (0 = no limit), >= 1.
size_t BatchSize(size_t wanted, uint32_t limit);

}  // namespace hitbox::ctl
