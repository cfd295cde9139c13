#!/usr/bin/python3
"""The 64-player arena tick through the Python client, beside hitbox-arena-bench's C++ figures.

The arena and its tick are bench/loadgen/src/arena.cc's, rebuilt here (the
same mt19937_64 draws; spawn points checked against the server): 64
character moves applied to the players' colliders, 64 capsule sweeps, 200
rays, 5 explosions (sphere overlaps) and 64 ground checks per tick, 397
queries, one tick in flight on a Tick stream to hitboxd --threads 1 (as
BM_ArenaTickService's server child).

Reports:
  build   CPU to build one tick message of the issue's 269 queries (sweeps,
          rays, explosions) and of the full 397-query tick: protobuf
          objects one by one against hitbox batches
  tick    per tick through TickStream.tick: client CPU (this process, all
          threads, less the game's own work of making the arrays and
          reading the positions, as BM_ArenaTickService counts it), server
          CPU (hitboxd's /proc stat), ticks per second (wall, one in
          flight); batches (RayBatch, SweepBatch, MoveBatch) with every
          answer column read (the work the C++ client's decode does) or
          only the move positions (the columns are decoded when first
          read), against objects (one hitbox query object per query)

  client/python/bench/arena_bench.py --hitboxd build/bin/hitboxd [--ticks 2000]
(PYTHONPATH=build/client/python)
"""
import argparse
import math
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

import hitbox
from hitbox._proto.hitbox.v1 import hitbox_pb2 as pb

MASK = (1 << 64) - 1
HALF, CELL, RADIUS, HALF_HEIGHT, SKIN = 30.0, 2.0, 0.4, 0.5, 0.01
TICK_SECONDS, WALK_SPEED, FALL = 1.0 / 60.0, 6.0, 0.02
PLAYERS, CASTS, RAYS, OVERLAPS, GROUND = 64, 64, 200, 5, 64
SEED, BASE = 1, 1000000
CAPSULE = hitbox.Capsule(RADIUS, HALF_HEIGHT)


class MT19937_64:
    """std::mt19937_64 (Matsumoto and Nishimura; the C++ standard's parameters)."""

    def __init__(self, seed):
        self.mt = [seed & MASK]
        for i in range(1, 312):
            prev = self.mt[-1]
            self.mt.append((6364136223846793005 * (prev ^ (prev >> 62)) + i) & MASK)
        self.i = 312

    def __call__(self):
        if self.i >= 312:
            mt = self.mt
            for k in range(312):
                y = (mt[k] & 0xFFFFFFFF80000000) | (mt[(k + 1) % 312] & 0x7FFFFFFF)
                mt[k] = mt[(k + 156) % 312] ^ (y >> 1) ^ (0xB5026F5AA96619E9 if y & 1 else 0)
            self.i = 0
        y = self.mt[self.i]
        self.i += 1
        y ^= (y >> 29) & 0x5555555555555555
        y ^= (y << 17) & 0x71D67FFFEDA60000
        y ^= (y << 37) & 0xFFF7EEE000000000
        return y ^ (y >> 43)

    def uniform(self):
        """std::uniform_real_distribution<double>(0, 1) as libstdc++ draws it."""
        r = float(self()) / 18446744073709551616.0
        return r if r < 1.0 else math.nextafter(1.0, 0.0)


def floor_mesh():
    n = int(2 * HALF / CELL)
    verts = [(-HALF + i * CELL, 0.0, -HALF + j * CELL) for i in range(n + 1) for j in range(n + 1)]
    v = lambda i, j: i * (n + 1) + j  # noqa: E731
    tris = []
    for i in range(n):
        for j in range(n):
            tris += [(v(i, j), v(i, j + 1), v(i + 1, j)), (v(i + 1, j), v(i, j + 1), v(i + 1, j + 1))]
    return hitbox.Mesh(np.array(verts), np.array(tris))


