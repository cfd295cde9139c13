// The 64-player arena tick of bench/loadgen/src/arena.cc, in the client's
// types: the same world (floor mesh, walls, stairs, ramps, 24 pillars, 32
// crates, 64 players drawn by the same mt19937_64 seed) and the same queries
// per tick (64 moves applied to the players, 64 capsule sweeps, 200 rays,
// 5 explosions, 64 ground checks). Math.sin/cos may differ from glibc's in
// the last bit, so the players may walk slightly differently from the C++ run.
import type { Client, Collider, Query, Shape, Vec3 } from '../src';

export const PLAYER_BASE = 1000000n;
const HALF = 30;
const CELL = 2;
const RADIUS = 0.4;
const HALF_HEIGHT = 0.5;
const SKIN = 0.01;
const TICK_SECONDS = 1.0 / 60.0;
const WALK_SPEED = 6.0;
const FALL_PER_TICK = 0.02;
const M64 = (1n << 64n) - 1n;

export interface ArenaOptions {
  players: number;
  castsPerTick: number;
  raysPerTick: number;
  overlapsPerTick: number;
  groundChecksPerTick: number;
  seed: bigint;
}
export const DEFAULT_ARENA: ArenaOptions = {
  players: 64, castsPerTick: 64, raysPerTick: 200, overlapsPerTick: 5, groundChecksPerTick: 64, seed: 1n,
};

/** std::mt19937_64 (Matsumoto & Nishimura), and libstdc++'s uniform_real_distribution(0, 1) on it. */
class Mt19937_64 {
  private readonly mt: bigint[] = new Array(312);
  private index = 312;
  constructor(seed: bigint) {
    this.mt[0] = seed & M64;
    for (let i = 1; i < 312; ++i) {
      const p = this.mt[i - 1];
      this.mt[i] = (6364136223846793005n * (p ^ (p >> 62n)) + BigInt(i)) & M64;
    }
  }
  next(): bigint {
    const mt = this.mt;
    if (this.index >= 312) {
      for (let i = 0; i < 312; ++i) {
        const x = (mt[i] & 0xffffffff80000000n) | (mt[(i + 1) % 312] & 0x7fffffffn);
        mt[i] = mt[(i + 156) % 312] ^ (x >> 1n) ^ (x & 1n ? 0xb5026f5aa96619e9n : 0n);
      }
      this.index = 0;
    }
    let x = mt[this.index++];
    x ^= (x >> 29n) & 0x5555555555555555n;
    x ^= (x << 17n) & 0x71d67fffeda60000n;
    x ^= (x << 37n) & 0xfff7eee000000000n;
    x ^= x >> 43n;
    return x & M64;
  }
  uniform(): number {
    const r = Number(this.next()) / 18446744073709551616;
    return r >= 1 ? 1 - 2 ** -53 : r;
  }
}

const add = (a: Vec3, b: Vec3): Vec3 => ({ x: a.x + b.x, y: a.y + b.y, z: a.z + b.z });
const scale = (a: Vec3, s: number): Vec3 => ({ x: a.x * s, y: a.y * s, z: a.z * s });

const walkCache = new Map<number, Vec3>();
/** A direction in the floor plane from a splitmix64 hash of (seed, player, second), as arena.cc. */
function walkDirection(seed: bigint, player: number, second: number): Vec3 {
  const key = (Number(seed) * 65536 + player) * 2 ** 24 + second;
  let d = walkCache.get(key);
  if (d) return d;
  let z = (seed * 0x9e3779b97f4a7c15n + BigInt(player) * 1000003n + BigInt(second) + 0x9e3779b97f4a7c15n) & M64;
  z = ((z ^ (z >> 30n)) * 0xbf58476d1ce4e5b9n) & M64;
  z = ((z ^ (z >> 27n)) * 0x94d049bb133111ebn) & M64;
  z ^= z >> 31n;
  const a = Number(z >> 11n) * ((2.0 * Math.PI) / 9007199254740992.0);
  d = { x: Math.cos(a), y: 0, z: Math.sin(a) };
  walkCache.set(key, d);
  return d;
}

