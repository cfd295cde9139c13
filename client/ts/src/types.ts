// The client's own types: hitbox.v1 in camelCase, with every uint64 id, user
// data, tag, tick and revision as a bigint (never a lossy number) and no
// protobuf type in sight. Frames and units as in proto/hitbox/v1/*.proto.

/** An id, user data or tick given to the client: a bigint, or a safe integer number (checked). */
export type U64 = bigint | number;

/** A point, vector or direction in metres (world frame unless a field says otherwise). */
export interface Vec3 {
  x: number;
  y: number;
  z: number;
}

/** A rotation as a unit quaternion; identity is {x: 0, y: 0, z: 0, w: 1}. */
export interface Quat {
  x: number;
  y: number;
  z: number;
  w: number;
}

/** A rigid placement: world = position + rotation * local. Absent parts: origin, identity. */
export interface Pose {
  position?: Vec3;
  rotation?: Quat;
}

/** An axis-aligned box, world metres. */
export interface Aabb {
  min: Vec3;
  max: Vec3;
}

/** A child of a compound, placed in the compound's frame. */
export interface CompoundChild {
  /** A sphere, box, capsule, cylinder or convex hull. */
  shape: Shape;
  position?: Vec3;
  rotation?: Quat;
}

/**
 * One shape; exactly one kind. Query shapes (overlap, sweep, move) are convex:
 * mesh, heightfield and compound are colliders only.
 */
export type Shape =
  | { sphere: { radius: number } }
  | { box: { halfExtents: Vec3 } }
  | { capsule: { radius: number; halfHeight: number } }
  | { cylinder: { radius: number; halfHeight: number } }
  | { convexHull: { points: Vec3[] } }
  /** Triangle k is indices[3k .. 3k+2]; hits name it as subShape k. */
  | { mesh: { vertices: Vec3[]; indices: number[] } }
  /** Local points [c * cellSizeX, heights[r * cols + c], r * cellSizeZ]. */
  | { heightfield: { rows: number; cols: number; cellSizeX: number; cellSizeZ: number; heights: number[] } }
  | { compound: { children: CompoundChild[] } };

/** Shape constructors, as the C++ client's Shape::Make*. Sizes in metres. */
export const Shapes = {
  sphere: (radius: number): Shape => ({ sphere: { radius } }),
  box: (hx: number, hy: number, hz: number): Shape => ({ box: { halfExtents: { x: hx, y: hy, z: hz } } }),
  /** The segment [0,-h,0]..[0,h,0] swept by a sphere of radius r: total height 2h + 2r. */
  capsule: (radius: number, halfHeight: number): Shape => ({ capsule: { radius, halfHeight } }),
  cylinder: (radius: number, halfHeight: number): Shape => ({ cylinder: { radius, halfHeight } }),
  convexHull: (points: Vec3[]): Shape => ({ convexHull: { points } }),
  mesh: (vertices: Vec3[], indices: number[]): Shape => ({ mesh: { vertices, indices } }),
};

/** A Vec3 from its components. */
export function vec3(x: number, y: number, z: number): Vec3 {
  return { x, y, z };
}

/** A pose at `position`, optionally rotated. */
export function pose(position: Vec3, rotation?: Quat): Pose {
  return rotation ? { position, rotation } : { position };
}

/** One collider of a session's set. */
export interface Collider {
  /** Caller-chosen, unique within the session (any uint64). */
  id: U64;
  shape: Shape;
  pose?: Pose;
  /** Collision layer in [0, 31]; default 0. */
  layer?: number;
  /** Opaque caller data returned with every hit on this collider; default 0. */
  userData?: U64;
}

/** A collider as the server reports it (ids as bigint, every field present). */
export interface ColliderOut {
  id: bigint;
  shape: Shape;
  pose: Pose;
  layer: number;
  userData: bigint;
}

/**
 * A standing overlap query of a session (a trigger volume, an area of
 * interest). Fixed: `pose` is its world pose. Attached (`attachTo` a
 * collider id): `pose` is in that collider's frame and it moves with it; that
 * collider is never inside it, and removing it removes the watch.
 */
export interface Watch {
  /** Caller-chosen, unique among the session's watches (its own id space). */
  id: U64;
  /** A sphere, box, capsule, cylinder or convex hull. */
  shape: Shape;
  pose?: Pose;
  attachTo?: U64;
  /** Layer mask (bit i: layer i). Absent: every layer; 0: none. */
  mask?: number;
  /** Ids never inside (at most 256). */
  ignoreIds?: U64[];
}

/** A watch as the server reports it (ids as bigint). */
export interface WatchOut {
  id: bigint;
  shape: Shape;
  pose: Pose;
  attachTo?: bigint;
  mask?: number;
  ignoreIds: bigint[];
}

/** One watch of a session as it stands (SessionInfo.watches). */
export interface WatchInfo {
  watch: WatchOut;
  /** Where its query runs now (attached: follows its collider). */
  worldPose: Pose;
  /** Ids inside it, sorted (at most the first 256). */
  inside: bigint[];
  insideCount: number;
}

