// hitbox-client-example: the example of docs/client.md as a real
// program. Connects to a running hitboxd, creates a session, adds a floor and
// a wall, sweeps a capsule towards the wall, prints the hit, and deletes the
// session.
//
//   build/bin/hitboxd --listen 127.0.0.1:50051 &
//   build/bin/hitbox-client-example 127.0.0.1:50051
#include <cstdio>
#include <string>
#include <vector>

#include "hitbox/client.h"

int main(int argc, char** argv) {
  using namespace hitbox;
  const std::string address = argc > 1 ? argv[1] : "127.0.0.1:50051";

  ClientOptions options;
  options.default_timeout = std::chrono::seconds(2);  // every call's deadline
  Client client(address, options);

  // A session holds one game world's colliders; the server picks the id.
  RpcResult<SessionInfo> session = client.CreateSession();
  if (!session.ok()) {
    std::fprintf(stderr, "CreateSession: %s\n", session.status().ToString().c_str());
    return 1;
  }
  const std::string id = session->session_id;

  // A 40 x 1 x 40 m floor whose top is at y = 0, and a wall 5 m ahead (+z).
  const std::vector<Collider> colliders = {
      {.id = 1, .shape = *Shape::MakeBox({20, 0.5, 20}), .pose = Pose({0, -0.5, 0})},
      {.id = 2, .shape = *Shape::MakeBox({5, 2, 0.25}), .pose = Pose({0, 2, 5}),
       .layer = 1, .user_data = 0xBEEF},
  };
  if (RpcResult<ApplyResult> added = client.AddColliders(id, colliders); !added.ok()) {
    std::fprintf(stderr, "AddColliders: %s\n", added.status().ToString().c_str());
    return 1;
  }

  // Sweep a standing player capsule (radius 0.4 m, 1.8 m tall) 10 m along +z,
  // against layer 1 only (the floor, on layer 0, is ignored).
  const Shape capsule = *Shape::MakeCapsule(0.4, 0.5);
  QueryFilter walls;
  walls.mask = 1u << 1;
  RpcResult<std::optional<CastHit>> hit =
      client.Sweep(id, capsule, Pose({0, 0.9, 0}), Vec3{0, 0, 10}, walls);
  if (!hit.ok()) {
    std::fprintf(stderr, "Sweep: %s\n", hit.status().ToString().c_str());
    return 1;
  }
  if (hit->has_value()) {
    const CastHit& h = **hit;
    std::printf("hit collider %llu (user data 0x%llX) at fraction %.4f, point %s, normal %s\n",
                static_cast<unsigned long long>(h.id),
                static_cast<unsigned long long>(h.user_data), h.fraction,
                ToString(h.point).c_str(), ToString(h.normal).c_str());
  } else {
    std::printf("no hit\n");
  }

  if (RpcStatus deleted = client.DeleteSession(id); !deleted.ok()) {
    std::fprintf(stderr, "DeleteSession: %s\n", deleted.ToString().c_str());
    return 1;
  }
  return hit->has_value() ? 0 : 2;
}
