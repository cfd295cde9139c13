// TickStream: the bidirectional Tick stream of one session as one awaitable
// call per tick: `const r = await stream.tick(changes, queries)`.
//
// Requests are written to the grpc-js duplex stream as they come (it queues
// them); each answer is matched to its tick by the tick number, so many ticks
// may be in flight. Both error channels are thrown: a tick the server refuses
// (TickResponse.error) rejects that tick alone and the stream goes on; a
// stream that ends with a status (server gone, session deleted, deadline,
// cancel, bad token) rejects every pending and later tick with it. The stream
// never reconnects by itself (see docs/client.md, "Server restart").
import type * as grpc from '@grpc/grpc-js';
import { Code, HitboxError } from './errors';
import {
  big, changesToProto, queriesToProto, resultsFromProto, u64, wireEventsFromProto, type WireTickResponse,
} from './convert';
import type { TickRequest } from './wire_types';
import type { ColliderChange, Query, TickResult, U64 } from './types';

/** Options of a tick stream. */
export interface TickStreamOptions {
  /** Deadline of the whole stream from when it opens, ms; absent: none. */
  timeoutMs?: number;
  /** Most ticks in flight; a tick beyond it fails at once with RESOURCE_EXHAUSTED. Default 1024. */
  maxInFlight?: number;
}

interface Pending {
  tick: bigint;
  queries: number;
  resolve: (r: TickResult) => void;
  reject: (e: HitboxError) => void;
}

type Duplex = grpc.ClientDuplexStream<TickRequest, WireTickResponse>;

export class TickStream {
  readonly sessionId: string;
  private readonly call: Duplex | undefined;
  private readonly maxInFlight: number;
  // Ticks sent and not yet answered, by increasing tick (ticks only increase).
  private readonly pendingTicks: Pending[] = [];
  private nextTick = 1n;
  private finishing = false;
  private isEnded = false;
  private finalError: HitboxError | undefined;
  private readonly endWaiters: Array<() => void> = [];

  /** @internal Client.openTickStream makes streams. */
  constructor(call: Duplex | undefined, sessionId: string, options: TickStreamOptions = {}) {
    this.call = call;
    this.sessionId = sessionId;
    this.maxInFlight = Math.max(1, options.maxInFlight ?? 1024);
    if (!call) return;
    call.on('data', (r: WireTickResponse) => this.onResponse(r));
    // 'error' carries the same status as 'status'; a listener keeps Node from throwing it.
    call.on('error', () => {});
    call.on('status', (s: grpc.StatusObject) =>
      this.end(s.code === Code.OK ? undefined : new HitboxError(s.code, s.details)));
  }

  /** @internal A stream that failed before it opened (e.g. an unreadable TLS file). */
  static failed(sessionId: string, error: HitboxError): TickStream {
    const s = new TickStream(undefined, sessionId);
    s.end(error);
    return s;
  }

  /**
   * Sends one tick (changes applied, then queries answered) numbered after
   * the last one (1, 2, 3, ... on a new stream) and resolves with its answer.
   */
  tick(changes: readonly ColliderChange[] = [], queries: readonly Query[] = []): Promise<TickResult> {
    return this.send(undefined, changes, queries);
  }

  /**
   * Sends game tick `tick`: its changes become the session's history for that
   * tick. The ticks of a stream must increase (else INVALID_ARGUMENT at once).
   */
  tickAt(tick: U64, changes: readonly ColliderChange[] = [], queries: readonly Query[] = []): Promise<TickResult> {
    return this.send(tick, changes, queries);
  }

  /** Ticks sent and not yet answered. */
  get pending(): number {
    return this.pendingTicks.length;
  }

  /** True once the stream has ended (broken, cancelled or finished). */
  get done(): boolean {
    return this.isEnded;
  }

  /** The error the stream ended with; undefined while it runs or when it finished cleanly. */
  get error(): HitboxError | undefined {
    return this.finalError;
  }

  /**
   * Half-closes the stream and waits for every pending tick to be answered and
   * the stream to end; rejects with the stream's error if it ended with one.
   * tick() afterwards fails with FAILED_PRECONDITION.
   */
  async finish(): Promise<void> {
    if (!this.isEnded && !this.finishing) {
      this.finishing = true;
      this.call?.end();
    }
    if (!this.isEnded) await new Promise<void>((resolve) => this.endWaiters.push(resolve));
    if (this.finalError) throw this.finalError;
  }

  /** Waits for the stream to end, without half-closing it: its error, or undefined. */
  async ended(): Promise<HitboxError | undefined> {
    if (!this.isEnded) await new Promise<void>((resolve) => this.endWaiters.push(resolve));
    return this.finalError;
  }

  /** Cancels the stream: pending ticks fail with CANCELLED. */
  cancel(): void {
    this.call?.cancel();
  }

  private send(game: U64 | undefined, changes: readonly ColliderChange[], queries: readonly Query[]): Promise<TickResult> {
    if (this.isEnded) {
      return Promise.reject(this.finalError ?? new HitboxError(Code.FAILED_PRECONDITION, 'the tick stream has finished'));
    }
    if (this.finishing) {
      return Promise.reject(new HitboxError(Code.FAILED_PRECONDITION, 'the tick stream is finishing'));
    }
    if (this.pendingTicks.length >= this.maxInFlight) {
      return Promise.reject(new HitboxError(Code.RESOURCE_EXHAUSTED,
        `tick stream has ${this.pendingTicks.length} ticks in flight (maxInFlight ${this.maxInFlight})`));
    }
    let request: TickRequest;
    let tick: bigint;
    try {
      tick = game === undefined ? this.nextTick : BigInt(u64(game, 'tick'));
      if (tick < this.nextTick) {
        throw new HitboxError(Code.INVALID_ARGUMENT,
          `tick ${tick}: the ticks of a stream must increase (the next is at least ${this.nextTick})`);
      }
      request = { sessionId: this.sessionId, tick: u64(tick, 'tick'), changes: changesToProto(changes),
        queries: queriesToProto(queries) };
    } catch (e) {
      return Promise.reject(e);
    }
    this.nextTick = tick + 1n;
    return new Promise<TickResult>((resolve, reject) => {
      this.pendingTicks.push({ tick, queries: queries.length, resolve, reject });
      this.call!.write(request);
    });
  }

  private onResponse(r: WireTickResponse): void {
    const list = this.pendingTicks;
    let k = 0;
    const tick = big(r.tick);
    while (k < list.length && list[k].tick !== tick) ++k;
    if (k === list.length) return;  // not a tick of ours: ignored
    const p = k === 0 ? list.shift()! : list.splice(k, 1)[0];
    if (r.error !== null && r.error.code !== 0) {
      p.reject(new HitboxError(r.error.code, r.error.message));
      return;
    }
    try {
      p.resolve({ tick, revision: big(r.revision), results: resultsFromProto(r.results, p.queries),
        events: wireEventsFromProto(r.events), eventsTruncated: r.eventsTruncated });
    } catch (e) {
      p.reject(e as HitboxError);
    }
  }

  private end(error: HitboxError | undefined): void {
    if (this.isEnded) return;
    this.isEnded = true;
    this.finalError = error;
    const failure = error ??
      new HitboxError(Code.ABORTED, 'the server closed the tick stream before answering this tick');
    for (const p of this.pendingTicks.splice(0)) p.reject(failure);
    for (const w of this.endWaiters.splice(0)) w();
  }
}
