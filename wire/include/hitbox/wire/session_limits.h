// A session's limits <-> hitbox.v1.SessionLimits: the one list of the limit
// fields, shared by the server's limits (server/session.h, whose zeroes are
// real values) and the client's (client.h, whose zeroes mean "the server's").
#pragma once

#include <type_traits>

#include "hitbox/v1/hitbox.pb.h"

namespace hitbox::wire {

/// Calls visit(name, member, getter, setter) for every field of
/// hitbox.v1.SessionLimits: `member` points into `Limits` (a struct with one
/// field of the same name and type each), `getter` and `setter` into the
/// proto. The order is the order CreateSession checks them in.
template <typename Limits, typename Visit>
void ForEachLimit(Visit&& visit) {
  using P = v1::SessionLimits;
  visit("max_colliders", &Limits::max_colliders, &P::max_colliders, &P::set_max_colliders);
  visit("max_changes_per_message", &Limits::max_changes_per_message,
        &P::max_changes_per_message, &P::set_max_changes_per_message);
  visit("max_queries_per_message", &Limits::max_queries_per_message,
        &P::max_queries_per_message, &P::set_max_queries_per_message);
  visit("max_hits_per_query", &Limits::max_hits_per_query, &P::max_hits_per_query,
        &P::set_max_hits_per_query);
  visit("max_nodes_per_message", &Limits::max_nodes_per_message, &P::max_nodes_per_message,
        &P::set_max_nodes_per_message);
  visit("max_pair_tests_per_message", &Limits::max_pair_tests_per_message,
        &P::max_pair_tests_per_message, &P::set_max_pair_tests_per_message);
  visit("idle_timeout_ms", &Limits::idle_timeout_ms, &P::idle_timeout_ms,
        &P::set_idle_timeout_ms);
  visit("max_mesh_triangles", &Limits::max_mesh_triangles, &P::max_mesh_triangles,
        &P::set_max_mesh_triangles);
  visit("max_heightfield_samples", &Limits::max_heightfield_samples,
        &P::max_heightfield_samples, &P::set_max_heightfield_samples);
  visit("max_hull_points", &Limits::max_hull_points, &P::max_hull_points,
        &P::set_max_hull_points);
  visit("max_build_work_per_message", &Limits::max_build_work_per_message,
        &P::max_build_work_per_message, &P::set_max_build_work_per_message);
  visit("history_ticks", &Limits::history_ticks, &P::history_ticks, &P::set_history_ticks);
  visit("max_watches", &Limits::max_watches, &P::max_watches, &P::set_max_watches);
  visit("max_watch_events_per_batch", &Limits::max_watch_events_per_batch,
        &P::max_watch_events_per_batch, &P::set_max_watch_events_per_batch);
}

/// Every field of `l` into `out`.
template <typename Limits>
void LimitsToProto(const Limits& l, v1::SessionLimits* out) {
  ForEachLimit<Limits>([&](const char*, auto member, auto, auto set) { (out->*set)(l.*member); });
}

/// Every field of `in`, as is (0 stays 0).
template <typename Limits>
Limits LimitsFromProto(const v1::SessionLimits& in) {
  Limits out;
  ForEachLimit<Limits>([&](const char*, auto member, auto get, auto) {
    static_assert(std::is_same_v<std::decay_t<decltype(out.*member)>,
                                 std::decay_t<decltype((in.*get)())>>,
                  "a limit's field has the type of its proto field");
    out.*member = (in.*get)();
  });
  return out;
}

}  // namespace hitbox::wire
