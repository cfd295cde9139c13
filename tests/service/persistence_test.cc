// Persistence (server/persistence.h) in-process: sessions survive a restart of
// the service with colliders, revision, limits, token and idle timeout; torn
// and corrupt log tails are cut off and logged; compaction; corrupt
// snapshots are skipped; deletion and expiry remove the files; a failed
// write refuses the batch and leaves memory as it was.
#include <signal.h>
#include <sys/resource.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include "persistence.h"
#include "service.h"
#include "service_util.h"

namespace hitbox::server {
namespace {

namespace fs = std::filesystem;
using testing_service::SphereMsg;

class PersistenceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() /
           ("hitbox_persist_" + std::to_string(getpid()) + "_" + info->name());
    fs::remove_all(dir_);
    options_.data_dir = dir_.string();
    options_.fsync = FsyncPolicy::kAlways;
    // Capture warnings and errors (the cut-off and skipped-session messages).
    sink_ = std::make_shared<spdlog::sinks::ostream_sink_mt>(log_);
    spdlog::default_logger()->sinks().push_back(sink_);
  }
  void TearDown() override {
    service_.reset();
    auto& sinks = spdlog::default_logger()->sinks();
    sinks.erase(std::remove(sinks.begin(), sinks.end(), sink_), sinks.end());
    fs::remove_all(dir_);
  }

  // (Re)starts the service on the data dir, restoring its sessions.
  HitboxService& Restart() {
    service_.reset();  // flushes and closes the files, releases the lock
    Result<std::unique_ptr<SessionStore>> store = SessionStore::Open(options_);
    EXPECT_TRUE(store.ok()) << store.error().message;
    ServiceOptions o;
    o.threads = 1;
    o.limits.session.idle_timeout_ms = 0;
    service_ = std::make_unique<HitboxService>(o, std::move(*store));
    service_->RecoverSessions();
    return *service_;
  }

  std::string Create(const std::string& id, const v1::SessionLimits& limits = {}) {
    v1::CreateSessionRequest req;
    req.set_session_id(id);
    *req.mutable_limits() = limits;
    v1::SessionInfo info;
    EXPECT_TRUE(service_->DoCreateSession(req, &info).ok());
    return info.token();
  }
  grpc::Status Apply(const std::string& id, const std::vector<v1::ColliderChange>& changes) {
    v1::ApplyChangesRequest req;
    req.set_session_id(id);
    for (const v1::ColliderChange& c : changes) *req.add_changes() = c;
    v1::ApplyChangesResponse resp;
    return service_->DoApplyChanges(req, &resp);
  }
  static v1::ColliderChange Add(uint64_t id, double x) {
    v1::ColliderChange c;
    *c.mutable_add() = SphereMsg(id, 0.5, {x, 0, 0});
    return c;
  }
  static v1::ColliderChange Move(uint64_t id, double x) {
    v1::ColliderChange c;
    c.mutable_move()->set_id(id);
    c.mutable_move()->mutable_pose()->mutable_position()->set_x(x);
    c.mutable_move()->mutable_pose()->mutable_rotation()->set_w(1);
    return c;
  }
  static v1::ColliderChange Remove(uint64_t id) {
    v1::ColliderChange c;
    c.set_remove(id);
    return c;
  }
  // Batch i (1-based) adds collider i at x = i.
  void AddBatches(const std::string& id, int from, int to) {
    for (int i = from; i <= to; ++i) ASSERT_TRUE(Apply(id, {Add(i, i)}).ok());
  }
  // Everything a session holds, as text: revision, then colliders by id.
  std::string Dump(const std::string& id) {
    std::shared_ptr<Session> s = service_->sessions().Find(id);
    if (s == nullptr) return "(none)";
    std::vector<std::string> lines;
    s->set().ForEach([&](const Collider& c) {
      v1::Collider m;
      wire::ToProto(c, &m);
      lines.push_back(m.ShortDebugString());
    });
    std::sort(lines.begin(), lines.end());
    std::ostringstream out;
    out << "revision " << s->set().revision() << "\n";
    for (const std::string& l : lines) out << l << "\n";
    return out.str();
  }
  uint64_t Revision(const std::string& id) {
    std::shared_ptr<Session> s = service_->sessions().Find(id);
    return s == nullptr ? UINT64_MAX : s->set().revision();
  }
  fs::path LogPath(const std::string& id) { return dir_ / *SessionStore::LogName(id); }
  fs::path SnapPath(const std::string& id) { return dir_ / *SessionStore::SnapshotName(id); }

