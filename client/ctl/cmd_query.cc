// `hitboxctl overlap|cast|raycast SESSION ...`: one query from flags, printed
// as a table of hits (or JSON with --json).
#include <cstdio>
#include <memory>
#include <optional>
#include <string>

#include "args.h"
#include "ctl.h"
#include "output.h"

namespace hitbox::ctl {
namespace {

struct QueryArgs {
  std::string session;
  ShapeArg shape;
  Vec3 position;
  Quat rotation;
  Vec3 translation;
  FilterArgs filter;
  bool all = false;
  bool contact = false;
  /// --at-tick: answer against the world at this past tick.
  std::optional<double> at_tick;
  /// --contact-offset (casts): the skin, metres.
  double contact_offset = 0.0;
};

void PrintOverlaps(const std::vector<OverlapHit>& hits, bool contact) {
  if (hits.empty()) {
    std::printf("no hits\n");
    return;
  }
  std::vector<std::string> header = {"ID", "USER_DATA"};
  if (contact) header.insert(header.end(), {"DEPTH", "NORMAL", "POINT_A", "POINT_B"});
  Table table(header);
  for (const OverlapHit& h : hits) {
    std::vector<std::string> row = {std::to_string(h.id), std::to_string(h.user_data)};
    if (h.contact) {
      row.insert(row.end(), {FormatDouble(h.contact->depth, 6), FormatVec3(h.contact->normal),
                             FormatVec3(h.contact->point_a), FormatVec3(h.contact->point_b)});
    }
    table.AddRow(row);
  }
  std::fputs(table.Render().c_str(), stdout);
}

void PrintCastHits(const std::vector<CastHit>& hits) {
  if (hits.empty()) {
    std::printf("no hits\n");
    return;
  }
  Table table({"ID", "USER_DATA", "FRACTION", "NORMAL", "POINT", "STARTED_INSIDE", "DEPTH"});
  for (const CastHit& h : hits) {
    table.AddRow({std::to_string(h.id), std::to_string(h.user_data), FormatDouble(h.fraction, 9),
                  FormatVec3(h.normal), FormatVec3(h.point), h.started_overlapping() ? "yes" : "no",
                  FormatDouble(h.depth, 6)});
  }
  std::fputs(table.Render().c_str(), stdout);
}

int RunQuery(const GlobalOptions& global, const std::string& kind, const QueryArgs& a) {
  hitbox::Query query;
  if (kind == "overlap") {
    query = OverlapQuery{*a.shape.shape, Pose(a.position, a.rotation), ToFilter(a.filter), a.contact};
  } else if (kind == "cast") {
    CastQuery cast{*a.shape.shape, Pose(a.position, a.rotation), a.translation,
                   ToFilter(a.filter), a.all};
    cast.contact_offset = a.contact_offset;
    query = std::move(cast);
  } else {
    query = RayQuery{a.position, a.translation, ToFilter(a.filter), a.all};
  }
  std::visit([&a](auto& q) { q.at_tick = a.at_tick; }, query);
  auto client = global.MakeClient();
  auto r = client->Query(a.session, std::span(&query, 1));
  if (!r.ok()) return Fail(r.status(), kind + " on session " + a.session);
  if (r->results.size() != 1) {
    return Fail(kind + ": the server answered " + std::to_string(r->results.size()) +
                " results to 1 query");
  }
  const QueryResult& result = r->results[0];
  if (global.json) {
    nlohmann::json hits = nlohmann::json::array();
    if (kind == "overlap") {
      for (const auto& h : result.overlaps) hits.push_back(ToJson(h));
    } else {
      for (const auto& h : result.hits) hits.push_back(ToJson(h));
    }
    PrintJson({{"session_id", a.session},
               {"kind", kind},
               {"revision", r->revision},
               {"hits", hits},
               {"truncated", result.truncated}});
    return kExitOk;
  }
  if (kind == "overlap") {
    PrintOverlaps(result.overlaps, a.contact);
  } else {
    PrintCastHits(result.hits);
  }
  if (result.truncated) {
    const size_t shown = kind == "overlap" ? result.overlaps.size() : result.hits.size();
    std::printf("truncated: more hits than the %zu shown (--max-hits, or the session's "
                "max_hits_per_query when it is 0)\n",
                shown);
  }
  return kExitOk;
}

void AddQuery(CLI::App& app, const GlobalOptions& global, Action& action, const std::string& kind,
              const std::string& description) {
  auto a = std::make_shared<QueryArgs>();
  auto* cmd = app.add_subcommand(kind, description);
  cmd->add_option("session", a->session, "session id")->required();
  if (kind != "raycast") {
    AddShapeOptions(cmd, &a->shape);
    AddVec3Option(cmd, "--pos", &a->position, "world position of the shape, metres (default 0,0,0)");
    AddQuatOption(cmd, "--rot", &a->rotation, "rotation quaternion x,y,z,w (default identity)");
  } else {
    AddVec3Option(cmd, "--origin,--pos", &a->position, "ray start, world metres (default 0,0,0)");
  }
  if (kind != "overlap") {
    AddVec3Option(cmd, "--translation", &a->translation,
                  kind == "cast" ? "motion of the shape, world metres" : "ray end minus start, metres")
        ->required();
    cmd->add_flag("--all", a->all, "every hit sorted by (fraction, id), not only the first");
    if (kind == "cast") {
      cmd->add_option("--contact-offset", a->contact_offset,
                      "skin in metres, in [0, 1000]: contacts shallower than this that the "
                      "motion does not drive deeper are no hit (a shape resting on a floor "
                      "slides along it); 0: every contact is a hit")
          ->check(CLI::Range(0.0, 1000.0))
          ->capture_default_str();
    }
  } else {
    cmd->add_flag("--contact", a->contact, "also compute each hit's penetration contact");
  }
  AddFilterOptions(cmd, &a->filter);
  cmd->add_option("--at-tick", a->at_tick,
                  "answer against the world as it was at this past tick (a real number within "
                  "the session's history, e.g. 1017.5)");
  cmd->callback([&global, &action, kind, a] {
    action = [&global, kind, a] { return RunQuery(global, kind, *a); };
  });
}

}  // namespace

void AddQueryCommands(CLI::App& app, const GlobalOptions& global, Action& action) {
  AddQuery(app, global, action, "overlap", "which colliders does a shape overlap?");
  AddQuery(app, global, action, "cast", "where does a moving shape first hit? (shape sweep)");
  AddQuery(app, global, action, "raycast", "what does a ray hit?");
}

}  // namespace hitbox::ctl
