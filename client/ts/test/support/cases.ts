// Conformance case files (../shared/cases/FORMAT.md, "hitbox-cases/1") read
// into the client's types, and every answer judged by FORMAT.md's rules as
// casefile/src/case_file.cc's CheckAnswer does.
import * as fs from 'fs';
import * as zlib from 'zlib';
import type { Collider, ColliderChange, Query, QueryResult, Quat, Shape, Vec3 } from '../../src';

type Json = any; // eslint-disable-line @typescript-eslint/no-explicit-any

export type Kind = 'overlap' | 'sweep' | 'raycast';

export interface Expected {
  id: bigint;
  hits?: bigint[];
  maybe?: bigint[];
  /** Sweep / raycast: undefined when the answer has no "hit"; null: nothing hit. */
  hit?: bigint | null;
  fraction: number;
  tolerance: number;
  also: bigint[];
}

export interface CaseFile {
  name: string;
  colliders: Collider[];
  kinds: Kind[];
  queries: Query[];
  expected: Expected[];
  /** [first, last] tick of the histories; moves[k] are the moves of tick first + 1 + k. */
  ticks?: [bigint, bigint];
  moves: ColliderChange[][];
}

const v3 = (a: number[]): Vec3 => ({ x: a[0], y: a[1], z: a[2] });
const quat = (a: number[] | undefined): Quat | undefined =>
  a === undefined ? undefined : { x: a[0], y: a[1], z: a[2], w: a[3] };
const id = (v: Json): bigint => BigInt(v);

export function shape(s: Json): Shape {
  if (s.sphere) return { sphere: { radius: s.sphere.radius } };
  if (s.box) return { box: { halfExtents: v3(s.box.half_extents) } };
  if (s.capsule) return { capsule: { radius: s.capsule.radius, halfHeight: s.capsule.half_height } };
  if (s.cylinder) return { cylinder: { radius: s.cylinder.radius, halfHeight: s.cylinder.half_height } };
  if (s.convex_hull) return { convexHull: { points: s.convex_hull.points.map(v3) } };
  if (s.mesh) return { mesh: { vertices: s.mesh.vertices.map(v3), indices: s.mesh.triangles.flat() } };
  if (s.heightfield) {
    const h = s.heightfield;
    return { heightfield: { rows: h.rows, cols: h.cols, cellSizeX: h.cell_size[0], cellSizeZ: h.cell_size[1],
      heights: h.heights } };
  }
  if (s.compound) {
    return { compound: { children: s.compound.children.map((c: Json) => ({
      shape: shape(c.shape), position: c.position && v3(c.position), rotation: quat(c.rotation) })) } };
  }
  throw new Error(`unknown shape ${JSON.stringify(Object.keys(s))}`);
}

/** Integers of 16 or more digits quoted, so ids above 2^53 reach BigInt exactly. */
function parseExact(text: string): Json {
  return JSON.parse(text.replace(/([[,:]\s*)(\d{16,})(?=\s*[,\]}])/g, '$1"$2"'));
}

