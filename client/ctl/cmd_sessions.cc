// `hitboxctl sessions list|create|get|delete`.
#include <cstdio>
#include <memory>
#include <string>

#include "ctl.h"
#include "output.h"

namespace hitbox::ctl {
namespace {

void PrintSessions(const std::vector<SessionInfo>& sessions) {
  Table table({"SESSION", "COLLIDERS", "REVISION", "BOUNDS", "CREATED (UTC)"});
  for (const SessionInfo& s : sessions) {
    table.AddRow({s.session_id, std::to_string(s.collider_count), std::to_string(s.revision),
                  FormatBounds(s.bounds), FormatUnixMs(s.created_unix_ms)});
  }
  std::fputs(table.Render().c_str(), stdout);
}

void PrintSession(const SessionInfo& s) {
  std::printf("session          %s\n", s.session_id.c_str());
  std::printf("colliders        %llu\n", static_cast<unsigned long long>(s.collider_count));
  std::printf("revision         %llu\n", static_cast<unsigned long long>(s.revision));
  std::printf("bounds           %s\n", FormatBounds(s.bounds).c_str());
  std::printf("created (UTC)    %s\n", FormatUnixMs(s.created_unix_ms).c_str());
  std::printf("last active      %s\n", FormatUnixMs(s.last_active_unix_ms).c_str());
  std::printf("memory           %llu bytes\n", static_cast<unsigned long long>(s.memory_bytes));
  if (!s.map_id.empty()) {
    std::printf("map              %s (%llu colliders, shared and read-only)\n", s.map_id.c_str(),
                static_cast<unsigned long long>(s.map_collider_count));
  }
  std::printf("limits           max_colliders=%llu max_changes_per_message=%u "
              "max_queries_per_message=%u idle_timeout_ms=%llu history_ticks=%u\n",
              static_cast<unsigned long long>(s.limits.max_colliders),
              s.limits.max_changes_per_message, s.limits.max_queries_per_message,
              static_cast<unsigned long long>(s.limits.idle_timeout_ms), s.limits.history_ticks);
  if (s.ticks) {
    std::printf("ticks            %llu..%llu\n", static_cast<unsigned long long>(s.ticks->oldest),
                static_cast<unsigned long long>(s.ticks->newest));
  }
}

}  // namespace

void AddSessionsCommands(CLI::App& app, const GlobalOptions& global, Action& action) {
  auto* sessions = app.add_subcommand("sessions", "list, create, describe and delete sessions");
  sessions->require_subcommand(1);

  auto* list = sessions->add_subcommand("list", "every session of the server");
  list->callback([&global, &action] {
    action = [&global]() -> int {
      auto client = global.MakeClient();
      auto r = client->ListSessions();
      if (!r.ok()) return Fail(r.status(), "sessions list");
      if (global.json) {
        nlohmann::json arr = nlohmann::json::array();
        for (const auto& s : *r) arr.push_back(ToJson(s));
        PrintJson({{"sessions", arr}});
      } else {
        PrintSessions(*r);
      }
      return kExitOk;
    };
  });

  auto spec = std::make_shared<SessionSpec>();
  auto* create = sessions->add_subcommand("create", "create an empty session, or one on a map");
  create->add_option("session", spec->session_id,
                     "session id: 1..128 of [A-Za-z0-9._:-] (omitted: the server picks one)");
  create->add_option("--map", spec->map_id,
                     "start from this shared map of the server (`maps list`): its colliders "
                     "are in every answer, read-only");
  create->add_option("--max-colliders", spec->limits.max_colliders,
                     "most colliders (0: server default)");
  create->add_option("--max-changes", spec->limits.max_changes_per_message,
                     "most changes per message (0: server default)");
  create->add_option("--max-queries", spec->limits.max_queries_per_message,
                     "most queries per message (0: server default)");
  create->add_option("--history-ticks", spec->limits.history_ticks,
                     "ticks of pose history kept for queries with --at-tick (0: server "
                     "default, 64)");
  create->add_option("--idle-timeout-ms", spec->limits.idle_timeout_ms,
                     "delete the session after this many ms without a call or tick "
                     "(0: server default; may only lower it)");
  create->callback([&global, &action, spec] {
    action = [&global, spec]() -> int {
      auto client = global.MakeClient();
      auto r = client->CreateSession(*spec);
      if (!r.ok()) return Fail(r.status(), "sessions create");
      if (global.json) {
        PrintJson(ToJson(*r));
      } else {
        std::printf("created session %s\ntoken %s\n", r->session_id.c_str(), r->token.c_str());
      }
      return kExitOk;
    };
  });

  auto get_id = std::make_shared<std::string>();
  auto* get = sessions->add_subcommand("get", "describe one session");
  get->add_option("session", *get_id, "session id")->required();
  get->callback([&global, &action, get_id] {
    action = [&global, get_id]() -> int {
      auto client = global.MakeClient();
      auto r = client->GetSession(*get_id);
      if (!r.ok()) return Fail(r.status(), "sessions get " + *get_id);
      if (global.json) {
        PrintJson(ToJson(*r));
      } else {
        PrintSession(*r);
      }
      return kExitOk;
    };
  });

  auto del_id = std::make_shared<std::string>();
  auto* del = sessions->add_subcommand("delete", "delete a session and its colliders");
  del->add_option("session", *del_id, "session id")->required();
  del->callback([&global, &action, del_id] {
    action = [&global, del_id]() -> int {
      auto client = global.MakeClient();
      const RpcStatus s = client->DeleteSession(*del_id);
      if (!s.ok()) return Fail(s, "sessions delete " + *del_id);
      if (global.json) {
        PrintJson({{"deleted", *del_id}});
      } else {
        std::printf("deleted session %s\n", del_id->c_str());
      }
      return kExitOk;
    };
  });
}

}  // namespace hitbox::ctl
