// TickStream against the real hitboxd: one awaitable call per tick, ticks in
// flight matched to their answers, and both error channels thrown: a refused
// tick alone (TickResponse.error), or the stream's status for every pending
// and later tick (session deleted, cancel, server killed).
import { after, before, describe, test } from 'node:test';
import * as assert from 'node:assert/strict';
import { Client, Code, Shapes, vec3, type Query } from '../src';
import { rejectsWith } from './support/expect';
import { Hitboxd } from './support/hitboxd';

let server: Hitboxd;
let client: Client;
before(async () => {
  server = await Hitboxd.start();
  client = new Client(server.address, { defaultTimeoutMs: 30000 });  // a loaded CI machine is slow
});
after(async () => {
  client?.close();
  if (server) assert.equal(await server.stop(), 0, server.output());
});

const down: Query = { raycast: { origin: vec3(0, 5, 0), translation: vec3(0, -10, 0) } };

async function session(): Promise<string> {
  const { sessionId } = await client.createSession();
  await client.addColliders(sessionId, [{ id: 1n, shape: Shapes.box(20, 0.5, 20), pose: { position: vec3(0, -0.5, 0) } }]);
  return sessionId;
}

describe('ticks', () => {
  // Ticks are numbered 1, 2, ...; a tick's queries see its changes.
  test('changes then queries, in order', async () => {
    const stream = client.openTickStream(await session());
    const t1 = await stream.tick([], [down]);
    assert.equal(t1.tick, 1n);
    assert.equal(t1.revision, 1n);
    assert.equal(t1.results[0].hits[0].id, 1n);
    const t2 = await stream.tick([{ add: { id: 2n, shape: Shapes.sphere(1), pose: { position: vec3(0, 2, 0) } } }], [down]);
    assert.equal(t2.tick, 2n);
    assert.equal(t2.revision, 2n);
    assert.equal(t2.results[0].hits[0].id, 2n);
    assert.equal(stream.pending, 0);
    await stream.finish();
    assert.equal(stream.done, true);
    assert.equal(stream.error, undefined);
    await rejectsWith(stream.tick([], [down]), Code.FAILED_PRECONDITION);
  });

  // 200 ticks in flight at once, each answered with its own tick and revision.
  test('pipelined', async () => {
    const stream = client.openTickStream(await session());
    const ticks = Array.from({ length: 200 }, (_, i) =>
      stream.tick([{ add: { id: BigInt(100 + i), shape: Shapes.sphere(0.1), pose: { position: vec3(i, 10, 0) } } }], [down]));
    assert.equal(stream.pending, 200);
    const results = await Promise.all(ticks);
    results.forEach((r, i) => {
      assert.equal(r.tick, BigInt(i + 1));
      assert.equal(r.revision, BigInt(i + 2));
    });
    await stream.finish();
  });

  // Game ticks: echoed, must increase, and numbered on after the last.
  test('tickAt', async () => {
    const stream = client.openTickStream(await session());
    assert.equal((await stream.tickAt(1000n, [], [down])).tick, 1000n);
    await rejectsWith(stream.tickAt(999n), Code.INVALID_ARGUMENT, 'must increase');
    assert.equal((await stream.tick()).tick, 1001n);
    await rejectsWith(stream.tickAt(2 ** 53 + 7), Code.INVALID_ARGUMENT, 'tick');
    await stream.finish();
  });

  // Ticks beyond maxInFlight fail at once; the others are answered.
  test('maxInFlight', async () => {
    const stream = client.openTickStream(await session(), { maxInFlight: 2 });
    const a = stream.tick([], [down]);
    const b = stream.tick([], [down]);
    await rejectsWith(stream.tick([], [down]), Code.RESOURCE_EXHAUSTED, 'maxInFlight 2');
    assert.deepEqual((await Promise.all([a, b])).map((r) => r.tick), [1n, 2n]);
    await stream.finish();
  });
});

