// The client's types <-> the protobufjs objects grpc-js sends and receives.
//
// Outgoing: shapes, poses and vectors already have the wire's field names and
// go to Type.encode as they are; every uint64 is checked and handed over as a
// number when it is a safe integer, else as its decimal string (protobufjs
// would write a bigint as 0, and a number above 2^53 has already been
// rounded). Incoming: Query and Tick answers are protobufjs messages (uint64
// as Long) copied once into plain objects with bigint ids; the other answers
// come from proto-loader's toObject with uint64 as decimal strings.
import { Code, HitboxError } from './errors';
import type * as P from './wire_types';
import type {
  Aabb, ApplyResult, CastHit, Quat, Vec3, Collider, ColliderChange, ColliderOut, MapInfo, MoveResult,
  OverlapHit, Query, QueryFilter, QueryResult, SessionInfo, SessionLimits, SessionSpec, U64, Watch,
  WatchEvent, WatchInfo,
} from './types';

const U64_MAX = (1n << 64n) - 1n;
const SAFE = BigInt(Number.MAX_SAFE_INTEGER);

function fieldName(a: string, i: number, b: string, j: number): string {
  return a + (i >= 0 ? `[${i}]` : '') + b + (j >= 0 ? `[${j}]` : '');
}

/**
 * A uint64 as protobufjs writes it exactly: a number up to 2^53 - 1, else its
 * decimal string. Throws INVALID_ARGUMENT naming the field (a[i]b[j]) for a
 * number that is not a safe integer (above 2^53 - 1 it may already be
 * rounded: pass a bigint) or anything outside [0, 2^64).
 */
export function u64(v: U64, a: string, i = -1, b = '', j = -1): number | string {
  if (typeof v === 'bigint') {
    if (v >= 0n && v <= SAFE) return Number(v);
    if (v >= 0n && v <= U64_MAX) return v.toString();
    throw new HitboxError(Code.INVALID_ARGUMENT,
      `${fieldName(a, i, b, j)}: ${v} is outside the uint64 range [0, 2^64)`);
  }
  if (typeof v === 'number' && Number.isSafeInteger(v) && v >= 0) return v;
  const name = fieldName(a, i, b, j);
  if (typeof v === 'number' && Number.isInteger(v) && v > 0) {
    throw new HitboxError(Code.INVALID_ARGUMENT,
      `${name}: the number ${v} is above 2^53 - 1 and may have been rounded; pass the id as a bigint`);
  }
  throw new HitboxError(Code.INVALID_ARGUMENT,
    `${name}: ${String(v)} is not a uint64 (a bigint, or a non-negative safe integer number)`);
}

// --- Outgoing -----------------------------------------------------------------

function filterToProto(f: QueryFilter | undefined, a: string, i: number, b: string): P.QueryFilter | undefined {
  if (f === undefined) return undefined;
  const out: P.QueryFilter = { mask: f.mask, maxHits: f.maxHits };
  const ids = f.ignoreIds;
  if (ids !== undefined && ids.length > 0) {
    const s: Array<number | string> = new Array(ids.length);
    for (let j = 0; j < ids.length; ++j) s[j] = u64(ids[j], a, i, b + '.ignore_ids', j);
    out.ignoreIds = s;
  }
  return out;
}

export function colliderToProto(c: Collider, a: string, i: number, b: string): P.Collider {
  return {
    id: u64(c.id, a, i, b + '.id'),
    shape: c.shape,
    pose: c.pose,
    layer: c.layer,
    userData: c.userData === undefined ? undefined : u64(c.userData, a, i, b + '.user_data'),
  };
}

function watchToProto(w: Watch, a: string, i: number): P.Watch {
  if (w === null || typeof w !== 'object' || w.shape === undefined) {
    throw new HitboxError(Code.INVALID_ARGUMENT, `${a}[${i}].add_watch: expected a Watch with an id and a shape`);
  }
  const ids = w.ignoreIds ?? [];
  return {
    id: u64(w.id, a, i, '.add_watch.id'),
    shape: w.shape,
    pose: w.pose,
    attachTo: w.attachTo === undefined ? undefined : u64(w.attachTo, a, i, '.add_watch.attach_to'),
    mask: w.mask,
    ignoreIds: ids.map((id, j) => u64(id, a, i, '.add_watch.ignore_ids', j)),
  };
}