def generate_arena(client):
    """arena.cc's GenerateArena: (static colliders, player spawn points)."""
    rng = MT19937_64(SEED)
    cs = [hitbox.Collider(1, floor_mesh())]
    wall_x, wall_z = hitbox.Box((HALF + 1, 2, 0.5)), hitbox.Box((0.5, 2, HALF + 1))
    cs += [hitbox.Collider(2, wall_x, hitbox.Pose((0, 2, HALF + 0.5))),
           hitbox.Collider(3, wall_x, hitbox.Pose((0, 2, -HALF - 0.5))),
           hitbox.Collider(4, wall_z, hitbox.Pose((HALF + 0.5, 2, 0))),
           hitbox.Collider(5, wall_z, hitbox.Pose((-HALF - 0.5, 2, 0)))]
    for k in range(1, 6):
        front = 10.0 + 0.6 * (k - 1)
        cs.append(hitbox.Collider(len(cs) + 1, hitbox.Box(((20.0 - front) / 2, 0.1 * k, 3)),
                                  hitbox.Pose(((20.0 + front) / 2, 0.1 * k, -17))))
    for degrees, z in ((20.0, 14.0), (50.0, 22.0)):
        t = degrees * math.pi / 180.0
        cs.append(hitbox.Collider(len(cs) + 1, hitbox.Box((4, 0.5, 3)),
                                  hitbox.Pose((-12, 4 * math.sin(t) - 0.5 * math.cos(t), z),
                                              hitbox.axis_angle((0, 0, 1), t))))
    u = rng.uniform
    for _ in range(24):
        p = ((u() * 2 - 1) * (HALF - 2), 2.0, (u() * 2 - 1) * (HALF - 2))
        cs.append(hitbox.Collider(len(cs) + 1, hitbox.Cylinder(0.3 + 0.5 * u(), 2.0), hitbox.Pose(p)))
    for _ in range(32):
        h = 0.2 + 0.6 * u()
        p = ((u() * 2 - 1) * (HALF - 2), h, (u() * 2 - 1) * (HALF - 2))
        cs.append(hitbox.Collider(len(cs) + 1, hitbox.Box((h, h, h)),
                                  hitbox.Pose(p, hitbox.axis_angle((0, 1, 0), u() * math.pi))))
    # Spawn points: the capsule grown by the skin and lifted by two touches nothing.
    client.create_session("spawn")
    client.add_colliders("spawn", cs)
    fat = hitbox.Capsule(RADIUS + SKIN, HALF_HEIGHT)
    stand = RADIUS + HALF_HEIGHT + SKIN
    spawn = []
    while len(spawn) < PLAYERS:
        p = ((u() * 2 - 1) * (HALF - 2), stand, (u() * 2 - 1) * (HALF - 2))
        if client.overlap("spawn", fat, hitbox.Pose((p[0], p[1] + 2 * SKIN, p[2]))):
            continue
        if any(math.dist(q, p) < 1.0 for q in spawn):
            continue
        spawn.append(p)
    client.delete_session("spawn")
    players = [hitbox.Collider(BASE + i, CAPSULE, hitbox.Pose(p), layer=1) for i, p in enumerate(spawn)]
    return cs + players, np.array(spawn)


def walk(seed, players, second):
    """arena.cc's WalkDirection for arrays of players (one splitmix64 step)."""
    with np.errstate(over="ignore"):
        z = (np.uint64(seed) * np.uint64(0x9E3779B97F4A7C15) + players.astype(np.uint64) * np.uint64(1000003)
             + np.asarray(second, dtype=np.uint64) + np.uint64(0x9E3779B97F4A7C15))
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        z ^= z >> np.uint64(31)
    a = (z >> np.uint64(11)).astype(np.float64) * (2.0 * math.pi / 9007199254740992.0)
    return np.stack([np.cos(a), np.zeros_like(a), np.sin(a)], axis=1)


