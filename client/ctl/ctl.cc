#include "ctl.h"

#include <cmath>
#include <cstdio>

namespace hitbox::ctl {

std::chrono::milliseconds GlobalOptions::timeout() const {
  return std::chrono::milliseconds(static_cast<int64_t>(std::ceil(timeout_s * 1000.0)));
}

std::unique_ptr<Client> GlobalOptions::MakeClient() const {
  ClientOptions options;
  options.default_timeout = timeout();
  // A command-line tool fails fast rather than retrying for the whole deadline.
  options.retry.max_attempts = 2;
  return std::make_unique<Client>(address, options);
}

int Fail(const RpcStatus& status, const std::string& context) {
  std::fprintf(stderr, "hitboxctl: %s%s%s: %s\n", context.c_str(), context.empty() ? "" : ": ",
               RpcCodeName(status.code()), status.message().c_str());
  return kExitFailure;
}

int Fail(const std::string& message) {
  std::fprintf(stderr, "hitboxctl: %s\n", message.c_str());
  return kExitFailure;
}

}  // namespace hitbox::ctl