/** changes[i] -> ColliderChange; errors name `<a>[i]...`. */
export function changesToProto(changes: readonly ColliderChange[], a = 'changes'): P.ColliderChange[] {
  const out: P.ColliderChange[] = new Array(changes.length);
  for (let i = 0; i < changes.length; ++i) {
    const c = changes[i];
    if ('add' in c) out[i] = { add: colliderToProto(c.add, a, i, '.add') };
    else if ('replace' in c) out[i] = { replace: colliderToProto(c.replace, a, i, '.replace') };
    else if ('move' in c) out[i] = { move: { id: u64(c.move.id, a, i, '.move.id'), pose: c.move.pose } };
    else if ('remove' in c) out[i] = { remove: u64(c.remove, a, i, '.remove') };
    else if ('addWatch' in c) out[i] = { addWatch: watchToProto(c.addWatch, a, i) };
    else if ('removeWatch' in c) out[i] = { removeWatch: u64(c.removeWatch, a, i, '.remove_watch') };
    else {
      throw new HitboxError(Code.INVALID_ARGUMENT,
        `${a}[${i}]: no change (add, replace, move, remove, addWatch or removeWatch)`);
    }
  }
  return out;
}

/** queries[i] -> Query; errors name `queries[i]...`. */
export function queriesToProto(queries: readonly Query[]): P.Query[] {
  const out: P.Query[] = new Array(queries.length);
  for (let i = 0; i < queries.length; ++i) {
    const q = queries[i];
    const p: P.Query = {};
    if ('overlap' in q) {
      const o = q.overlap;
      p.overlap = { shape: o.shape, pose: o.pose, filter: filterToProto(o.filter, 'queries', i, '.overlap.filter'),
        wantContact: o.wantContact };
    } else if ('cast' in q) {
      const c = q.cast;
      p.cast = { shape: c.shape, pose: c.pose, translation: c.translation,
        filter: filterToProto(c.filter, 'queries', i, '.cast.filter'), allHits: c.allHits,
        contactOffset: c.contactOffset, skipStartedContact: c.skipStartedContact };
    } else if ('raycast' in q) {
      const r = q.raycast;
      p.raycast = { origin: r.origin, translation: r.translation,
        filter: filterToProto(r.filter, 'queries', i, '.raycast.filter'), allHits: r.allHits };
    } else if ('move' in q) {
      const m = q.move;
      p.move = { shape: m.shape, pose: m.pose, displacement: m.displacement,
        filter: filterToProto(m.filter, 'queries', i, '.move.filter'), settings: m.settings,
        applyToId: m.applyToId === undefined ? undefined : u64(m.applyToId, 'queries', i, '.move.apply_to_id') };
    } else {
      throw new HitboxError(Code.INVALID_ARGUMENT, `queries[${i}]: no kind (overlap, cast, raycast or move)`);
    }
    if (q.tag !== undefined) p.tag = u64(q.tag, 'queries', i, '.tag');
    if (q.atTick !== undefined) p.atTick = q.atTick;
    if (q.shapeFromCollider !== undefined) {
      p.shapeFromCollider = u64(q.shapeFromCollider, 'queries', i, '.shape_from_collider');
    }
    out[i] = p;
  }
  return out;
}

/** True when a batch holds a move that changes the session (never retried). */
export function appliesMoves(queries: readonly Query[]): boolean {
  for (const q of queries) if ('move' in q && q.move.applyToId !== undefined) return true;
  return false;
}

export function limitsToProto(l: SessionLimits | undefined): P.SessionLimits | undefined {
  return l === undefined ? undefined : { ...l };
}

export function specToProto(spec: SessionSpec): P.CreateSessionRequest {
  return { sessionId: spec.sessionId ?? '', limits: limitsToProto(spec.limits), mapId: spec.mapId ?? '' };
}

// --- Incoming -----------------------------------------------------------------

// A decoded uint64: a Long (protobufjs with long.js) or a number.
type WireLong = { low: number; high: number } | number;
interface WireVec3 { x: number; y: number; z: number }
interface WireCastHit { id: WireLong; userData: WireLong; fraction: number; normal: WireVec3 | null;
  point: WireVec3 | null; startedOverlapping: boolean; depth: number; subShape: number }
