// `hitboxctl load SESSION FILE`: uploads the colliders of a scene file, or
// of a level file (.gltf, .glb, .obj) through the importer (import/).
//
// The whole file is parsed and validated first, so a bad entry is reported
// (with its index and id, or its node) before anything is sent. The
// colliders then go out in ApplyChanges batches no larger than the session's
// max_changes_per_message. If the server rejects a batch, the error names the
// file entry it came from, and what this run added is taken out again (the
// session is deleted when --create made it), unless --keep-partial.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>

#include "ctl.h"
#include "level_file.h"
#include "output.h"
#include "upload.h"

namespace hitbox::ctl {
namespace {

struct LoadArgs {
  std::string session;
  std::string file;
  bool create = false;
  size_t batch = 4096;
  bool keep_partial = false;
  LevelOptions import;
};

int RunLoad(const GlobalOptions& global, const LoadArgs& args) {
  const auto t0 = std::chrono::steady_clock::now();
  auto input = ReadSceneInput(args.file, args.import);
  if (!input.ok()) return Fail(input.error().message);
  const std::vector<Collider>& colliders = input->colliders;
  if (input->report && !global.quiet && !global.json) {
    std::fprintf(stderr, "%s", input->report->ToString().c_str());
  }

  auto client = global.MakeClient();
  bool created = false;
  std::string token;  // the new session's, with --create
  if (args.create) {
    auto r = client->CreateSession(args.session);
    if (!r.ok()) return Fail(r.status(), "load: creating session " + args.session);
    created = true;
    token = r->token;
  }
  auto info = client->GetSession(args.session);
  if (!info.ok()) return Fail(info.status(), "load: session " + args.session);
  const SessionLimits& limits = info->limits;
  if (limits.max_colliders > 0 && info->collider_count + colliders.size() > limits.max_colliders) {
    if (created) (void)client->DeleteSession(args.session);
    return Fail("load: " + args.file + " has " + std::to_string(colliders.size()) +
                " colliders; session " + args.session + " holds " +
                std::to_string(info->collider_count) + " and allows at most " +
                std::to_string(limits.max_colliders) + " (nothing was loaded)");
  }
  const size_t batch = BatchWithinBytes(
      colliders, BatchSize(args.batch, limits.max_changes_per_message), kLoadMessageBudget);
  const UploadResult up =
      Upload(*client, args.session, colliders, batch, !global.quiet && !global.json);
  if (!up.status.ok()) {
    std::string where = "load " + args.file + ": ";
    where += up.bad_index && *up.bad_index < input->sources.size()
                 ? input->sources[*up.bad_index]
                 : "batch colliders[" + std::to_string(up.batch_begin) + ".." +
                       std::to_string(up.batch_end - 1) + "]";
    Fail(up.status, where);
    if (args.keep_partial) {
      std::fprintf(stderr, "hitboxctl: kept the %zu colliders loaded before the error\n", up.loaded);
    } else if (created) {
      const RpcStatus s = client->DeleteSession(args.session);
      std::fprintf(stderr, "hitboxctl: %s\n",
                   s.ok() ? ("deleted session " + args.session + " (made by --create)").c_str()
                          : ("could not delete session " + args.session + ": " + s.ToString()).c_str());
    } else if (up.loaded > 0) {
      const RpcStatus s = RemoveUploaded(*client, args.session, colliders, up.loaded, batch);
      std::fprintf(stderr, "hitboxctl: %s\n",
                   s.ok() ? ("removed the " + std::to_string(up.loaded) +
                             " colliders this run had added").c_str()
                          : ("could not remove the colliders this run added: " + s.ToString()).c_str());
    }
    return kExitFailure;
  }
  const ApplyResult last =
      up.loaded > 0 ? up.last : ApplyResult{info->revision, info->collider_count, {}, false};
  const size_t batches = up.batches;
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (global.json) {
    nlohmann::json out = {{"session_id", args.session},
               {"file", args.file},
               {"loaded", colliders.size()},
               {"batches", batches},
               {"batch_size", batch},
               {"created", created},
               {"revision", last.revision},
               {"collider_count", last.collider_count},
               {"seconds", seconds}};
    if (!token.empty()) out["token"] = token;
    if (input->report) out["import"] = ReportToJson(*input->report);
    PrintJson(out);
  } else {
    std::printf("loaded %zu colliders into session %s in %zu batch%s (%.2f s): %llu colliders, "
                "revision %llu\n",
                colliders.size(), args.session.c_str(), batches, batches == 1 ? "" : "es", seconds,
                static_cast<unsigned long long>(last.collider_count),
                static_cast<unsigned long long>(last.revision));
    if (!token.empty()) std::printf("token %s\n", token.c_str());
  }
  return kExitOk;
}

}  // namespace

void AddLoadCommand(CLI::App& app, const GlobalOptions& global, Action& action) {
  auto args = std::make_shared<LoadArgs>();
  auto* cmd = app.add_subcommand(
      "load",
      "load the colliders of a scene file (JSON, the collider form of the case files) or of a "
      "level file (glTF, GLB, OBJ; see `import`)");
  cmd->add_option("session", args->session, "session id")->required();
  cmd->add_option("file", args->file,
                  "scene or case file (.json or .json.gz), or level file (.gltf, .glb, .obj)")
      ->required()
      ->check(CLI::ExistingFile);
  cmd->add_flag("--create", args->create, "create the session first");
  cmd->add_option("--batch", args->batch,
                  "colliders per ApplyChanges message (capped by the session's limit)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_flag("--keep-partial", args->keep_partial,
                "on a rejected batch keep what was loaded before it (default: take it out again)");
  AddImportOptions(cmd, &args->import);
  cmd->callback([&global, &action, args] {
    action = [&global, args] { return RunLoad(global, *args); };
  });
}

}  // namespace hitbox::ctl
