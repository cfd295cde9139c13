// Running the hitboxctl binary against one server in tests: exit code and
// output, or --json output parsed (a test failure when it is not JSON).
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "process.h"

namespace hitbox::ctl_test {

using testing::HitboxdProcess;
using testing::ReadFile;
using testing::RunProcess;
using testing::RunResult;

/// build/bin/hitboxctl.
inline std::string CtlBinary() { return std::string(HITBOX_BINARY_DIR) + "/bin/hitboxctl"; }

class CtlRunner {
 public:
  explicit CtlRunner(std::string address) : address_(std::move(address)) {}

  /// Runs hitboxctl --address <server> --timeout 20 ARGS with HITBOX_ADDRESS
  /// unset; `env` as in testing::RunProcess ("NAME=" unsets NAME).
  RunResult Run(std::vector<std::string> args, std::vector<std::string> env = {}) const {
    args.insert(args.begin(), {CtlBinary(), "--address", address_, "--timeout", "20"});
    env.insert(env.begin(), "HITBOX_ADDRESS=");
    return RunProcess(args, env);
  }
  /// Runs hitboxctl --json ARGS, expects exit 0 and returns the parsed stdout.
  nlohmann::json Json(std::vector<std::string> args) const {
    args.insert(args.begin(), "--json");
    const RunResult r = Run(args);
    EXPECT_EQ(r.code, 0) << Describe(args, r);
    const nlohmann::json doc = nlohmann::json::parse(r.out, nullptr, false);
    EXPECT_FALSE(doc.is_discarded()) << "not JSON: " << Describe(args, r);
    return doc.is_discarded() ? nlohmann::json::object() : doc;
  }
  /// The command line, exit code and output, for failure messages.
  static std::string Describe(const std::vector<std::string>& args, const RunResult& r) {
    std::string cmd = "hitboxctl";
    for (const auto& a : args) cmd += " " + a;
    return cmd + "\nexit " + std::to_string(r.code) + "\nstdout:\n" + r.out + "\nstderr:\n" + r.err;
  }

 private:
  std::string address_;
};

}  // namespace hitbox::ctl_test
