#include "persistence.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <vector>

#include <spdlog/spdlog.h>

#include "hitbox/wire/convert.h"
#include "hitbox/wire/session_limits.h"

namespace hitbox::server {
namespace {

namespace fs = std::filesystem;

constexpr char kSnapshotMagic[] = "HITBOXS";  // 7 bytes + the version byte
constexpr char kLogMagic[] = "HITBOXL";
constexpr size_t kHeaderBytes = 8;
/// Bytes of a record frame before its payload: length, crc32, type.
constexpr size_t kFrameBytes = 9;
/// Largest record payload a reader accepts (a corrupt length must not make it
/// allocate gigabytes); a batch is bounded far below by --max-message-bytes.
constexpr uint32_t kMaxPayloadBytes = 1u << 30;
/// Colliders per snapshot record.
constexpr size_t kCollidersPerRecord = 4096;
constexpr const char* kPrefix = "session-";
constexpr const char* kSnapSuffix = ".snap";
constexpr const char* kLogSuffix = ".log";

void PutU32(std::string* out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out->push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

uint32_t GetU32(const std::string& in, size_t at) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= static_cast<uint32_t>(static_cast<unsigned char>(in[at + i])) << (8 * i);
  return v;
}

uint32_t Crc(uint8_t type, const char* payload, size_t size) {
  uLong crc = crc32(0L, Z_NULL, 0);
  const Bytef t = type;
  crc = crc32(crc, &t, 1);
  // zlib takes uInt lengths: feed large payloads in pieces.
  while (size > 0) {
    const uInt n = static_cast<uInt>(std::min<size_t>(size, 1u << 30));
    crc = crc32(crc, reinterpret_cast<const Bytef*>(payload), n);
    payload += n;
    size -= n;
  }
  return static_cast<uint32_t>(crc);
}

std::string Header(const char* magic) {
  std::string h(magic, kHeaderBytes - 1);
  h.push_back(static_cast<char>(kFormatVersion));
  return h;
}

// Appends one framed record: [length][crc32 of type + payload][type][payload].
void PutRecord(std::string* out, RecordType type, const google::protobuf::MessageLite& msg) {
  const std::string payload = msg.SerializeAsString();
  const auto t = static_cast<uint8_t>(type);
  PutU32(out, static_cast<uint32_t>(payload.size()));
  PutU32(out, Crc(t, payload.data(), payload.size()));
  out->push_back(static_cast<char>(t));
  out->append(payload);
}

/// Reads framed records from a whole file held in memory.
struct RecordReader {
  enum class Next { kRecord, kEndOfFile, kTorn, kBadChecksum };
  explicit RecordReader(const std::string& file) : data(file) {}
  const std::string& data;
  size_t pos = kHeaderBytes;
  uint8_t type = 0;
  std::string_view payload;

  Next Read() {
    if (pos == data.size()) return Next::kEndOfFile;
    if (data.size() - pos < kFrameBytes) return Next::kTorn;
    const uint32_t length = GetU32(data, pos);
    const uint32_t crc = GetU32(data, pos + 4);
    if (length > kMaxPayloadBytes) return Next::kBadChecksum;  // a garbled length
    if (data.size() - pos - kFrameBytes < length) return Next::kTorn;
    type = static_cast<uint8_t>(data[pos + 8]);
    const char* p = data.data() + pos + kFrameBytes;
    if (Crc(type, p, length) != crc) return Next::kBadChecksum;
    payload = std::string_view(p, length);
    pos += kFrameBytes + length;
    return Next::kRecord;
  }
};

const char* Describe(RecordReader::Next n) {
  return n == RecordReader::Next::kTorn ? "torn record (the file ends inside it)"
                                        : "checksum mismatch";
}

// Empty when `data` starts with `magic` and a version this build reads.
std::string CheckHeader(const std::string& data, const char* magic) {
  if (data.size() < kHeaderBytes || data.compare(0, kHeaderBytes - 1, magic) != 0) {
    return "no file header (expected '" + std::string(magic) + "' and a version byte)";
  }
  const auto version = static_cast<uint8_t>(data[kHeaderBytes - 1]);
  if (version == 0 || version > kFormatVersion) {
    return "format version " + std::to_string(version) + ", this hitboxd reads up to " +
           std::to_string(kFormatVersion);
  }
  return {};
}

bool WriteAll(int fd, const std::string& data) {
  size_t done = 0;
  while (done < data.size()) {
    const ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      if (n == 0) errno = EIO;
      return false;
    }
    done += static_cast<size_t>(n);
  }
  return true;
}

// The whole file; false (errno set) when it cannot be read.
bool ReadFile(const std::string& path, std::string* out) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  out->clear();
  char buf[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      ::close(fd);
      errno = err;
      return false;
    }
    if (n == 0) break;
    out->append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return true;
}

