// `hitboxctl watches add|list|remove SESSION ...` (standing overlap queries)
// and `hitboxctl watch SESSION` (their events as batches apply).
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "args.h"
#include "ctl.h"
#include "output.h"

namespace hitbox::ctl {
namespace {

const char* KindName(WatchEvent::Kind k) { return k == WatchEvent::Kind::kEnter ? "ENTER" : "EXIT"; }

nlohmann::json EventJson(const WatchEvent& e, uint64_t revision) {
  return {{"watch_id", e.watch_id}, {"collider_id", e.collider_id}, {"kind", KindName(e.kind)},
          {"sub_shape", e.sub_shape}, {"tick", e.tick}, {"revision", revision}};
}

// The events of an applied batch: a table, or JSON lines.
void PrintEvents(const std::vector<WatchEvent>& events, bool truncated, uint64_t revision,
                 bool json) {
  if (json) {
    for (const WatchEvent& e : events) std::printf("%s\n", EventJson(e, revision).dump().c_str());
    return;
  }
  if (events.empty()) return;
  Table table({"WATCH", "COLLIDER", "EVENT", "SUB_SHAPE", "TICK"});
  for (const WatchEvent& e : events) {
    table.AddRow({std::to_string(e.watch_id), std::to_string(e.collider_id), KindName(e.kind),
                  std::to_string(e.sub_shape), std::to_string(e.tick)});
  }
  std::fputs(table.Render().c_str(), stdout);
  if (truncated) std::printf("(truncated: the session's max_watch_events_per_batch)\n");
}

struct AddArgs {
  std::string session;
  uint64_t id = 0;
  ShapeArg shape;
  Vec3 pos;
  Quat rot = Quat::Identity();
  std::optional<uint64_t> attach;
  std::string mask = "all";
  std::string ignore;
};

struct RemoveArgs {
  std::string session;
  std::vector<uint64_t> ids;
};

struct StreamArgs {
  std::string session;
  std::string ids;
  double duration_s = 0.0;
  uint64_t count = 0;
};

}  // namespace

void AddWatchesCommands(CLI::App& app, const GlobalOptions& global, Action& action) {
  auto* watches = app.add_subcommand("watches", "add, list and remove a session's watches");
  watches->require_subcommand(1);

  auto add = std::make_shared<AddArgs>();
  auto* a = watches->add_subcommand(
      "add", "add a watch: a standing overlap query, fixed (--pos) or attached to a collider "
             "(--attach); prints what is inside it at once (ENTER)");
  a->add_option("session", add->session, "session id")->required();
  a->add_option("id", add->id, "watch id (unique among the session's watches)")->required();
  AddShapeOptions(a, &add->shape);
  auto* where = a->add_option_group("where", "a fixed pose, or a collider to follow");
  AddVec3Option(where, "--pos", &add->pos,
                "fixed watch: its world position (attached: offset in the collider's frame)");
  where->add_option("--attach", add->attach,
                    "collider to follow (never inside its own watch; removing it removes the "
                    "watch)");
  where->require_option(1, 2);
  AddQuatOption(a, "--rot", &add->rot, "rotation x,y,z,w (default identity)");
  a->add_option("--mask", add->mask, "layer mask: decimal, 0x-hex or 'all' (default)");
  a->add_option("--ignore", add->ignore, "collider ids never inside it (ID,ID,...)");
  a->callback([&global, &action, add] {
    action = [&global, add]() -> int {
      Result<uint32_t> mask = ParseMask(add->mask);
      if (!mask.ok()) return Fail("--mask: " + mask.error().message);
      Watch w;
      w.id = add->id;
      w.shape = *add->shape.shape;
      w.pose = Pose(add->pos, add->rot);
      w.attach_to = add->attach;
      w.mask = *mask;
      if (!add->ignore.empty()) {
        Result<std::vector<uint64_t>> ids = ParseIds(add->ignore);
        if (!ids.ok()) return Fail("--ignore: " + ids.error().message);
        w.ignore = *ids;
      }
      const ColliderChange change = ColliderChange::AddWatch(std::move(w));
      auto client = global.MakeClient();
      auto r = client->ApplyChanges(add->session, std::span<const ColliderChange>(&change, 1));
      if (!r.ok()) return Fail(r.status(), "watches add");
      if (!global.json) {
        std::printf("added watch %llu (revision %llu)\n",
                    static_cast<unsigned long long>(add->id),
                    static_cast<unsigned long long>(r->revision));
      }
      PrintEvents(r->events, r->events_truncated, r->revision, global.json);
      return kExitOk;
    };
  });

  auto list_session = std::make_shared<std::string>();
  auto* l = watches->add_subcommand("list", "the session's watches, sorted by id");
  l->add_option("session", *list_session, "session id")->required();
  l->callback([&global, &action, list_session] {
    action = [&global, list_session]() -> int {
      auto client = global.MakeClient();
      auto r = client->GetSession(*list_session);
      if (!r.ok()) return Fail(r.status(), "watches list " + *list_session);
      if (global.json) {
        nlohmann::json arr = nlohmann::json::array();
        for (const SessionInfo::WatchInfo& w : r->watches) {
          nlohmann::json inside = nlohmann::json::array();
          for (const WatchMember& m : w.state.inside) inside.push_back(m.id);
          arr.push_back({{"id", w.state.watch.id},
                         {"shape", ShapeKindName(w.state.watch.shape.kind())},
                         {"attach_to", w.state.watch.attach_to ? nlohmann::json(*w.state.watch.attach_to)
                                                               : nlohmann::json(nullptr)},
                         {"position", ToJson(w.state.world_pose.position)},
                         {"mask", w.state.watch.mask},
                         {"inside_count", w.inside_count},
                         {"inside", inside}});
        }
        PrintJson({{"watches", arr}});
        return kExitOk;
      }
      Table table({"WATCH", "SHAPE", "ATTACHED", "POSITION", "MASK", "INSIDE"});
      for (const SessionInfo::WatchInfo& w : r->watches) {
        char mask[16];
        std::snprintf(mask, sizeof(mask), "0x%x", w.state.watch.mask);
        table.AddRow({std::to_string(w.state.watch.id), ShapeKindName(w.state.watch.shape.kind()),
                      w.state.watch.attach_to ? std::to_string(*w.state.watch.attach_to) : "-",
                      FormatVec3(w.state.world_pose.position), mask,
                      std::to_string(w.inside_count)});
      }
      std::fputs(table.Render().c_str(), stdout);
      return kExitOk;
    };
  });

  auto remove = std::make_shared<RemoveArgs>();
  auto* rm = watches->add_subcommand("remove", "remove watches (EXIT for what they held)");
  rm->add_option("session", remove->session, "session id")->required();
  rm->add_option("ids", remove->ids, "watch ids")->required();
  rm->callback([&global, &action, remove] {
    action = [&global, remove]() -> int {
      std::vector<ColliderChange> changes;
      for (uint64_t id : remove->ids) changes.push_back(ColliderChange::RemoveWatch(id));
      auto client = global.MakeClient();
      auto r = client->ApplyChanges(remove->session, changes);
      if (!r.ok()) return Fail(r.status(), "watches remove");
      if (!global.json) {
        std::printf("removed %zu watch(es) (revision %llu)\n", remove->ids.size(),
                    static_cast<unsigned long long>(r->revision));
      }
      PrintEvents(r->events, r->events_truncated, r->revision, global.json);
      return kExitOk;
    };
  });

  auto stream = std::make_shared<StreamArgs>();
  auto* w = app.add_subcommand(
      "watch", "print a session's watch events as its batches apply (--json: one JSON object "
               "per line) until interrupted, --count events or --duration seconds");
  w->add_option("session", stream->session, "session id")->required();
  w->add_option("--ids", stream->ids, "only these watches (ID,ID,...)");
  w->add_option("--count", stream->count, "stop after this many events (0: no limit)");
  w->add_option("--duration", stream->duration_s, "stop after this many seconds (0: no limit)")
      ->check(CLI::NonNegativeNumber);
  w->callback([&global, &action, stream] {
    action = [&global, stream]() -> int {
      std::vector<uint64_t> ids;
      if (!stream->ids.empty()) {
        Result<std::vector<uint64_t>> parsed = ParseIds(stream->ids);
        if (!parsed.ok()) return Fail("--ids: " + parsed.error().message);
        ids = *parsed;
      }
      auto client = global.MakeClient();
      CallOptions call;
      // A stream lives as long as asked: no deadline unless --duration.
      call.timeout = stream->duration_s > 0
                         ? std::chrono::nanoseconds(static_cast<int64_t>(stream->duration_s * 1e9))
                         : std::chrono::nanoseconds(std::chrono::hours(24 * 365));
      uint64_t seen = 0;
      const RpcStatus s = client->WatchEvents(
          stream->session, ids,
          [&](const WatchEventBatch& batch) {
            for (const WatchEvent& e : batch.events) {
              if (global.json) {
                std::printf("%s\n", EventJson(e, batch.revision).dump().c_str());
              } else {
                std::printf("tick %llu  watch %llu  %-5s collider %llu  sub_shape %u\n",
                            static_cast<unsigned long long>(e.tick),
                            static_cast<unsigned long long>(e.watch_id), KindName(e.kind),
                            static_cast<unsigned long long>(e.collider_id), e.sub_shape);
              }
              ++seen;
              if (stream->count != 0 && seen >= stream->count) break;
            }
            if (batch.events_truncated && !global.json) {
              std::printf("(truncated: the session's max_watch_events_per_batch)\n");
            }
            std::fflush(stdout);
            return stream->count == 0 || seen < stream->count;
          },
          call,
          [&] {
            if (!global.quiet) {
              std::fprintf(stderr, "hitboxctl: watching session '%s'\n", stream->session.c_str());
            }
          });
      if (s.ok()) return kExitOk;
      if (stream->duration_s > 0 && s.code() == RpcCode::kDeadlineExceeded) return kExitOk;
      return Fail(s, "watch " + stream->session);
    };
  });
}

}  // namespace hitbox::ctl