describe('errors', () => {
  // A refused tick fails alone with the server's code and message; the stream goes on.
  test('TickResponse.error rejects that tick only', async () => {
    const stream = client.openTickStream(await session());
    const bad = stream.tick([{ remove: 77n }], [down]);
    const good = stream.tick([], [down]);
    await rejectsWith(bad, Code.NOT_FOUND, 'changes[0]');
    assert.equal((await good).results[0].hits[0].id, 1n);
    await rejectsWith(stream.tick([{ add: { id: 3n, shape: Shapes.sphere(0) } }]), Code.INVALID_ARGUMENT,
      'changes[0].add.shape.sphere.radius');
    // A lossy id is refused before it is sent.
    await rejectsWith(stream.tick([{ remove: 2 ** 55 }]), Code.INVALID_ARGUMENT, 'changes[0].remove');
    assert.equal(stream.done, false);
    await stream.finish();
  });

  // A first tick on an unknown session is a tick error, not the stream's end.
  test('unknown session', async () => {
    const stream = client.openTickStream('nobody');
    await rejectsWith(stream.tick([], [down]), Code.NOT_FOUND);
    assert.equal(stream.done, false);
    await stream.finish();
  });

  // Deleting the session ends the stream with NOT_FOUND: every later tick fails with it.
  test('session deleted', async () => {
    const id = await session();
    const stream = client.openTickStream(id);
    await stream.tick([], [down]);
    await client.deleteSession(id);
    await rejectsWith(stream.finish(), Code.NOT_FOUND);
    assert.equal(stream.done, true);
    assert.equal(stream.error?.code, Code.NOT_FOUND);
    await rejectsWith(stream.tick([], [down]), Code.NOT_FOUND);
  });

  // cancel(): pending ticks fail with CANCELLED.
  test('cancel', async () => {
    const stream = client.openTickStream(await session());
    const pending = stream.tick([], [down]);
    stream.cancel();
    await rejectsWith(pending, Code.CANCELLED);
    await rejectsWith(stream.tick(), Code.CANCELLED);
  });

  // The stream's deadline ends it with DEADLINE_EXCEEDED.
  test('deadline', async () => {
    const stream = client.openTickStream(await session(), { timeoutMs: 1 });
    assert.equal((await stream.ended())?.code, Code.DEADLINE_EXCEEDED);
    await rejectsWith(stream.tick(), Code.DEADLINE_EXCEEDED);
  });

  // A killed server breaks the stream: pending and later ticks fail with
  // UNAVAILABLE. Once it is back on its port (sessions gone), the same Client
  // makes the session again and opens a new stream, waiting for the reconnect.
  test('server killed and restarted', async (t) => {
    const first = await Hitboxd.start();
    const c = new Client(first.address);
    const { sessionId } = await c.createSession();
    const stream = c.openTickStream(sessionId);
    await stream.tick();
    await first.kill();
    await rejectsWith(stream.finish(), Code.UNAVAILABLE);
    await rejectsWith(stream.tick(), Code.UNAVAILABLE);
    await rejectsWith(c.getSession(sessionId, { allowRetry: false }), Code.UNAVAILABLE);
    // Another process may have taken the port meanwhile (CTest runs tests side by side): then skip.
    const second = await Hitboxd.start([], 1, first.port).catch(() => undefined);
    if (!second) {
      c.close();
      await first.stop();
      t.skip(`port ${first.port} was taken before hitboxd restarted on it`);
      return;
    }
    try {
      const again = { waitForReady: true, timeoutMs: 30000 };
      await c.createSession(sessionId, again);
      await c.addColliders(sessionId, [{ id: 1n, shape: Shapes.sphere(1) }], again);
      const next = c.openTickStream(sessionId);
      assert.equal((await next.tick([], [down])).results[0].hits[0].id, 1n);
      await next.finish();
    } finally {
      c.close();
      await first.stop();
      await second.stop();
    }
  });
});