bool SyncDir(const std::string& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return false;
  const bool ok = ::fsync(fd) == 0;
  const int err = errno;
  ::close(fd);
  errno = err;
  return ok;
}

// An open file descriptor, closed with the last reference (the flusher may
// still be syncing a log that a compaction has just replaced).
struct FileHandle {
  explicit FileHandle(int f) : fd(f) {}
  ~FileHandle() {
    if (fd >= 0) ::close(fd);
  }
  FileHandle(const FileHandle&) = delete;
  FileHandle& operator=(const FileHandle&) = delete;
  const int fd;
};

Result<std::string> FileName(std::string_view id, const char* suffix) {
  // Validated ids are [A-Za-z0-9._:-]{1,128}: with the prefix the name is
  // never "." / "..", hidden, or a path; check anyway, files are at stake.
  if (Status s = wire::ValidateSessionId(id); !s.ok()) return s.error();
  return std::string(kPrefix) + std::string(id) + suffix;
}

// The limit `stored` clamped to the server's `max` (0 stored: the maximum).
uint64_t Clamp(uint64_t stored, uint64_t max) { return stored == 0 || stored > max ? max : stored; }

SessionLimits LimitsFrom(const v1::SessionLimits& in, const SessionLimits& max) {
  SessionLimits l;
  wire::ForEachLimit<SessionLimits>([&](std::string_view name, auto member, auto get, auto) {
    using Field = std::decay_t<decltype(l.*member)>;
    const uint64_t stored = (in.*get)();
    if (name == "idle_timeout_ms") {  // 0 means "never" on both sides
      l.*member = static_cast<Field>(max.*member == 0 ? stored : Clamp(stored, max.*member));
    } else if (name == "history_ticks") {  // was within the flags; 0: the default
      if (stored != 0) l.*member = static_cast<Field>(stored);
    } else {
      l.*member = static_cast<Field>(Clamp(stored, max.*member));
    }
  });
  return l;
}

// The snapshot file's bytes for `s` (its lock held).
std::string SnapshotBytes(const Session& s) {
  std::string out = Header(kSnapshotMagic);
  v1::SessionInfo info;
  info.set_session_id(s.id());
  wire::LimitsToProto(s.limits(), info.mutable_limits());
  info.set_created_unix_ms(s.created_unix_ms());
  info.set_token(s.token());
  info.set_map_id(s.set().base_name());
  info.set_revision(s.set().revision());
  info.set_collider_count(s.set().size());
  // The watches' definitions; their inside sets are found again on load.
  s.set().ForEachWatch(
      [&](const WatchState& w) { wire::ToProto(w.watch, info.add_watches()->mutable_watch()); });
  PutRecord(&out, RecordType::kSessionInfo, info);
  v1::GetCollidersResponse chunk;
  auto flush = [&] {
    PutRecord(&out, RecordType::kColliders, chunk);
    chunk.Clear();
  };
  s.set().ForEach([&](const Collider& c) {
    wire::ToProto(c, chunk.add_colliders());
    if (static_cast<size_t>(chunk.colliders_size()) == kCollidersPerRecord) flush();
  });
  if (chunk.colliders_size() > 0) flush();
  PutRecord(&out, RecordType::kEnd, v1::DeleteSessionResponse());
  return out;
}

/// What a snapshot file holds.
struct LoadedSnapshot {
  v1::SessionInfo info;
  std::vector<Collider> colliders;
};

