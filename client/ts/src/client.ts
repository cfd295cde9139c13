// Client: the TypeScript client of hitboxd, shaped as the C++ hitbox::Client
// (client/include/hitbox/client.h): sessions, changes, queries, moves, rewind,
// maps and tick streams, in the package's own types (types.ts).
//
// Errors: every call rejects with a HitboxError (gRPC code and the server's
// message). Deadlines: ClientOptions.defaultTimeoutMs or CallOptions.timeoutMs
// covers the whole call, retries included. Retries: UNAVAILABLE is retried
// with exponential backoff and jitter for idempotent calls only (Get*, List*,
// health, Query without applied moves, CreateSession with an explicit id).
// Tokens: sessions this Client creates send their token as `authorization:
// Bearer` metadata; setSessionToken for others; options.token otherwise.
import * as fs from 'fs';
import * as grpc from '@grpc/grpc-js';
import { Code, HitboxError, fromGrpcError } from './errors';
import {
  appliesMoves, applyFromProto, big, type WireQueryResponse, changesToProto, colliderFromProto, eventsFromProto,
  mapFromProto, queriesToProto, resultsFromProto, sessionFromProto, specToProto, u64,
} from './convert';
import { protos } from './proto';
import { TickStream, type TickStreamOptions } from './tick_stream';
import type { HitboxClient } from './gen/hitbox/v1/Hitbox';
import type { HealthClient } from './gen/grpc/health/v1/Health';
import type * as P from './wire_types';
import type {
  ApplyResult, CastHit, Collider, ColliderChange, ColliderPage, ColliderSnapshot, HealthStatus, MapInfo, MoveQuery,
  MoveResult, OverlapHit, Pose, Query, QueryBatchResult, QueryFilter, SessionInfo, SessionSpec, Shape, U64,
  Vec3, WatchEventBatch,
} from './types';

/** How UNAVAILABLE is retried on idempotent calls (as the C++ RetryPolicy). */
export interface RetryPolicy {
  /** Attempts including the first, >= 1; 1 disables retries. Default 5. */
  maxAttempts: number;
  /** Wait before the second attempt, ms. Default 50. */
  initialBackoffMs: number;
  /** Longest wait (before jitter), ms. Default 2000. */
  maxBackoffMs: number;
  /** Growth of the wait per attempt, >= 1. Default 2. */
  multiplier: number;
  /** Each wait is scaled by a uniform factor in [1 - jitter, 1 + jitter]. Default 0.2. */
  jitter: number;
}

/** TLS of the channel (files are PEM). */
export interface TlsOptions {
  /** Use TLS; implied by any file below. */
  enabled?: boolean;
  /** CA bundle that signed the server's certificate; absent: the system's roots. */
  caFile?: string;
  /** Client certificate chain and key for mutual TLS: both or neither. */
  certFile?: string;
  keyFile?: string;
  /** Name the server's certificate must carry instead of the address's host. */
  serverName?: string;
}

/** Options of a Client, fixed at construction. */
export interface ClientOptions {
  /** Deadline of a call without CallOptions.timeoutMs, retries included. Default 5000. */
  defaultTimeoutMs?: number;
  retry?: Partial<RetryPolicy>;
  /** Largest message sent or received, bytes (grpc-js would receive only 4 MiB). Default 64 MiB. */
  maxMessageBytes?: number;
  /** Every call and tick stream waits (up to its deadline) for the channel to connect. */
  waitForReady?: boolean;
  /** Reconnect backoff of the channel, ms. Defaults 100 and 2000. */
  minReconnectBackoffMs?: number;
  maxReconnectBackoffMs?: number;
  /** Seed of the retry jitter; absent or 0: Math.random. */
  jitterSeed?: number;
  /** Called before each retry wait: the rpc, the failed attempt (1-based), its error, the wait. */
  onRetry?: (method: string, failedAttempt: number, error: HitboxError, backoffMs: number) => void;
  /** Token sent on calls without a session token of their own (e.g. the admin token). */
  token?: string;
  tls?: TlsOptions;
  /** More grpc-js channel options (they win over the ones above). */
  channelOptions?: grpc.ChannelOptions;
}

/** Per-call overrides. */
export interface CallOptions {
  /** This call's deadline from now, ms, covering retries. */
  timeoutMs?: number;
  /** false: no retry for this call even if it is idempotent. */
  allowRetry?: boolean;
  /** Wait for the server to be reachable instead of failing fast with UNAVAILABLE. */
  waitForReady?: boolean;
}

