// Who may do what (server/auth.h), over the wire against the real hitboxd
// binary: the token matrix of every rpc, protected mode (with fake peers and,
// where this machine has one, a real non-loopback address), health open to
// all, TLS and mutual TLS (certificates generated at test time), certificate
// reload, and the per-connection stream cap.
#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netinet/in.h>

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "auth.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "hitbox/client.h"
#include "hitbox/v1/hitbox.grpc.pb.h"
#include "process.h"
#include "test_certs.h"
#include "wait.h"

namespace hitbox {
namespace {

namespace v1 = ::hitbox::v1;
using server::Access;
using server::Authorizer;
using server::AuthOptions;
using testing::HitboxdProcess;

constexpr const char* kAdmin = "admin-secret-0123456789abcdef";

// A new file with `text`, in a directory removed when the test program exits.
std::string WriteTempFile(const std::string& stem, const std::string& text) {
  static const testing::TempDir dir("auth");
  static int counter = 0;
  return dir.Write(stem + "_" + std::to_string(++counter), text);
}

std::chrono::system_clock::time_point In(int ms) {
  return std::chrono::system_clock::now() + std::chrono::milliseconds(ms);
}

// --- decisions without a network ---------------------------------------------

// Loopback, unix sockets and in-process peers are local; everything else is not.
TEST(AuthDecisionTest, LocalPeers) {
  for (const char* p : {"ipv4:127.0.0.1:5000", "ipv4:127.1.2.3:1", "ipv6:[::1]:5",
                        "ipv6:%5B::1%5D:5", "ipv6:[::ffff:127.0.0.1]:9", "unix:/tmp/x.sock",
                        "unix:", "inproc"}) {
    EXPECT_TRUE(server::IsLocalPeer(p)) << p;
  }
  for (const char* p : {"ipv4:10.0.0.1:5", "ipv4:192.0.2.2:50051", "ipv4:128.0.0.1:1",
                        "ipv6:[fd00::2]:5", "ipv6:%5Bfd00::2%5D:5", "ipv6:[::ffff:10.0.0.1]:9",
                        "ipv4:garbage", "ipv6:[::2]:1", "unknown", ""}) {
    EXPECT_FALSE(server::IsLocalPeer(p)) << p;
  }
}

// Tokens: 64 hex digits from the CSPRNG, all different; comparison exact.
TEST(AuthDecisionTest, TokensAndComparison) {
  std::set<std::string> seen;
  for (int i = 0; i < 100; ++i) {
    Result<std::string> t = server::NewSessionToken();
    ASSERT_TRUE(t.ok());
    ASSERT_EQ(t->size(), 64u);
    EXPECT_EQ(t->find_first_not_of("0123456789abcdef"), std::string::npos);
    EXPECT_TRUE(seen.insert(*t).second);
  }
  EXPECT_TRUE(server::TokensEqual("abc", "abc"));
  EXPECT_FALSE(server::TokensEqual("abc", "abd"));
  EXPECT_FALSE(server::TokensEqual("abc", "abcd"));
  EXPECT_FALSE(server::TokensEqual("", ""));  // an empty secret never matches
}

// The admin token file is trimmed; empty files and inner whitespace are refused.
TEST(AuthDecisionTest, TokenFile) {
  Result<std::string> t = server::ReadTokenFile(WriteTempFile("tok", "  s3cret-token \n\n"));
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(*t, "s3cret-token");
  EXPECT_FALSE(server::ReadTokenFile(WriteTempFile("tok", " \n")).ok());
  EXPECT_FALSE(server::ReadTokenFile(WriteTempFile("tok", "two words")).ok());
  EXPECT_FALSE(server::ReadTokenFile("/nonexistent/token").ok());
}

// Protected mode refuses remote peers (saying how to fix it) and trusts local
// ones; credentials or --insecure lift it.
TEST(AuthDecisionTest, ProtectedModeWithFakePeers) {
  server::SessionRegistry sessions(10);
  const Authorizer open(AuthOptions{}, &sessions);
  EXPECT_TRUE(open.protected_mode());
  const grpc::Status remote = open.Decide("ipv4:10.1.2.3:4", nullptr, Access::kCreate, "");
  EXPECT_EQ(remote.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_NE(remote.error_message().find("--insecure"), std::string::npos);
  EXPECT_NE(remote.error_message().find("--admin-token-file"), std::string::npos);
  EXPECT_TRUE(open.Decide("ipv4:127.0.0.1:4", nullptr, Access::kAdmin, "").ok());
  EXPECT_TRUE(open.Decide("unix:/run/h.sock", nullptr, Access::kSession, "x").ok());

  AuthOptions insecure;
  insecure.insecure = true;
  const Authorizer anyone(insecure, &sessions);
  EXPECT_FALSE(anyone.protected_mode());
  EXPECT_TRUE(anyone.Decide("ipv4:10.1.2.3:4", nullptr, Access::kAdmin, "").ok());

  AuthOptions admin;
  admin.admin_token = kAdmin;
  const Authorizer secured(admin, &sessions);
  EXPECT_FALSE(secured.protected_mode());
  EXPECT_EQ(secured.Decide("ipv4:10.1.2.3:4", nullptr, Access::kCreate, "").error_code(),
            grpc::StatusCode::UNAUTHENTICATED);  // only the admin creates, unless --open-create
  AuthOptions open_create = admin;
  open_create.open_create = true;
  const Authorizer creatable(open_create, &sessions);
  EXPECT_TRUE(creatable.Decide("ipv4:10.1.2.3:4", nullptr, Access::kCreate, "").ok());
  EXPECT_EQ(secured.Decide("ipv4:10.1.2.3:4", nullptr, Access::kAdmin, "").error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
  const std::string a(kAdmin);
  EXPECT_TRUE(secured.Decide("ipv4:10.1.2.3:4", &a, Access::kAdmin, "").ok());
}

// The in-flight cap: slots up to the maximum, then RESOURCE_EXHAUSTED; 0 = no cap.
TEST(AuthDecisionTest, InFlightLimiter) {
  server::InFlightLimiter limiter(2);
  {
    server::InFlightSlot a(limiter), b(limiter);
    EXPECT_TRUE(a.status().ok());
    EXPECT_TRUE(b.status().ok());
    server::InFlightSlot c(limiter);
    EXPECT_EQ(c.status().error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
    EXPECT_NE(c.status().error_message().find("--max-in-flight"), std::string::npos);
    EXPECT_EQ(limiter.in_flight(), 2u);
  }
  EXPECT_EQ(limiter.in_flight(), 0u);
  server::InFlightLimiter unlimited(0);
  std::vector<std::unique_ptr<server::InFlightSlot>> slots;
  for (int i = 0; i < 100; ++i) {
    slots.push_back(std::make_unique<server::InFlightSlot>(unlimited));
    EXPECT_TRUE(slots.back()->status().ok());
  }
}

// --- the matrix over the wire -------------------------------------------------

enum class Rpc { kGetSession, kApplyChanges, kGetColliders, kListColliders, kQuery, kTick,
                 kDeleteSession };
const char* Name(Rpc r) {
  switch (r) {
    case Rpc::kGetSession: return "GetSession";
    case Rpc::kApplyChanges: return "ApplyChanges";
    case Rpc::kGetColliders: return "GetColliders";
    case Rpc::kListColliders: return "ListColliders";
    case Rpc::kQuery: return "Query";
    case Rpc::kTick: return "Tick";
    case Rpc::kDeleteSession: return "DeleteSession";
  }
  return "?";
}

// Raw stubs, so the metadata sent is exactly the test's.
class Raw {
 public:
  explicit Raw(std::shared_ptr<grpc::Channel> channel)
      : stub_(v1::Hitbox::NewStub(channel)), health_(grpc::health::v1::Health::NewStub(channel)) {}

  static void Auth(grpc::ClientContext* ctx, const std::optional<std::string>& token) {
    ctx->set_deadline(In(5000));
    if (token) ctx->AddMetadata("authorization", "Bearer " + *token);
  }

  grpc::Status Create(const std::string& id, const std::optional<std::string>& token,
                      std::string* session_token = nullptr) {
    grpc::ClientContext ctx;
    Auth(&ctx, token);
    v1::CreateSessionRequest req;
    req.set_session_id(id);
    v1::SessionInfo info;
    grpc::Status st = stub_->CreateSession(&ctx, req, &info);
    if (session_token != nullptr) *session_token = info.token();
    return st;
  }

  grpc::Status List(const std::optional<std::string>& token) {
    grpc::ClientContext ctx;
    Auth(&ctx, token);
    v1::ListSessionsResponse resp;
    return stub_->ListSessions(&ctx, v1::ListSessionsRequest(), &resp);
  }

  grpc::Status Call(Rpc rpc, const std::string& id, const std::optional<std::string>& token) {
    grpc::ClientContext ctx;
    Auth(&ctx, token);
    switch (rpc) {
      case Rpc::kGetSession: {
        v1::GetSessionRequest req;
        req.set_session_id(id);
        v1::SessionInfo resp;
        grpc::Status st = stub_->GetSession(&ctx, req, &resp);
        if (st.ok()) { EXPECT_TRUE(resp.token().empty()) << "GetSession must not reveal the token"; }
        return st;
      }
      case Rpc::kApplyChanges: {
        v1::ApplyChangesRequest req;
        req.set_session_id(id);
        v1::ApplyChangesResponse resp;
        return stub_->ApplyChanges(&ctx, req, &resp);
      }
      case Rpc::kGetColliders: {
        v1::GetCollidersRequest req;
        req.set_session_id(id);
        v1::GetCollidersResponse resp;
        return stub_->GetColliders(&ctx, req, &resp);
      }
      case Rpc::kListColliders: {
        v1::ListCollidersRequest req;
        req.set_session_id(id);
        auto reader = stub_->ListColliders(&ctx, req);
        v1::ListCollidersResponse page;
        while (reader->Read(&page)) {
        }
        return reader->Finish();
      }
      case Rpc::kQuery: {
        v1::QueryRequest req;
        req.set_session_id(id);
        v1::QueryResponse resp;
        return stub_->Query(&ctx, req, &resp);
      }
      case Rpc::kTick: {
        auto stream = stub_->Tick(&ctx);
        v1::TickRequest req;
        req.set_session_id(id);
        req.set_tick(1);
        stream->Write(req);
        stream->WritesDone();
        v1::TickResponse resp;
        grpc::Status tick_error;
        while (stream->Read(&resp)) {
          if (resp.has_error()) {
            tick_error = grpc::Status(static_cast<grpc::StatusCode>(resp.error().code()),
                                      resp.error().message());
          }
        }
        grpc::Status st = stream->Finish();
        return st.ok() ? tick_error : st;
      }
      case Rpc::kDeleteSession: {
        v1::DeleteSessionRequest req;
        req.set_session_id(id);
        v1::DeleteSessionResponse resp;
        return stub_->DeleteSession(&ctx, req, &resp);
      }
    }
    return grpc::Status::CANCELLED;
  }

  grpc::Status Health(grpc::health::v1::HealthCheckResponse::ServingStatus* status) {
    grpc::ClientContext ctx;
    ctx.set_deadline(In(5000));
    grpc::health::v1::HealthCheckResponse resp;
    grpc::Status st = health_->Check(&ctx, grpc::health::v1::HealthCheckRequest(), &resp);
    *status = resp.status();
    return st;
  }

 private:
  std::unique_ptr<v1::Hitbox::Stub> stub_;
  std::unique_ptr<grpc::health::v1::Health::Stub> health_;
};

class AuthWireTest : public ::testing::Test {
 protected:
  AuthWireTest()
      : admin_file_(WriteTempFile("admin", std::string("\n  ") + kAdmin + "  \n")),
        server_({"--admin-token-file", admin_file_, "--open-create"}),
        raw_(grpc::CreateChannel(server_.address(), grpc::InsecureChannelCredentials())) {}
  ~AuthWireTest() override { std::filesystem::remove(admin_file_); }

  std::string admin_file_;
  HitboxdProcess server_;
  Raw raw_;
};

// Each rpc on a session x each caller: no token, a wrong token, another
// session's token, the session's own token, the admin token.
TEST_F(AuthWireTest, EveryRpcByEveryCaller) {
  ASSERT_TRUE(server_.running());
  std::string mine, other;
  ASSERT_TRUE(raw_.Create("mine", std::nullopt, &mine).ok());  // anyone may create
  ASSERT_TRUE(raw_.Create("other", std::nullopt, &other).ok());
  ASSERT_EQ(mine.size(), 64u);
  ASSERT_NE(mine, other);
  const std::optional<std::string> none;
  const std::string wrong(64, 'a');
  for (Rpc rpc : {Rpc::kGetSession, Rpc::kApplyChanges, Rpc::kGetColliders, Rpc::kListColliders,
                  Rpc::kQuery, Rpc::kTick}) {
    SCOPED_TRACE(Name(rpc));
    EXPECT_EQ(raw_.Call(rpc, "mine", none).error_code(), grpc::StatusCode::UNAUTHENTICATED);
    EXPECT_EQ(raw_.Call(rpc, "mine", wrong).error_code(), grpc::StatusCode::PERMISSION_DENIED);
    EXPECT_EQ(raw_.Call(rpc, "mine", other).error_code(), grpc::StatusCode::PERMISSION_DENIED);
    EXPECT_EQ(raw_.Call(rpc, "mine", std::string("Bearer")).error_code(),
              grpc::StatusCode::PERMISSION_DENIED);
    // A malformed id is refused like any other without a matching token.
    EXPECT_EQ(raw_.Call(rpc, std::string(300, '\x01'), mine).error_code(),
              grpc::StatusCode::PERMISSION_DENIED);
    const grpc::Status own = raw_.Call(rpc, "mine", mine);
    EXPECT_TRUE(own.ok()) << own.error_message();
    const grpc::Status admin = raw_.Call(rpc, "mine", std::string(kAdmin));
    EXPECT_TRUE(admin.ok()) << admin.error_message();
  }
  // DeleteSession last: the refused callers first, then the owner, then the admin.
  EXPECT_EQ(raw_.Call(Rpc::kDeleteSession, "mine", none).error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(raw_.Call(Rpc::kDeleteSession, "mine", wrong).error_code(),
            grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(raw_.Call(Rpc::kDeleteSession, "mine", other).error_code(),
            grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_TRUE(raw_.Call(Rpc::kDeleteSession, "mine", mine).ok());
  EXPECT_TRUE(raw_.Call(Rpc::kDeleteSession, "other", std::string(kAdmin)).ok());
  // The admin may know a session is gone.
  EXPECT_EQ(raw_.Call(Rpc::kGetSession, "other", std::string(kAdmin)).error_code(),
            grpc::StatusCode::NOT_FOUND);
}

// Only the admin token lists sessions.
TEST_F(AuthWireTest, ListSessionsAdminOnly) {
  std::string token;
  ASSERT_TRUE(raw_.Create("s", std::nullopt, &token).ok());
  EXPECT_EQ(raw_.List(std::nullopt).error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(raw_.List(token).error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(raw_.List(std::string("nope")).error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_TRUE(raw_.List(std::string(kAdmin)).ok());
}

// A token on an unknown session answers exactly like a wrong token on an
// existing one: same code, same message, for every rpc.
TEST_F(AuthWireTest, UnknownSessionLooksLikeWrongToken) {
  std::string mine, other;
  ASSERT_TRUE(raw_.Create("victim", std::nullopt, &other).ok());
  ASSERT_TRUE(raw_.Create("mine", std::nullopt, &mine).ok());
  for (Rpc rpc : {Rpc::kGetSession, Rpc::kApplyChanges, Rpc::kGetColliders, Rpc::kListColliders,
                  Rpc::kQuery, Rpc::kTick, Rpc::kDeleteSession}) {
    SCOPED_TRACE(Name(rpc));
    const grpc::Status exists = raw_.Call(rpc, "victim", mine);
    ASSERT_TRUE(raw_.Call(Rpc::kDeleteSession, "victim", other).ok());
    const grpc::Status gone = raw_.Call(rpc, "victim", mine);
    EXPECT_EQ(exists.error_code(), grpc::StatusCode::PERMISSION_DENIED);
    EXPECT_EQ(gone.error_code(), exists.error_code());
    EXPECT_EQ(gone.error_message(), exists.error_message());
    ASSERT_TRUE(raw_.Create("victim", std::nullopt, &other).ok());
  }
}

// Health answers everyone, without a token.
TEST_F(AuthWireTest, HealthNeedsNoToken) {
  grpc::health::v1::HealthCheckResponse::ServingStatus status{};
  ASSERT_TRUE(raw_.Health(&status).ok());
  EXPECT_EQ(status, grpc::health::v1::HealthCheckResponse::SERVING);
}

// The client library remembers the tokens of sessions it created, takes
// others with SetSessionToken, and sends ClientOptions::token otherwise.
TEST_F(AuthWireTest, ClientLibrarySendsTokens) {
  Client owner(server_.address());
  RpcResult<SessionInfo> created = owner.CreateSession("lib");
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  ASSERT_EQ(created->token.size(), 64u);
  EXPECT_TRUE(owner.GetSession("lib").ok());
  EXPECT_TRUE(owner.GetSession("lib")->token.empty());
  EXPECT_TRUE(owner.AddColliders("lib", std::vector<Collider>{Collider{}}).ok());
  std::unique_ptr<TickStream> stream = owner.OpenTickStream("lib");
  RpcResult<TickResult> tick = stream->Tick({}, {}).get();
  EXPECT_TRUE(tick.ok()) << tick.status().ToString();
  EXPECT_EQ(owner.ListSessions().code(), RpcCode::kUnauthenticated);  // no admin token sent

  Client stranger(server_.address());
  EXPECT_EQ(stranger.GetSession("lib").code(), RpcCode::kUnauthenticated);
  std::unique_ptr<TickStream> refused = stranger.OpenTickStream("lib");
  EXPECT_EQ(refused->Tick({}, {}).get().code(), RpcCode::kUnauthenticated);
  stranger.SetSessionToken("lib", created->token);
  EXPECT_TRUE(stranger.GetSession("lib").ok());

  ClientOptions admin_options;
  admin_options.token = kAdmin;
  Client admin(server_.address(), admin_options);
  RpcResult<std::vector<SessionInfo>> list = admin.ListSessions();
  ASSERT_TRUE(list.ok()) << list.status().ToString();
  EXPECT_EQ(list->size(), 1u);
  EXPECT_TRUE(admin.DeleteSession("lib").ok());
}

// With an admin token, only it creates sessions, and a refused CreateSession
// looks the same whether the id is taken or free: nothing about other
// sessions is revealed (issue 28). --create-needs-admin is still accepted.
TEST(AuthCreateTest, CreateNeedsAdminAndRevealsNothing) {
  const std::string admin_file = WriteTempFile("admin", kAdmin);
  for (bool old_flag : {false, true}) {
    std::vector<std::string> args = {"--admin-token-file", admin_file};
    if (old_flag) args.push_back("--create-needs-admin");
    HitboxdProcess server(args);
    ASSERT_TRUE(server.running());
    Raw raw(grpc::CreateChannel(server.address(), grpc::InsecureChannelCredentials()));
    std::string token;
    ASSERT_TRUE(raw.Create("taken", std::string(kAdmin), &token).ok());
    EXPECT_EQ(token.size(), 64u);  // the admin hands it to the game server
    EXPECT_TRUE(raw.Call(Rpc::kQuery, "taken", token).ok());
    for (const std::optional<std::string>& caller :
         {std::optional<std::string>(), std::optional<std::string>("wrong"),
          std::optional<std::string>(token)}) {
      const grpc::Status taken = raw.Create("taken", caller);
      const grpc::Status free = raw.Create("free", caller);
      EXPECT_EQ(taken.error_code(), caller ? grpc::StatusCode::PERMISSION_DENIED
                                           : grpc::StatusCode::UNAUTHENTICATED);
      EXPECT_EQ(free.error_code(), taken.error_code());
      EXPECT_EQ(free.error_message(), taken.error_message());
    }
    EXPECT_EQ(raw.Call(Rpc::kGetSession, "free", std::string(kAdmin)).error_code(),
              grpc::StatusCode::NOT_FOUND);
  }
  // --open-create: anyone served may create (and so tell a taken id).
  HitboxdProcess open({"--admin-token-file", admin_file, "--open-create"});
  ASSERT_TRUE(open.running());
  Raw raw(grpc::CreateChannel(open.address(), grpc::InsecureChannelCredentials()));
  EXPECT_TRUE(raw.Create("a", std::nullopt).ok());
  EXPECT_EQ(raw.Create("a", std::nullopt).error_code(), grpc::StatusCode::ALREADY_EXISTS);
  std::filesystem::remove(admin_file);
}

// Without credentials every loopback caller is trusted (protected mode), so
// scripts and tests on one machine work as before; tokens are still issued.
TEST(AuthCreateTest, NoCredentialsTrustsLoopback) {
  HitboxdProcess server;
  ASSERT_TRUE(server.running());
  Raw raw(grpc::CreateChannel(server.address(), grpc::InsecureChannelCredentials()));
  std::string token;
  ASSERT_TRUE(raw.Create("s", std::nullopt, &token).ok());
  EXPECT_EQ(token.size(), 64u);
  EXPECT_TRUE(raw.Call(Rpc::kQuery, "s", std::nullopt).ok());
  EXPECT_TRUE(raw.List(std::nullopt).ok());
}

// --- protected mode for real ----------------------------------------------------

// A non-loopback IPv4 address of this machine, or "" when it has none.
std::string ExternalIpv4() {
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return "";
  std::string found;
  for (ifaddrs* i = list; i != nullptr && found.empty(); i = i->ifa_next) {
    if (i->ifa_addr == nullptr || i->ifa_addr->sa_family != AF_INET) continue;
    const auto* a = reinterpret_cast<const sockaddr_in*>(i->ifa_addr);
    if ((ntohl(a->sin_addr.s_addr) >> 24) == 127) continue;
    char buf[INET_ADDRSTRLEN];
    if (inet_ntop(AF_INET, &a->sin_addr, buf, sizeof(buf)) != nullptr) found = buf;
  }
  freeifaddrs(list);
  return found;
}

// Listening on this machine's non-loopback address and connecting to it: the
// peer is not loopback. Without credentials the Hitbox service refuses it
// (health still answers); --insecure or an admin token lift the refusal.
TEST(ProtectedModeTest, NonLoopbackPeerRefusedUnlessConfigured) {
  const std::string ip = ExternalIpv4();
  if (ip.empty()) GTEST_SKIP() << "this machine has no non-loopback IPv4 address";
  {
    HitboxdProcess server({}, {.host = ip});
    if (!server.running()) GTEST_SKIP() << "cannot listen on " << ip;
    Raw raw(grpc::CreateChannel(server.address(), grpc::InsecureChannelCredentials()));
    const grpc::Status st = raw.Create("x", std::nullopt);
    EXPECT_EQ(st.error_code(), grpc::StatusCode::PERMISSION_DENIED) << st.error_message();
    EXPECT_NE(st.error_message().find("--insecure"), std::string::npos);
    EXPECT_EQ(raw.List(std::nullopt).error_code(), grpc::StatusCode::PERMISSION_DENIED);
    grpc::health::v1::HealthCheckResponse::ServingStatus status{};
    ASSERT_TRUE(raw.Health(&status).ok());
    EXPECT_EQ(status, grpc::health::v1::HealthCheckResponse::SERVING);
  }
  {
    HitboxdProcess server({"--insecure"}, {.host = ip});
    ASSERT_TRUE(server.running());
    Raw raw(grpc::CreateChannel(server.address(), grpc::InsecureChannelCredentials()));
    EXPECT_TRUE(raw.Create("x", std::nullopt).ok());
  }
  {
    const std::string admin_file = WriteTempFile("admin", kAdmin);
    HitboxdProcess server({"--admin-token-file", admin_file, "--open-create"}, {.host = ip});
    ASSERT_TRUE(server.running());
    Raw raw(grpc::CreateChannel(server.address(), grpc::InsecureChannelCredentials()));
    std::string token;
    EXPECT_TRUE(raw.Create("x", std::nullopt, &token).ok());
    EXPECT_TRUE(raw.Call(Rpc::kGetSession, "x", token).ok());
    EXPECT_EQ(raw.Call(Rpc::kGetSession, "x", std::nullopt).error_code(),
              grpc::StatusCode::UNAUTHENTICATED);
    std::filesystem::remove(admin_file);
  }
}

// A non-loopback IPv6 address of this machine (not link-local), or "".
std::string ExternalIpv6() {
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return "";
  std::string found;
  for (ifaddrs* i = list; i != nullptr && found.empty(); i = i->ifa_next) {
    if (i->ifa_addr == nullptr || i->ifa_addr->sa_family != AF_INET6) continue;
    const auto* a = reinterpret_cast<const sockaddr_in6*>(i->ifa_addr);
    if (IN6_IS_ADDR_LOOPBACK(&a->sin6_addr) || IN6_IS_ADDR_LINKLOCAL(&a->sin6_addr)) continue;
    char buf[INET6_ADDRSTRLEN];
    if (inet_ntop(AF_INET6, &a->sin6_addr, buf, sizeof(buf)) != nullptr) found = buf;
  }
  freeifaddrs(list);
  return found;
}

// The same over IPv6: gRPC's real peer strings for ::1 and for another
// address of this machine are told apart (whatever their encoding).
TEST(ProtectedModeTest, Ipv6LoopbackServedOthersRefused) {
  {
    HitboxdProcess server({}, {.host = "[::1]"});
    if (!server.running()) GTEST_SKIP() << "cannot listen on [::1]";
    Raw raw(grpc::CreateChannel(server.address(), grpc::InsecureChannelCredentials()));
    EXPECT_TRUE(raw.Create("x", std::nullopt).ok());
  }
  const std::string ip = ExternalIpv6();
  if (ip.empty()) GTEST_SKIP() << "this machine has no non-loopback IPv6 address";
  HitboxdProcess server({}, {.host = "[" + ip + "]"});
  if (!server.running()) GTEST_SKIP() << "cannot listen on " << ip;
  Raw raw(grpc::CreateChannel(server.address(), grpc::InsecureChannelCredentials()));
  EXPECT_EQ(raw.Create("x", std::nullopt).error_code(), grpc::StatusCode::PERMISSION_DENIED);
}

// --- TLS ------------------------------------------------------------------------

class TlsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!certs_.ok()) GTEST_SKIP() << "openssl could not generate test certificates";
  }
  static Client MakeClient(const std::string& address, TlsOptions tls) {
    ClientOptions o;
    o.default_timeout = std::chrono::seconds(3);
    o.retry.max_attempts = 1;
    o.tls = std::move(tls);
    return Client(address, o);
  }
  static RpcCode Health(const std::string& address, TlsOptions tls) {
    ClientOptions o;
    o.default_timeout = std::chrono::seconds(3);
    o.retry.max_attempts = 1;
    o.tls = std::move(tls);
    Client c(address, o);
    RpcResult<HealthStatus> h = c.CheckHealth();
    return h.ok() ? RpcCode::kOk : h.code();
  }
  testing::TestCerts certs_;
};

// Server TLS: a client trusting the CA connects (and creates a session); a
// plaintext client, or one trusting another CA, cannot.
TEST_F(TlsTest, ServerCertificate) {
  const auto& a = certs_.a();
  HitboxdProcess server({"--tls-cert", a.server_cert, "--tls-key", a.server_key});
  ASSERT_TRUE(server.running());
  const std::string addr = "localhost:" + std::to_string(server.port());
  EXPECT_EQ(Health(addr, TlsOptions{.ca_file = a.ca}), RpcCode::kOk);
  Client client = MakeClient(addr, TlsOptions{.ca_file = a.ca});
  EXPECT_TRUE(client.CreateSession("tls").ok());
  EXPECT_EQ(Health(addr, TlsOptions{}), RpcCode::kUnavailable);  // plaintext
  EXPECT_EQ(Health(addr, TlsOptions{.ca_file = certs_.b().ca}), RpcCode::kUnavailable);
  Client missing = MakeClient(addr, TlsOptions{.ca_file = "/nonexistent/ca.pem"});
  EXPECT_EQ(missing.CheckHealth().code(), RpcCode::kFailedPrecondition);
}

// Mutual TLS: only a client certificate signed by the client CA gets in.
TEST_F(TlsTest, MutualTls) {
  const auto& a = certs_.a();
  const auto& b = certs_.b();
  HitboxdProcess server({"--tls-cert", a.server_cert, "--tls-key", a.server_key,
                            "--tls-client-ca", a.ca});
  ASSERT_TRUE(server.running());
  const std::string addr = "localhost:" + std::to_string(server.port());
  EXPECT_EQ(Health(addr, TlsOptions{.ca_file = a.ca, .cert_file = a.client_cert,
                                    .key_file = a.client_key}),
            RpcCode::kOk);
  EXPECT_NE(Health(addr, TlsOptions{.ca_file = a.ca}), RpcCode::kOk);  // no client cert
  EXPECT_NE(Health(addr, TlsOptions{.ca_file = a.ca, .cert_file = b.client_cert,
                                    .key_file = b.client_key}),
            RpcCode::kOk);  // signed by another CA
  // Client certificates are credentials: tokens are enforced.
  Client client = MakeClient(addr, TlsOptions{.ca_file = a.ca, .cert_file = a.client_cert,
                                              .key_file = a.client_key});
  ASSERT_TRUE(client.CreateSession("m").ok());
  EXPECT_TRUE(client.GetSession("m").ok());
  EXPECT_EQ(client.ListSessions().code(), RpcCode::kUnauthenticated);  // admin only
}

// A certificate replaced on disk is served without a restart (--tls-reload-seconds).
TEST_F(TlsTest, CertificateReloadWithoutRestart) {
  const std::string dir = certs_.dir() + "/live";
  std::filesystem::create_directories(dir);
  const std::string cert = dir + "/server.pem", key = dir + "/server.key";
  auto install = [&](const testing::CertSet& set) {
    // Key first, then certificate, each by rename (atomic).
    std::filesystem::copy_file(set.server_key, key + ".tmp",
                               std::filesystem::copy_options::overwrite_existing);
    std::filesystem::rename(key + ".tmp", key);
    std::filesystem::copy_file(set.server_cert, cert + ".tmp",
                               std::filesystem::copy_options::overwrite_existing);
    std::filesystem::rename(cert + ".tmp", cert);
  };
  install(certs_.a());
  HitboxdProcess server({"--tls-cert", cert, "--tls-key", key, "--tls-reload-seconds", "1"});
  ASSERT_TRUE(server.running());
  const std::string addr = "localhost:" + std::to_string(server.port());
  ASSERT_EQ(Health(addr, TlsOptions{.ca_file = certs_.a().ca}), RpcCode::kOk);
  install(certs_.b());
  // The server's own reload timer picks it up; wait for the new one.
  EXPECT_TRUE(testing::WaitUntil(
      [&] { return Health(addr, TlsOptions{.ca_file = certs_.b().ca}) == RpcCode::kOk; }))
      << "the new certificate was not served";
  EXPECT_NE(Health(addr, TlsOptions{.ca_file = certs_.a().ca}), RpcCode::kOk);
}

// Unreadable TLS files stop hitboxd at start, not at the first handshake.
TEST_F(TlsTest, MissingFilesFailAtStart) {
  HitboxdProcess server({"--tls-cert", "/nonexistent.pem", "--tls-key", "/nonexistent.key"});
  EXPECT_FALSE(server.running());
  HitboxdProcess ca_only({"--tls-client-ca", certs_.a().ca});
  EXPECT_FALSE(ca_only.running());
}

// --- per-connection limits ----------------------------------------------------------

// --max-streams-per-connection 1: while a Tick stream is open, another call on
// the same connection waits (here: until its deadline); afterwards it goes through.
TEST(ConnectionLimitsTest, StreamsPerConnection) {
  HitboxdProcess server({"--max-streams-per-connection", "1"});
  ASSERT_TRUE(server.running());
  auto channel = grpc::CreateChannel(server.address(), grpc::InsecureChannelCredentials());
  Raw raw(channel);
  ASSERT_TRUE(raw.Create("s", std::nullopt).ok());
  auto stub = v1::Hitbox::NewStub(channel);
  grpc::ClientContext tick_ctx;
  auto stream = stub->Tick(&tick_ctx);
  v1::TickRequest req;
  req.set_session_id("s");
  ASSERT_TRUE(stream->Write(req));
  v1::TickResponse resp;
  ASSERT_TRUE(stream->Read(&resp));  // the stream is open on the server
  {
    grpc::ClientContext ctx;
    ctx.set_deadline(In(500));
    v1::GetSessionRequest get;
    get.set_session_id("s");
    v1::SessionInfo info;
    EXPECT_EQ(stub->GetSession(&ctx, get, &info).error_code(),
              grpc::StatusCode::DEADLINE_EXCEEDED);
  }
  stream->WritesDone();
  EXPECT_TRUE(stream->Finish().ok());
  EXPECT_TRUE(raw.Call(Rpc::kGetSession, "s", std::nullopt).ok());
}

// --max-in-flight 1: an open Tick stream is a call in flight, so a unary call
// (on any connection) is refused with RESOURCE_EXHAUSTED until it ends; health
// is not counted.
TEST(ConnectionLimitsTest, CallsInFlightServerWide) {
  HitboxdProcess server({"--max-in-flight", "1"});
  ASSERT_TRUE(server.running());
  auto channel = grpc::CreateChannel(server.address(), grpc::InsecureChannelCredentials());
  Raw raw(channel);
  ASSERT_TRUE(raw.Create("s", std::nullopt).ok());
  auto stub = v1::Hitbox::NewStub(channel);
  auto tick_ctx = std::make_unique<grpc::ClientContext>();
  auto stream = stub->Tick(tick_ctx.get());
  v1::TickRequest req;
  req.set_session_id("s");
  ASSERT_TRUE(stream->Write(req));
  v1::TickResponse resp;
  ASSERT_TRUE(stream->Read(&resp));
  Raw other(grpc::CreateChannel(server.address(), grpc::InsecureChannelCredentials()));
  const grpc::Status busy = other.Call(Rpc::kGetSession, "s", std::nullopt);
  EXPECT_EQ(busy.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_NE(busy.error_message().find("--max-in-flight"), std::string::npos);
  grpc::health::v1::HealthCheckResponse::ServingStatus status{};
  EXPECT_TRUE(other.Health(&status).ok());
  stream->WritesDone();
  EXPECT_TRUE(stream->Finish().ok());
  // The slot is given back when the server has finished with the stream.
  EXPECT_TRUE(
      testing::WaitUntil([&] { return other.Call(Rpc::kGetSession, "s", std::nullopt).ok(); }));
}

}  // namespace
}  // namespace hitbox
