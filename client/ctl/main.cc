// hitboxctl: command-line client of the Hitbox collision service.
//
//   hitboxctl [--address HOST:PORT] [--timeout S] [--json] <command> ...
//
// Commands: health, sessions list|create|get|delete, load, overlap, cast,
// raycast, check, bench, route (`hitboxctl <command> --help` for each). Human tables
// by default, one JSON document on stdout with --json. Exit codes: 0 success,
// 1 error (the server's message on stderr) or failed check, 2 bad usage.
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

  Action action;
  AddHealthCommand(app, global, action);
  AddSessionsCommands(app, global, action);
  AddLoadCommand(app, global, action);
  AddQueryCommands(app, global, action);
  AddCheckCommand(app, global, action);
  AddBenchCommand(app, global, action);
  AddRouteCommand(app, global, action);

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