interface WireContact { depth: number; normal: WireVec3 | null; pointA: WireVec3 | null; pointB: WireVec3 | null }
interface WireOverlapHit { id: WireLong; userData: WireLong; contact: WireContact | null; subShape: number }
interface WireMoveContact { id: WireLong; subShape: number; normal: WireVec3 | null; point: WireVec3 | null }
interface WireMoveResult { position: WireVec3 | null; displacement: WireVec3 | null; contacts: WireMoveContact[];
  onGround: boolean; groundId: WireLong; groundSubShape: number; groundNormal: WireVec3 | null; stepped: boolean;
  blocked: boolean }
/** A QueryResult as protobufjs decodes it (absent fields read from the prototype's defaults). */
export interface WireQueryResult { tag: WireLong; overlaps: WireOverlapHit[]; hits: WireCastHit[];
  move: WireMoveResult | null; truncated: boolean }
export interface WireQueryResponse { revision: WireLong; results: WireQueryResult[] }
/** A WatchEvent as protobufjs decodes it (kind: the enum's number). */
export interface WireWatchEvent { watchId: WireLong; colliderId: WireLong; kind: number; subShape: number;
  tick: WireLong }
export interface WireTickResponse { tick: WireLong; revision: WireLong; results: WireQueryResult[];
  error: { code: number; message: string } | null; events: WireWatchEvent[]; eventsTruncated: boolean }

/** A decoded uint64 as a bigint. */
export function big(v: WireLong): bigint {
  if (typeof v === 'number') return BigInt(v);
  return v.high === 0 ? BigInt(v.low >>> 0) : (BigInt(v.high >>> 0) << 32n) | BigInt(v.low >>> 0);
}

const vec = (v: WireVec3 | null) => (v === null ? { x: 0, y: 0, z: 0 } : { x: v.x, y: v.y, z: v.z });

/** The results of a decoded Query or Tick answer as the client's types. */
export function resultsFromProto(rs: WireQueryResult[], expected: number): QueryResult[] {
  if (rs.length !== expected) {
    throw new HitboxError(Code.INTERNAL,
      `the server answered ${rs.length} query results for ${expected} queries`);
  }
  const out: QueryResult[] = new Array(rs.length);
  for (let i = 0; i < rs.length; ++i) {
    const r = rs[i];
    const overlaps: OverlapHit[] = new Array(r.overlaps.length);
    for (let k = 0; k < overlaps.length; ++k) {
      const h = r.overlaps[k];
      const c = h.contact;
      overlaps[k] = { id: big(h.id), userData: big(h.userData), subShape: h.subShape,
        contact: c === null ? undefined : { depth: c.depth, normal: vec(c.normal), pointA: vec(c.pointA), pointB: vec(c.pointB) } };
    }
    const hits: CastHit[] = new Array(r.hits.length);
    for (let k = 0; k < hits.length; ++k) {
      const h = r.hits[k];
      hits[k] = { id: big(h.id), userData: big(h.userData), fraction: h.fraction, normal: vec(h.normal),
        point: vec(h.point), startedOverlapping: h.startedOverlapping, depth: h.depth, subShape: h.subShape };
    }
    let move: MoveResult | undefined;
    const m = r.move;
    if (m !== null) {
      move = { position: vec(m.position), displacement: vec(m.displacement),
        contacts: m.contacts.map((c) => ({ id: big(c.id), subShape: c.subShape, normal: vec(c.normal), point: vec(c.point) })),
        onGround: m.onGround, groundId: big(m.groundId), groundSubShape: m.groundSubShape,
        groundNormal: m.groundNormal === null ? undefined : vec(m.groundNormal), stepped: m.stepped, blocked: m.blocked };
    }
    out[i] = { tag: big(r.tag), overlaps, hits, move, truncated: r.truncated };
  }
  return out;
}

/** A Tick answer's events (protobufjs decoded). */
export function wireEventsFromProto(es: WireWatchEvent[]): WatchEvent[] {
  return es.map((e) => ({ watchId: big(e.watchId), colliderId: big(e.colliderId),
    kind: e.kind === 2 ? 'EXIT' : 'ENTER', subShape: e.subShape, tick: big(e.tick) }));
}

/** Events of proto-loader's answers (uint64 as strings, enums as names). */
export function eventsFromProto(es: P.WatchEvent__Output[]): WatchEvent[] {
  return es.map((e) => ({ watchId: BigInt(e.watchId), colliderId: BigInt(e.colliderId),
    kind: String(e.kind) === 'EXIT' ? 'EXIT' : 'ENTER', subShape: e.subShape, tick: BigInt(e.tick) }));
}

function aabbFromProto(b: P.Aabb__Output | null): Aabb | undefined {
  if (b === null || b.min === null || b.max === null) return undefined;
  return { min: b.min, max: b.max };
}