// Parses a snapshot; the error says what is wrong with it.
Result<LoadedSnapshot> ParseSnapshot(const std::string& data, const std::string& id) {
  auto bad = [](std::string why) { return Error{ErrorCode::kFailedPrecondition, std::move(why)}; };
  if (std::string why = CheckHeader(data, kSnapshotMagic); !why.empty()) return bad(why);
  LoadedSnapshot snap;
  RecordReader reader(data);
  bool have_info = false;
  for (;;) {
    const size_t at = reader.pos;
    const RecordReader::Next next = reader.Read();
    if (next == RecordReader::Next::kEndOfFile) return bad("no end record (the snapshot is cut short)");
    if (next != RecordReader::Next::kRecord) {
      return bad(std::string(Describe(next)) + " at byte " + std::to_string(at));
    }
    const auto type = static_cast<RecordType>(reader.type);
    const std::string where = " record at byte " + std::to_string(at);
    if (!have_info && type != RecordType::kSessionInfo) return bad("the first record is not SessionInfo");
    switch (type) {
      case RecordType::kSessionInfo:
        if (have_info || !snap.info.ParseFromArray(reader.payload.data(),
                                                   static_cast<int>(reader.payload.size()))) {
          return bad("unreadable SessionInfo" + where);
        }
        if (snap.info.session_id() != id) {
          return bad("it holds session '" + snap.info.session_id() + "', its name says '" + id + "'");
        }
        have_info = true;
        break;
      case RecordType::kColliders: {
        v1::GetCollidersResponse chunk;
        if (!chunk.ParseFromArray(reader.payload.data(), static_cast<int>(reader.payload.size()))) {
          return bad("unreadable Colliders" + where);
        }
        for (const v1::Collider& c : chunk.colliders()) {
          Result<Collider> got = wire::FromProto(c, "collider");
          if (!got.ok()) return bad("Colliders" + where + ": " + got.error().message);
          snap.colliders.push_back(std::move(*got));
        }
        break;
      }
      case RecordType::kEnd:
        if (snap.colliders.size() != snap.info.collider_count()) {
          return bad("it holds " + std::to_string(snap.colliders.size()) + " colliders, its header says " +
                     std::to_string(snap.info.collider_count()));
        }
        return snap;
      default:
        break;  // kHistory and later additions: not used by this version
    }
  }
}

}  // namespace

/// One session's open log and the sizes that decide compaction.
class Journal {
 public:
  Journal(const Session* owner, std::string snap_path, std::string log_path)
      : owner_(owner), snap_path_(std::move(snap_path)), log_path_(std::move(log_path)) {}

  const Session* const owner_;  // the session these files belong to
  const std::string snap_path_;
  const std::string log_path_;
  std::mutex mu;
  std::shared_ptr<FileHandle> log;  // guarded by mu; opened O_APPEND
  uint64_t log_bytes = 0;           // guarded by mu: length of the valid records
  uint64_t snapshot_bytes = 0;      // guarded by mu
  bool dirty = false;               // guarded by mu: written since the last fdatasync
  // Guarded by mu: an fdatasync failed, or the log cannot be written: the
  // next batch is made durable by a fresh snapshot instead of a log record.
  bool sync_failed = false;
  // Guarded by mu: the session was deleted and a namesake owns the file names.
  bool retired = false;
};

const char* FsyncPolicyName(FsyncPolicy policy) {
  switch (policy) {
    case FsyncPolicy::kAlways: return "always";
    case FsyncPolicy::kEverySec: return "everysec";
    case FsyncPolicy::kNo: return "no";
  }
  return "?";
}

Result<FsyncPolicy> ParseFsyncPolicy(std::string_view text) {
  for (FsyncPolicy p : {FsyncPolicy::kAlways, FsyncPolicy::kEverySec, FsyncPolicy::kNo}) {
    if (text == FsyncPolicyName(p)) return p;
  }
  return Error{ErrorCode::kInvalidArgument,
               "--fsync: '" + std::string(text) + "' is not one of always, everysec, no"};
}

Result<std::string> SessionStore::SnapshotName(std::string_view id) { return FileName(id, kSnapSuffix); }
Result<std::string> SessionStore::LogName(std::string_view id) { return FileName(id, kLogSuffix); }

