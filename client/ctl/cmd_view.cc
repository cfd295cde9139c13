// `hitboxctl view SESSION -o world.svg`: a picture of a session's world.
//
// Reads the session's colliders (ListColliders), optionally a map's (grey),
// runs the queries of --queries FILE against the session (one Query batch)
// and draws everything with hitbox_view: a top view, and a side view with
// --side. The queries file uses the query form of the case files
// (shared/cases/FORMAT.md): {"queries": [{"id": 1, "raycast": {"origin":
// [..], "translation": [..], "mask": ..}}, {"id": 2, "sweep": {"shape": ..,
// "position": .., "rotation": .., "translation": ..}}, {"id": 3, "overlap":
// {..}}]}; a case file is one too.
#include <cstdio>
#include <memory>
#include <string>
#include <unordered_set>
#include <vector>

#include "ctl.h"
#include "hitbox/view/world_svg.h"
#include "level_file.h"
#include "output.h"
#include "hitbox/import/level_import.h"
#include "hitbox/import/scene_file.h"

namespace hitbox::ctl {
namespace {

using import::ParseQuat;
using import::ParseShape;
using import::ParseVec3;
using import::ReadJsonFile;

struct ViewArgs {
  std::string session;
  std::string out;
  std::string queries;
  std::string map;
  std::string map_file;
  bool side = false;
  double width = 900.0;
  /// --up: the session's up axis (the top view looks down it).
  import::UpAxis up = import::UpAxis::kY;
  uint64_t max_triangles = view::ViewOptions{}.max_triangles;
};

Error Invalid(std::string message) { return Error{ErrorCode::kInvalidArgument, std::move(message)}; }

/// The colliders of shared map `name`, which `session` must be on: those
/// ListColliders lists with include_map that the session's own listing has
/// not (`view --map NAME` draws them grey under the session).
Result<std::vector<Collider>> ReadMapColliders(Client& client, const std::string& session,
                                               const std::string& name) {
  const auto failed = [&](const RpcStatus& st) {
    return Error{ErrorCode::kNotFound, "session " + session + ": " + st.message()};
  };
  auto info = client.GetSession(session);
  if (!info.ok()) return failed(info.status());
  if (info->map_id != name) {
    return Error{ErrorCode::kFailedPrecondition,
                 "map '" + name + "': session " + session +
                     (info->map_id.empty() ? std::string(" is on no map")
                                           : " is on map '" + info->map_id + "'") +
                     " (a map is drawn under a session on it; --map-file FILE draws any file)"};
  }
  auto all = client.ListColliders(session, 0, {}, /*include_map=*/true);
  if (!all.ok()) return failed(all.status());
  auto own = client.ListColliders(session);
  if (!own.ok()) return failed(own.status());
  std::unordered_set<uint64_t> own_ids;
  for (const Collider& c : own->colliders) own_ids.insert(c.id);
  std::vector<Collider> map;
  for (const Collider& c : all->colliders) {
    if (own_ids.count(c.id) == 0) map.push_back(c);
  }
  return map;
}

/// The queries of a queries file as overlays without answers, and as a batch.
Status ReadQueries(const std::string& path, std::vector<view::QueryOverlay>* overlays,
                   std::vector<Query>* batch) {
  auto doc = ReadJsonFile(path);
  if (!doc.ok()) return doc.error();
  if (!doc->is_object() || !doc->contains("queries") || !doc->at("queries").is_array()) {
    return Invalid(path + ": the document has no \"queries\" array");
  }
  const nlohmann::json& entries = doc->at("queries");
  for (size_t i = 0; i < entries.size(); ++i) {
    const nlohmann::json& e = entries[i];
    const std::string where = path + ": queries[" + std::to_string(i) + "]";
    if (!e.is_object() || !e.contains("id") || !e.at("id").is_number_unsigned()) {
      return Invalid(where + ": needs an unsigned integer \"id\"");
    }
    view::QueryOverlay q;
    q.id = e.at("id").get<uint64_t>();
    const char* kind = e.contains("raycast") ? "raycast" : e.contains("sweep") ? "sweep" : "overlap";
    if (!e.contains(kind)) return Invalid(where + ": no overlap, sweep or raycast");
    const nlohmann::json& body = e.at(kind);
    const std::string field = where + "." + kind;
    if (!body.is_object()) return Invalid(field + " must be an object");
    QueryFilter filter;
    if (body.contains("mask")) {
      const auto& m = body.at("mask");
      if (!m.is_number_unsigned() || m.get<uint64_t>() > 0xFFFFFFFFull) {
        return Invalid(field + ".mask must be an unsigned 32-bit integer");
      }
      filter.mask = static_cast<uint32_t>(m.get<uint64_t>());
    }
    auto vec = [&](const char* key) -> Result<Vec3> {
      if (!body.contains(key)) return Invalid(field + "." + key + " is missing");
      return ParseVec3(body.at(key), field + "." + key);
    };
    if (std::string(kind) == "raycast") {
      auto origin = vec("origin");
      if (!origin.ok()) return origin.error();
      auto translation = vec("translation");
      if (!translation.ok()) return translation.error();
      q.kind = view::QueryOverlay::Kind::kRaycast;
      q.pose = Pose(*origin);
      q.translation = *translation;
      batch->push_back(RayQuery{*origin, *translation, filter, false});
    } else {
      if (!body.contains("shape")) return Invalid(field + ".shape is missing");
      auto shape = ParseShape(body.at("shape"), field + ".shape");
      if (!shape.ok()) return shape.error();
      auto position = vec("position");
      if (!position.ok()) return position.error();
      Quat rotation;
      if (body.contains("rotation")) {
        auto r = ParseQuat(body.at("rotation"), field + ".rotation");
        if (!r.ok()) return r.error();
        rotation = *r;
      }
      q.shape = *shape;
      q.pose = Pose(*position, rotation);
      if (std::string(kind) == "sweep") {
        auto translation = vec("translation");
        if (!translation.ok()) return translation.error();
        q.kind = view::QueryOverlay::Kind::kSweep;
        q.translation = *translation;
        batch->push_back(CastQuery{q.shape, q.pose, q.translation, filter, false});
      } else {
        q.kind = view::QueryOverlay::Kind::kOverlap;
        batch->push_back(OverlapQuery{q.shape, q.pose, filter, false});
      }
    }
    overlays->push_back(std::move(q));
  }
  return Status::Ok();
}

int RunView(const GlobalOptions& global, const ViewArgs& args) {
  view::WorldPicture picture;
  picture.title = "session " + args.session;
  std::vector<Query> batch;
  if (!args.queries.empty()) {
    if (Status s = ReadQueries(args.queries, &picture.queries, &batch); !s.ok()) {
      return Fail("view: " + s.message());
    }
  }
  if (!args.map_file.empty()) {
    auto map = ReadSceneInput(args.map_file, LevelOptions{});
    if (!map.ok()) return Fail("view: " + map.error().message);
    picture.map = std::move(map->colliders);
  }
  auto client = global.MakeClient();
  if (!args.map.empty()) {
    auto map = ReadMapColliders(*client, args.session, args.map);
    if (!map.ok()) return Fail("view --map: " + map.error().message);
    picture.map.insert(picture.map.end(), map->begin(), map->end());
  }
  auto snapshot = client->ListColliders(args.session);
  if (!snapshot.ok()) return Fail(snapshot.status(), "view: session " + args.session);
  picture.session = std::move(snapshot->colliders);
  size_t hits = 0;
  if (!batch.empty()) {
    auto answers = client->Query(args.session, batch);
    if (!answers.ok()) return Fail(answers.status(), "view: queries of " + args.queries);
    for (size_t i = 0; i < picture.queries.size() && i < answers->results.size(); ++i) {
      view::QueryOverlay& q = picture.queries[i];
      const QueryResult& r = answers->results[i];
      q.hits = r.hits;
      for (const OverlapHit& h : r.overlaps) q.overlaps.push_back(h.id);
      hits += r.hits.size() + r.overlaps.size();
    }
  }
  view::ViewOptions options;
  options.side = args.side;
  options.width_px = args.width;
  options.max_triangles = args.max_triangles;
  options.frame = import::UpAxisRotation(args.up);
  view::RenderStats stats;
  const std::string svg = view::RenderSvg(picture, options, &stats);
  if (stats.coarse_surfaces > 0 && !global.quiet) {
    std::fprintf(stderr,
                 "hitboxctl: view: %llu surfaces (%llu triangles) over the budget of %llu "
                 "triangles drawn as the %.3g m cells they cover (--max-triangles N draws more; "
                 "the picture says so too)\n",
                 static_cast<unsigned long long>(stats.coarse_surfaces),
                 static_cast<unsigned long long>(stats.coarse_triangles),
                 static_cast<unsigned long long>(args.max_triangles), stats.cell_metres);
  }
  std::FILE* f = std::fopen(args.out.c_str(), "wb");
  if (f == nullptr) return Fail("view: cannot write " + args.out);
  const bool ok = std::fwrite(svg.data(), 1, svg.size(), f) == svg.size();
  if (std::fclose(f) != 0 || !ok) return Fail("view: error writing " + args.out);
  if (global.json) {
    PrintJson({{"output", args.out},
               {"session_id", args.session},
               {"session_colliders", picture.session.size()},
               {"map_colliders", picture.map.size()},
               {"queries", picture.queries.size()},
               {"hits", hits},
               {"triangles_drawn", stats.triangles_drawn},
               {"coarse_surfaces", stats.coarse_surfaces},
               {"coarse_triangles", stats.coarse_triangles},
               {"bytes", svg.size()}});
  } else {
    std::printf("wrote %s: %zu session colliders, %zu map colliders, %zu queries (%zu hits)\n",
                args.out.c_str(), picture.session.size(), picture.map.size(), picture.queries.size(), hits);
  }
  return kExitOk;
}

}  // namespace

void AddViewCommand(CLI::App& app, const GlobalOptions& global, Action& action) {
  auto args = std::make_shared<ViewArgs>();
  auto* cmd = app.add_subcommand(
      "view", "draw a session's world as SVG: top view (and side view), colliders coloured by layer, "
              "ids on hover, queries and their hits on top");
  cmd->add_option("session", args->session, "session id")->required();
  cmd->add_option("-o,--output", args->out, "SVG file to write")->required();
  cmd->add_flag("--side", args->side, "also draw the side view (x to the right, y up)");
  cmd->add_option("--queries", args->queries,
                  "queries file (the case-file query form) to run and draw with their hits")
      ->check(CLI::ExistingFile);
  cmd->add_option("--map", args->map,
                  "draw shared map NAME (the one the session is on, `maps list`) in grey");
  cmd->add_option("--map-file", args->map_file,
                  "draw a level or scene file in grey as the static map")
      ->check(CLI::ExistingFile);
  cmd->add_option_function<std::string>(
      "--up",
      [args](const std::string& text) {
        auto up = import::ParseUpAxis(text);
        if (!up.ok()) throw CLI::ValidationError("--up", up.error().message);
        args->up = *up;
      },
      "the world's up axis: y (default), z, -z, x, -x, -y; the top view looks down it and the "
      "captions name the world's axes");
  cmd->add_option("--max-triangles", args->max_triangles,
                  "surface triangles drawn one by one per view; meshes beyond are drawn as the "
                  "cells they cover, and the picture says so")
      ->capture_default_str();
  cmd->add_option("--width", args->width, "width of a view in pixels")
      ->check(CLI::Range(100.0, 20000.0))
      ->capture_default_str();
  cmd->callback([&global, &action, args] {
    action = [&global, args] { return RunView(global, *args); };
  });
}

}  // namespace hitbox::ctl
