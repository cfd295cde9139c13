#!/usr/bin/python3
"""A game server's loop on hitboxd through the Python client: players walk, shoot and check ground.

Creates a session with a floor, four walls and a few crates, adds 16 player
capsules, then runs 60 Hz ticks on one Tick stream: every tick moves all
players at once (a MoveBatch that also moves their colliders on the server),
fires 16 shots (a RayBatch, each ignoring its shooter) and prints what was hit.

  bash scripts/hitbox.sh run &                      # hitboxd on 127.0.0.1:50051
  PYTHONPATH=build/client/python /usr/bin/python3 client/python/examples/game_loop.py
"""
import argparse
import math

import numpy as np

import hitbox

PLAYER_BASE = 1000  # player i is collider PLAYER_BASE + i
CAPSULE = hitbox.Capsule(0.4, 0.5)  # 1.8 m tall


def world():
    floor = hitbox.Collider(1, hitbox.Box((20, 0.5, 20)), hitbox.Pose((0, -0.5, 0)))
    walls = [hitbox.Collider(2 + k, hitbox.Box((20, 2, 0.5) if k < 2 else (0.5, 2, 20)),
                             hitbox.Pose(((0, 2, 20.5), (0, 2, -20.5), (20.5, 2, 0), (-20.5, 2, 0))[k]),
                             layer=2)
             for k in range(4)]
    crates = [hitbox.Collider(10 + k, hitbox.Box((1, 1, 1)), hitbox.Pose((6 * k - 12, 1, 5)),
                              layer=2, user_data=k) for k in range(5)]
    return [floor] + walls + crates


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--address", default="127.0.0.1:50051")
    ap.add_argument("--token", default="", help="admin token, when hitboxd has one")
    ap.add_argument("--ticks", type=int, default=120)
    ap.add_argument("--players", type=int, default=16)
    args = ap.parse_args()

    client = hitbox.Client(args.address, hitbox.ClientOptions(token=args.token))
    session = client.create_session().session_id  # the client keeps its token
    n = args.players
    angle = np.linspace(0, 2 * math.pi, n, endpoint=False)
    pos = np.stack([8 * np.cos(angle), np.full(n, 0.91), 8 * np.sin(angle)], axis=1)
    ids = PLAYER_BASE + np.arange(n, dtype=np.uint64)
    client.add_colliders(session, world() + [
        hitbox.Collider(int(i), CAPSULE, hitbox.Pose(tuple(p)), layer=1) for i, p in zip(ids, pos)])
    print(f"session {session}: {client.get_session(session).collider_count} colliders")

    try:
        with client.open_tick_stream(session) as stream:
            for tick in range(1, args.ticks + 1):
                # Everyone walks around the centre at 4 m/s, with gravity.
                heading = angle + tick / 60.0 + math.pi / 2
                walk = np.stack([np.cos(heading), np.full(n, -0.3), np.sin(heading)], axis=1) * (4 / 60)
                # Each player shoots at the next one from eye height.
                eyes = pos + (0, 0.7, 0)
                aim = (np.roll(pos, -1, axis=0) + (0, 0.7, 0) - eyes) * 1.5
                moves, shots = stream.tick([], [
                    hitbox.MoveBatch(CAPSULE, pos, walk, apply_to_ids=ids),
                    hitbox.RayBatch(eyes, aim, ignore_ids=ids),
                ]).results
                pos = moves.position
                if tick % 30 == 0:
                    victims = shots.id[shots.hit & (shots.id >= PLAYER_BASE)] - PLAYER_BASE
                    print(f"tick {tick}: {int(moves.on_ground.sum())}/{n} on ground, "
                          f"{int(shots.hit.sum())} shots hit, players hit: {sorted(set(victims.tolist()))}, "
                          f"player 0 at ({pos[0, 0]:.2f}, {pos[0, 1]:.2f}, {pos[0, 2]:.2f})")
    finally:
        client.delete_session(session)
        client.close()


if __name__ == "__main__":
    main()