export function loadCaseFile(path: string): CaseFile {
  let bytes: Buffer = fs.readFileSync(path);
  if (path.endsWith('.gz')) bytes = zlib.gunzipSync(bytes);
  const doc = parseExact(bytes.toString('utf8'));
  if (doc.format !== 'hitbox-cases/1') throw new Error(`${path}: format ${doc.format}`);
  const ticks: [bigint, bigint] | undefined = doc.ticks ? [id(doc.ticks[0]), id(doc.ticks[1])] : undefined;
  const colliders: Collider[] = [];
  const moves: ColliderChange[][] = [];
  if (ticks) for (let t = ticks[0]; t < ticks[1]; ++t) moves.push([]);
  for (const c of doc.colliders) {
    const first = c.history ? c.history[0] : c;
    colliders.push({ id: id(c.id), layer: c.layer, shape: shape(c.shape),
      pose: { position: v3(first.position), rotation: quat(first.rotation) } });
    if (c.history) {
      for (let k = 1; k < c.history.length; ++k) {
        const h = c.history[k];
        moves[k - 1].push({ move: { id: id(c.id), pose: { position: v3(h.position), rotation: quat(h.rotation) } } });
      }
    }
  }
  const kinds: Kind[] = [];
  const queries: Query[] = doc.queries.map((q: Json): Query => {
    const common = { tag: id(q.id), atTick: q.at_tick };
    const mask = (x: Json) => (x.mask === undefined ? undefined : { mask: x.mask });
    if (q.overlap) {
      kinds.push('overlap');
      const o = q.overlap;
      return { ...common, overlap: { shape: shape(o.shape), pose: { position: v3(o.position), rotation: quat(o.rotation) },
        filter: mask(o) } };
    }
    if (q.sweep) {
      kinds.push('sweep');
      const s = q.sweep;
      return { ...common, cast: { shape: shape(s.shape), pose: { position: v3(s.position), rotation: quat(s.rotation) },
        translation: v3(s.translation), filter: mask(s) } };
    }
    if (q.raycast) {
      kinds.push('raycast');
      const r = q.raycast;
      return { ...common, raycast: { origin: v3(r.origin), translation: v3(r.translation), filter: mask(r) } };
    }
    throw new Error(`${path}: query ${q.id} has no kind`);
  });
  const expected: Expected[] = doc.expected.map((e: Json): Expected => ({
    id: id(e.id),
    hits: e.hits?.map(id),
    maybe: e.maybe?.map(id) ?? (e.hits ? [] : undefined),
    hit: 'hit' in e ? (e.hit === null ? null : id(e.hit)) : undefined,
    fraction: e.fraction ?? 0,
    tolerance: e.tolerance ?? 1e-4,
    also: (e.also ?? []).map(id),
  }));
  if (expected.length !== queries.length) throw new Error(`${path}: ${queries.length} queries, ${expected.length} answers`);
  return { name: path.split('/').slice(-2).join('/'), colliders, kinds, queries, expected, ticks, moves };
}

/** Why the answer is wrong, or undefined when it is right (FORMAT.md). */
export function judge(kind: Kind, query: Query, ex: Expected, r: QueryResult): string | undefined {
  if (kind === 'overlap') {
    if (ex.hits === undefined || ex.hit !== undefined) return 'the expected answer is not an overlap\'s ("hits", "maybe")';
    const got = r.overlaps.map((h) => h.id);
    for (const want of ex.hits) if (!got.includes(want)) return `missed collider ${want}`;
    for (const g of got) {
      if (!ex.hits.includes(g) && !ex.maybe!.includes(g)) return `reported collider ${g} which it does not touch`;
    }
    return undefined;
  }
  if (ex.hit === undefined) return `the expected answer of a ${kind} has no "hit"`;
  if (ex.hit === null) {
    return r.hits.length === 0 ? undefined
      : `expected no hit, got collider ${r.hits[0].id} at fraction ${r.hits[0].fraction}`;
  }
  if (r.hits.length === 0) return `expected collider ${ex.hit} at fraction ${ex.fraction}, got no hit`;
  const h = r.hits[0];
  if (h.id !== ex.hit && !ex.also.includes(h.id)) {
    return `expected collider ${ex.hit} at fraction ${ex.fraction}, got collider ${h.id} at fraction ${h.fraction}`;
  }
  if (!(Math.abs(h.fraction - ex.fraction) <= ex.tolerance)) {
    return `collider ${h.id}: fraction ${h.fraction}, expected ${ex.fraction} +- ${ex.tolerance}`;
  }
  const n = h.normal;
  const length = Math.hypot(n.x, n.y, n.z);
  if (!(Math.abs(length - 1) <= 1e-6)) return `collider ${h.id}: normal ${JSON.stringify(n)} is not unit length`;
  const t = 'cast' in query ? query.cast.translation : 'raycast' in query ? query.raycast.translation : undefined;
  if (t && h.fraction !== 0 && n.x * t.x + n.y * t.y + n.z * t.z > 1e-6) {
    return `collider ${h.id}: normal ${JSON.stringify(n)} points along the motion ${JSON.stringify(t)}`;
  }
  return undefined;
}