function floorMesh(): Shape {
  const n = (2 * HALF) / CELL;
  const vertices: Vec3[] = [];
  for (let i = 0; i <= n; ++i) for (let j = 0; j <= n; ++j) vertices.push({ x: -HALF + i * CELL, y: 0, z: -HALF + j * CELL });
  const v = (i: number, j: number) => i * (n + 1) + j;
  const indices: number[] = [];
  for (let i = 0; i < n; ++i) {
    for (let j = 0; j < n; ++j) indices.push(v(i, j), v(i, j + 1), v(i + 1, j), v(i + 1, j), v(i, j + 1), v(i + 1, j + 1));
  }
  return { mesh: { vertices, indices } };
}

const box = (x: number, y: number, z: number): Shape => ({ box: { halfExtents: { x, y, z } } });
const axisAngle = (axis: Vec3, angle: number) => {
  const s = Math.sin(0.5 * angle);
  return { x: axis.x * s, y: axis.y * s, z: axis.z * s, w: Math.cos(0.5 * angle) };
};

export interface Arena {
  /** The world, then the players (ids PLAYER_BASE + i, layer 1). */
  colliders: Collider[];
  playerShape: Shape;
  spawn: Vec3[];
}

/**
 * The arena of `o`. Players are placed as arena.cc places them (free floor,
 * 1 m apart), with the overlap test asked of the server on a scratch session.
 */
export async function generateArena(client: Client, o: ArenaOptions = DEFAULT_ARENA): Promise<Arena> {
  const rng = new Mt19937_64(o.seed);
  const u = () => rng.uniform();
  const playerShape: Shape = { capsule: { radius: RADIUS, halfHeight: HALF_HEIGHT } };
  const colliders: Collider[] = [];
  let id = 1n;
  const fixed = (shape: Shape, position: Vec3, rotation?: { x: number; y: number; z: number; w: number }) =>
    colliders.push({ id: id++, shape, pose: rotation ? { position, rotation } : { position } });
  fixed(floorMesh(), { x: 0, y: 0, z: 0 });
  fixed(box(HALF + 1, 2, 0.5), { x: 0, y: 2, z: HALF + 0.5 });
  fixed(box(HALF + 1, 2, 0.5), { x: 0, y: 2, z: -HALF - 0.5 });
  fixed(box(0.5, 2, HALF + 1), { x: HALF + 0.5, y: 2, z: 0 });
  fixed(box(0.5, 2, HALF + 1), { x: -HALF - 0.5, y: 2, z: 0 });
  for (let k = 1; k <= 5; ++k) {
    const front = 10.0 + 0.6 * (k - 1);
    fixed(box((20.0 - front) / 2, 0.1 * k, 3), { x: (20.0 + front) / 2, y: 0.1 * k, z: -17 });
  }
  for (const [degrees, z] of [[20.0, 14.0], [50.0, 22.0]]) {
    const t = (degrees * Math.PI) / 180.0;
    fixed(box(4, 0.5, 3), { x: -12, y: 4 * Math.sin(t) - 0.5 * Math.cos(t), z }, axisAngle({ x: 0, y: 0, z: 1 }, t));
  }
  for (let k = 0; k < 24; ++k) {
    const x = (u() * 2 - 1) * (HALF - 2);
    const z = (u() * 2 - 1) * (HALF - 2);
    fixed({ cylinder: { radius: 0.3 + 0.5 * u(), halfHeight: 2.0 } }, { x, y: 2.0, z });
  }
  for (let k = 0; k < 32; ++k) {
    const h = 0.2 + 0.6 * u();
    const x = (u() * 2 - 1) * (HALF - 2);
    const z = (u() * 2 - 1) * (HALF - 2);
    fixed(box(h, h, h), { x, y: h, z }, axisAngle({ x: 0, y: 1, z: 0 }, u() * Math.PI));
  }
  // Candidates in draw order, tested in batches: the same draws as arena.cc's loop.
  const { sessionId } = await client.createSession();
  await client.addColliders(sessionId, colliders);
  const fat: Shape = { capsule: { radius: RADIUS + SKIN, halfHeight: HALF_HEIGHT } };
  const stand = RADIUS + HALF_HEIGHT + SKIN;
  const spawn: Vec3[] = [];
  for (let tries = 0; spawn.length < o.players && tries < 100000;) {
    const candidates: Vec3[] = [];
    for (let k = 0; k < 256; ++k) {
      const x = (u() * 2 - 1) * (HALF - 2);
      const z = (u() * 2 - 1) * (HALF - 2);
      candidates.push({ x, y: stand, z });
    }
    const r = await client.query(sessionId, candidates.map((p): Query =>
      ({ overlap: { shape: fat, pose: { position: add(p, { x: 0, y: 2 * SKIN, z: 0 }) } } })));
    for (let k = 0; k < candidates.length && spawn.length < o.players; ++k, ++tries) {
      const p = candidates[k];
      const nearPlayer = spawn.some((q) => Math.hypot(q.x - p.x, q.y - p.y, q.z - p.z) < 1.0);
      if (r.results[k].overlaps.length > 0 || nearPlayer) continue;
      colliders.push({ id: PLAYER_BASE + BigInt(spawn.length), shape: playerShape, pose: { position: p }, layer: 1 });
      spawn.push(p);
    }
  }
  await client.deleteSession(sessionId);
  return { colliders, playerShape, spawn };
}

