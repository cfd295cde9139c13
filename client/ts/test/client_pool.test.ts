// ClientPool: the same rendezvous routing as the C++ ClientPool and
// `hitboxctl route` (FNV-1a vectors, the owner hitboxctl names for random
// session ids, minimal disruption), and sessions created on their owner.
import { after, before, describe, test } from 'node:test';
import * as assert from 'node:assert/strict';
import { execFileSync } from 'child_process';
import * as fs from 'fs';
import * as path from 'path';
import { ClientPool, Code, fnv1a64, rendezvousPick } from '../src';
import { rejectsWith } from './support/expect';
import { Hitboxd } from './support/hitboxd';

const HITBOXCTL = process.env.HITBOXCTL ?? path.resolve(__dirname, '../../../../build/bin/hitboxctl');

// Session ids from a fixed linear congruential sequence (reproducible).
function sessionIds(n: number, seed: number): string[] {
  const chars = 'abcdefghijklmnopqrstuvwxyz0123456789-_.:';
  let x = seed;
  const next = () => (x = (Math.imul(x, 1103515245) + 12345) >>> 0) >>> 8;
  return Array.from({ length: n }, () => Array.from({ length: 1 + (next() % 24) }, () => chars[next() % chars.length]).join(''));
}

const POOL = ['127.0.0.1:7001', '127.0.0.1:7002', '127.0.0.1:7003', '127.0.0.1:7004', '127.0.0.1:7005'];

describe('routing', () => {
  // Published FNV-1a 64 test vectors (Fowler/Noll/Vo).
  test('FNV-1a vectors', () => {
    assert.equal(fnv1a64(''), 0xcbf29ce484222325n);
    assert.equal(fnv1a64('a'), 0xaf63dc4c8601ec8cn);
    assert.equal(fnv1a64('foobar'), 0x85944171f73967e8n);
  });

  // The owner hitboxctl (the C++ ClientPool) names, for 40 random ids.
  test('same owner as hitboxctl route', { skip: !fs.existsSync(HITBOXCTL) && `no ${HITBOXCTL}` }, () => {
    for (const id of sessionIds(40, 7)) {
      const out = JSON.parse(execFileSync(HITBOXCTL, ['--json', 'route', id, '--pool', POOL.join(',')], { encoding: 'utf8' }));
      assert.equal(POOL[rendezvousPick(POOL, id)], out.address, id);
    }
  });

  // Removing an address moves exactly the sessions it owned; list order does not matter.
  test('minimal disruption', () => {
    const reversed = [...POOL].reverse();
    for (const removed of POOL) {
      const without = POOL.filter((a) => a !== removed);
      for (const id of sessionIds(500, 11)) {
        const before = POOL[rendezvousPick(POOL, id)];
        assert.equal(reversed[rendezvousPick(reversed, id)], before);
        if (before !== removed) assert.equal(without[rendezvousPick(without, id)], before, id);
      }
    }
    assert.equal(rendezvousPick([], 'x'), 0);
  });
});

describe('pool', () => {
  let servers: Hitboxd[] = [];
  before(async () => {
    servers = await Promise.all([Hitboxd.start(), Hitboxd.start()]);
  });
  after(async () => {
    for (const s of servers) assert.equal(await s.stop(), 0, s.output());
  });

  // Each session lives on its owner only; calls through forSession find it.
  test('sessions on their owners', async () => {
    const pool = new ClientPool(servers.map((s) => s.address));
    assert.deepEqual(pool.addresses(), servers.map((s) => s.address).sort());
    const ids = sessionIds(8, 3).map((s, i) => `p${i}-${s.replace(/[^A-Za-z0-9._:-]/g, '')}`);
    for (const id of ids) await pool.createSession(id);
    for (const id of ids) {
      const owner = pool.addressFor(id);
      assert.equal((await pool.forSession(id)!.getSession(id)).sessionId, id);
      const other = pool.addresses().find((a) => a !== owner)!;
      await rejectsWith(pool.forAddress(other)!.getSession(id), Code.NOT_FOUND);
    }
    await rejectsWith(pool.createSession({}), Code.INVALID_ARGUMENT, 'sessionId');
    for (const a of pool.addresses()) assert.equal(pool.removeAddress(a), true);
    assert.equal(pool.forSession('x'), undefined);
    await rejectsWith(pool.createSession('x'), Code.UNAVAILABLE);
    pool.close();
  });
});