  fs::path dir_;
  PersistOptions options_;
  std::unique_ptr<HitboxService> service_;
  std::ostringstream log_;
  std::shared_ptr<spdlog::sinks::ostream_sink_mt> sink_;
};

// Colliders (added, moved, replaced, removed), revision, limits, token,
// creation time and idle timeout all come back after a restart.
TEST_F(PersistenceTest, RestartRestoresEverything) {
  Restart();
  v1::SessionLimits limits;
  limits.set_max_colliders(500);
  limits.set_max_hits_per_query(7);
  limits.set_idle_timeout_ms(600'000);
  const std::string token = Create("game:1.a", limits);
  Create("other");
  AddBatches("game:1.a", 1, 5);
  ASSERT_TRUE(Apply("game:1.a", {Move(2, 42), Remove(3), Add(100, -4)}).ok());
  v1::ColliderChange replace;
  *replace.mutable_replace() = SphereMsg(4, 2.5, {1, 2, 3}, 9);
  ASSERT_TRUE(Apply("game:1.a", {replace}).ok());
  const std::string before = Dump("game:1.a");
  const int64_t created = service_->sessions().Find("game:1.a")->created_unix_ms();

  Restart();
  EXPECT_EQ(Dump("game:1.a"), before);
  EXPECT_EQ(Revision("game:1.a"), 7u);
  EXPECT_EQ(Revision("other"), 0u);
  std::shared_ptr<Session> s = service_->sessions().Find("game:1.a");
  EXPECT_EQ(s->token(), token);
  EXPECT_EQ(s->created_unix_ms(), created);
  EXPECT_EQ(s->limits().max_colliders, 500u);
  EXPECT_EQ(s->limits().max_hits_per_query, 7u);
  EXPECT_EQ(s->limits().idle_timeout_ms, 600'000u);
  EXPECT_GT(s->memory_bytes(), kSessionOverheadBytes);
  // And it goes on from there.
  ASSERT_TRUE(Apply("game:1.a", {Add(200, 0)}).ok());
  const std::string after = Dump("game:1.a");
  Restart();
  EXPECT_EQ(Dump("game:1.a"), after);
}

// A refused batch (bad id, wrong expected revision) writes nothing.
TEST_F(PersistenceTest, RefusedBatchesAreNotLogged) {
  Restart();
  Create("s");
  AddBatches("s", 1, 2);
  const auto size = fs::file_size(LogPath("s"));
  EXPECT_FALSE(Apply("s", {Add(1, 0)}).ok());  // already exists
  EXPECT_FALSE(Apply("s", {Remove(99)}).ok());
  EXPECT_EQ(fs::file_size(LogPath("s")), size);
  Restart();
  EXPECT_EQ(Revision("s"), 2u);
}

// Ticks are logged when they commit; a tick undone because its queries
// failed (work budget) leaves no record.
TEST_F(PersistenceTest, OnlyCommittedTicksAreLogged) {
  Restart();
  v1::SessionLimits limits;
  limits.set_max_nodes_per_message(3);
  Create("t", limits);
  AddBatches("t", 1, 20);
  auto stream = std::make_unique<HitboxService::TickStream>();
  v1::TickRequest tick;
  tick.set_session_id("t");
  *tick.add_changes() = Move(1, 5);
  v1::TickResponse resp;
  ASSERT_TRUE(service_->DoTick(stream.get(), tick, &resp).ok());
  ASSERT_FALSE(resp.has_error()) << resp.error().message();
  EXPECT_EQ(resp.revision(), 21u);
  // A big overlap visits more than 3 tree nodes: the tick is undone.
  tick.clear_changes();
  *tick.add_changes() = Move(2, 77);
  v1::Query* q = tick.add_queries();
  q->mutable_overlap()->mutable_shape()->mutable_sphere()->set_radius(100);
  q->mutable_overlap()->mutable_pose()->mutable_rotation()->set_w(1);
  resp.Clear();
  ASSERT_TRUE(service_->DoTick(stream.get(), tick, &resp).ok());
  ASSERT_TRUE(resp.has_error());
  EXPECT_EQ(Revision("t"), 21u);
  const std::string before = Dump("t");
  stream.reset();
  Restart();
  EXPECT_EQ(Dump("t"), before);
}

// Character moves applied to their colliders (move.apply_to_id) are logged
// with the batch they belong to: a tick's changes and its applied moves as
// one record (one revision), and those of a Query call alone.
TEST_F(PersistenceTest, AppliedMovesAreLogged) {
  Restart();
  Create("m");
  AddBatches("m", 1, 3);  // spheres of radius 0.5 at x = 1, 2, 3
  const auto move_query = [](uint64_t id, double x, double dx) {
    v1::Query q;
    v1::MoveQuery* m = q.mutable_move();
    m->mutable_shape()->mutable_sphere()->set_radius(0.25);
    m->mutable_pose()->mutable_position()->set_x(x);
    m->mutable_pose()->mutable_position()->set_y(10);  // clear of every sphere
    m->mutable_pose()->mutable_rotation()->set_w(1);
    m->mutable_displacement()->set_z(dx);
    m->mutable_filter()->add_ignore_ids(id);
    m->set_apply_to_id(id);
    return q;
  };
  auto stream = std::make_unique<HitboxService::TickStream>();
  v1::TickRequest tick;
  tick.set_session_id("m");
  *tick.add_changes() = Move(1, 5);
  *tick.add_queries() = move_query(2, 2, 1.5);
  v1::TickResponse resp;
  ASSERT_TRUE(service_->DoTick(stream.get(), tick, &resp).ok());
  ASSERT_FALSE(resp.has_error()) << resp.error().message();
  EXPECT_EQ(resp.revision(), 4u);

  v1::QueryRequest query;
  query.set_session_id("m");
  *query.add_queries() = move_query(3, 3, -2);
  v1::QueryResponse qresp;
  ASSERT_TRUE(service_->DoQuery(query, &qresp).ok());
  EXPECT_EQ(qresp.revision(), 5u);

  const std::string before = Dump("m");
  ASSERT_NE(before.find("z: 1.5"), std::string::npos) << before;
  ASSERT_NE(before.find("z: -2"), std::string::npos) << before;
  stream.reset();
  Restart();
  EXPECT_EQ(Dump("m"), before);
}

// A log cut inside its last record (a crash mid-write) loses that record
// only; the cut is logged and the log goes on from the last good record.
TEST_F(PersistenceTest, TornLastRecordIsCutOff) {
  Restart();
  Create("s");
  AddBatches("s", 1, 2);
  const auto good = fs::file_size(LogPath("s"));
  AddBatches("s", 3, 3);
  const auto full = fs::file_size(LogPath("s"));
  service_.reset();
  const fs::path saved = dir_ / "saved.log";
  fs::copy_file(LogPath("s"), saved);
  for (const auto cut : {full - 1, good + 4, good + 9}) {
    fs::copy_file(saved, LogPath("s"), fs::copy_options::overwrite_existing);
    fs::resize_file(LogPath("s"), cut);
    log_.str("");
    Restart();
    EXPECT_EQ(Revision("s"), 2u) << "cut at " << cut;
    EXPECT_EQ(fs::file_size(LogPath("s")), good);
    EXPECT_NE(log_.str().find("torn record"), std::string::npos) << log_.str();
    EXPECT_NE(log_.str().find("cut at byte " + std::to_string(good)), std::string::npos);
    service_.reset();
  }
  // A garbage tail (its length field is absurd) is cut off the same way.
  std::ofstream(LogPath("s"), std::ios::app) << std::string(full - good, 'x');
  Restart();
  EXPECT_EQ(Revision("s"), 2u);
  EXPECT_EQ(fs::file_size(LogPath("s")), good);
  AddBatches("s", 3, 4);
  Restart();
  EXPECT_EQ(Revision("s"), 4u);
}

// A flipped byte in the last record fails its checksum: cut off and logged.
TEST_F(PersistenceTest, FlippedByteFailsChecksumAndIsCutOff) {
  Restart();
  Create("s");
  AddBatches("s", 1, 2);
  const auto good = fs::file_size(LogPath("s"));
  AddBatches("s", 3, 3);
  service_.reset();
  {
    std::fstream f(LogPath("s"), std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(static_cast<std::streamoff>(good + 12));
    const char c = static_cast<char>(f.get());
    f.seekp(static_cast<std::streamoff>(good + 12));
    f.put(static_cast<char>(c ^ 0x10));
  }
  Restart();
  EXPECT_EQ(Revision("s"), 2u);
  EXPECT_EQ(fs::file_size(LogPath("s")), good);
  EXPECT_NE(log_.str().find("checksum mismatch"), std::string::npos) << log_.str();
}

// Past its factor the log is compacted into the snapshot; the state is the
// same after a restart, and a stale log left by a crash between the
// snapshot's rename and the log's truncation is skipped, not replayed twice.
TEST_F(PersistenceTest, CompactionAndItsCrashWindow) {
  options_.compact_min_bytes = 2048;
  options_.compact_factor = 1.0;
  options_.fsync = FsyncPolicy::kNo;
  Restart();
  Create("c");
  AddBatches("c", 1, 300);
  // Compacted on the way: the log stays under the snapshot's size.
  EXPECT_NE(log_.str().find("compacted into"), std::string::npos);
  EXPECT_GT(fs::file_size(SnapPath("c")), 300u * 20);
  EXPECT_LT(fs::file_size(LogPath("c")), fs::file_size(SnapPath("c")) + 100);
  ASSERT_TRUE(Apply("c", {Move(7, -3), Remove(8)}).ok());
  const fs::path saved = dir_ / "saved.log";
  fs::copy_file(LogPath("c"), saved);
  ASSERT_TRUE(service_->store()->Compact(*service_->sessions().Find("c")).ok());
  const std::string before = Dump("c");
  Restart();
  EXPECT_EQ(Dump("c"), before);
  service_.reset();
  fs::copy_file(saved, LogPath("c"), fs::copy_options::overwrite_existing);
  Restart();
  EXPECT_EQ(Dump("c"), before);
  EXPECT_NE(log_.str().find("already in the snapshot"), std::string::npos);
}

// A corrupt snapshot: that session is skipped and its files renamed
// *.corrupt (logged); the others load and the server runs.
TEST_F(PersistenceTest, CorruptSnapshotSkipsThatSession) {
  Restart();
  Create("bad");
  Create("good");
  AddBatches("bad", 1, 3);
  AddBatches("good", 1, 3);
  ASSERT_TRUE(service_->store()->Compact(*service_->sessions().Find("bad")).ok());
  service_.reset();
  const auto size = fs::file_size(SnapPath("bad"));
  {
    std::fstream f(SnapPath("bad"), std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(size / 2));
    f.put('\xff');
  }
  Restart();
  EXPECT_EQ(service_->sessions().Find("bad"), nullptr);
  EXPECT_EQ(Revision("good"), 3u);
  EXPECT_TRUE(fs::exists(dir_ / (SnapPath("bad").filename().string() + ".corrupt")));
  EXPECT_NE(log_.str().find("session 'bad' not restored"), std::string::npos) << log_.str();
  // The id can be used again.
  Create("bad");
  AddBatches("bad", 1, 1);
  Restart();
  EXPECT_EQ(Revision("bad"), 1u);
  // A cut-short snapshot and a newer format version are refused the same way.
  service_.reset();
  fs::resize_file(SnapPath("bad"), fs::file_size(SnapPath("bad")) - 3);
  {
    std::fstream f(SnapPath("good"), std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(7);
    f.put(static_cast<char>(kFormatVersion + 1));
  }
  Restart();
  EXPECT_EQ(service_->sessions().size(), 0u);
  EXPECT_NE(log_.str().find("torn record"), std::string::npos) << log_.str();
  EXPECT_NE(log_.str().find("format version 2"), std::string::npos) << log_.str();
}

// DeleteSession and idle expiry remove the session's files.
TEST_F(PersistenceTest, DeletionAndExpiryRemoveFiles) {
  Restart();
  Create("d");
  v1::SessionLimits limits;
  limits.set_idle_timeout_ms(60'000);
  Create("e", limits);
  AddBatches("d", 1, 2);
  AddBatches("e", 1, 2);
  v1::DeleteSessionRequest del;
  del.set_session_id("d");
  ASSERT_TRUE(service_->DoDeleteSession(del).ok());
  EXPECT_FALSE(fs::exists(SnapPath("d")));
  EXPECT_FALSE(fs::exists(LogPath("d")));
  service_->ReapIdleSessions(SteadyNowNs() + 61'000'000'000);
  EXPECT_FALSE(fs::exists(SnapPath("e")));
  EXPECT_FALSE(fs::exists(LogPath("e")));
  Restart();
  EXPECT_EQ(service_->sessions().size(), 0u);
}

// A write that fails (here: the file size limit, as a full disk would) refuses
// the batch with UNAVAILABLE naming the data dir and undoes it in memory;
// once writes work again, so do batches, and a restart agrees with memory.
TEST_F(PersistenceTest, FailedWriteRefusesBatchAndRollsBack) {
  Restart();
  Create("w");
  AddBatches("w", 1, 3);
  ASSERT_TRUE(Apply("w", {Move(1, 9)}).ok());
  const std::string before = Dump("w");
  const auto size = fs::file_size(LogPath("w"));
  signal(SIGXFSZ, SIG_IGN);
  rlimit old{};
  getrlimit(RLIMIT_FSIZE, &old);
  rlimit small = old;
  small.rlim_cur = size + 16;
  ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &small), 0);
  std::vector<v1::ColliderChange> big;
  for (int i = 0; i < 50; ++i) big.push_back(Add(1000 + i, i));
  big.push_back(Move(2, 55));
  big.push_back(Remove(3));
  const grpc::Status st = Apply("w", big);
  setrlimit(RLIMIT_FSIZE, &old);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_NE(st.error_message().find(dir_.string()), std::string::npos) << st.error_message();
  EXPECT_EQ(Dump("w"), before);
  EXPECT_EQ(fs::file_size(LogPath("w")), size);  // the partial record was cut off
  ASSERT_TRUE(Apply("w", big).ok());
  const std::string after = Dump("w");
  Restart();
  EXPECT_EQ(Dump("w"), after);
}

// A log that cannot be opened (here: a directory in its place) is logged,
// and the session's batches are then kept by writing whole snapshots.
TEST_F(PersistenceTest, UnwritableLogFallsBackToSnapshots) {
  Restart();
  Create("u");
  AddBatches("u", 1, 2);
  service_.reset();
  fs::remove(LogPath("u"));
  fs::create_directory(LogPath("u"));
  Restart();
  EXPECT_EQ(Revision("u"), 0u);  // the batches were in the log
  EXPECT_NE(log_.str().find("cannot open the log of session 'u'"), std::string::npos) << log_.str();
  AddBatches("u", 1, 3);
  const std::string before = Dump("u");
  Restart();
  EXPECT_EQ(Dump("u"), before);
}

// A deleted session whose files are removed only after a namesake was created
// (DeleteSession racing CreateSession) neither deletes nor writes the new files.
TEST_F(PersistenceTest, DeletedNamesakeLeavesNewFilesAlone) {
  Restart();
  Create("n");
  AddBatches("n", 1, 3);
  const std::shared_ptr<Session> old = service_->sessions().Remove("n");  // not yet store()->Remove
  ASSERT_NE(old, nullptr);
  Create("n");
  AddBatches("n", 1, 1);
  v1::ApplyChangesRequest late;
  *late.add_changes() = Add(77, 0);
  EXPECT_EQ(service_->store()->Append(*old, late.changes(), std::nullopt, 3).code(),
            ErrorCode::kUnavailable);
  service_->store()->Remove(*old);
  EXPECT_TRUE(fs::exists(SnapPath("n")));
  const std::string before = Dump("n");
  Restart();
  EXPECT_EQ(Dump("n"), before);
  EXPECT_EQ(Revision("n"), 1u);
}

// File names: a fixed prefix and the validated id; anything else is refused.
TEST_F(PersistenceTest, FileNamesAreSafe) {
  EXPECT_EQ(*SessionStore::SnapshotName("a.b:c-d_e"), "session-a.b:c-d_e.snap");
  EXPECT_EQ(*SessionStore::LogName("x"), "session-x.log");
  for (const char* bad : {"", ".", "..", "../x", "a/b", "a\\b", "a b"}) {
    EXPECT_FALSE(SessionStore::SnapshotName(bad).ok()) << bad;
  }
  EXPECT_TRUE(ParseFsyncPolicy("always").ok());
  EXPECT_EQ(*ParseFsyncPolicy("no"), FsyncPolicy::kNo);
  EXPECT_FALSE(ParseFsyncPolicy("sometimes").ok());
}

// Two servers on one data dir: the second is refused with a clear error.
TEST_F(PersistenceTest, DataDirIsLocked) {
  Restart();
  Result<std::unique_ptr<SessionStore>> second = SessionStore::Open(options_);
  ASSERT_FALSE(second.ok());
  EXPECT_NE(second.error().message.find("another hitboxd"), std::string::npos);
}

// Everysec and no: batches are in the log (the page cache) at once, and a
// clean shutdown flushes them.
TEST_F(PersistenceTest, EverySecAndNoKeepEverythingOnCleanShutdown) {
  for (FsyncPolicy p : {FsyncPolicy::kEverySec, FsyncPolicy::kNo}) {
    options_.fsync = p;
    Restart();
    const std::string id = std::string("p-") + FsyncPolicyName(p);
    Create(id);
    AddBatches(id, 1, 50);
    const std::string before = Dump(id);
    Restart();
    EXPECT_EQ(Dump(id), before) << FsyncPolicyName(p);
  }
}

}  // namespace
}  // namespace hitbox::server
