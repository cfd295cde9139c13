// The client's types <-> the protobufjs objects grpc-js sends and receives.
//
// Outgoing: shapes, poses and vectors already have the wire's field names and
// go as they are; every uint64 is checked and written as a decimal string
// (protobufjs would turn a bigint into 0, and a number above 2^53 has already
// been rounded). Incoming: the decoded objects are fresh, so ids are turned
// into bigints in place instead of copying every hit.
import { Code, HitboxError } from './errors';
import type * as P from './wire_types';
import type {
  Aabb, ApplyResult, CastHit, Collider, ColliderChange, ColliderOut, MapInfo, MoveResult,
  OverlapHit, Query, QueryFilter, QueryResult, SessionInfo, SessionLimits, SessionSpec, U64,
} from './types';

const U64_MAX = (1n << 64n) - 1n;

function fieldName(a: string, i: number, b: string, j: number): string {
  return a + (i >= 0 ? `[${i}]` : '') + b + (j >= 0 ? `[${j}]` : '');
}

/**
 * A uint64 as the decimal string protobufjs writes exactly. Throws
 * INVALID_ARGUMENT naming the field (a[i]b[j]) for a number that is not a safe
 * integer (above 2^53 it may already be rounded: pass a bigint) or anything
 * outside [0, 2^64).
 */
export function u64(v: U64, a: string, i = -1, b = '', j = -1): string {
  if (typeof v === 'bigint') {
    if (v >= 0n && v <= U64_MAX) return v.toString();
    throw new HitboxError(Code.INVALID_ARGUMENT,
      `${fieldName(a, i, b, j)}: ${v} is outside the uint64 range [0, 2^64)`);
  }
  if (typeof v === 'number' && Number.isSafeInteger(v) && v >= 0) return String(v);
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
    const s: string[] = new Array(ids.length);
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

/** changes[i] -> ColliderChange; errors name `<a>[i]...`. */
export function changesToProto(changes: readonly ColliderChange[], a = 'changes'): P.ColliderChange[] {
  const out: P.ColliderChange[] = new Array(changes.length);
  for (let i = 0; i < changes.length; ++i) {
    const c = changes[i];
    if ('add' in c) out[i] = { add: colliderToProto(c.add, a, i, '.add') };
    else if ('replace' in c) out[i] = { replace: colliderToProto(c.replace, a, i, '.replace') };
    else if ('move' in c) out[i] = { move: { id: u64(c.move.id, a, i, '.move.id'), pose: c.move.pose } };
    else if ('remove' in c) out[i] = { remove: u64(c.remove, a, i, '.remove') };
    else throw new HitboxError(Code.INVALID_ARGUMENT, `${a}[${i}]: no change (add, replace, move or remove)`);
  }
  return out;
}

/** queries[i] -> Query; `atTick` fills in queries without their own (Rewind). */
export function queriesToProto(queries: readonly Query[], atTick?: number): P.Query[] {
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
        contactOffset: c.contactOffset };
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
    const t = q.atTick ?? atTick;
    if (t !== undefined) p.atTick = t;
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

/** The results of a response, ids turned into bigints in place. */
export function resultsFromProto(rs: P.QueryResult__Output[], expected: number): QueryResult[] {
  if (rs.length !== expected) {
    throw new HitboxError(Code.INTERNAL,
      `the server answered ${rs.length} query results for ${expected} queries`);
  }
  for (let i = 0; i < rs.length; ++i) {
    const r = rs[i] as unknown as Record<string, unknown> & P.QueryResult__Output;
    (r as unknown as QueryResult).tag = BigInt(r.tag);
    const overlaps = r.overlaps as unknown as OverlapHit[];
    for (let k = 0; k < overlaps.length; ++k) {
      const h = overlaps[k];
      h.id = BigInt(h.id as unknown as string);
      h.userData = BigInt(h.userData as unknown as string);
      if (h.contact === null) h.contact = undefined;
    }
    const hits = r.hits as unknown as CastHit[];
    for (let k = 0; k < hits.length; ++k) {
      const h = hits[k];
      h.id = BigInt(h.id as unknown as string);
      h.userData = BigInt(h.userData as unknown as string);
    }
    if (r.move === null) {
      r.move = undefined as unknown as null;
    } else {
      const m = r.move as unknown as MoveResult;
      m.groundId = BigInt(m.groundId as unknown as string);
      if (m.groundNormal === null) m.groundNormal = undefined;
      for (const c of m.contacts) c.id = BigInt(c.id as unknown as string);
    }
  }
  return rs as unknown as QueryResult[];
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
  return { revision: BigInt(r.revision), colliderCount: Number(r.colliderCount) };
}

const ORIGIN = { x: 0, y: 0, z: 0 };
const IDENTITY = { x: 0, y: 0, z: 0, w: 1 };

export function colliderFromProto(c: P.Collider__Output): ColliderOut {
  return {
    id: BigInt(c.id),
    shape: c.shape as unknown as ColliderOut['shape'],
    pose: { position: c.pose?.position ?? { ...ORIGIN }, rotation: c.pose?.rotation ?? { ...IDENTITY } },
    layer: c.layer,
    userData: BigInt(c.userData),
  };
}
