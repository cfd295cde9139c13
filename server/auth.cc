#include "auth.h"

#include <sys/random.h>

#include <arpa/inet.h>

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include "hitbox/wire/convert.h"

namespace hitbox::server {
namespace {

grpc::Status Denied(std::string message) {
  return grpc::Status(grpc::StatusCode::PERMISSION_DENIED, std::move(message));
}

// "%5B" -> "[" etc. (gRPC may percent-encode the brackets of an ipv6 peer).
std::string PercentDecode(std::string_view in) {
  std::string out;
  out.reserve(in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i] == '%' && i + 2 < in.size()) {
      const std::string hex(in.substr(i + 1, 2));
      char* end = nullptr;
      const long v = std::strtol(hex.c_str(), &end, 16);
      if (end == hex.c_str() + 2) {
        out.push_back(static_cast<char>(v));
        i += 2;
        continue;
      }
    }
    out.push_back(in[i]);
  }
  return out;
}

// The host part of "host:port" / "[v6]:port".
std::string HostOf(const std::string& hostport, bool v6) {
  if (v6) {
    if (!hostport.empty() && hostport.front() == '[') {
      const size_t close = hostport.find(']');
      return close == std::string::npos ? std::string() : hostport.substr(1, close - 1);
    }
    const size_t colon = hostport.rfind(':');  // unbracketed: last colon is the port's
    return colon == std::string::npos ? hostport : hostport.substr(0, colon);
  }
  const size_t colon = hostport.rfind(':');
  return colon == std::string::npos ? hostport : hostport.substr(0, colon);
}

// True, with *token set, when the call carries "authorization: Bearer <token>";
// no header, an empty token or another scheme count as no token.
bool PresentedToken(const grpc::ServerContextBase& ctx, std::string* token) {
  const auto& md = ctx.client_metadata();
  const auto it = md.find(kAuthMetadataKey);
  if (it == md.end()) return false;
  const std::string_view value(it->second.data(), it->second.size());
  if (value.size() <= kBearerPrefix.size()) return false;
  // The scheme is case-insensitive (RFC 7235).
  for (size_t i = 0; i < kBearerPrefix.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(value[i])) !=
        std::tolower(static_cast<unsigned char>(kBearerPrefix[i]))) {
      return false;
    }
  }
  token->assign(value.substr(kBearerPrefix.size()));
  return true;
}

}  // namespace

Result<std::string> NewSessionToken() {
  unsigned char bytes[32];
  size_t got = 0;
  while (got < sizeof(bytes)) {
    const ssize_t n = getrandom(bytes + got, sizeof(bytes) - got, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      return Error{ErrorCode::kInternal,
                   std::string("cannot draw a session token: getrandom: ") + std::strerror(errno)};
    }
    got += static_cast<size_t>(n);
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(2 * sizeof(bytes));
  for (unsigned char b : bytes) {
    out.push_back(kHex[b >> 4]);
    out.push_back(kHex[b & 15]);
  }
  return out;
}

bool TokensEqual(std::string_view a, std::string_view b) {
  // Walk the longer one whole, so the time depends on the lengths only.
  const size_t n = std::max(a.size(), b.size());
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  for (size_t i = 0; i < n; ++i) {
    const unsigned char x = i < a.size() ? static_cast<unsigned char>(a[i]) : 0;
    const unsigned char y = i < b.size() ? static_cast<unsigned char>(b[i]) : 0;
    diff |= static_cast<unsigned char>(x ^ y);
  }
  // Keep the compiler from short-circuiting the loop.
  volatile unsigned char result = diff;
  return result == 0 && !a.empty();
}

bool IsLocalPeer(std::string_view raw) {
  const std::string peer = PercentDecode(raw);
  auto starts = [&](std::string_view p) { return peer.compare(0, p.size(), p) == 0; };
  if (starts("unix:") || starts("unix-abstract:")) return true;
  if (starts("ipv4:")) {
    const std::string host = HostOf(peer.substr(5), false);
    in_addr a{};
    if (inet_pton(AF_INET, host.c_str(), &a) != 1) return false;
    return (ntohl(a.s_addr) >> 24) == 127;
  }
  if (starts("ipv6:")) {
    std::string host = HostOf(peer.substr(5), true);
    if (const size_t zone = host.find('%'); zone != std::string::npos) host.resize(zone);
    in6_addr a{};
    if (inet_pton(AF_INET6, host.c_str(), &a) != 1) return false;
    if (IN6_IS_ADDR_LOOPBACK(&a)) return true;
    return IN6_IS_ADDR_V4MAPPED(&a) && a.s6_addr[12] == 127;
  }
  // In-process channels (HitboxServer::InProcessChannel): see PeerOf.
  return peer == "inproc";
}

Result<std::string> ReadTokenFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Error{ErrorCode::kInvalidArgument, "cannot read the token file " + path};
  std::stringstream buf;
  buf << in.rdbuf();
  std::string s = buf.str();
  const char* ws = " \t\r\n\v\f";
  const size_t first = s.find_first_not_of(ws);
  if (first == std::string::npos) {
    return Error{ErrorCode::kInvalidArgument, "the token file " + path + " is empty"};
  }
  s = s.substr(first, s.find_last_not_of(ws) - first + 1);
  if (s.find_first_of(ws) != std::string::npos) {
    return Error{ErrorCode::kInvalidArgument,
                 "the token file " + path + " holds whitespace inside the token"};
  }
  return s;
}

