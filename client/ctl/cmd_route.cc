// `hitboxctl route SESSION --pool A,B,C`: which server of a pool owns a
// session, by the client library's rendezvous hashing (hitbox::RendezvousPick,
// the same choice ClientPool makes). Prints the owner address, so that
//   hitboxctl --address "$(hitboxctl route arena-7)" sessions get arena-7
// reaches the right pod. The pool comes from --pool or $HITBOX_POOL.
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "ctl.h"
#include "hitbox/client_pool.h"
#include "output.h"

namespace hitbox::ctl {
namespace {

std::vector<std::string> SplitAddresses(const std::string& text) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = text.find(',', start);
    std::string a = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    const size_t b = a.find_first_not_of(" \t\n");
    const size_t e = a.find_last_not_of(" \t\n");
    if (b != std::string::npos) out.push_back(a.substr(b, e - b + 1));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

}  // namespace

void AddRouteCommand(CLI::App& app, const GlobalOptions& global, Action& action) {
  struct Args {
    std::string session;
    std::string pool;
  };
  auto a = std::make_shared<Args>();
  if (const char* env = std::getenv("HITBOX_POOL"); env != nullptr) a->pool = env;
  auto* cmd = app.add_subcommand(
      "route", "print the pool address owning a session (rendezvous hashing, as ClientPool)");
  cmd->add_option("session", a->session, "session id")->required();
  cmd->add_option("--pool", a->pool, "comma-separated server addresses (env HITBOX_POOL)");
  cmd->callback([&global, &action, a] {
    action = [&global, a]() -> int {
      const std::vector<std::string> addresses = SplitAddresses(a->pool);
      if (addresses.empty()) return Fail("route: no pool addresses (--pool or HITBOX_POOL)");
      const size_t owner = RendezvousPick(addresses, a->session);
      if (owner >= addresses.size()) return Fail("route: no owner found");
      if (global.json) {
        PrintJson({{"session_id", a->session}, {"address", addresses[owner]}, {"pool", addresses}});
      } else {
        std::printf("%s\n", addresses[owner].c_str());
      }
      return kExitOk;
    };
  });
}

}  // namespace hitbox::ctl
