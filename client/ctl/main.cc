// hitboxctl: command-line client of the Hitbox collision service.
//
//   hitboxctl [--address HOST:PORT] [--timeout S] [--json] [--token T]
//             [--tls-ca CA.pem [--tls-cert C.pem --tls-key K.pem]] <command> ...
//
// Commands: health, sessions list|create|get|delete, load, overlap, cast,
// raycast, check, bench, route, import, view (`hitboxctl <command> --help`
// for each). Human tables by default, one JSON document on stdout with
// --json. Exit codes: 0 success, 1 error (the server's message on stderr) or
// failed check, 2 bad usage.
#include <cstdio>
#include <cstdlib>
#include <exception>

#include <CLI/CLI.hpp>

#include "ctl.h"

int main(int argc, char** argv) {
  using namespace hitbox::ctl;
  GlobalOptions global;
  if (const char* env = std::getenv(kAddressEnv); env != nullptr && *env != '\0') {
    global.address = env;
  }

  CLI::App app{"hitboxctl: command-line client of the Hitbox collision service"};
  app.set_version_flag("--version", "hitboxctl 0.1.0");
  app.require_subcommand(1);
  app.fallthrough();
  app.add_option("-a,--address", global.address,
                 std::string("server address host:port (env ") + kAddressEnv + ")")
      ->capture_default_str();
  app.add_option("-t,--timeout", global.timeout_s, "deadline of each rpc, seconds")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_flag("--json", global.json, "print one JSON document on stdout instead of tables");
  app.add_flag("-q,--quiet", global.quiet, "no progress bars or notes on stderr");
  app.add_option("--token", global.token,
                 "token sent on every call as 'authorization: Bearer': the session's (printed "
                 "by 'sessions create') or hitboxd's admin token")
      ->envname(kTokenEnv);
  app.add_flag("--tls", global.tls.enabled, "use TLS (with the system's CA roots unless --tls-ca)")
      ->envname("HITBOX_TLS");
  app.add_option("--tls-ca", global.tls.ca_file, "TLS: CA bundle (PEM) that signed the server")
      ->envname(kTlsCaEnv)
      ->check(CLI::ExistingFile);
  app.add_option("--tls-cert", global.tls.cert_file,
                 "mutual TLS: this client's certificate chain (PEM)")
      ->envname(kTlsCertEnv)
      ->check(CLI::ExistingFile);
  app.add_option("--tls-key", global.tls.key_file, "mutual TLS: this client's private key (PEM)")
      ->envname(kTlsKeyEnv)
      ->check(CLI::ExistingFile);
  app.add_option("--tls-server-name", global.tls.server_name,
                 "name the server's certificate must carry (default: the address's host)")
      ->envname(kTlsServerNameEnv);

  Action action;
  AddHealthCommand(app, global, action);
  AddSessionsCommands(app, global, action);
  AddMapsCommands(app, global, action);
  AddLoadCommand(app, global, action);
  AddQueryCommands(app, global, action);
  AddQueryFileCommand(app, global, action);
  AddMoveCommand(app, global, action);
  AddCheckCommand(app, global, action);
  AddBenchCommand(app, global, action);
  AddRouteCommand(app, global, action);
  AddImportCommand(app, global, action);
  AddViewCommand(app, global, action);
  AddWatchesCommands(app, global, action);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? kExitOk : kExitUsage;
  }
  if (!action) {
    std::fprintf(stderr, "hitboxctl: no command given (see --help)\n");
    return kExitUsage;
  }
  try {
    return action();
  } catch (const std::exception& e) {
    // Nothing we call is meant to throw; report rather than abort if it does.
    std::fprintf(stderr, "hitboxctl: internal error: %s\n", e.what());
    return kExitFailure;
  }
}
