// ClientPool: one Client per server address, each session routed to its
// owner by rendezvous hashing exactly as the C++ hitbox::ClientPool
// (client/include/hitbox/client_pool.h) and `hitboxctl route` do, so that game
// servers in either language agree on a session's hitboxd.
//
// Rendezvous hashing (Thaler & Ravishankar, IEEE/ACM ToN 1998): the owner of
// session s is the address a maximising SplitMix64(FNV-1a64(a) ^
// SplitMix64(FNV-1a64(s))) over the UTF-8 bytes; ties go to the smaller address.
import { Client, type CallOptions, type ClientOptions } from './client';
import { Code, HitboxError } from './errors';
import type { SessionInfo, SessionSpec } from './types';

const M64 = (1n << 64n) - 1n;

/** 64-bit FNV-1a of the UTF-8 bytes of `s` (offset basis 0xcbf29ce484222325, prime 0x100000001b3). */
export function fnv1a64(s: string): bigint {
  let h = 0xcbf29ce484222325n;
  for (const b of Buffer.from(s, 'utf8')) h = ((h ^ BigInt(b)) * 0x100000001b3n) & M64;
  return h;
}

/** SplitMix64's finalizer (Steele, Lea & Flood, OOPSLA 2014). */
export function splitMix64(x: bigint): bigint {
  x = (x + 0x9e3779b97f4a7c15n) & M64;
  x = ((x ^ (x >> 30n)) * 0xbf58476d1ce4e5b9n) & M64;
  x = ((x ^ (x >> 27n)) * 0x94d049bb133111ebn) & M64;
  return x ^ (x >> 31n);
}

/** Rendezvous weight of `address` for `sessionId`; the highest owns the session. */
export function rendezvousScore(address: string, sessionId: string): bigint {
  return splitMix64(fnv1a64(address) ^ splitMix64(fnv1a64(sessionId)));
}

/** Index in `addresses` of the owner of `sessionId` (ties: the smaller address); addresses.length when empty. */
export function rendezvousPick(addresses: readonly string[], sessionId: string): number {
  const s = splitMix64(fnv1a64(sessionId));
  let best = addresses.length;
  let bestScore = 0n;
  for (let i = 0; i < addresses.length; ++i) {
    const score = splitMix64(fnv1a64(addresses[i]) ^ s);
    if (best === addresses.length || score > bestScore ||
        (score === bestScore && Buffer.compare(Buffer.from(addresses[i]), Buffer.from(addresses[best])) < 0)) {
      best = i;
      bestScore = score;
    }
  }
  return best;
}

/** A set of Clients, one per server address, with rendezvous routing by session id. */
export class ClientPool {
  private readonly clients = new Map<string, Client>();
  private readonly factory: (address: string) => Client;

  /** One Client per distinct address, each made with `options` (or by `factory`). */
  constructor(addresses: readonly string[], options: ClientOptions | ((address: string) => Client) = {}) {
    this.factory = typeof options === 'function' ? options : (address) => new Client(address, options);
    for (const a of addresses) this.addAddress(a);
  }

  /** The Client owning `sessionId`; undefined when the pool is empty. */
  forSession(sessionId: string): Client | undefined {
    const address = this.addressFor(sessionId);
    return address === '' ? undefined : this.clients.get(address);
  }

  /** The address owning `sessionId`; '' when the pool is empty. */
  addressFor(sessionId: string): string {
    const addresses = [...this.clients.keys()];
    const i = rendezvousPick(addresses, sessionId);
    return i < addresses.length ? addresses[i] : '';
  }

  /** The Client of `address`; undefined when it is not in the pool. */
  forAddress(address: string): Client | undefined {
    return this.clients.get(address);
  }

  /** Adds an address (false if present): only the sessions it now wins move to it. */
  addAddress(address: string): boolean {
    if (this.clients.has(address)) return false;
    this.clients.set(address, this.factory(address));
    return true;
  }

  /** Removes an address (false if absent) and closes its Client: only the sessions it owned move. */
  removeAddress(address: string): boolean {
    const c = this.clients.get(address);
    if (!c) return false;
    this.clients.delete(address);
    c.close();
    return true;
  }

  /** The addresses, sorted. */
  addresses(): string[] {
    return [...this.clients.keys()].sort();
  }

  get size(): number {
    return this.clients.size;
  }

  /** Creates a session on its owner; the id is required (the route depends on it). */
  async createSession(spec: SessionSpec | string, call?: CallOptions): Promise<SessionInfo> {
    const s = typeof spec === 'string' ? { sessionId: spec } : spec;
    if (!s.sessionId) {
      throw new HitboxError(Code.INVALID_ARGUMENT, 'ClientPool.createSession needs a sessionId: the route depends on it');
    }
    const client = this.forSession(s.sessionId);
    if (!client) throw new HitboxError(Code.UNAVAILABLE, 'the ClientPool has no address');
    return client.createSession(s, call);
  }

  /** Closes every Client. */
  close(): void {
    for (const c of this.clients.values()) c.close();
  }
}
