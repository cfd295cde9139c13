// `hitboxctl import FILE -o OUT.json`: converts a level file (glTF 2.0 .gltf
// with its buffers, .glb, Wavefront .obj) into a scene file with the importer
// of import/ (naming conventions, extras and limits in
// import/include/hitbox/import/level_import.h), and prints its report: counts
// per shape kind, triangles, dropped degenerate triangles, bounds, time. No
// server is contacted. A bad file is an error naming the node or line, and
// no output file is written.
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
  import::ImportOptions options;
};

int RunImport(const GlobalOptions& global, const ImportArgs& args) {
  auto level = import::ImportLevel(args.file, args.options);
  if (!level.ok()) return Fail("import: " + level.error().message);
  if (!args.out.empty()) {
    auto doc = SceneToJson(level->colliders);
    if (!doc.ok()) return Fail("import: " + doc.error().message);
    if (Status s = WriteJsonFile(args.out, *doc); !s.ok()) return Fail("import: " + s.message());
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