/** A collider entering or leaving a watch in one applied batch. */
export interface WatchEvent {
  watchId: bigint;
  colliderId: bigint;
  /** ENTER: inside after the batch, not before; EXIT: inside before, not after. */
  kind: 'ENTER' | 'EXIT';
  /** The mesh triangle or compound child touched (ENTER) or last recorded (EXIT); 0 for convex colliders. */
  subShape: number;
  /** The batch's tick. */
  tick: bigint;
}

/** One message of a WatchEvents stream: the events of one applied batch. */
export interface WatchEventBatch {
  /** The session's revision after the batch. */
  revision: bigint;
  /** Sorted by (watch, collider). */
  events: WatchEvent[];
  /** The batch had more events than the session's maxWatchEventsPerBatch. */
  eventsTruncated: boolean;
}

/** One entry of a change batch (applied atomically, in order). */
export type ColliderChange =
  | { add: Collider }
  | { replace: Collider }
  | { move: { id: U64; pose: Pose } }
  | { remove: U64 }
  | { addWatch: Watch }
  | { removeWatch: U64 };

/** Change constructors, as the C++ client's ColliderChange::Add/Replace/Move/Remove/AddWatch/RemoveWatch. */
export const Changes = {
  add: (collider: Collider): ColliderChange => ({ add: collider }),
  replace: (collider: Collider): ColliderChange => ({ replace: collider }),
  move: (id: U64, to: Pose): ColliderChange => ({ move: { id, pose: to } }),
  remove: (id: U64): ColliderChange => ({ remove: id }),
  addWatch: (watch: Watch): ColliderChange => ({ addWatch: watch }),
  removeWatch: (id: U64): ColliderChange => ({ removeWatch: id }),
};

/** Which colliders a query may report. */
export interface QueryFilter {
  /** Layer mask (bit i: layer i). Absent: every layer; 0: none. */
  mask?: number;
  /** Ids never reported (at most 256). */
  ignoreIds?: U64[];
  /** Most hits; 0 or absent: the session's max_hits_per_query. */
  maxHits?: number;
}

/** What does this shape overlap (touching counts)? */
export interface OverlapQuery {
  shape?: Shape;
  pose?: Pose;
  filter?: QueryFilter;
  /** Also compute each hit's penetration contact. */
  wantContact?: boolean;
}

/** Where does this shape, moved by `translation` without rotating, first hit? */
export interface CastQuery {
  shape?: Shape;
  pose?: Pose;
  /** World translation, metres. */
  translation: Vec3;
  filter?: QueryFilter;
  /** false: the closest hit; true: every hit sorted by (fraction, id). */
  allHits?: boolean;
  /** Contact offset ("skin") in metres, [0, 1000]. */
  contactOffset?: number;
  /** true: a hit at the start (fraction 0) comes without its contact (depth 0). */
  skipStartedContact?: boolean;
}

/** What does the ray origin -> origin + translation hit? */
export interface RayQuery {
  origin: Vec3;
  translation: Vec3;
  filter?: QueryFilter;
  allHits?: boolean;
}

/** Move settings; every absent field takes the server's default. */
export interface MoveSettings {
  up?: Vec3;
  skinWidth?: number;
  maxIterations?: number;
  maxSlopeDegrees?: number;
  stepHeight?: number;
  groundSnapDistance?: number;
}

/** Character movement (collide-and-slide) of `shape` from `pose` by `displacement`. */
export interface MoveQuery {
  shape?: Shape;
  pose?: Pose;
  displacement: Vec3;
  filter?: QueryFilter;
  settings?: MoveSettings;
  /** The character's own collider: ignored, and moved to the end pose in the same revision. */
  applyToId?: U64;
}

/** What every query kind may carry besides its own fields. */
export interface QueryCommon {
  /** Echoed in QueryResult.tag. */
  tag?: U64;
  /** Answer against the world at this (real) tick of the session's history. */
  atTick?: number;
  /** Sweep by collider id: shape and start pose are this collider's (leave shape and pose out). */
  shapeFromCollider?: U64;
}

/** A query of any kind: exactly one of overlap, cast, raycast, move. */
export type Query = QueryCommon &
  ({ overlap: OverlapQuery } | { cast: CastQuery } | { raycast: RayQuery } | { move: MoveQuery });

/** Penetration of the query shape (A) and a collider (B). */
export interface Contact {
  /** Metres, >= 0. */
  depth: number;
  /** Unit direction to move the collider by depth to separate it. */
  normal: Vec3;
  pointA: Vec3;
  pointB: Vec3;
}

/** A collider an overlap reports. */
export interface OverlapHit {
  id: bigint;
  userData: bigint;
  /** Set when the query asked wantContact. */
  contact?: Contact;
  /** Lowest triangle (mesh, heightfield) or child (compound) index touched; 0 for convex kinds. */
  subShape: number;
}

/** A collider a cast or ray reports. */
export interface CastHit {
  id: bigint;
  userData: bigint;
  /** Fraction of the translation in [0, 1]; hit point = start + fraction * translation. */
  fraction: number;
  /** Unit normal at impact, from the collider towards the moving shape or ray. */
  normal: Vec3;
  /** World contact point at impact. */
  point: Vec3;
  /** The query started overlapping this collider (fraction 0). */
  startedOverlapping: boolean;
  /** Penetration depth when startedOverlapping, metres (rays: 0). */
  depth: number;
  subShape: number;
}

