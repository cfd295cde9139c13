// `hitboxctl maps list|get NAME`: the shared maps of the server (hitboxd --maps DIR).
#include <cstdio>
#include <memory>
#include <string>

#include "ctl.h"
#include "output.h"

namespace hitbox::ctl {
namespace {

std::string KindCounts(const MapInfo& m) {
  std::string out;
  for (const auto& [kind, n] : m.colliders_by_kind) {
    if (!out.empty()) out += " ";
    out += kind + "=" + std::to_string(n);
  }
  return out.empty() ? "-" : out;
}

nlohmann::json MapJson(const MapInfo& m) {
  nlohmann::json j = {{"map_id", m.map_id},
                      {"source", m.source},
                      {"sha256", m.sha256},
                      {"file_bytes", m.file_bytes},
                      {"collider_count", m.collider_count},
                      {"colliders_by_kind", m.colliders_by_kind},
                      {"triangles", m.triangles},
                      {"memory_bytes", m.memory_bytes},
                      {"session_count", m.session_count}};
  j["bounds"] = BoundsJson(m.bounds);
  return j;
}

void PrintMap(const MapInfo& m) {
  const auto u = [](uint64_t v) { return static_cast<unsigned long long>(v); };
  std::printf("map              %s\n", m.map_id.c_str());
  std::printf("source           %s\n", m.source.c_str());
  std::printf("sha256           %s\n", m.sha256.c_str());
  std::printf("file             %llu bytes\n", u(m.file_bytes));
  std::printf("colliders        %llu (%s)\n", u(m.collider_count), KindCounts(m).c_str());
  std::printf("triangles        %llu\n", u(m.triangles));
  std::printf("bounds           %s\n", FormatBounds(m.bounds).c_str());
  std::printf("memory           %llu bytes (once, shared by its sessions)\n", u(m.memory_bytes));
  std::printf("sessions         %llu\n", u(m.session_count));
}

}  // namespace

void AddMapsCommands(CLI::App& app, const GlobalOptions& global, Action& action) {
  auto* maps = app.add_subcommand("maps", "the server's shared maps (hitboxd --maps DIR)");
  maps->require_subcommand(1);

  auto* list = maps->add_subcommand("list", "every map of the server");
  list->callback([&global, &action] {
    action = [&global]() -> int {
      auto client = global.MakeClient();
      auto r = client->ListMaps();
      if (!r.ok()) return Fail(r.status(), "maps list");
      if (global.json) {
        nlohmann::json arr = nlohmann::json::array();
        for (const MapInfo& m : *r) arr.push_back(MapJson(m));
        PrintJson({{"maps", arr}});
        return kExitOk;
      }
      Table table({"MAP", "COLLIDERS", "TRIANGLES", "BYTES", "SESSIONS", "SOURCE"});
      for (const MapInfo& m : *r) {
        table.AddRow({m.map_id, std::to_string(m.collider_count), std::to_string(m.triangles),
                      std::to_string(m.memory_bytes), std::to_string(m.session_count), m.source});
      }
      std::fputs(table.Render().c_str(), stdout);
      return kExitOk;
    };
  });

  auto name = std::make_shared<std::string>();
  auto* get = maps->add_subcommand("get", "describe one map");
  get->add_option("map", *name, "map name (its file name without extension)")->required();
  get->callback([&global, &action, name] {
    action = [&global, name]() -> int {
      auto client = global.MakeClient();
      auto r = client->GetMap(*name);
      if (!r.ok()) return Fail(r.status(), "maps get " + *name);
      if (global.json) {
        PrintJson(MapJson(*r));
      } else {
        PrintMap(*r);
      }
      return kExitOk;
    };
  });
}

}  // namespace hitbox::ctl
