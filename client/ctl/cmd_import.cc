// `hitboxctl import FILE -o OUT.json`: converts a level file (glTF 2.0 .gltf
// with its buffers, .glb, Wavefront .obj) into a scene file with the importer
// of import/ (naming conventions, extras and limits in
// import/include/hitbox/import/level_import.h), and prints its report: counts
// per shape kind, triangles, dropped degenerate triangles, bounds, time
// (reading, converting and writing the output), warnings. --up and --scale
// convert a level that is not Y-up metres. No server is contacted. A bad file
// is an error naming the node or line, and no output file is written.
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>

#include "ctl.h"
#include "level_file.h"
#include "output.h"
#include "scene_writer.h"

namespace hitbox::ctl {
namespace {

struct ImportArgs {
  std::string file;
  std::string out;
  LevelOptions options;
};

int RunImport(const GlobalOptions& global, const ImportArgs& args) {
  const auto t0 = std::chrono::steady_clock::now();
  if (!import::IsLevelFile(args.file)) {
    return Fail("import: " + args.file + ": not a level file (expected .gltf, .glb or .obj; " +
                "a JSON scene needs no import: `hitboxctl load SESSION FILE` reads it)");
  }
  auto options = args.options.For(args.file);
  if (!options.ok()) return Fail("import: " + options.error().message);
  auto level = import::ImportLevel(args.file, *options);
  if (!level.ok()) return Fail("import: " + level.error().message);
  if (!args.out.empty()) {
    auto doc = SceneToJson(level->colliders);
    if (!doc.ok()) return Fail("import: " + args.file + ": " + doc.error().message);
    if (Status s = WriteJsonFile(args.out, *doc); !s.ok()) return Fail("import: " + s.message());
  }
  // The time a user waited: reading, converting and writing the output.
  level->report.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (!global.quiet) {
    for (const std::string& w : level->report.warnings) {
      std::fprintf(stderr, "hitboxctl: import %s: warning: %s\n", args.file.c_str(), w.c_str());
    }
  }
  if (global.json) {
    nlohmann::json out = ReportToJson(level->report);
    out["output"] = args.out.empty() ? nlohmann::json(nullptr) : nlohmann::json(args.out);
    PrintJson(out);
  } else {
    std::printf("%s", level->report.ToString().c_str());
    if (!args.out.empty()) {
      std::printf("wrote %zu colliders to %s\n", level->colliders.size(), args.out.c_str());
    }
  }
  return kExitOk;
}

}  // namespace

void AddImportCommand(CLI::App& app, const GlobalOptions& global, Action& action) {
  auto args = std::make_shared<ImportArgs>();
  auto* cmd = app.add_subcommand(
      "import",
      "convert a level file (.gltf, .glb, .obj) into a scene file; UCX_/UBX_/USP_/UCP_ names make "
      "hulls, boxes, spheres and capsules, anything else triangle meshes");
  cmd->add_option("file", args->file, "level file (.gltf with its buffers, .glb, .obj)")
      ->required()
      ->check(CLI::ExistingFile);
  cmd->add_option("-o,--output", args->out,
                  "scene file to write (JSON, one collider a line); without it only the report");
  AddImportOptions(cmd, &args->options);
  cmd->callback([&global, &action, args] {
    action = [&global, args] { return RunImport(global, *args); };
  });
}

}  // namespace hitbox::ctl
