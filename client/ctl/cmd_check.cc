// `hitboxctl check FILE`: runs a case file through the service and checks
// every answer like the conformance test (tests/conformance) does on a local
// ColliderSet: the file's colliders go into a fresh session, its queries are
// sent in Query batches under the session's limits, and each answer is judged
// by hitbox_cases' CheckAnswer (shared/cases/FORMAT.md rules). Prints pass
// counts per query kind and the first failures; exit 1 on any failure. The
// session is deleted afterwards unless --keep.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>

#include "ctl.h"
#include "hitbox/cases/case_file.h"
#include "output.h"
#include "upload.h"

namespace hitbox::ctl {
namespace {

struct CheckArgs {
  std::string file;
  std::string session;
  bool keep = false;
  size_t change_batch = 4096;
  size_t query_batch = 1000;
  size_t max_failures = 25;
};

std::string DefaultSessionId(const std::string& scenario) {
  std::string id = "check-";
  for (char c : scenario.substr(0, 64)) {
    id += (std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-') ? c : '_';
  }
  const auto now = std::chrono::system_clock::now().time_since_epoch();
  id += "-" + std::to_string(getpid()) + "-" +
        std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(now).count());
  return id;
}

int RunCheck(const GlobalOptions& global, const CheckArgs& args) {
  const auto t0 = std::chrono::steady_clock::now();
  auto loaded = cases::LoadCaseFile(args.file);
  if (!loaded.ok()) return Fail(loaded.error().message);
  const cases::CaseFile& file = *loaded;
  const std::string session =
      args.session.empty() ? DefaultSessionId(file.scenario.empty() ? file.name : file.scenario)
                           : args.session;

  auto client = global.MakeClient();
  SessionSpec spec;
  spec.session_id = session;
  auto info = client->CreateSession(spec);
  if (info.ok() && info->limits.max_colliders > 0 &&
      info->limits.max_colliders < file.colliders.size()) {
    // The default limit is too small for this file: ask for exactly what it needs.
    (void)client->DeleteSession(session);
    spec.limits.max_colliders = file.colliders.size();
    info = client->CreateSession(spec);
  }
  if (!info.ok()) return Fail(info.status(), "check: creating session " + session);

  // From here on the session exists: every exit path deletes it unless --keep.
  auto finish = [&](int code) {
    if (args.keep) {
      if (!global.quiet) std::fprintf(stderr, "hitboxctl: kept session %s\n", session.c_str());
    } else {
      const RpcStatus s = client->DeleteSession(session);
      if (!s.ok()) Fail(s, "check: deleting session " + session);
    }
    return code;
  };

  const bool progress = !global.quiet && !global.json;
  const UploadResult up =
      Upload(*client, session, file.colliders,
             BatchSize(args.change_batch, info->limits.max_changes_per_message), progress,
             file.ticks ? std::optional<uint64_t>(file.ticks->oldest) : std::nullopt);
  if (!up.status.ok()) {
    std::string where = "check " + args.file + ": loading ";
    where += up.bad_index ? "colliders[" + std::to_string(*up.bad_index) + "] (id " +
                                std::to_string(file.colliders[*up.bad_index].id) + ")"
                          : "colliders[" + std::to_string(up.batch_begin) + ".." +
                                std::to_string(up.batch_end - 1) + "]";
    Fail(up.status, where);
    return finish(kExitFailure);
  }
  // Rewind files: the later ticks' moves, one tick each.
  for (size_t k = 0; k < file.tick_moves.size(); ++k) {
    const uint64_t tick = file.ticks->oldest + 1 + k;
    auto r = client->ApplyTick(session, tick, file.tick_moves[k]);
    if (!r.ok()) {
      Fail(r.status(), "check " + args.file + ": the moves of tick " + std::to_string(tick));
      return finish(kExitFailure);
    }
  }

  const std::vector<Query> queries = cases::Queries(file);
  std::vector<QueryResult> results(queries.size());
  const size_t batch = BatchSize(args.query_batch, info->limits.max_queries_per_message);
  {
    Progress bar(progress && queries.size() > batch, queries.size(), "queries");
    for (size_t start = 0; start < queries.size(); start += batch) {
      const size_t n = std::min(batch, queries.size() - start);
      auto r = client->Query(session, std::span(queries).subspan(start, n));
      if (!r.ok()) {
        bar.Finish();
        Fail(r.status(), "check " + args.file + ": queries[" + std::to_string(start) + ".." +
                             std::to_string(start + n - 1) + "]");
        return finish(kExitFailure);
      }
      if (r->results.size() != n) {
        bar.Finish();
        Fail("check: the server answered " + std::to_string(r->results.size()) + " results to " +
             std::to_string(n) + " queries");
        return finish(kExitFailure);
      }
      std::move(r->results.begin(), r->results.end(), results.begin() + static_cast<long>(start));
      bar.Update(start + n);
    }
  }

  const cases::Report report = cases::CheckAll(file, results, args.max_failures);
  const int* total = report.total;
  const int* passed = report.passed;
  const std::vector<std::string>& failures = report.failures;
  const size_t failed = report.failed;
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  if (global.json) {
    nlohmann::json kinds = nlohmann::json::object();
    for (int k = 0; k < cases::kQueryKindCount; ++k) {
      if (total[k] == 0) continue;
      kinds[cases::QueryKindName(static_cast<cases::QueryKind>(k))] = {{"passed", passed[k]},
                                                                       {"total", total[k]}};
    }
    PrintJson({{"file", args.file},
               {"scenario", file.scenario},
               {"session_id", session},
               {"colliders", file.colliders.size()},
               {"queries", queries.size()},
               {"kinds", kinds},
               {"failed", failed},
               {"failures", failures},
               {"passed", failed == 0},
               {"seconds", seconds}});
  } else {
    std::printf("%s: %zu colliders (session %s)\n", file.name.c_str(), file.colliders.size(),
                session.c_str());
    for (int k = 0; k < cases::kQueryKindCount; ++k) {
      if (total[k] == 0) continue;
      std::printf("  %-8s %6d / %6d passed\n", cases::QueryKindName(static_cast<cases::QueryKind>(k)),
                  passed[k], total[k]);
    }
    for (const std::string& f : failures) std::printf("FAIL %s\n", f.c_str());
    if (failed > failures.size()) std::printf("... and %zu more failures\n", failed - failures.size());
    std::printf("%s (%.2f s)\n", failed == 0 ? "PASS" : "FAIL", seconds);
  }
  return finish(failed == 0 ? kExitOk : kExitFailure);
}

}  // namespace

void AddCheckCommand(CLI::App& app, const GlobalOptions& global, Action& action) {
  auto args = std::make_shared<CheckArgs>();
  auto* cmd = app.add_subcommand(
      "check", "load a case file into a fresh session, run its queries and check every answer");
  cmd->add_option("file", args->file, "case file (hitbox-cases/1, .json or .json.gz)")
      ->required()
      ->check(CLI::ExistingFile);
  cmd->add_option("--session", args->session,
                  "session id to create (default: check-<scenario>-<pid>-<ms>)");
  cmd->add_flag("--keep", args->keep, "keep the session afterwards");
  cmd->add_option("--change-batch", args->change_batch, "colliders per ApplyChanges message")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--query-batch", args->query_batch, "queries per Query message")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--max-failures", args->max_failures, "failures listed in the report")
      ->capture_default_str();
  cmd->callback([&global, &action, args] {
    action = [&global, args] { return RunCheck(global, *args); };
  });
}

}  // namespace hitbox::ctl