Result<std::unique_ptr<SessionStore>> SessionStore::Open(const PersistOptions& options) {
  auto fail = [&](const std::string& what, int err) {
    return Error{ErrorCode::kFailedPrecondition, "--data-dir " + options.data_dir + ": " + what +
                                                     ": " + std::strerror(err)};
  };
  std::error_code ec;
  fs::create_directories(options.data_dir, ec);
  if (ec) return fail("cannot create the directory", ec.value());
  std::unique_ptr<SessionStore> store(new SessionStore(options));
  const std::string lock_path = (fs::path(options.data_dir) / "LOCK").string();
  store->lock_fd_ = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (store->lock_fd_ < 0) return fail("cannot create " + lock_path, errno);
  if (::flock(store->lock_fd_, LOCK_EX | LOCK_NB) != 0) {
    return fail("another hitboxd holds " + lock_path, errno);
  }
  if (options.fsync == FsyncPolicy::kEverySec) {
    store->flusher_ = std::thread([s = store.get()] { s->FlusherLoop(); });
  }
  return store;
}

SessionStore::~SessionStore() {
  if (flusher_.joinable()) {
    {
      std::lock_guard<std::mutex> lock(flusher_mu_);
      flusher_stop_ = true;
    }
    flusher_cv_.notify_one();
    flusher_.join();
  }
  Flush();
  if (lock_fd_ >= 0) ::close(lock_fd_);  // releases the flock
}

Status SessionStore::Unavailable(const std::string& what, int err) const {
  return Status(ErrorCode::kUnavailable, "persistence: cannot " + what + " in --data-dir " +
                                             options_.data_dir + ": " + std::strerror(err));
}

Status SessionStore::Gone(const Session& s) const {
  return Status(ErrorCode::kUnavailable, "persistence: session '" + s.id() +
                                             "' has no files in --data-dir " + options_.data_dir +
                                             " (being created or deleted); retry");
}

std::shared_ptr<Journal> SessionStore::Find(const std::string& id) const {
  std::lock_guard<std::mutex> lock(mu_);
  const auto it = journals_.find(id);
  return it == journals_.end() ? nullptr : it->second;
}

void SessionStore::FlusherLoop() {
  std::unique_lock<std::mutex> lock(flusher_mu_);
  while (!flusher_stop_) {
    flusher_cv_.wait_for(lock, std::chrono::seconds(1), [this] { return flusher_stop_; });
    if (flusher_stop_) break;
    lock.unlock();
    Flush();
    lock.lock();
  }
}

void SessionStore::Flush() {
  std::vector<std::shared_ptr<Journal>> all;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [id, j] : journals_) all.push_back(j);
  }
  for (const std::shared_ptr<Journal>& j : all) {
    std::shared_ptr<FileHandle> log;
    {
      std::lock_guard<std::mutex> lock(j->mu);
      if (!j->dirty || j->log == nullptr) continue;
      j->dirty = false;
      log = j->log;
    }
    // Without the journal's lock: batches go on being appended meanwhile.
    if (::fdatasync(log->fd) != 0) {
      const int err = errno;
      spdlog::error("persistence: fdatasync of {} failed: {}; the session's next batch rewrites "
                    "its snapshot first",
                    j->log_path_, std::strerror(err));
      std::lock_guard<std::mutex> lock(j->mu);
      j->sync_failed = true;
    }
  }
}