bool Authorizer::credentials_configured() const {
  return !options_.admin_token.empty() || options_.client_certs;
}

bool Authorizer::protected_mode() const { return !credentials_configured() && !options_.insecure; }

grpc::Status Authorizer::CheckPeer(std::string_view peer) const {
  if (!protected_mode() || IsLocalPeer(peer)) return grpc::Status::OK;
  return Denied(
      "hitboxd is in protected mode: no credentials are configured, so only clients on this "
      "machine (loopback) are served. Configure an admin token (--admin-token-file) and/or "
      "TLS client certificates (--tls-client-ca), or start hitboxd with --insecure to serve "
      "everyone without credentials");
}

grpc::Status Authorizer::Decide(std::string_view peer, const std::string* token, Access access,
                                std::string_view session_id) const {
  if (grpc::Status st = CheckPeer(peer); !st.ok()) return st;
  // No credentials configured: every caller served is trusted (Redis without a
  // password); protected mode keeps such a server to this machine's clients.
  if (!credentials_configured()) return grpc::Status::OK;
  const bool admin = token != nullptr && !options_.admin_token.empty() &&
                     TokensEqual(*token, options_.admin_token);
  if (admin) return grpc::Status::OK;
  switch (access) {
    case Access::kCreate:
      // Decided before the id is looked at: a refusal says nothing of it.
      if (!options_.open_create && !options_.admin_token.empty()) {
        return token == nullptr
                   ? grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                                  "CreateSession needs the admin token "
                                  "(metadata 'authorization: Bearer <token>'; or start hitboxd "
                                  "with --open-create)")
                   : Denied("CreateSession needs the admin token (or start hitboxd with "
                            "--open-create)");
      }
      return grpc::Status::OK;
    case Access::kAdmin:
      if (token == nullptr) {
        return grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                            "this rpc needs the admin token (metadata 'authorization: Bearer "
                            "<token>')");
      }
      return Denied(options_.admin_token.empty()
                        ? "this rpc needs the admin token, and hitboxd has none configured "
                          "(--admin-token-file)"
                        : "this rpc needs the admin token");
    case Access::kRead:
      // Mutual TLS: the handshake authenticated the client already.
      if (options_.client_certs) return grpc::Status::OK;
      if (token == nullptr) {
        return grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                            "missing token: send metadata 'authorization: Bearer <token>' with "
                            "any session's token (or the admin token)");
      }
      {
        bool known = false;  // every session compared, in time independent of the match
        for (const std::shared_ptr<Session>& s : sessions_->List()) {
          known |= !s->token().empty() && TokensEqual(*token, s->token());
        }
        if (known) return grpc::Status::OK;
      }
      return Denied("the token is neither a session's nor the admin token");
    case Access::kSession:
      break;
  }
  if (token == nullptr) {
    return grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                        "missing token: send metadata 'authorization: Bearer <token>' with the "
                        "token CreateSession returned (or the admin token)");
  }
  // Same answer for an unknown session and a wrong token: nothing is revealed.
  const bool valid_id = wire::ValidateSessionId(std::string(session_id)).ok();
  std::shared_ptr<Session> s = valid_id ? sessions_->Find(session_id) : nullptr;
  const std::string_view expected = s != nullptr ? std::string_view(s->token()) : std::string_view();
  // Compared even without a session, so both cases take about as long.
  const bool ok = TokensEqual(*token, expected);
  if (s == nullptr || expected.empty() || !ok) {
    // A malformed id (which no session can have) is not echoed back.
    return Denied(valid_id ? "the token does not grant access to session '" +
                                 std::string(session_id) + "'"
                           : std::string("the token does not grant access to this session"));
  }
  return grpc::Status::OK;
}

std::string PeerOf(const grpc::ServerContextBase& ctx) {
  std::string peer = ctx.peer();
  if (peer == "unknown") {
    // gRPC 1.51's in-process transport names no peer and has no transport
    // security type; a network connection always has one ("insecure", "ssl").
    const std::shared_ptr<const grpc::AuthContext> auth = ctx.auth_context();
    if (auth == nullptr || auth->FindPropertyValues("transport_security_type").empty()) {
      return "inproc";
    }
  }
  return peer;
}

grpc::Status Authorizer::Authorize(const grpc::ServerContextBase& ctx, Access access,
                                   std::string_view session_id) const {
  std::string token;
  const bool has = PresentedToken(ctx, &token);
  return Decide(PeerOf(ctx), has ? &token : nullptr, access, session_id);
}

grpc::Status InFlightLimiter::Acquire() {
  const uint32_t before = in_flight_.fetch_add(1, std::memory_order_relaxed);
  if (max_ != 0 && before >= max_) {
    in_flight_.fetch_sub(1, std::memory_order_relaxed);
    return grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                        "the server has " + std::to_string(max_) +
                            " calls in flight already (--max-in-flight); retry later");
  }
  return grpc::Status::OK;
}

}  // namespace hitbox::server