/** One surface a move touched. */
export interface MoveContact {
  id: bigint;
  subShape: number;
  normal: Vec3;
  point: Vec3;
}

/** Where a move ends. */
export interface MoveResult {
  /** End position of the shape's pose (its rotation is unchanged). */
  position: Vec3;
  /** position - start position. */
  displacement: Vec3;
  contacts: MoveContact[];
  onGround: boolean;
  groundId: bigint;
  groundSubShape: number;
  /** Set when onGround. */
  groundNormal?: Vec3;
  stepped: boolean;
  blocked: boolean;
}

/** The answer to one query, in the query's position. */
export interface QueryResult {
  tag: bigint;
  /** Overlaps: sorted by id. */
  overlaps: OverlapHit[];
  /** Casts and rays: the closest hit, or all hits sorted by (fraction, id). */
  hits: CastHit[];
  /** Moves: the answer. */
  move?: MoveResult;
  /** filter.maxHits (or the session's limit) left hits out. */
  truncated: boolean;
}

/** Answers of a Query batch. */
export interface QueryBatchResult {
  /** The revision every query was answered at. */
  revision: bigint;
  results: QueryResult[];
}

/** Answer of one tick of a TickStream. */
export interface TickResult {
  /** The tick number (the caller's with tickAt, else the stream's 1, 2, 3, ...). */
  tick: bigint;
  /** The session's revision after this tick's changes; its queries saw it. */
  revision: bigint;
  results: QueryResult[];
  /** The watch events of this tick's changes and applied moves, sorted by (watch, collider). */
  events: WatchEvent[];
  /** The session's maxWatchEventsPerBatch left some events out. */
  eventsTruncated: boolean;
}

/** Per-session limits; 0 or absent: the server's default. */
export interface SessionLimits {
  maxColliders?: number;
  maxChangesPerMessage?: number;
  maxQueriesPerMessage?: number;
  maxHitsPerQuery?: number;
  maxNodesPerMessage?: number;
  maxPairTestsPerMessage?: number;
  /** Milliseconds idle before the server deletes the session (0 in SessionInfo: never). */
  idleTimeoutMs?: number;
  /** Ticks of pose history kept for atTick queries. */
  historyTicks?: number;
  maxMeshTriangles?: number;
  maxHeightfieldSamples?: number;
  maxHullPoints?: number;
  maxBuildWorkPerMessage?: number;
  maxWatches?: number;
  maxWatchEventsPerBatch?: number;
}

/** What createSession asks for. */
export interface SessionSpec {
  /** 1..128 characters of [A-Za-z0-9._:-]; absent: the server picks one. */
  sessionId?: string;
  limits?: SessionLimits;
  /** A shared map the session starts from (listMaps). */
  mapId?: string;
}

/** A session as the server reports it. */
export interface SessionInfo {
  sessionId: string;
  colliderCount: number;
  revision: bigint;
  /** Union of the session's own colliders' bounds; absent when it has none. */
  bounds?: Aabb;
  /** Limits in force, server defaults filled in. */
  limits: Required<SessionLimits>;
  createdUnixMs: number;
  /** The session's secret, only in createSession's answer (the Client keeps it). */
  token: string;
  memoryBytes: number;
  lastActiveUnixMs: number;
  /** Ticks atTick may ask for (oldest, newest); absent before the first tick. */
  ticks?: { oldest: bigint; newest: bigint };
  mapId: string;
  mapColliderCount: number;
  /** The session's watches, sorted by id. */
  watches: WatchInfo[];
}

/** A shared map of the server (hitboxd --maps DIR). */
export interface MapInfo {
  mapId: string;
  source: string;
  /** SHA-256 of the file, 64 lower-case hex digits. */
  sha256: string;
  fileBytes: number;
  colliderCount: number;
  collidersByKind: Record<string, number>;
  triangles: number;
  bounds?: Aabb;
  memoryBytes: number;
  sessionCount: number;
}

/** Outcome of an accepted change batch. */
export interface ApplyResult {
  revision: bigint;
  colliderCount: number;
  /** The batch's watch events, sorted by (watch, collider). */
  events: WatchEvent[];
  /** The session's maxWatchEventsPerBatch left some events out. */
  eventsTruncated: boolean;
}

/** Colliders read at one revision. */
export interface ColliderSnapshot {
  revision: bigint;
  colliders: ColliderOut[];
}

/** One page of a ListColliders stream. */
export interface ColliderPage {
  /** Revision of the snapshot being streamed (the same on every page). */
  revision: bigint;
  /** Colliders in the whole snapshot. */
  total: number;
  /** This page's colliders, sorted by id across the stream. */
  colliders: ColliderOut[];
}

/** Serving status of the standard gRPC health check. */
export type HealthStatus = 'UNKNOWN' | 'SERVING' | 'NOT_SERVING' | 'SERVICE_UNKNOWN';