const DEFAULT_RETRY: RetryPolicy = {
  maxAttempts: 5, initialBackoffMs: 50, maxBackoffMs: 2000, multiplier: 2, jitter: 0.2,
};

// A small seeded generator for the jitter (mulberry32): uniform in [0, 1).
function seeded(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

type Callback<T> = (err: grpc.ServiceError | null, value?: T) => void;
type UnaryFn<Req, Res> = (req: Req, md: grpc.Metadata, opts: grpc.CallOptions, cb: Callback<Res>) => unknown;

/** Client of one hitboxd (or whatever the address balances over). */
export class Client {
  readonly address: string;
  readonly options: Readonly<ClientOptions>;
  private readonly stub: HitboxClient;
  private readonly health: HealthClient;
  private readonly retry: RetryPolicy;
  private readonly random: () => number;
  private readonly tokens = new Map<string, string>();
  /** Set when the options could not be applied (an unreadable TLS file): every call fails with it. */
  private setupError: HitboxError | undefined;

  /** Connects (lazily) to `address` ("host:port", "unix:/path", ...). */
  constructor(address: string, options: ClientOptions = {}) {
    this.address = address;
    this.options = options;
    this.retry = { ...DEFAULT_RETRY, ...options.retry };
    this.random = options.jitterSeed ? seeded(options.jitterSeed) : Math.random;
    const maxBytes = options.maxMessageBytes ?? 64 << 20;
    const minBackoff = Math.max(1, options.minReconnectBackoffMs ?? 100);
    const channelOptions: grpc.ChannelOptions = {
      'grpc.max_receive_message_length': maxBytes,
      'grpc.max_send_message_length': maxBytes,
      'grpc.initial_reconnect_backoff_ms': minBackoff,
      'grpc.min_reconnect_backoff_ms': minBackoff,
      'grpc.max_reconnect_backoff_ms': Math.max(minBackoff, options.maxReconnectBackoffMs ?? 2000),
    };
    const tls = options.tls;
    if (tls?.serverName) {
      channelOptions['grpc.ssl_target_name_override'] = tls.serverName;
      channelOptions['grpc.default_authority'] = tls.serverName;
    }
    Object.assign(channelOptions, options.channelOptions);
    let credentials = grpc.credentials.createInsecure();
    if (tls && (tls.enabled || tls.caFile || tls.certFile || tls.keyFile)) {
      const read = (file: string | undefined, field: string): Buffer | null => {
        if (!file || this.setupError) return null;
        try {
          return fs.readFileSync(file);
        } catch {
          this.setupError = new HitboxError(Code.FAILED_PRECONDITION, `tls.${field}: cannot read ${file}`);
          return null;
        }
      };
      const ca = read(tls.caFile, 'caFile');
      const cert = read(tls.certFile, 'certFile');
      const key = read(tls.keyFile, 'keyFile');
      if (!this.setupError && !tls.certFile !== !tls.keyFile) {
        this.setupError = new HitboxError(Code.FAILED_PRECONDITION,
          'tls: a client certificate needs both certFile and keyFile');
      }
      // On an error the channel still verifies servers, so a token never goes out unprotected.
      credentials = this.setupError ? grpc.credentials.createSsl() : grpc.credentials.createSsl(ca, key, cert);
    }
    const { hitbox, health } = protos();
    this.stub = new hitbox.hitbox.v1.Hitbox(address, credentials, channelOptions) as unknown as HitboxClient;
    this.health = new health.grpc.health.v1.Health(address, credentials, channelOptions) as unknown as HealthClient;
  }

  /** Closes the channels; calls after it fail. */
  close(): void {
    this.stub.close();
    this.health.close();
  }

  // --- Tokens ---------------------------------------------------------------

  /** Sends `token` on every later call on `sessionId`; an empty token forgets it. */
  setSessionToken(sessionId: string, token: string): void {
    if (token) this.tokens.set(sessionId, token);
    else this.tokens.delete(sessionId);
  }

  /** The token this Client sends for `sessionId` (its own, or options.token). */
  sessionToken(sessionId: string): string {
    return this.tokens.get(sessionId) ?? this.options.token ?? '';
  }

  // --- Server -----------------------------------------------------------------

  /** grpc.health.v1 Check (empty service: the whole server). Retried. */
  async checkHealth(service = '', call?: CallOptions): Promise<HealthStatus> {
    const res = await this.run('Health.Check', true, call, undefined, (md, opts) =>
      this.unary<{ status: string }>(this.health, 'Check', { service }, md, opts));
    return res.status as HealthStatus;
  }

  // --- Sessions -------------------------------------------------------------

  /** Creates an empty session (no id: the server picks one) and keeps its token. */
  async createSession(spec: SessionSpec | string = {}, call?: CallOptions): Promise<SessionInfo> {
    const s = typeof spec === 'string' ? { sessionId: spec } : spec;
    // With an explicit id a retry cannot make a second session (at worst ALREADY_EXISTS).
    const res = await this.run('CreateSession', !!s.sessionId, call, undefined, (md, opts) =>
      this.unary<P.SessionInfo__Output>(this.stub, 'CreateSession', specToProto(s), md, opts));
    const info = sessionFromProto(res);
    if (info.token) this.setSessionToken(info.sessionId, info.token);
    return info;
  }

  /** Describes one session (NOT_FOUND when unknown). */
  async getSession(sessionId: string, call?: CallOptions): Promise<SessionInfo> {
    const res = await this.run('GetSession', true, call, sessionId, (md, opts) =>
      this.unary<P.SessionInfo__Output>(this.stub, 'GetSession', { sessionId }, md, opts));
    return sessionFromProto(res);
  }

  /** Every session of the server, sorted by id (admin token once credentials are on). */
  async listSessions(call?: CallOptions): Promise<SessionInfo[]> {
    const res = await this.run('ListSessions', true, call, undefined, (md, opts) =>
      this.unary<P.ListSessionsResponse__Output>(this.stub, 'ListSessions', {}, md, opts));
    return res.sessions.map(sessionFromProto);
  }

  /** Deletes a session and its colliders. Never retried. */
  async deleteSession(sessionId: string, call?: CallOptions): Promise<void> {
    await this.run('DeleteSession', false, call, sessionId, (md, opts) =>
      this.unary<object>(this.stub, 'DeleteSession', { sessionId }, md, opts));
    this.tokens.delete(sessionId);
  }

  // --- Maps -------------------------------------------------------------------

  /** The server's shared maps, sorted by id. */
  async listMaps(call?: CallOptions): Promise<MapInfo[]> {
    const res = await this.run('ListMaps', true, call, undefined, (md, opts) =>
      this.unary<P.ListMapsResponse__Output>(this.stub, 'ListMaps', {}, md, opts));
    return res.maps.map(mapFromProto);
  }

  /** One map (NOT_FOUND when unknown). */
  async getMap(mapId: string, call?: CallOptions): Promise<MapInfo> {
    const res = await this.run('GetMap', true, call, undefined, (md, opts) =>
      this.unary<P.MapInfo__Output>(this.stub, 'GetMap', { mapId }, md, opts));
    return mapFromProto(res);
  }

  // --- Colliders --------------------------------------------------------------

  /** Applies a batch atomically; with `expectedRevision` only at that revision. Never retried. */
  async applyChanges(sessionId: string, changes: readonly ColliderChange[], expectedRevision?: U64,
    call?: CallOptions): Promise<ApplyResult> {
    const req = {
      sessionId,
      changes: changesToProto(changes),
      expectedRevision: expectedRevision === undefined ? undefined : u64(expectedRevision, 'expected_revision'),
    };
    const res = await this.run('ApplyChanges', false, call, sessionId, (md, opts) =>
      this.unary<P.ApplyChangesResponse__Output>(this.stub, 'ApplyChanges', req, md, opts));
    return applyFromProto(res);
  }

  /** Applies a batch as the changes of game tick `tick` (lag compensation). Never retried. */
  async applyTick(sessionId: string, tick: U64, changes: readonly ColliderChange[],
    call?: CallOptions): Promise<ApplyResult> {
    const req = { sessionId, changes: changesToProto(changes), tick: u64(tick, 'tick') };
    const res = await this.run('ApplyChanges', false, call, sessionId, (md, opts) =>
      this.unary<P.ApplyChangesResponse__Output>(this.stub, 'ApplyChanges', req, md, opts));
    return applyFromProto(res);
  }

  /** Adds colliders (one atomic batch). */
  addColliders(sessionId: string, colliders: readonly Collider[], call?: CallOptions): Promise<ApplyResult> {
    return this.applyChanges(sessionId, colliders.map((c) => ({ add: c })), undefined, call);
  }

  /** Sets the pose of one collider. */
  moveCollider(sessionId: string, colliderId: U64, to: Pose, call?: CallOptions): Promise<ApplyResult> {
    return this.applyChanges(sessionId, [{ move: { id: colliderId, pose: to } }], undefined, call);
  }

  /** Removes colliders by id (any unknown id: NOT_FOUND, nothing removed). */
  removeColliders(sessionId: string, colliderIds: readonly U64[], call?: CallOptions): Promise<ApplyResult> {
    return this.applyChanges(sessionId, colliderIds.map((id) => ({ remove: id })), undefined, call);
  }

  /** Reads colliders by id, in the requested order (any unknown id: NOT_FOUND). */
  async getColliders(sessionId: string, colliderIds: readonly U64[], call?: CallOptions): Promise<ColliderSnapshot> {
    const ids = colliderIds.map((id, i) => u64(id, 'ids', i));
    const res = await this.run('GetColliders', true, call, sessionId, (md, opts) =>
      this.unary<P.GetCollidersResponse__Output>(this.stub, 'GetColliders', { sessionId, ids }, md, opts));
    return { revision: BigInt(res.revision), colliders: res.colliders.map(colliderFromProto) };
  }

  /** The whole set (every page collected), sorted by id; `includeMap`: the map's colliders too. */
  async listColliders(sessionId: string, options: { pageSize?: number; includeMap?: boolean } = {},
    call?: CallOptions): Promise<ColliderSnapshot> {
    const req = { sessionId, pageSize: options.pageSize ?? 0, includeMap: options.includeMap ?? false };
    // Collecting everything makes the stream idempotent: a retry starts over.
    return this.run('ListColliders', true, call, sessionId, async (md, opts) => {
      const out: ColliderSnapshot = { revision: 0n, colliders: [] };
      let first = true;
      for await (const page of this.stub.ListColliders(req, md, opts)) {
        if (first) out.revision = BigInt(page.revision);
        first = false;
        for (const c of page.colliders) out.colliders.push(colliderFromProto(c));
      }
      return out;
    });
  }

  /**
   * Streams the whole set page by page into `onPage` (sorted by id; return
   * false, or a promise of false, to stop early). Retried on UNAVAILABLE only
   * before the first page.
   */
  async listColliderPages(sessionId: string,
    onPage: (page: ColliderPage) => boolean | void | Promise<boolean | void>,
    options: { pageSize?: number; includeMap?: boolean } = {}, call?: CallOptions): Promise<void> {
    const req = { sessionId, pageSize: options.pageSize ?? 0, includeMap: options.includeMap ?? false };
    await this.run('ListColliders', true, call, sessionId, async (md, opts, state) => {
      const stream = this.stub.ListColliders(req, md, opts);
      for await (const page of stream) {
        state.retryable = false;  // the caller has seen data: a retry would repeat it
        const keep = await onPage({ revision: BigInt(page.revision), total: Number(page.total),
          colliders: page.colliders.map(colliderFromProto) });
        if (keep === false) {
          stream.on('error', () => {});  // the CANCELLED that cancel() brings
          stream.cancel();
          return;
        }
      }
    });
  }

  // --- Queries ----------------------------------------------------------------

  /**
   * Answers a batch of mixed queries, in order, at one revision. A batch with
   * a move that names applyToId changes the session: never retried.
   */
  async query(sessionId: string, queries: readonly Query[], call?: CallOptions): Promise<QueryBatchResult> {
    const req = { sessionId, queries: queriesToProto(queries) };
    const res = await this.run('Query', !appliesMoves(queries), call, sessionId, (md, opts) =>
      this.unary<WireQueryResponse>(this.stub, 'Query', req, md, opts));
    return { revision: big(res.revision), results: resultsFromProto(res.results, queries.length) };
  }

  /** Colliders `shape` at `pose` overlaps (touching counts), sorted by id. */
  async overlap(sessionId: string, shape: Shape, at: Pose, filter?: QueryFilter, wantContact = false,
    call?: CallOptions): Promise<OverlapHit[]> {
    const r = await this.query(sessionId, [{ overlap: { shape, pose: at, filter, wantContact } }], call);
    return r.results[0].overlaps;
  }

  /** The first collider `shape` hits moved from `pose` by `translation`; undefined when none. */
  async sweep(sessionId: string, shape: Shape, at: Pose, translation: Vec3, filter?: QueryFilter,
    call?: CallOptions): Promise<CastHit | undefined> {
    const r = await this.query(sessionId, [{ cast: { shape, pose: at, translation, filter } }], call);
    return r.results[0].hits[0];
  }

  /** Every collider hit along the sweep, sorted by (fraction, id). */
  async sweepAll(sessionId: string, shape: Shape, at: Pose, translation: Vec3, filter?: QueryFilter,
    call?: CallOptions): Promise<CastHit[]> {
    const r = await this.query(sessionId, [{ cast: { shape, pose: at, translation, filter, allHits: true } }], call);
    return r.results[0].hits;
  }

  /** The first collider the ray origin -> origin + translation hits; undefined when none. */
  async raycast(sessionId: string, origin: Vec3, translation: Vec3, filter?: QueryFilter,
    call?: CallOptions): Promise<CastHit | undefined> {
    const r = await this.query(sessionId, [{ raycast: { origin, translation, filter } }], call);
    return r.results[0].hits[0];
  }

  /** Character movement (collide-and-slide); with applyToId the server moves that collider too. */
  async move(sessionId: string, query: MoveQuery, call?: CallOptions): Promise<MoveResult> {
    const r = await this.query(sessionId, [{ move: query }], call);
    const m = r.results[0].move;
    if (!m) throw new HitboxError(Code.INTERNAL, "the server's answer to a move has no move result");
    return m;
  }

  /**
   * The queries above against the world at a past (real) tick of the
   * session's history: `client.rewind(1017.4).raycast(id, origin, translation)`.
   * Queries with their own atTick keep it.
   */
  rewind(tick: number): Rewound {
    return new Rewound(this, tick);
  }

  // --- Watches ----------------------------------------------------------------
  // Watches are added and removed as changes (Changes.addWatch, Changes.removeWatch)
  // in applyChanges or a tick; their events come back in ApplyResult and TickResult.

  /**
   * Reads the session's watch events as batches apply, one WatchEventBatch
   * per batch with events for `watchIds` (absent or empty: every watch), until
   * `onBatch` returns false (or a promise of false: resolves), the deadline
   * (`timeoutMs`; absent: none), or the session goes (rejects with
   * NOT_FOUND). `onRegistered` is called once the server has registered the
   * stream: the events of every batch applied after that reach it. Never retried.
   */
  async watchEvents(sessionId: string,
    onBatch: (batch: WatchEventBatch) => boolean | void | Promise<boolean | void>,
    options: { watchIds?: readonly U64[]; timeoutMs?: number; onRegistered?: () => void } = {}): Promise<void> {
    if (this.setupError) throw this.setupError;
    const req = { sessionId, watchIds: (options.watchIds ?? []).map((id, i) => u64(id, 'watch_ids', i)) };
    const md = this.metadata(this.sessionToken(sessionId), !!this.options.waitForReady);
    const opts: grpc.CallOptions = {};
    if (options.timeoutMs !== undefined) opts.deadline = Date.now() + options.timeoutMs;
    const stream = this.stub.WatchEvents(req, md, opts);
    // The server sends its headers once the stream is registered with the session.
    if (options.onRegistered) stream.once('metadata', () => options.onRegistered?.());
    try {
      for await (const m of stream) {
        const keep = await onBatch({ revision: BigInt(m.revision), events: eventsFromProto(m.events),
          eventsTruncated: m.eventsTruncated });
        if (keep === false) {
          stream.on('error', () => {});  // the CANCELLED that cancel() brings
          stream.cancel();
          return;
        }
      }
    } catch (e) {
      throw fromGrpcError(e);
    }
  }

  // --- Tick stream ------------------------------------------------------------

  /**
   * Opens a Tick stream on `sessionId` (with its token). Never fails here: an
   * unreachable server or unknown session is the error of the first tick(s).
   */
  openTickStream(sessionId: string, options: TickStreamOptions = {}): TickStream {
    const md = this.metadata(this.sessionToken(sessionId), !!this.options.waitForReady);
    const callOptions: grpc.CallOptions = {};
    if (options.timeoutMs !== undefined) callOptions.deadline = Date.now() + options.timeoutMs;
    if (this.setupError) return TickStream.failed(sessionId, this.setupError);
    // Tick answers are decoded raw (proto.ts), not as the generated __Output type says.
    const call = this.stub.Tick(md, callOptions) as unknown as ConstructorParameters<typeof TickStream>[0];
    return new TickStream(call, sessionId, options);
  }

  // --- Plumbing ---------------------------------------------------------------

  private metadata(token: string, waitForReady: boolean): grpc.Metadata {
    const md = waitForReady ? new grpc.Metadata({ waitForReady: true }) : new grpc.Metadata();
    if (token) md.set('authorization', `Bearer ${token}`);
    return md;
  }

  // One unary call of `stub`'s rpc `method`; Res is its generated __Output type.
  private unary<Res>(stub: grpc.Client, method: string, req: object, md: grpc.Metadata,
    opts: grpc.CallOptions): Promise<Res> {
    const fn = (stub as unknown as Record<string, UnaryFn<object, Res>>)[method];
    return new Promise<Res>((resolve, reject) => {
      fn.call(stub, req, md, opts, (err, res) => (err ? reject(err) : resolve(res as Res)));
    });
  }

  // Wait before attempt `failed + 1` (RetryPolicy), ms.
  private backoff(failed: number): number {
    const p = this.retry;
    let ms = p.initialBackoffMs;
    const mult = Math.max(1, p.multiplier);
    for (let i = 1; i < failed && ms < p.maxBackoffMs; ++i) ms *= mult;
    ms = Math.min(ms, p.maxBackoffMs);
    const jitter = Math.min(1, Math.max(0, p.jitter));
    return Math.max(0, ms * (1 + jitter * (this.random() * 2 - 1)));
  }

  /**
   * Runs `attempt` until it succeeds, fails with anything but UNAVAILABLE, is
   * not retryable, runs out of attempts, or the next wait would pass the
   * deadline; rejects with the last error as a HitboxError. An attempt may
   * clear state.retryable (a stream that has delivered data).
   */
  private async run<T>(method: string, retryable: boolean, call: CallOptions | undefined,
    sessionId: string | undefined,
    attempt: (md: grpc.Metadata, opts: grpc.CallOptions, state: { retryable: boolean }) => Promise<T>): Promise<T> {
    if (this.setupError) throw this.setupError;
    const token = sessionId === undefined ? this.options.token ?? '' : this.sessionToken(sessionId);
    const timeout = call?.timeoutMs ?? this.options.defaultTimeoutMs ?? 5000;
    const deadline = Date.now() + timeout;
    const waitForReady = !!(this.options.waitForReady || call?.waitForReady);
    const maxAttempts = Math.max(1, this.retry.maxAttempts);
    const state = { retryable };
    for (let n = 1; ; ++n) {
      if (Date.now() >= deadline) {
        throw new HitboxError(Code.DEADLINE_EXCEEDED,
          `${method}: the deadline passed before attempt ${n} could be sent`);
      }
      try {
        return await attempt(this.metadata(token, waitForReady), { deadline }, state);
      } catch (e) {
        const err = fromGrpcError(e);
        if (err.code !== Code.UNAVAILABLE || !state.retryable || call?.allowRetry === false || n >= maxAttempts) {
          throw err;
        }
        const wait = this.backoff(n);
        if (Date.now() + wait >= deadline) throw err;
        this.options.onRetry?.(method, n, err, wait);
        await new Promise((resolve) => setTimeout(resolve, wait));
      }
    }
  }
}

/** Queries at a past tick (Client.rewind). */
export class Rewound {
  constructor(private readonly client: Client, readonly tick: number) {}

  query(sessionId: string, queries: readonly Query[], call?: CallOptions): Promise<QueryBatchResult> {
    const at = queries.map((q) => (q.atTick === undefined ? { ...q, atTick: this.tick } : q));
    return this.client.query(sessionId, at, call);
  }

  async overlap(sessionId: string, shape: Shape, at: Pose, filter?: QueryFilter, wantContact = false,
    call?: CallOptions): Promise<OverlapHit[]> {
    const r = await this.query(sessionId, [{ overlap: { shape, pose: at, filter, wantContact } }], call);
    return r.results[0].overlaps;
  }

  async sweep(sessionId: string, shape: Shape, at: Pose, translation: Vec3, filter?: QueryFilter,
    call?: CallOptions): Promise<CastHit | undefined> {
    const r = await this.query(sessionId, [{ cast: { shape, pose: at, translation, filter } }], call);
    return r.results[0].hits[0];
  }

  async raycast(sessionId: string, origin: Vec3, translation: Vec3, filter?: QueryFilter,
    call?: CallOptions): Promise<CastHit | undefined> {
    const r = await this.query(sessionId, [{ raycast: { origin, translation, filter } }], call);
    return r.results[0].hits[0];
  }
}
