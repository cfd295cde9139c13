// Who may do what on hitboxd (docs/security.md has the table): session and
// admin tokens as `authorization: Bearer <token>`, protected mode (loopback
// only while no credentials are configured) and the cap on requests in
// flight. Every rpc entry point asks Authorizer::Authorize first.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <string_view>

#include <grpcpp/grpcpp.h>

#include "hitbox/status.h"
#include "session.h"

namespace hitbox::server {

/// Call metadata key that carries the caller's token ("Bearer <token>").
inline constexpr const char* kAuthMetadataKey = "authorization";
/// Scheme prefix of the metadata value.
inline constexpr std::string_view kBearerPrefix = "Bearer ";

/// Who may call what (hitboxd's --admin-token-file, --insecure, ...).
struct AuthOptions {
  /// The admin token; empty: none configured (then nobody may ListSessions).
  std::string admin_token;
  /// TLS client certificates are required and verified (--tls-client-ca):
  /// counts as credentials for protected mode.
  bool client_certs = false;
  /// Accept non-loopback clients even without credentials (--insecure).
  bool insecure = false;
  /// Every caller the server serves may CreateSession even with an admin
  /// token configured (--open-create); otherwise only the admin token may.
  bool open_create = false;
  /// Most hitbox.v1 calls in flight at once, server-wide: unary calls while
  /// they run, ListColliders and Tick streams for their whole life; 0 = no
  /// cap. Beyond it a new call fails with RESOURCE_EXHAUSTED.
  uint32_t max_in_flight = 1024;
};

/// What a call asks to do.
enum class Access {
  kCreate,   ///< CreateSession
  kSession,  ///< any rpc on one session (GetSession, DeleteSession, ApplyChanges, ...)
  kAdmin,    ///< ListSessions
  kRead,     ///< ListMaps, GetMap, GetServerInfo: any authenticated caller (a
             ///< session's or the admin token)
};

/// A fresh session token: 32 bytes from the kernel's CSPRNG (getrandom), as
/// 64 lowercase hex digits.
[[nodiscard]] Result<std::string> NewSessionToken();
/// Equality of two secrets in time that depends only on their lengths.
bool TokensEqual(std::string_view a, std::string_view b);
/// True for peers on this machine: loopback TCP (127.0.0.0/8, ::1, v4-mapped
/// ::ffff:127.x), unix sockets and in-process channels. `peer` is PeerOf():
/// "ipv4:1.2.3.4:5", "ipv6:[::1]:5" (brackets maybe %-encoded), "unix:/path",
/// "inproc".
bool IsLocalPeer(std::string_view peer);
/// ServerContext::peer(), except "inproc" for in-process calls (which gRPC
/// 1.51 reports as "unknown").
std::string PeerOf(const grpc::ServerContextBase& ctx);
/// Reads an admin token file: its content trimmed of surrounding whitespace;
/// an unreadable or empty file (or one with inner whitespace) is an error.
[[nodiscard]] Result<std::string> ReadTokenFile(const std::string& path);

/// Decides every hitbox.v1 call (see the table above). Thread-safe.
class Authorizer {
 public:
  Authorizer(AuthOptions options, const SessionRegistry* sessions)
      : options_(std::move(options)), sessions_(sessions) {}

  /// An admin token or TLS client certificates are configured: tokens are enforced.
  bool credentials_configured() const;
  /// Protected mode: no credentials configured and not --insecure.
  bool protected_mode() const;
  /// Protected mode's verdict on a peer: OK, or PERMISSION_DENIED saying how
  /// to configure credentials or pass --insecure.
  grpc::Status CheckPeer(std::string_view peer) const;
  /// The one check every entry point makes: peer, then token. `session_id` is
  /// the session the call names (Access::kSession only).
  grpc::Status Authorize(const grpc::ServerContextBase& ctx, Access access,
                         std::string_view session_id) const;
  /// As Authorize, from a peer string and the presented token (nullptr:
  /// none); what Authorize calls, exposed for tests.
  grpc::Status Decide(std::string_view peer, const std::string* token, Access access,
                      std::string_view session_id) const;
  const AuthOptions& options() const { return options_; }

 private:
  const AuthOptions options_;
  const SessionRegistry* const sessions_;
};

/// Server-wide count of calls in flight, capped at AuthOptions::max_in_flight.
class InFlightLimiter {
 public:
  explicit InFlightLimiter(uint32_t max) : max_(max) {}
  /// Takes a slot: OK, or RESOURCE_EXHAUSTED when all are taken.
  grpc::Status Acquire();
  /// Gives a slot back (after a successful Acquire).
  void Release() { in_flight_.fetch_sub(1, std::memory_order_relaxed); }
  /// Requests being handled now.
  uint32_t in_flight() const { return in_flight_.load(std::memory_order_relaxed); }

 private:
  const uint32_t max_;
  std::atomic<uint32_t> in_flight_{0};
};

/// Holds one InFlightLimiter slot for a scope (when acquired).
class InFlightSlot {
 public:
  explicit InFlightSlot(InFlightLimiter& limiter) : limiter_(limiter), status_(limiter.Acquire()) {}
  ~InFlightSlot() {
    if (status_.ok()) limiter_.Release();
  }
  InFlightSlot(const InFlightSlot&) = delete;
  InFlightSlot& operator=(const InFlightSlot&) = delete;
  /// OK when a slot was taken.
  const grpc::Status& status() const { return status_; }

 private:
  InFlightLimiter& limiter_;
  const grpc::Status status_;
};

}  // namespace hitbox::server