function limitsFromProto(l: P.SessionLimits__Output | null): Required<SessionLimits> {
  const n = (v: string | number | undefined) => Number(v ?? 0);
  return {
    maxColliders: n(l?.maxColliders), maxChangesPerMessage: n(l?.maxChangesPerMessage),
    maxQueriesPerMessage: n(l?.maxQueriesPerMessage), maxHitsPerQuery: n(l?.maxHitsPerQuery),
    maxNodesPerMessage: n(l?.maxNodesPerMessage), maxPairTestsPerMessage: n(l?.maxPairTestsPerMessage),
    idleTimeoutMs: n(l?.idleTimeoutMs), historyTicks: n(l?.historyTicks),
    maxMeshTriangles: n(l?.maxMeshTriangles), maxHeightfieldSamples: n(l?.maxHeightfieldSamples),
    maxHullPoints: n(l?.maxHullPoints), maxBuildWorkPerMessage: n(l?.maxBuildWorkPerMessage),
    maxWatches: n(l?.maxWatches), maxWatchEventsPerBatch: n(l?.maxWatchEventsPerBatch),
  };
}

export function sessionFromProto(s: P.SessionInfo__Output): SessionInfo {
  const info: SessionInfo = {
    sessionId: s.sessionId,
    colliderCount: Number(s.colliderCount),
    revision: BigInt(s.revision),
    bounds: aabbFromProto(s.bounds),
    limits: limitsFromProto(s.limits),
    createdUnixMs: Number(s.createdUnixMs),
    token: s.token,
    memoryBytes: Number(s.memoryBytes),
    lastActiveUnixMs: Number(s.lastActiveUnixMs),
    mapId: s.mapId,
    mapColliderCount: Number(s.mapColliderCount),
    watches: s.watches.map(watchInfoFromProto),
  };
  if (s.oldestTick !== undefined && s.newestTick !== undefined) {
    info.ticks = { oldest: BigInt(s.oldestTick), newest: BigInt(s.newestTick) };
  }
  return info;
}

export function mapFromProto(m: P.MapInfo__Output): MapInfo {
  const byKind: Record<string, number> = {};
  for (const [k, v] of Object.entries(m.collidersByKind)) byKind[k] = Number(v);
  return {
    mapId: m.mapId, source: m.source, sha256: m.sha256, fileBytes: Number(m.fileBytes),
    colliderCount: Number(m.colliderCount), collidersByKind: byKind, triangles: Number(m.triangles),
    bounds: aabbFromProto(m.bounds), memoryBytes: Number(m.memoryBytes), sessionCount: Number(m.sessionCount),
  };
}

export function applyFromProto(r: P.ApplyChangesResponse__Output): ApplyResult {
  return { revision: BigInt(r.revision), colliderCount: Number(r.colliderCount),
    events: eventsFromProto(r.events), eventsTruncated: r.eventsTruncated };
}

const ORIGIN = { x: 0, y: 0, z: 0 };
const IDENTITY = { x: 0, y: 0, z: 0, w: 1 };

function poseFromProto(p: P.Pose__Output | null): { position: Vec3; rotation: Quat } {
  return { position: p?.position ?? { ...ORIGIN }, rotation: p?.rotation ?? { ...IDENTITY } };
}

function watchInfoFromProto(w: P.WatchInfo__Output): WatchInfo {
  const m = w.watch;
  return {
    watch: {
      id: BigInt(m?.id ?? 0),
      shape: m?.shape as unknown as WatchInfo['watch']['shape'],
      pose: poseFromProto(m?.pose ?? null),
      attachTo: m?.attachTo === undefined ? undefined : BigInt(m.attachTo),
      mask: m?.mask,
      ignoreIds: (m?.ignoreIds ?? []).map((id) => BigInt(id)),
    },
    worldPose: poseFromProto(w.worldPose),
    inside: w.inside.map((id) => BigInt(id)),
    insideCount: Number(w.insideCount),
  };
}

export function colliderFromProto(c: P.Collider__Output): ColliderOut {
  return {
    id: BigInt(c.id),
    shape: c.shape as unknown as ColliderOut['shape'],
    pose: { position: c.pose?.position ?? { ...ORIGIN }, rotation: c.pose?.rotation ?? { ...IDENTITY } },
    layer: c.layer,
    userData: BigInt(c.userData),
  };
}