/**
 * The queries of tick `tick` (arena.cc's ArenaTickQueries): the moves, then
 * the sweeps, rays, explosions and ground checks. `byId`: the sweeps by
 * collider id (shapeFromCollider) instead of carrying the capsule.
 */
export function arenaTickQueries(a: Arena, o: ArenaOptions, positions: Vec3[], tick: number, byId = false): Query[] {
  const out: Query[] = [];
  const second = Math.floor(tick * TICK_SECONDS);
  const n = positions.length;
  for (let i = 0; i < n; ++i) {
    out.push({ move: { shape: a.playerShape, pose: { position: positions[i] },
      displacement: add(scale(walkDirection(o.seed, i, second), WALK_SPEED * TICK_SECONDS), { x: 0, y: -FALL_PER_TICK, z: 0 }),
      applyToId: PLAYER_BASE + BigInt(i) } });
  }
  for (let k = 0; k < o.castsPerTick && n > 0; ++k) {
    const p = k % n;
    const translation = scale(walkDirection(o.seed, p, second), 2.0);
    out.push(byId
      ? { cast: { translation }, shapeFromCollider: PLAYER_BASE + BigInt(p) }
      : { cast: { shape: a.playerShape, pose: { position: positions[p] }, translation,
        filter: { ignoreIds: [PLAYER_BASE + BigInt(p)] } } });
  }
  for (let k = 0; k < o.raysPerTick && n > 0; ++k) {
    const shooter = (tick * 7 + k) % n;
    out.push({ raycast: { origin: add(positions[shooter], { x: 0, y: 0.7, z: 0 }),
      translation: add(scale(walkDirection(o.seed + 1n, shooter, tick * 4 + Math.floor(k / n)), 50.0), { x: 0, y: -0.5, z: 0 }),
      filter: { ignoreIds: [PLAYER_BASE + BigInt(shooter)] } } });
  }
  for (let k = 0; k < o.overlapsPerTick && n > 0; ++k) {
    out.push({ overlap: { shape: { sphere: { radius: 3.0 } }, pose: { position: positions[(tick * 13 + k) % n] },
      filter: { mask: 1 << 1 } } });
  }
  for (let k = 0; k < o.groundChecksPerTick && n > 0; ++k) {
    const p = k % n;
    out.push({ raycast: { origin: positions[p], translation: { x: 0, y: -(HALF_HEIGHT + RADIUS + 0.2), z: 0 },
      filter: { ignoreIds: [PLAYER_BASE + BigInt(p)] } } });
  }
  return out;
}