class TickArrays:
    """One tick's query arrays (ArenaTickQueries), the game's own work."""

    def __init__(self, pos, tick):
        n = len(pos)
        second = int(tick * TICK_SECONDS)
        idx = np.arange(n)
        self.move_disp = walk(SEED, idx, second) * (WALK_SPEED * TICK_SECONDS) + (0, -FALL, 0)
        sp = np.arange(CASTS) % n
        self.sweep_pos, self.sweep_d, self.sweep_ignore = pos[sp], walk(SEED, sp, second) * 2.0, BASE + sp
        k = np.arange(RAYS)
        shooter = (tick * 7 + k) % n
        self.ray_o = pos[shooter] + (0, 0.7, 0)
        self.ray_d = walk(SEED + 1, shooter, tick * 4 + k // n) * 50.0 + (0, -0.5, 0)
        self.ray_ignore = BASE + shooter
        self.blast = pos[(tick * 13 + np.arange(OVERLAPS)) % n]
        gp = np.arange(GROUND) % n
        self.ground_o, self.ground_ignore = pos[gp], BASE + gp
        self.pos = pos


def batch_queries(a, moves=True):
    """The tick as hitbox batches (the 269 of the issue: moves=False, no ground checks)."""
    qs = []
    if moves:
        qs.append(hitbox.MoveBatch(CAPSULE, a.pos, a.move_disp, apply_to_ids=BASE + np.arange(len(a.pos))))
    qs.append(hitbox.SweepBatch(CAPSULE, a.sweep_pos, a.sweep_d, ignore_ids=a.sweep_ignore))
    qs.append(hitbox.RayBatch(a.ray_o, a.ray_d, ignore_ids=a.ray_ignore))
    qs += [hitbox.OverlapQuery(hitbox.Sphere(3.0), hitbox.Pose(tuple(p)), hitbox.QueryFilter(mask=2))
           for p in a.blast.tolist()]
    if moves:
        qs.append(hitbox.RayBatch(a.ground_o, np.broadcast_to((0, -(HALF_HEIGHT + RADIUS + 0.2), 0),
                                                              a.ground_o.shape), ignore_ids=a.ground_ignore))
    return qs


def object_queries(a, moves=True):
    """The same tick as one hitbox query object per query."""
    qs = []
    if moves:
        qs += [hitbox.MoveQuery(CAPSULE, hitbox.Pose(p), d, apply_to_id=BASE + i)
               for i, (p, d) in enumerate(zip(a.pos.tolist(), a.move_disp.tolist()))]
    qs += [hitbox.CastQuery(CAPSULE, hitbox.Pose(p), d, hitbox.QueryFilter(ignore_ids=[int(i)]))
           for p, d, i in zip(a.sweep_pos.tolist(), a.sweep_d.tolist(), a.sweep_ignore)]
    qs += [hitbox.RayQuery(o, d, hitbox.QueryFilter(ignore_ids=[int(i)]))
           for o, d, i in zip(a.ray_o.tolist(), a.ray_d.tolist(), a.ray_ignore)]
    qs += [hitbox.OverlapQuery(hitbox.Sphere(3.0), hitbox.Pose(tuple(p)), hitbox.QueryFilter(mask=2))
           for p in a.blast.tolist()]
    if moves:
        qs += [hitbox.RayQuery(o, (0, -(HALF_HEIGHT + RADIUS + 0.2), 0), hitbox.QueryFilter(ignore_ids=[int(i)]))
               for o, i in zip(a.ground_o.tolist(), a.ground_ignore)]
    return qs


def naive_protobuf(a):
    """The 269-query tick as a third party builds it from the .proto: one message per query."""
    req = pb.TickRequest(session_id="arena", tick=1)
    for p, d, i in zip(a.sweep_pos.tolist(), a.sweep_d.tolist(), a.sweep_ignore.tolist()):
        c = req.queries.add().cast
        c.shape.capsule.radius, c.shape.capsule.half_height = RADIUS, HALF_HEIGHT
        c.pose.position.x, c.pose.position.y, c.pose.position.z = p
        c.translation.x, c.translation.y, c.translation.z = d
        c.filter.ignore_ids.append(i)
    for o, d, i in zip(a.ray_o.tolist(), a.ray_d.tolist(), a.ray_ignore.tolist()):
        r = req.queries.add().raycast
        r.origin.x, r.origin.y, r.origin.z = o
        r.translation.x, r.translation.y, r.translation.z = d
        r.filter.ignore_ids.append(i)
    for p in a.blast.tolist():
        o = req.queries.add().overlap
        o.shape.sphere.radius = 3.0
        o.pose.position.x, o.pose.position.y, o.pose.position.z = p
        o.filter.mask = 2
    return req.SerializeToString()


def cpu_per_call(fn, reps):
    fn()
    t0 = time.process_time()
    for _ in range(reps):
        fn()
    return (time.process_time() - t0) / reps


def server_cpu(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hitboxd", required=True)
    ap.add_argument("--ticks", type=int, default=2000)
    args = ap.parse_args()
    from hitbox.client import _encode_queries

    with tempfile.TemporaryDirectory() as tmp:
        port_file = os.path.join(tmp, "port")
        srv = subprocess.Popen([args.hitboxd, "--listen", "127.0.0.1:0", "--port-file", port_file,
                                "--threads", "1", "--log-level", "warn"], stdin=subprocess.DEVNULL)
        try:
            while not (os.path.exists(port_file) and open(port_file).read().strip()):
                if srv.poll() is not None:
                    sys.exit("hitboxd exited")
                time.sleep(0.01)
            address = "127.0.0.1:" + open(port_file).read().strip()
            client = hitbox.Client(address, hitbox.ClientOptions(wait_for_ready=True, timeout=30))
            colliders, spawn = generate_arena(client)
            a = TickArrays(spawn, 1)

            build = {
                "269 naive protobuf": cpu_per_call(lambda: naive_protobuf(a), 300),
                "269 hitbox objects": cpu_per_call(
                    lambda: _encode_queries(object_queries(a, False), 4, pb.TickRequest), 300),
                "269 hitbox batches": cpu_per_call(
                    lambda: _encode_queries(batch_queries(a, False), 4, pb.TickRequest), 300),
                "397 hitbox objects": cpu_per_call(
                    lambda: _encode_queries(object_queries(a), 4, pb.TickRequest), 300),
                "397 hitbox batches": cpu_per_call(
                    lambda: _encode_queries(batch_queries(a), 4, pb.TickRequest), 300),
            }
            assert len(naive_protobuf(a)) > 0
            for name, s in build.items():
                print(f"build {name:22s} {s * 1e6:8.1f} us CPU per message")

            modes = (("batches, every column read", batch_queries, True),
                     ("batches, positions read", batch_queries, False),
                     ("objects", object_queries, False))
            for mode, make, read_all in modes:
                client.create_session("arena")
                client.add_colliders("arena", colliders)
                pos = spawn.copy()
                stream = client.open_tick_stream("arena")
                game = 0.0
                warmup = 20
                for tick in range(1, args.ticks + warmup + 1):
                    if tick == warmup + 1:
                        game, c0, w0, s0 = 0.0, time.process_time(), time.perf_counter(), server_cpu(srv.pid)
                    g0 = time.thread_time()
                    arrays = TickArrays(pos, tick)
                    game += time.thread_time() - g0
                    qs = make(arrays)
                    r = stream.tick((), qs)
                    if read_all:  # what the C++ client decodes: every answer (client work)
                        for x in r.results:
                            if isinstance(x, (hitbox.CastHits, hitbox.MoveHits)):
                                for column in type(x)._COLUMNS:
                                    getattr(x, column)
                    g0 = time.thread_time()
                    if make is batch_queries:
                        pos = r.results[0].position.copy()
                    else:
                        pos = np.array([x.move.position for x in r.results[:PLAYERS]])
                    game += time.thread_time() - g0
                cpu, wall, srv_cpu = time.process_time() - c0, time.perf_counter() - w0, server_cpu(srv.pid) - s0
                stream.close()
                client.delete_session("arena")
                n = args.ticks
                print(f"tick  {mode:28s} client_cpu_us {(cpu - game) / n * 1e6:7.1f}  "
                      f"game_cpu_us {game / n * 1e6:6.1f}  server_cpu_us {srv_cpu / n * 1e6:7.1f}  "
                      f"ticks_per_s {n / wall:7.1f}  ({n} ticks)")
            client.close()
        finally:
            srv.terminate()
            srv.wait()


if __name__ == "__main__":
    main()
