// Persistence of sessions in --data-dir: per session a snapshot file and an
// append-only log of the change batches applied since, with an fsync policy
// like Redis' AOF (always / everysec / no) and compaction of the log into a
// new snapshot. See docs/persistence.md for the format and guarantees.
//
// Files (one pair per session, in the data dir itself):
//   session-<id>.snap   header + SessionInfo record + Colliders records + End
//   session-<id>.log    header + one Batch record per applied change batch
// Every file starts with an 8-byte header: 7 magic bytes ("HITBOXS" or
// "HITBOXL") and a format version byte (kFormatVersion). Every record is
// framed as [u32 payload length][u32 crc32 of type + payload][u8 type]
// [payload], integers little-endian, crc32 as zlib computes it; payloads are
// hitbox.v1 protobuf messages (wire/), never a format of our own.
#pragma once

#include <google/protobuf/repeated_ptr_field.h>

#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>

#include "hitbox/status.h"
#include "hitbox/v1/hitbox.pb.h"
#include "maps.h"
#include "session.h"

namespace hitbox::server {

/// When the log is flushed to disk (Redis appendfsync).
enum class FsyncPolicy {
  /// fdatasync after every batch, before it is acknowledged.
  kAlways,
  /// A background thread fdatasyncs every second: a power loss or OS crash
  /// loses at most about one second of acknowledged batches.
  kEverySec,
  /// Never fsync the log; the OS writes it back when it likes.
  kNo,
};

/// "always" / "everysec" / "no".
const char* FsyncPolicyName(FsyncPolicy policy);
/// Parses "always", "everysec" or "no".
[[nodiscard]] Result<FsyncPolicy> ParseFsyncPolicy(std::string_view text);

/// Format version written in every file header; readers refuse newer ones.
inline constexpr uint8_t kFormatVersion = 1;

/// Record types of the files. Readers skip types they do not know (so a later
/// version may add records that older readers can ignore); anything a reader
/// must understand bumps kFormatVersion instead.
enum class RecordType : uint8_t {
  /// Snapshot: v1::SessionInfo (id, limits incl. idle timeout, token,
  /// created_unix_ms, revision, collider_count). First record.
  kSessionInfo = 1,
  /// Snapshot: v1::GetCollidersResponse holding a chunk of the colliders.
  kColliders = 2,
  /// Snapshot, reserved for lag-compensation history (recent revisions of
  /// moved colliders) once sessions keep one: not written by version 1.
  kHistory = 3,
  /// Snapshot: empty payload, last record (a snapshot without it is corrupt).
  kEnd = 15,
  /// Log: v1::ApplyChangesRequest; expected_revision is the session's
  /// revision before the batch (the batch makes it expected_revision + 1).
  kBatch = 16,
};

/// Configuration of the session store.
struct PersistOptions {
  /// Directory of the session files (created if missing); empty: no persistence.
  std::string data_dir;
  FsyncPolicy fsync = FsyncPolicy::kEverySec;
  /// The log is compacted into a new snapshot when it is larger than
  /// compact_factor × the snapshot and larger than compact_min_bytes.
  double compact_factor = 2.0;
  uint64_t compact_min_bytes = 4ull << 20;
};

class Journal;

/// The sessions' files in the data dir. Thread-safe; Append is called with
/// the session's exclusive lock held (so one session's records are ordered),
/// sessions never wait for each other's disk writes except in Flush.
class SessionStore {
 public:
  /// Creates the data dir if needed and checks that it is writable (error
  /// naming the directory otherwise); starts the everysec flusher.
  [[nodiscard]] static Result<std::unique_ptr<SessionStore>> Open(const PersistOptions& options);
  /// Flushes every log to disk and closes the files.
  ~SessionStore();
  SessionStore(const SessionStore&) = delete;
  SessionStore& operator=(const SessionStore&) = delete;

  const PersistOptions& options() const { return options_; }

  /// Loads every session of the data dir into `registry` (limits clamped to
  /// `max`): snapshot, then the log's batches. A torn or corrupt tail of a
  /// log is cut off and logged; a corrupt snapshot is logged and its files
  /// are renamed to *.corrupt (the session is skipped, the rest load).
  /// Returns the number of sessions restored.
  /// A session saved on a map is restored on that map (set_maps); when the
  /// map is not loaded it is skipped and its files stay.
  size_t Recover(SessionRegistry& registry, const SessionLimits& max);
  /// The maps sessions may be restored on (may be null: none).
  void set_maps(std::shared_ptr<const MapLibrary> maps) { maps_ = std::move(maps); }

  /// Writes the files of a new session (an empty snapshot and log). Errors:
  /// UNAVAILABLE naming the data dir.
  [[nodiscard]] Status Create(const Session& s);
  /// Appends an applied batch to the session's log (flushed per the fsync
  /// policy) and compacts the log when it has grown past its factor. Hold
  /// the session's exclusive lock; `revision_before` is its revision before
  /// the batch. Errors (UNAVAILABLE, naming the data dir): nothing was
  /// logged and the caller must undo the batch in memory.
  /// `tick` (lag compensation) is the batch's tick, replayed with it so the
  /// recent history comes back too.
  [[nodiscard]] Status Append(const Session& s,
                              const google::protobuf::RepeatedPtrField<v1::ColliderChange>& changes,
                              std::optional<uint64_t> tick, uint64_t revision_before);
  /// Deletes the session's files (unless a newer session of the same id owns them).
  void Remove(const Session& s);
  /// Writes a new snapshot of `s` and empties its log (hold its lock, any mode).
  [[nodiscard]] Status Compact(const Session& s);
  /// fdatasyncs every log with unflushed records.
  void Flush();

  /// File names of a session id: "session-<id>.snap" / ".log" (ids are
  /// [A-Za-z0-9._:-], never "." or ".."; anything else is refused).
  static Result<std::string> SnapshotName(std::string_view id);
  static Result<std::string> LogName(std::string_view id);

 private:
  explicit SessionStore(const PersistOptions& options) : options_(options) {}
  std::shared_ptr<Journal> Find(const std::string& id) const;
  void FlusherLoop();
  // UNAVAILABLE: the session has no files (being created, or deleted).
  Status Gone(const Session& s) const;
  // UNAVAILABLE: "persistence: cannot <what> in --data-dir <dir>: <strerror(err)>".
  Status Unavailable(const std::string& what, int err) const;
  // Writes `s`'s snapshot (temp file, fsync, rename, fsync dir) and empties
  // the journal's log; hold `j.mu`.
  Status CompactLocked(Journal& j, const Session& s);
  // Loads one session from its snapshot file name; false when skipped.
  bool RecoverOne(const std::string& snapshot_name, SessionRegistry& registry,
                  const SessionLimits& max);

  const PersistOptions options_;
  int lock_fd_ = -1;  // flock'ed data_dir/LOCK: one hitboxd per data dir
  mutable std::mutex mu_;
  std::shared_ptr<const MapLibrary> maps_;
  std::map<std::string, std::shared_ptr<Journal>> journals_;  // guarded by mu_
  std::mutex flusher_mu_;
  std::condition_variable flusher_cv_;
  bool flusher_stop_ = false;  // guarded by flusher_mu_
  std::thread flusher_;
};

}  // namespace hitbox::server
