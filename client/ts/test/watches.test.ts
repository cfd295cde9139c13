// Watches through the TypeScript client against the real hitboxd: addWatch
// and removeWatch changes, events on applyChanges and tick answers, the
// watchEvents reader (with a watch filter, ending with NOT_FOUND when the
// session goes), SessionInfo.watches, and a batch refused for its watch work.
import { after, before, describe, test } from 'node:test';
import * as assert from 'node:assert/strict';
import { Changes, Client, Code, Shapes, vec3, type WatchEvent, type WatchEventBatch } from '../src';
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

const brief = (es: WatchEvent[]) => es.map((e) => `${e.watchId}:${e.colliderId}:${e.kind}`);

async function balls(xs: number[]): Promise<string> {
  const { sessionId } = await client.createSession();
  await client.addColliders(sessionId, xs.map((x, i) => ({ id: BigInt(i + 1), shape: Shapes.sphere(0.5),
    pose: { position: vec3(x, 0, 0) } })));
  return sessionId;
}

describe('watches', () => {
  // A new watch reports ENTER at once; tick moves report ENTER and EXIT with
  // the tick; removing the watch reports EXIT for what it held.
  test('events on applyChanges and ticks', async () => {
    const sid = await balls([0, 10]);
    const r = await client.applyTick(sid, 3, [Changes.addWatch({ id: 7n, shape: Shapes.sphere(2) })]);
    assert.deepEqual(brief(r.events), ['7:1:ENTER']);
    assert.equal(r.events[0].tick, 3n);
    assert.equal(r.events[0].subShape, 0);
    assert.equal(r.eventsTruncated, false);
    const stream = client.openTickStream(sid);
    let t = await stream.tickAt(4, [Changes.move(1, { position: vec3(-9, 0, 0) }), Changes.move(2, { position: vec3(1, 0, 0) })]);
    assert.deepEqual(brief(t.events), ['7:1:EXIT', '7:2:ENTER']);
    assert.ok(t.events.every((e) => e.tick === 4n));
    t = await stream.tickAt(5, [Changes.move(1, { position: vec3(-8, 0, 0) })]);
    assert.deepEqual(t.events, []);
    t = await stream.tickAt(6, [Changes.removeWatch(7)]);
    assert.deepEqual(brief(t.events), ['7:2:EXIT']);
    await stream.finish();
    assert.deepEqual((await client.getSession(sid)).watches, []);
  });

  // An attached watch follows its collider and never holds it; the session
  // lists it with its world pose and what is inside.
  test('attached watch and SessionInfo.watches', async () => {
    const sid = await balls([0, 10, 20]);
    await client.applyChanges(sid, [Changes.addWatch({ id: 5, shape: Shapes.sphere(3), pose: { position: vec3(1, 0, 0) },
      attachTo: 1, mask: 1, ignoreIds: [3] })]);
    const r = await client.moveCollider(sid, 1, { position: vec3(8, 0, 0) });
    assert.deepEqual(brief(r.events), ['5:2:ENTER']);
    const [w] = (await client.getSession(sid)).watches;
    assert.equal(w.watch.id, 5n);
    assert.equal(w.watch.attachTo, 1n);
    assert.equal(w.watch.mask, 1);
    assert.deepEqual(w.watch.ignoreIds, [3n]);
    assert.deepEqual(w.worldPose.position, vec3(9, 0, 0));
    assert.deepEqual(w.inside, [2n]);
    assert.equal(w.insideCount, 1);
    assert.deepEqual(brief((await client.removeColliders(sid, [1])).events), ['5:2:EXIT']);
    assert.deepEqual((await client.getSession(sid)).watches, []);
  });

  // The reader gets every applied batch's events for its watches, in order,
  // with the revision; it rejects with NOT_FOUND when the session goes.
  test('watchEvents reader', async () => {
    const sid = await balls([0, 10]);
    await client.applyChanges(sid, [Changes.addWatch({ id: 1, shape: Shapes.sphere(2) }),
      Changes.addWatch({ id: 2, shape: Shapes.sphere(2), pose: { position: vec3(10, 0, 0) } })]);
    const all: WatchEventBatch[] = [];
    const two: WatchEventBatch[] = [];
    let registered = 0;
    let ready: () => void = () => {};
    const bothRegistered = new Promise<void>((resolve) => { ready = resolve; });
    const onRegistered = () => { if (++registered === 2) ready(); };
    // Both end with the session: their rejections are awaited from the start.
    const ends = [
      rejectsWith(client.watchEvents(sid, (b) => { all.push(b); }, { timeoutMs: 30000, onRegistered }), Code.NOT_FOUND),
      rejectsWith(client.watchEvents(sid, (b) => { two.push(b); }, { watchIds: [2], timeoutMs: 30000, onRegistered }),
        Code.NOT_FOUND),
    ];
    await bothRegistered;
    const answers = [await client.moveCollider(sid, 1, { position: vec3(9, 0, 0) }),
      await client.moveCollider(sid, 2, { position: vec3(30, 0, 0) })];
    await client.deleteSession(sid);
    await Promise.all(ends);
    assert.deepEqual(all.map((b) => b.revision), answers.map((a) => a.revision));
    assert.deepEqual(all.map((b) => b.events), answers.map((a) => a.events));
    assert.deepEqual(brief(all[0].events), ['1:1:EXIT', '2:1:ENTER']);
    assert.deepEqual(two.map((b) => brief(b.events)), [['2:1:ENTER'], ['2:2:EXIT']]);
  });

  // onBatch returning false ends the reader quietly.
  test('watchEvents stops when asked', async () => {
    const sid = await balls([0]);
    await client.applyChanges(sid, [Changes.addWatch({ id: 1, shape: Shapes.sphere(2), pose: { position: vec3(10, 0, 0) } })]);
    let registered: () => void = () => {};
    const isRegistered = new Promise<void>((resolve) => { registered = resolve; });
    let seen = 0;
    const reading = client.watchEvents(sid, () => { ++seen; return false; }, { timeoutMs: 30000, onRegistered: () => registered() });
    await isRegistered;
    await client.moveCollider(sid, 1, { position: vec3(10, 0, 0) });
    await reading;
    assert.equal(seen, 1);
  });

  // Bad watch changes are named before sending, or refused whole by the server.
  test('bad watch changes', async () => {
    const sid = await balls([0]);
    await rejectsWith(client.applyChanges(sid, [Changes.addWatch({ id: -1, shape: Shapes.sphere(1) })]),
      Code.INVALID_ARGUMENT, 'changes[0].add_watch.id');
    await rejectsWith(client.applyChanges(sid, [Changes.removeWatch(9)]), Code.NOT_FOUND,
      'changes[0].remove_watch: watch 9');
    await rejectsWith(client.applyChanges(sid, [Changes.addWatch({ id: 1, shape: Shapes.sphere(1), attachTo: 4 })]),
      Code.NOT_FOUND, 'attach_to: collider 4');
    assert.equal((await client.getSession(sid)).revision, 1n);
  });

  // A batch moving a collider that carries many watches needs more watch
  // work than the session's budget: refused whole, the session unchanged.
  test('watch work over the budget is refused', async () => {
    const { sessionId: sid } = await client.createSession({ limits: { maxPairTestsPerMessage: 2000 } });
    await client.addColliders(sid, [-100, ...Array.from({ length: 40 }, (_, i) => i % 7)].map((x, i) =>
      ({ id: BigInt(i + 1), shape: Shapes.sphere(0.5), pose: { position: vec3(x, 0, 0) } })));
    await client.applyChanges(sid, Array.from({ length: 1000 }, (_, k) => Changes.addWatch({ id: k + 1,
      shape: Shapes.sphere(2), pose: { position: vec3(0.05 * ((k + 1) % 40), 0, 0) }, attachTo: 1 })));
    const before = await client.getSession(sid);
    await rejectsWith(client.moveCollider(sid, 1, { position: vec3(3, 0, 0) }), Code.RESOURCE_EXHAUSTED,
      'updating the watches after this batch');
    const after = await client.getSession(sid);
    assert.equal(after.revision, before.revision);
    assert.ok(after.watches.every((w) => w.insideCount === 0));
    assert.deepEqual((await client.getColliders(sid, [1])).colliders[0].pose.position, vec3(-100, 0, 0));
  });
});
