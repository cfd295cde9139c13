// `hitboxctl move SESSION --capsule R,H --pos X,Y,Z --displacement DX,DY,DZ
// [--step-height M] [--max-slope DEG] [--json]`: one character move
// (collide-and-slide) from flags; prints where it ends, its ground and its
// contacts. JSON: {"position": [x, y, z], "displacement": [...], "on_ground",
// "ground": {id, sub_shape, normal} | null, "stepped", "blocked",
// "contacts": [...], "applied_to": id | null, "revision", ...}.
#include <cstdio>
#include <memory>
#include <optional>
#include <string>

#include "args.h"
#include "ctl.h"
#include "output.h"

namespace hitbox::ctl {
namespace {

struct MoveArgs {
  std::string session;
  ShapeArg shape;
  Vec3 position;
  Quat rotation;
  Vec3 displacement;
  FilterArgs filter;
  MoveSettings settings;
  std::optional<uint64_t> apply;
  /// Metres per world unit (--units): the settings' defaults are in metres.
  double units = 1.0;
  CLI::Option* rot_option = nullptr;
  CLI::Option* up_option = nullptr;
};

/// The rotation taking local +Y to unit `up` (the shortest arc; a half turn
/// about X when up is -Y).
Quat RotationFromY(const Vec3& up) {
  const Vec3 y{0, 1, 0};
  const Vec3 axis = Cross(y, up);
  const double s = axis.Length();
  const double c = Dot(y, up);
  if (s < 1e-12) return c > 0.0 ? Quat::Identity() : Quat::FromAxisAngle({1, 0, 0}, 3.141592653589793);
  return Quat::FromAxisAngle(axis / s, std::atan2(s, c));
}

nlohmann::json ContactJson(const MoveContact& c) {
  return {{"id", c.id}, {"sub_shape", c.sub_shape}, {"normal", ToJson(c.normal)},
          {"point", ToJson(c.point)}};
}

void PrintMove(const MoveResult& m, const std::optional<uint64_t>& applied) {
  std::printf("position      %s\n", FormatVec3(m.position, 9).c_str());
  std::printf("displacement  %s\n", FormatVec3(m.displacement, 9).c_str());
  if (m.on_ground) {
    std::printf("ground        collider %llu (sub_shape %u), normal %s\n",
                static_cast<unsigned long long>(m.ground_id), m.ground_sub_shape,
                FormatVec3(m.ground_normal).c_str());
  } else {
    std::printf("ground        none (in the air)\n");
  }
  std::printf("stepped       %s\nblocked       %s\n", m.stepped ? "yes" : "no",
              m.blocked ? "yes" : "no");
  if (applied) {
    std::printf("applied       collider %llu moved there\n",
                static_cast<unsigned long long>(*applied));
  }
  if (m.contacts.empty()) {
    std::printf("no contacts\n");
    return;
  }
  Table table({"ID", "SUB_SHAPE", "NORMAL", "POINT"});
  for (const MoveContact& c : m.contacts) {
    table.AddRow({std::to_string(c.id), std::to_string(c.sub_shape), FormatVec3(c.normal),
                  FormatVec3(c.point)});
  }
  std::fputs(table.Render().c_str(), stdout);
}

int RunMove(const GlobalOptions& global, const MoveArgs& a) {
  MoveQuery q;
  q.shape = *a.shape.shape;
  // A capsule or cylinder stands along --up unless --rot says otherwise.
  const bool align = a.up_option->count() > 0 && a.rot_option->count() == 0;
  q.pose = Pose(a.position, align ? RotationFromY(a.settings.up.Normalized()) : a.rotation);
  q.displacement = a.displacement;
  q.filter = ToFilter(a.filter);
  q.settings = a.settings;
  q.apply_to_id = a.apply;
  auto client = global.MakeClient();
  const hitbox::Query query = q;
  auto r = client->Query(a.session, std::span(&query, 1));
  if (!r.ok()) return Fail(r.status(), "move on session " + a.session);
  if (r->results.size() != 1 || !r->results[0].move) {
    return Fail("move: the server's answer holds no move result");
  }
  const MoveResult& m = *r->results[0].move;
  if (global.json) {
    nlohmann::json contacts = nlohmann::json::array();
    for (const MoveContact& c : m.contacts) contacts.push_back(ContactJson(c));
    nlohmann::json ground = nullptr;
    if (m.on_ground) {
      ground = {{"id", m.ground_id},
                {"sub_shape", m.ground_sub_shape},
                {"normal", ToJson(m.ground_normal)}};
    }
    PrintJson({{"session_id", a.session},
               {"kind", "move"},
               {"revision", r->revision},
               {"position", ToJson(m.position)},
               {"displacement", ToJson(m.displacement)},
               {"on_ground", m.on_ground},
               {"ground", ground},
               {"stepped", m.stepped},
               {"blocked", m.blocked},
               {"contacts", contacts},
               {"applied_to", a.apply ? nlohmann::json(*a.apply) : nlohmann::json(nullptr)}});
  } else {
    PrintMove(m, a.apply);
  }
  return kExitOk;
}

}  // namespace

void AddMoveCommand(CLI::App& app, const GlobalOptions& global, Action& action) {
  auto a = std::make_shared<MoveArgs>();
  auto* cmd = app.add_subcommand(
      "move", "where does a character end up when it moves? (collide-and-slide, steps, slopes)");
  cmd->add_option("session", a->session, "session id")->required();
  AddShapeOptions(cmd, &a->shape);
  AddVec3Option(cmd, "--pos", &a->position, "start position of the shape, world metres");
  a->rot_option = AddQuatOption(cmd, "--rot", &a->rotation,
                                "rotation quaternion x,y,z,w (default: local Y along --up)");
  AddVec3Option(cmd, "--displacement", &a->displacement, "desired motion, world metres")
      ->required();
  MoveSettings& s = a->settings;
  cmd->add_option("--step-height", s.step_height, "tallest step climbed, metres (0: none)")
      ->capture_default_str();
  cmd->add_option("--max-slope", s.max_slope_degrees, "steepest walkable ground, degrees")
      ->capture_default_str();
  cmd->add_option("--skin", s.skin_width, "gap kept from surfaces, metres")->capture_default_str();
  cmd->add_option("--snap", s.ground_snap_distance, "ground-snap distance, metres (0: none)")
      ->capture_default_str();
  cmd->add_option("--max-iterations", s.max_iterations, "most sweeps per slide pass")
      ->capture_default_str();
  a->up_option = AddVec3Option(cmd, "--up", &s.up,
                               "world up direction (default 0,1,0); the shape's axis follows it");
  auto* units = cmd->add_option("--units", a->units,
                                "metres per world unit (e.g. 0.0254 for inches): the default step "
                                "height, ground snap and skin are scaled to it")
                    ->check(CLI::PositiveNumber);
  cmd->add_option("--apply", a->apply,
                  "the character's collider id: ignored by the move and moved to its end");
  AddFilterOptions(cmd, &a->filter);
  cmd->callback([&global, &action, a, cmd, units] {
    if (units->count() > 0) {
      // Defaults given in metres, in world units; explicit flags stay as given.
      const MoveSettings metres;
      if (cmd->count("--step-height") == 0) a->settings.step_height = metres.step_height / a->units;
      if (cmd->count("--skin") == 0) a->settings.skin_width = metres.skin_width / a->units;
      if (cmd->count("--snap") == 0) {
        a->settings.ground_snap_distance = metres.ground_snap_distance / a->units;
      }
    }
    action = [&global, a] { return RunMove(global, *a); };
  });
}

}  // namespace hitbox::ctl