Status SessionStore::CompactLocked(Journal& j, const Session& s) {
  const std::string bytes = SnapshotBytes(s);
  const std::string tmp = j.snap_path_ + ".tmp";
  const std::string what = "write the snapshot of session '" + s.id() + "'";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return Unavailable(what, errno);
  const bool written = WriteAll(fd, bytes) && ::fsync(fd) == 0;
  const int err = errno;
  ::close(fd);
  if (!written) {
    ::unlink(tmp.c_str());
    return Unavailable(what, err);
  }
  // The rename is the commit point: a crash before it keeps the old snapshot
  // and the whole log; after it, the log's batches up to this revision are
  // skipped on replay (their expected_revision is below the snapshot's).
  if (::rename(tmp.c_str(), j.snap_path_.c_str()) != 0) {
    const int e = errno;
    ::unlink(tmp.c_str());
    return Unavailable(what, e);
  }
  // From here on the new snapshot is what a restart reads: report success
  // (memory agrees with it) and retry what failed with the next batch.
  j.snapshot_bytes = bytes.size();
  j.sync_failed = false;
  if (!SyncDir(options_.data_dir)) {
    spdlog::warn("persistence: cannot fsync {} after renaming {}: {}", options_.data_dir,
                 j.snap_path_, std::strerror(errno));
    j.sync_failed = true;
  }
  if (j.log == nullptr) {  // recovery could not open it: start it afresh
    const int log_fd =
        ::open(j.log_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
    if (log_fd >= 0) j.log = std::make_shared<FileHandle>(log_fd);
    if (log_fd < 0 || !WriteAll(log_fd, Header(kLogMagic))) {
      spdlog::warn("persistence: cannot open {}: {}", j.log_path_, std::strerror(errno));
      j.log.reset();
      j.sync_failed = true;
      return Status::Ok();
    }
  } else if (::ftruncate(j.log->fd, static_cast<off_t>(kHeaderBytes)) != 0) {
    // Harmless: the stale batches are skipped on replay; try again next time.
    spdlog::warn("persistence: cannot empty {} after a snapshot: {}", j.log_path_,
                 std::strerror(errno));
    return Status::Ok();
  }
  if (options_.fsync != FsyncPolicy::kNo && ::fdatasync(j.log->fd) != 0) j.sync_failed = true;
  j.log_bytes = kHeaderBytes;
  j.dirty = false;
  return Status::Ok();
}

Status SessionStore::Create(const Session& s) {
  const Result<std::string> snap = SnapshotName(s.id());
  const Result<std::string> log = LogName(s.id());
  if (!snap.ok() || !log.ok()) {
    return Status(ErrorCode::kInvalidArgument,
                  snap.ok() ? log.error().message : snap.error().message);
  }
  const fs::path dir(options_.data_dir);
  auto j = std::make_shared<Journal>(&s, (dir / *snap).string(), (dir / *log).string());
  // A deleted namesake whose files are not removed yet: after its batch in
  // flight (if any) its journal writes nothing more, and the names are ours.
  std::shared_ptr<Journal> old;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (const auto it = journals_.find(s.id()); it != journals_.end()) {
      old = std::move(it->second);
      journals_.erase(it);
    }
  }
  if (old != nullptr) {
    std::lock_guard<std::mutex> lock(old->mu);
    old->retired = true;
  }
  // A new inode: a descriptor of an older log can never write into this one.
  ::unlink(j->log_path_.c_str());
  // Shared: the set is read for the snapshot (a new session's is empty).
  std::shared_lock<std::shared_mutex> session_lock(s.mutex());
  const std::string what = "create the log of session '" + s.id() + "'";
  // The log first (emptied: a stale one of a deleted namesake must not be
  // replayed), then the snapshot, whose rename makes the session exist on disk.
  const int fd = ::open(j->log_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) return Unavailable(what, errno);
  j->log = std::make_shared<FileHandle>(fd);
  if (!WriteAll(fd, Header(kLogMagic)) ||
      (options_.fsync != FsyncPolicy::kNo && ::fdatasync(fd) != 0)) {
    const int err = errno;
    ::unlink(j->log_path_.c_str());
    return Unavailable(what, err);
  }
  j->log_bytes = kHeaderBytes;
  {
    std::lock_guard<std::mutex> lock(j->mu);
    if (Status st = CompactLocked(*j, s); !st.ok()) {
      ::unlink(j->log_path_.c_str());
      return st;
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  journals_[s.id()] = std::move(j);
  return Status::Ok();
}

Status SessionStore::Append(const Session& s,
                            const google::protobuf::RepeatedPtrField<v1::ColliderChange>& changes,
                            std::optional<uint64_t> tick, uint64_t revision_before) {
  const std::shared_ptr<Journal> j = Find(s.id());
  if (j == nullptr || j->owner_ != &s) return Gone(s);
  v1::ApplyChangesRequest batch;
  *batch.mutable_changes() = changes;
  batch.set_expected_revision(revision_before);
  if (tick) batch.set_tick(*tick);
  std::string record;
  PutRecord(&record, RecordType::kBatch, batch);

  std::lock_guard<std::mutex> lock(j->mu);
  if (j->retired) return Gone(s);
  if (j->sync_failed || j->log == nullptr) {
    // After a failed fdatasync the kernel may have dropped dirty pages of the
    // log: write a fresh snapshot instead, which already holds this batch
    // (the caller applied it); its failure undoes the batch like a failed append.
    return CompactLocked(*j, s);
  }
  const std::string what = "append to the log of session '" + s.id() + "'";
  const int fd = j->log->fd;
  if (!WriteAll(fd, record) ||
      (options_.fsync == FsyncPolicy::kAlways && ::fdatasync(fd) != 0)) {
    const int err = errno;
    // Cut off whatever part of the record reached the file (O_APPEND: the
    // next record goes right after the last good one).
    if (::ftruncate(fd, static_cast<off_t>(j->log_bytes)) != 0) j->sync_failed = true;
    return Unavailable(what, err);
  }
  j->log_bytes += record.size();
  j->dirty = options_.fsync != FsyncPolicy::kAlways;
  const double limit = std::max(static_cast<double>(options_.compact_min_bytes),
                                options_.compact_factor * static_cast<double>(j->snapshot_bytes));
  if (static_cast<double>(j->log_bytes) > limit) {
    // The batch is safely in the log already: a failed compaction only logs.
    const auto start = std::chrono::steady_clock::now();
    const uint64_t log_bytes = j->log_bytes;
    if (Status st = CompactLocked(*j, s); !st.ok()) {
      spdlog::warn("{}", st.message());
    } else {
      spdlog::info("session '{}': log of {} bytes compacted into a {}-byte snapshot at revision "
                   "{} in {:.1f} ms",
                   s.id(), log_bytes, j->snapshot_bytes, s.set().revision(),
                   std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() -
                                                             start).count());
    }
  }
  return Status::Ok();
}

Status SessionStore::Compact(const Session& s) {
  const std::shared_ptr<Journal> j = Find(s.id());
  if (j == nullptr || j->owner_ != &s) return Gone(s);
  std::lock_guard<std::mutex> lock(j->mu);
  if (j->retired) return Gone(s);
  return CompactLocked(*j, s);
}

void SessionStore::Remove(const Session& s) {
  std::shared_ptr<Journal> j;
  {
    std::lock_guard<std::mutex> lock(mu_);
    const auto it = journals_.find(s.id());
    if (it == journals_.end() || it->second->owner_ != &s) return;  // a newer namesake's files
    j = std::move(it->second);
    journals_.erase(it);
    // The snapshot first: a crash in between leaves an orphan log, which
    // recovery deletes, never a session without its latest batches.
    // (Under mu_, so that a namesake's Create cannot interleave.)
    if (::unlink(j->snap_path_.c_str()) != 0 && errno != ENOENT) {
      spdlog::error("persistence: cannot delete {}: {}", j->snap_path_, std::strerror(errno));
    }
    if (::unlink(j->log_path_.c_str()) != 0 && errno != ENOENT) {
      spdlog::error("persistence: cannot delete {}: {}", j->log_path_, std::strerror(errno));
    }
  }
  if (options_.fsync != FsyncPolicy::kNo && !SyncDir(options_.data_dir)) {
    spdlog::warn("persistence: cannot fsync {}: {}", options_.data_dir, std::strerror(errno));
  }
}

size_t SessionStore::Recover(SessionRegistry& registry, const SessionLimits& max) {
  std::vector<std::string> snapshots;
  std::vector<std::string> logs;
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator(options_.data_dir, ec)) {
    const std::string name = e.path().filename().string();
    if (name.rfind(kPrefix, 0) != 0) continue;
    if (name.ends_with(std::string(kSnapSuffix) + ".tmp")) {
      fs::remove(e.path(), ec);  // a compaction that never reached its rename
    } else if (name.ends_with(kSnapSuffix)) {
      snapshots.push_back(name);
    } else if (name.ends_with(kLogSuffix)) {
      logs.push_back(name);
    }
  }
  std::sort(snapshots.begin(), snapshots.end());
  size_t restored = 0;
  for (const std::string& name : snapshots) {
    if (RecoverOne(name, registry, max)) ++restored;
  }
  // Logs without a snapshot: a deletion cut short by a crash.
  for (const std::string& name : logs) {
    const std::string id = name.substr(std::strlen(kPrefix),
                                       name.size() - std::strlen(kPrefix) - std::strlen(kLogSuffix));
    const Result<std::string> snap = SnapshotName(id);
    if (snap.ok() && !fs::exists(fs::path(options_.data_dir) / *snap)) {
      spdlog::info("persistence: deleting {} (its session was deleted; no snapshot)", name);
      fs::remove(fs::path(options_.data_dir) / name, ec);
    }
  }
  return restored;
}

