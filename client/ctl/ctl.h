// Shared pieces of hitboxctl's subcommands: global options, exit codes, and
// the registration functions each cmd_*.cc file implements.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include <CLI/CLI.hpp>
#include <grpcpp/grpcpp.h>

#include "hitbox/client.h"
#include "hitbox/rpc_status.h"

namespace hitbox::ctl {

/// Process exit codes of hitboxctl.
inline constexpr int kExitOk = 0;
/// A server error, a failed check, NOT_SERVING, or a bad input file.
inline constexpr int kExitFailure = 1;
/// Bad command line (unknown flag, malformed vector, ...).
inline constexpr int kExitUsage = 2;

/// Default server address when neither --address nor HITBOX_ADDRESS is given.
inline constexpr const char* kDefaultAddress = "localhost:50051";
/// Environment variable that overrides the default address.
inline constexpr const char* kAddressEnv = "HITBOX_ADDRESS";
/// Environment variables of the auth and TLS options (hitboxd's own TLS
/// variables are HITBOX_TLS_CERT/KEY, so the client's carry CLIENT).
inline constexpr const char* kTokenEnv = "HITBOX_TOKEN";
inline constexpr const char* kTlsCaEnv = "HITBOX_TLS_CA";
inline constexpr const char* kTlsCertEnv = "HITBOX_CLIENT_TLS_CERT";
inline constexpr const char* kTlsKeyEnv = "HITBOX_CLIENT_TLS_KEY";
inline constexpr const char* kTlsServerNameEnv = "HITBOX_TLS_SERVER_NAME";

/// Options shared by every subcommand.
struct GlobalOptions {
  /// Server address, "host:port" or "unix:/path".
  std::string address = kDefaultAddress;
  /// Deadline of each rpc, seconds, > 0.
  double timeout_s = 10.0;
  /// Machine-readable JSON on stdout instead of tables.
  bool json = false;
  /// No progress bars or informational lines on stderr.
  bool quiet = false;
  /// Token sent on every call (`authorization: Bearer`): a session's or the admin token.
  std::string token;
  /// TLS: the CA that signed the server's certificate, and the client's own
  /// certificate and key for mutual TLS (PEM files); `tls` alone: system roots.
  TlsOptions tls;

  /// The rpc deadline as a duration.
  std::chrono::milliseconds timeout() const;
  /// A client for `address` with the timeout as its default deadline.
  std::unique_ptr<Client> MakeClient() const;
  /// A raw gRPC channel to `address` with the same TLS settings (for the load generator).
  std::shared_ptr<grpc::Channel> MakeChannel(grpc::ChannelArguments args) const;
};

/// The command chosen on the command line; set by a subcommand's callback and
/// run by main after parsing. Returns the process exit code.
using Action = std::function<int()>;

/// Prints "hitboxctl: CODE: message" (the server's message unchanged) to stderr
/// and returns kExitFailure.
int Fail(const RpcStatus& status, const std::string& context = "");
/// Prints "hitboxctl: message" to stderr and returns kExitFailure.
int Fail(const std::string& message);

// Registration of the subcommands (one per cmd_*.cc / health.cc file). Each
// adds its subcommand(s) to `app` and, when chosen, stores its action in `action`.
void AddHealthCommand(CLI::App& app, const GlobalOptions& global, Action& action);
void AddSessionsCommands(CLI::App& app, const GlobalOptions& global, Action& action);
void AddMapsCommands(CLI::App& app, const GlobalOptions& global, Action& action);
void AddLoadCommand(CLI::App& app, const GlobalOptions& global, Action& action);
void AddQueryCommands(CLI::App& app, const GlobalOptions& global, Action& action);
void AddQueryFileCommand(CLI::App& app, const GlobalOptions& global, Action& action);
void AddMoveCommand(CLI::App& app, const GlobalOptions& global, Action& action);
void AddCheckCommand(CLI::App& app, const GlobalOptions& global, Action& action);
void AddBenchCommand(CLI::App& app, const GlobalOptions& global, Action& action);
void AddRouteCommand(CLI::App& app, const GlobalOptions& global, Action& action);
void AddImportCommand(CLI::App& app, const GlobalOptions& global, Action& action);
void AddViewCommand(CLI::App& app, const GlobalOptions& global, Action& action);
void AddWatchesCommands(CLI::App& app, const GlobalOptions& global, Action& action);

}  // namespace hitbox::ctl
