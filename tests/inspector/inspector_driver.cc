// The game the inspector's browser test looks at: creates a session on a
// running hitboxd (on map "arena" when --map names it), adds colliders of
// every primitive kind (ids from kFirstId, clear of the map's), then plays
// --ticks ticks on a Tick stream: colliders of layer 1 and 3 move 0.25 m
// along +x per tick (x = x0 + 0.25 * tick), and each tick casts a ray and a
// sphere across the row. Tick 1 also adds watch 1, a sphere of radius 3
// around the first collider. --continue T plays ticks T..--ticks on the
// session made by an earlier run (moves only). Prints {"session": ID, "token": TOKEN,
// "colliders": N, "first_id": ID, "ticks": T} and exits.
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "hitbox/client.h"

namespace {

int Usage() {
  std::fprintf(stderr,
               "usage: inspector_driver --address HOST:PORT [--token ADMIN] [--session ID] "
               "[--map MAP] [--ticks N] [--continue T]\n");
  return 2;
}

constexpr uint64_t kFirstId = 2001;

// Collider i's x at `tick` when it moves (layers 1 and 3).
double X(int i, uint64_t tick) {
  return -22.0 + 4.0 * i + ((i % 2) == 1 ? 0.25 * static_cast<double>(tick) : 0.0);
}

}  // namespace

int main(int argc, char** argv) {
  std::string address, token, session = "inspected", map;
  uint64_t ticks = 40;
  uint64_t first_tick = 1;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (i + 1 >= argc) return Usage();
    const std::string value = argv[++i];
    if (arg == "--address") address = value;
    else if (arg == "--token") token = value;
    else if (arg == "--session") session = value;
    else if (arg == "--map") map = value;
    else if (arg == "--ticks") ticks = std::strtoull(value.c_str(), nullptr, 10);
    else if (arg == "--continue") first_tick = std::strtoull(value.c_str(), nullptr, 10);
    else return Usage();
  }
  if (address.empty() || ticks < 2 || first_tick < 1 || first_tick > ticks) return Usage();
  hitbox::ClientOptions options;
  options.token = token;
  hitbox::Client client(address, options);
  hitbox::SessionSpec spec;
  spec.session_id = session;
  spec.map_id = map;
  std::string session_token;
  if (first_tick == 1) {
    const auto created = client.CreateSession(spec);
    if (!created.ok()) {
      std::fprintf(stderr, "CreateSession: %s\n", created.status().ToString().c_str());
      return 1;
    }
    session_token = created->token;
  }
  constexpr int kColliders = 12;
  std::vector<hitbox::ColliderChange> adds;
  for (int i = 0; i < kColliders; ++i) {
    hitbox::Collider c;
    c.id = kFirstId + i;
    switch (i % 4) {
      case 0: c.shape = *hitbox::Shape::MakeSphere(1.0); break;
      case 1: c.shape = *hitbox::Shape::MakeBox({1.0, 1.0, 1.0}); break;
      case 2: c.shape = *hitbox::Shape::MakeCapsule(0.6, 0.8); break;
      default: c.shape = *hitbox::Shape::MakeCylinder(0.9, 0.9); break;
    }
    c.pose = hitbox::Pose({X(i, 1), 3.0, 0.0});
    c.layer = static_cast<uint32_t>(i % 4);
    adds.push_back(hitbox::ColliderChange::Add(c));
  }
  hitbox::Watch watch;
  watch.id = 1;
  watch.shape = *hitbox::Shape::MakeSphere(3.0);
  watch.pose = hitbox::Pose({X(0, 1), 3.0, 0.0});
  adds.push_back(hitbox::ColliderChange::AddWatch(watch));
  std::unique_ptr<hitbox::TickStream> stream = client.OpenTickStream(session);
  for (uint64_t tick = first_tick; tick <= ticks; ++tick) {
    std::vector<hitbox::ColliderChange> changes;
    if (tick == 1) {
      changes = adds;
    } else {
      for (int i = 1; i < kColliders; i += 2) {
        changes.push_back(hitbox::ColliderChange::Move(kFirstId + i, hitbox::Pose({X(i, tick), 3.0, 0.0})));
      }
    }
    std::vector<hitbox::Query> queries;
    hitbox::RayQuery ray;
    ray.origin = {-30.0, 3.0, 0.0};
    ray.translation = {60.0, 0.0, 0.0};
    ray.all_hits = true;
    ray.tag = 1;
    queries.push_back(ray);
    hitbox::CastQuery cast;
    cast.shape = *hitbox::Shape::MakeSphere(0.5);
    cast.pose = hitbox::Pose({0.0, 3.0, -10.0});
    cast.translation = {0.0, 0.0, 20.0};
    cast.tag = 2;
    queries.push_back(cast);
    const auto answer = stream->TickAt(tick, changes, queries).get();
    if (!answer.ok()) {
      std::fprintf(stderr, "tick %llu: %s\n", static_cast<unsigned long long>(tick),
                   answer.status().ToString().c_str());
      return 1;
    }
  }
  if (const hitbox::RpcStatus st = stream->Finish(); !st.ok()) {
    std::fprintf(stderr, "Tick stream: %s\n", st.ToString().c_str());
    return 1;
  }
  std::printf("{\"session\":\"%s\",\"token\":\"%s\",\"colliders\":%d,\"first_id\":%llu,"
              "\"ticks\":%llu}\n",
              session.c_str(), session_token.c_str(), kColliders,
              static_cast<unsigned long long>(kFirstId),
              static_cast<unsigned long long>(ticks));
  return 0;
}