bool SessionStore::RecoverOne(const std::string& snapshot_name, SessionRegistry& registry,
                              const SessionLimits& max) {
  const fs::path dir(options_.data_dir);
  const std::string id = snapshot_name.substr(
      std::strlen(kPrefix), snapshot_name.size() - std::strlen(kPrefix) - std::strlen(kSnapSuffix));
  const std::string snap_path = (dir / snapshot_name).string();
  const Result<std::string> log_name = LogName(id);
  if (!log_name.ok()) {
    spdlog::error("persistence: ignoring {}: {}", snap_path, log_name.error().message);
    return false;
  }
  const std::string log_path = (dir / *log_name).string();
  auto quarantine = [&](const std::string& why) {
    std::error_code ec;
    fs::rename(snap_path, snap_path + ".corrupt", ec);
    if (fs::exists(log_path)) fs::rename(log_path, log_path + ".corrupt", ec);
    spdlog::error("persistence: session '{}' not restored: snapshot {}: {}; its files were renamed "
                  "to *.corrupt for inspection",
                  id, snap_path, why);
    return false;
  };
  std::string data;
  if (!ReadFile(snap_path, &data)) return quarantine(std::string("unreadable: ") + std::strerror(errno));
  Result<LoadedSnapshot> snap = ParseSnapshot(data, id);
  if (!snap.ok()) return quarantine(snap.error().message);
  const v1::SessionInfo& info = snap->info;

  std::shared_ptr<const Map> map;
  if (!info.map_id().empty()) {
    map = maps_ != nullptr ? maps_->Find(info.map_id()) : nullptr;
    if (map == nullptr) {
      spdlog::error("persistence: session '{}' not restored (its files stay): its map '{}' is "
                    "not loaded (--maps)",
                    id, info.map_id());
      return false;
    }
  }
  Result<std::shared_ptr<Session>> created =
      registry.Create(id, LimitsFrom(info.limits(), max), info.token(), info.created_unix_ms(),
                      map != nullptr ? map->set : nullptr, info.map_id());
  if (!created.ok()) {
    spdlog::error("persistence: session '{}' not restored (its files stay): {}", id,
                  created.error().message);
    return false;
  }
  Session& s = **created;
  std::unique_lock<std::shared_mutex> lock(s.mutex());
  // What was accepted once is restored as it was: no watch budget meanwhile.
  s.set().SetWatchBudget({});
  if (!snap->colliders.empty()) {
    if (Status st = s.set().AddBulk(snap->colliders); !st.ok()) {
      lock.unlock();
      registry.Remove(id);
      return quarantine("its colliders do not load: " + st.ToString());
    }
  }
  s.set().RestoreRevision(info.revision());
  if (info.watches_size() > 0) {  // their inside sets come back with their queries
    std::vector<ColliderChange> watches;
    for (int i = 0; i < info.watches_size(); ++i) {
      Result<Watch> w = wire::FromProto(info.watches(i).watch(),
                                        "watches[" + std::to_string(i) + "]");
      if (!w.ok()) {
        lock.unlock();
        registry.Remove(id);
        return quarantine("its watches do not load: " + w.error().message);
      }
      watches.push_back(ColliderChange::AddWatch(std::move(*w)));
    }
    if (Status st = s.set().Apply(watches); !st.ok()) {
      lock.unlock();
      registry.Remove(id);
      return quarantine("its watches do not load: " + st.ToString());
    }
    s.set().SetLoadedRevision(info.revision());
  }

  // Replay the log; its first bad record and everything after it are cut off.
  auto j = std::make_shared<Journal>(&s, snap_path, log_path);
  j->snapshot_bytes = data.size();
  std::string log;
  if (!ReadFile(log_path, &log)) log.clear();  // missing: an empty log
  std::string cut_why;
  size_t good = kHeaderBytes;
  uint64_t replayed = 0, stale = 0;
  if (std::string why = CheckHeader(log, kLogMagic); !why.empty()) {
    if (!log.empty()) cut_why = why;
    good = 0;
  } else {
    RecordReader reader(log);
    std::vector<ColliderChange> changes;
    for (;;) {
      good = reader.pos;
      const RecordReader::Next next = reader.Read();
      if (next == RecordReader::Next::kEndOfFile) break;
      if (next != RecordReader::Next::kRecord) {
        cut_why = Describe(next);
        break;
      }
      if (reader.type != static_cast<uint8_t>(RecordType::kBatch)) continue;
      v1::ApplyChangesRequest batch;
      if (!batch.ParseFromArray(reader.payload.data(), static_cast<int>(reader.payload.size()))) {
        cut_why = "unreadable batch";
        break;
      }
      const uint64_t revision = s.set().revision();
      if (batch.expected_revision() < revision) {  // already in the snapshot
        ++stale;
        continue;
      }
      if (batch.expected_revision() > revision) {
        cut_why = "batch for revision " + std::to_string(batch.expected_revision()) +
                  " after revision " + std::to_string(revision) + " (batches are missing)";
        break;
      }
      Status st = wire::FromProto(batch.changes(), &changes, "changes");
      if (st.ok()) {
        // The live path's policy (service.cc ApplyLocked), without the
        // session's limits: what was accepted once is replayed as it was.
        const std::optional<uint64_t> tick =
            batch.has_tick() ? std::optional<uint64_t>(batch.tick()) : std::nullopt;
        BatchPlan plan;
        st = s.set().CheckBatch(changes, tick, batch.expected_revision(), BatchLimits{}, &plan);
        if (st.ok()) st = s.set().ApplyBatch(changes, tick, plan);
      }
      if (!st.ok()) {
        cut_why = "batch does not apply: " + st.ToString();
        break;
      }
      ++replayed;
    }
  }
  const std::string what = "open the log of session '" + id + "'";
  const int fd = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  bool log_ok = fd >= 0;
  if (log_ok) j->log = std::make_shared<FileHandle>(fd);
  if (log_ok && good < kHeaderBytes) {  // no valid header: start the log afresh
    log_ok = ::ftruncate(fd, 0) == 0 && WriteAll(fd, Header(kLogMagic));
    good = kHeaderBytes;
  } else if (log_ok && good < log.size()) {
    log_ok = ::ftruncate(fd, static_cast<off_t>(good)) == 0;
  }
  if (log_ok && options_.fsync != FsyncPolicy::kNo) log_ok = ::fdatasync(fd) == 0;
  if (!log_ok) {
    spdlog::error("{}", Unavailable(what, errno).message());
    j->sync_failed = true;  // its next batch rewrites the snapshot and log first
  }
  j->log_bytes = good;
  if (!cut_why.empty()) {
    spdlog::warn("persistence: session '{}': log {} cut at byte {} of {}: {}; the batches before "
                 "it are restored",
                 id, log_path, good, log.size(), cut_why);
  }
  s.set().SetWatchBudget(WatchBudgetOf(s.limits()));
  registry.SettleMemory(s, 0);
  spdlog::info("persistence: session '{}' restored: {} colliders at revision {} (snapshot at "
               "revision {} + {} batches from the log{})",
               id, s.set().size(), s.set().revision(), info.revision(), replayed,
               stale == 0 ? std::string() : ", " + std::to_string(stale) + " already in the snapshot");
  std::lock_guard<std::mutex> map_lock(mu_);
  journals_[id] = std::move(j);
  return true;
}

}  // namespace hitbox::server
