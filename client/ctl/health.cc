// `hitboxctl health`: the standard gRPC health check (grpc.health.v1.Health/Check)
// through the client library. Exit 0 only when the server answers SERVING, so
// the Docker HEALTHCHECK and scripts can rely on the exit code.
#include <cstdio>
#include <memory>
#include <string>

#include "ctl.h"
#include "output.h"

namespace hitbox::ctl {

void AddHealthCommand(CLI::App& app, const GlobalOptions& global, Action& action) {
  auto* cmd = app.add_subcommand(
      "health", "gRPC health check; exit 0 only when the server answers SERVING");
  auto service = std::make_shared<std::string>();
  cmd->add_option("--service", *service, "service name to check (default: the whole server)");
  cmd->callback([&global, &action, service] {
    action = [&global, service]() -> int {
      // A health probe answers now: no retries, no waiting for a reconnect.
      CallOptions call;
      call.allow_retry = false;
      const RpcResult<HealthStatus> health = global.MakeClient()->CheckHealth(*service, call);
      if (!health.ok()) {
        if (global.json) {
          PrintJson({{"address", global.address},
                     {"status", "UNREACHABLE"},
                     {"error", health.status().ToString()}});
        }
        return Fail(health.status(), "health check of " + global.address);
      }
      const char* name = HealthStatusName(*health);
      if (global.json) {
        PrintJson({{"address", global.address}, {"service", *service}, {"status", name}});
      } else {
        std::printf("%s: %s\n", global.address.c_str(), name);
      }
      return *health == HealthStatus::kServing ? kExitOk : kExitFailure;
    };
  });
}

}  // namespace hitbox::ctl
