// Client against the real hitboxd: sessions, changes, every query kind, moves,
// rewind, maps, ids as bigints (and lossy numbers refused), answers past
// grpc-js's 4 MiB default, and errors mapped to HitboxError.
import { after, before, describe, test } from 'node:test';
import * as assert from 'node:assert/strict';
import * as path from 'path';
import { Client, Code, Shapes, vec3, type Collider } from '../src';
import { rejectsWith } from './support/expect';
import { Hitboxd } from './support/hitboxd';

const MAPS = path.resolve(__dirname, '../../../../examples/maps');

let server: Hitboxd;
let client: Client;
before(async () => {
  server = await Hitboxd.start(['--maps', MAPS]);
  client = new Client(server.address, { defaultTimeoutMs: 30000 });  // a loaded CI machine is slow
});
after(async () => {
  client?.close();
  if (server) assert.equal(await server.stop(), 0, server.output());
});

// A 40 x 1 x 40 m floor with its top at y = 0 and a wall 5 m ahead (+z) on layer 1.
const floor: Collider = { id: 1n, shape: Shapes.box(20, 0.5, 20), pose: { position: vec3(0, -0.5, 0) } };
const wall: Collider = { id: 2n, shape: Shapes.box(5, 2, 0.25), pose: { position: vec3(0, 2, 5) }, layer: 1,
  userData: 0xbeefn };

describe('sessions', () => {
  // Created with an id and limits, described, listed, deleted; then unknown.
  test('lifecycle', async () => {
    assert.equal(await client.checkHealth(), 'SERVING');
    const info = await client.createSession({ sessionId: 'life', limits: { maxHitsPerQuery: 7 } });
    assert.equal(info.sessionId, 'life');
    assert.match(info.token, /^[0-9a-f]{64}$/);
    assert.equal(info.limits.maxHitsPerQuery, 7);
    assert.equal(info.revision, 0n);
    assert.equal(client.sessionToken('life'), info.token);
    const got = await client.getSession('life');
    assert.equal(got.colliderCount, 0);
    assert.equal(got.token, '');
    assert.ok((await client.listSessions()).some((s) => s.sessionId === 'life'));
    await rejectsWith(client.createSession('life'), Code.ALREADY_EXISTS);
    await client.deleteSession('life');
    await rejectsWith(client.getSession('life'), Code.NOT_FOUND, 'life');
    await rejectsWith(client.deleteSession('life'), Code.NOT_FOUND);
  });

  // An id the server refuses is INVALID_ARGUMENT naming the field.
  test('bad id', async () => {
    await rejectsWith(client.createSession('no spaces'), Code.INVALID_ARGUMENT, 'session_id');
  });
});

describe('changes', () => {
  // Add, move, replace, remove: revisions count batches; reads give back what was sent.
  test('add, move, replace, remove, read', async () => {
    const { sessionId: id } = await client.createSession();
    let r = await client.addColliders(id, [floor, wall, { id: 3n, shape: Shapes.sphere(1) }]);
    assert.deepEqual(r, { revision: 1n, colliderCount: 3, events: [], eventsTruncated: false });
    r = await client.moveCollider(id, 3n, { position: vec3(4, 5, 6) });
    assert.equal(r.revision, 2n);
    r = await client.applyChanges(id, [{ replace: { id: 3n, shape: Shapes.capsule(0.5, 1), layer: 4, userData: 9n } }]);
    assert.equal(r.revision, 3n);
    const snap = await client.getColliders(id, [3n, 2n]);
    assert.equal(snap.revision, 3n);
    assert.deepEqual(snap.colliders.map((c) => c.id), [3n, 2n]);
    assert.deepEqual(snap.colliders[0].shape, { capsule: { radius: 0.5, halfHeight: 1 } });
    assert.equal(snap.colliders[0].layer, 4);
    assert.equal(snap.colliders[0].userData, 9n);
    assert.deepEqual(snap.colliders[1].pose.position, vec3(0, 2, 5));
    assert.deepEqual(snap.colliders[1].shape, { box: { halfExtents: vec3(5, 2, 0.25) } });
    r = await client.removeColliders(id, [1n]);
    assert.deepEqual(r, { revision: 4n, colliderCount: 2, events: [], eventsTruncated: false });
    const all = await client.listColliders(id, { pageSize: 1 });
    assert.deepEqual(all.colliders.map((c) => c.id), [2n, 3n]);
    assert.equal(all.revision, 4n);
  });

  // Pages one by one, in id order, and a stop after the first.
  test('listColliderPages', async () => {
    const { sessionId: id } = await client.createSession();
    await client.addColliders(id, Array.from({ length: 5 }, (_, i) => ({ id: BigInt(10 - i), shape: Shapes.sphere(1) })));
    const pages: bigint[][] = [];
    await client.listColliderPages(id, (p) => {
      assert.equal(p.total, 5);
      assert.equal(p.revision, 1n);
      pages.push(p.colliders.map((c) => c.id));
    }, { pageSize: 2 });
    assert.deepEqual(pages, [[6n, 7n], [8n, 9n], [10n]]);
    let seen = 0;
    await client.listColliderPages(id, async () => ++seen < 1, { pageSize: 2 });
    assert.equal(seen, 1);
    await rejectsWith(client.listColliderPages('nobody', () => {}), Code.NOT_FOUND);
  });

  // Refused batches change nothing, and say why.
  test('errors', async () => {
    const { sessionId: id } = await client.createSession();
    await client.addColliders(id, [floor]);
    await rejectsWith(client.applyChanges(id, [{ remove: 1n }], 0n), Code.FAILED_PRECONDITION);
    await rejectsWith(client.removeColliders(id, [1n, 99n]), Code.NOT_FOUND);
    await rejectsWith(client.addColliders(id, [{ id: 5n, shape: Shapes.sphere(1) }, { id: 6n, shape: Shapes.sphere(-1) }]),
      Code.INVALID_ARGUMENT, 'changes[1].add.shape.sphere.radius');
    await rejectsWith(client.addColliders(id, [floor]), Code.ALREADY_EXISTS);
    await rejectsWith(client.getColliders(id, [42n]), Code.NOT_FOUND);
    const info = await client.getSession(id);
    assert.equal(info.revision, 1n);
    assert.equal(info.colliderCount, 1);
    await rejectsWith(client.query(id, [{ raycast: { origin: vec3(0, 1, 0), translation: vec3(NaN, 0, 0) } }]),
      Code.INVALID_ARGUMENT, 'queries[0].raycast.translation');
  });
});

describe('ids', () => {
  // Ids and user data above 2^53 go and come back exact, as bigints.
  test('above 2^53 round-trip exactly', async () => {
    const { sessionId: id } = await client.createSession();
    const big = [2n ** 64n - 1n, 2n ** 53n + 1n, 9007199254740993n + 2n];
    await client.addColliders(id, big.map((b, i) => ({ id: b, userData: b - 1n, shape: Shapes.sphere(0.5),
      pose: { position: vec3(i * 3, 0, 0) } })));
    const snap = await client.getColliders(id, big);
    assert.deepEqual(snap.colliders.map((c) => c.id), big);
    assert.deepEqual(snap.colliders.map((c) => c.userData), big.map((b) => b - 1n));
    const hit = await client.raycast(id, vec3(-5, 0, 0), vec3(20, 0, 0), { ignoreIds: [big[0]] });
    assert.equal(hit?.id, big[1]);
    assert.equal(hit?.userData, big[1] - 1n);
    const r = await client.query(id, [{ tag: 2n ** 63n + 5n, overlap: { shape: Shapes.sphere(10) } }]);
    assert.equal(r.results[0].tag, 2n ** 63n + 5n);
    assert.deepEqual(r.results[0].overlaps.map((h) => h.id), [...big].sort((a, b) => (a < b ? -1 : 1)));
  });

  // A number that may already be rounded is refused before anything is sent, naming the field.
  test('lossy numbers are refused', async () => {
    const { sessionId: id } = await client.createSession();
    await rejectsWith(client.addColliders(id, [floor, { id: 2 ** 53 + 2, shape: Shapes.sphere(1) }]),
      Code.INVALID_ARGUMENT, 'changes[1].add.id');
    await rejectsWith(client.addColliders(id, [{ id: 3, userData: 2 ** 60, shape: Shapes.sphere(1) }]),
      Code.INVALID_ARGUMENT, 'changes[0].add.user_data');
    await rejectsWith(client.raycast(id, vec3(0, 0, 0), vec3(1, 0, 0), { ignoreIds: [1n, 1e17] }),
      Code.INVALID_ARGUMENT, 'queries[0].raycast.filter.ignore_ids[1]');
    await rejectsWith(client.getColliders(id, [-1]), Code.INVALID_ARGUMENT, 'ids[0]');
    await rejectsWith(client.removeColliders(id, [2n ** 64n]), Code.INVALID_ARGUMENT, 'changes[0].remove');
    await rejectsWith(client.move(id, { shape: Shapes.sphere(1), displacement: vec3(1, 0, 0), applyToId: 1.5 }),
      Code.INVALID_ARGUMENT, 'queries[0].move.apply_to_id');
    assert.equal((await client.getSession(id)).revision, 0n, 'nothing was sent');
    // Safe integer numbers are fine and come back as bigints.
    await client.addColliders(id, [{ id: 2 ** 53 - 1, shape: Shapes.sphere(1) }]);
    assert.equal((await client.getColliders(id, [2 ** 53 - 1])).colliders[0].id, 2n ** 53n - 1n);
  });
});

describe('queries', () => {
  let id: string;
  before(async () => {
    id = (await client.createSession()).sessionId;
    await client.addColliders(id, [floor, wall]);
  });

  // The walls-only sweep of the C++ example: the wall at fraction 0.435.
  test('sweep', async () => {
    const hit = await client.sweep(id, Shapes.capsule(0.4, 0.5), { position: vec3(0, 0.9, 0) }, vec3(0, 0, 10),
      { mask: 1 << 1 });
    assert.ok(hit);
    assert.equal(hit.id, 2n);
    assert.equal(hit.userData, 0xbeefn);
    assert.ok(Math.abs(hit.fraction - 0.435) < 1e-9);
    assert.deepEqual(hit.normal, vec3(0, 0, -1));
    assert.equal(await client.sweep(id, Shapes.sphere(0.3), { position: vec3(0, 1, 0) }, vec3(0, 0, -10), { mask: 2 }),
      undefined);
  });

  // Every hit of a sweep, sorted by fraction; a layer mask of 0 sees nothing.
  test('sweepAll and masks', async () => {
    const hits = await client.sweepAll(id, Shapes.sphere(0.5), { position: vec3(0, 0.4, 0) }, vec3(0, 0, 10));
    assert.deepEqual(hits.map((h) => h.id), [1n, 2n]);
    assert.ok(hits[0].startedOverlapping && hits[0].fraction === 0 && hits[0].depth > 0);
    assert.deepEqual(await client.sweepAll(id, Shapes.sphere(0.5), {}, vec3(0, 0, 10), { mask: 0 }), []);
  });

  // Rays: a hit on the floor from above, none upwards.
  test('raycast', async () => {
    const hit = await client.raycast(id, vec3(0, 5, 0), vec3(0, -10, 0));
    assert.equal(hit?.id, 1n);
    assert.equal(hit?.fraction, 0.5);
    assert.deepEqual(hit?.point, vec3(0, 0, 0));
    assert.equal(await client.raycast(id, vec3(0, 5, 0), vec3(0, 10, 0)), undefined);
  });

  // Overlaps, with contacts, cut by maxHits (truncated says so).
  test('overlap', async () => {
    const hits = await client.overlap(id, Shapes.sphere(1), { position: vec3(0, 0.5, 4.5) }, undefined, true);
    assert.deepEqual(hits.map((h) => h.id), [1n, 2n]);
    assert.ok(hits[0].contact && hits[0].contact.depth > 0);
    assert.equal((await client.overlap(id, Shapes.sphere(1), { position: vec3(0, 5, 0) })).length, 0);
    const r = await client.query(id, [{ overlap: { shape: Shapes.sphere(1), pose: { position: vec3(0, 0.5, 4.5) },
      filter: { maxHits: 1 } } }]);
    assert.deepEqual(r.results[0].overlaps.map((h) => h.id), [1n]);
    assert.equal(r.results[0].truncated, true);
    assert.equal(r.results[0].overlaps[0].contact, undefined);
  });

  // A mixed batch answers in order with each tag; a sweep by collider id leaves the collider out.
  test('batch, tags, shapeFromCollider', async () => {
    const { sessionId: s } = await client.createSession();
    await client.addColliders(s, [floor, wall, { id: 7n, shape: Shapes.capsule(0.4, 0.5), pose: { position: vec3(0, 0.9, 0) } }]);
    const r = await client.query(s, [
      { tag: 10n, raycast: { origin: vec3(0, 5, 0), translation: vec3(0, -10, 0), filter: { ignoreIds: [7n] } } },
      { tag: 11n, cast: { translation: vec3(0, 0, 10), filter: { mask: 1 << 1 } }, shapeFromCollider: 7n },
      { tag: 12n, overlap: { shape: Shapes.sphere(0.1), pose: { position: vec3(0, 50, 0) } } },
    ]);
    assert.deepEqual(r.results.map((x) => x.tag), [10n, 11n, 12n]);
    assert.equal(r.results[0].hits[0].id, 1n);
    assert.equal(r.results[1].hits[0].id, 2n);
    assert.ok(Math.abs(r.results[1].hits[0].fraction - 0.435) < 1e-9);
    assert.deepEqual(r.results[2].overlaps, []);
    await rejectsWith(client.query(s, [{ cast: { translation: vec3(1, 0, 0) }, shapeFromCollider: 99n }]),
      Code.NOT_FOUND, 'queries[0].shape_from_collider');
  });

  // A character walks into the wall: blocked, on the ground, and its collider moved with applyToId.
  test('move', async () => {
    const { sessionId: s } = await client.createSession();
    await client.addColliders(s, [floor, wall, { id: 7n, shape: Shapes.capsule(0.4, 0.5), pose: { position: vec3(0, 0.91, 4) } }]);
    const m = await client.move(s, { shape: Shapes.capsule(0.4, 0.5), pose: { position: vec3(0, 0.91, 4) },
      displacement: vec3(0, -0.05, 2), applyToId: 7n });
    assert.equal(m.blocked, true);
    assert.equal(m.onGround, true);
    assert.equal(m.groundId, 1n);
    assert.ok(m.groundNormal && Math.abs(m.groundNormal.y - 1) < 1e-9);
    assert.ok(m.position.z < 4.75 - 0.4 && m.position.z > 4.3, `z ${m.position.z}`);
    assert.ok(m.contacts.some((c) => c.id === 2n));
    const moved = await client.getColliders(s, [7n]);
    assert.deepEqual(moved.colliders[0].pose.position, m.position);
  });

  // Answers larger than grpc-js's default 4 MiB receive limit arrive.
  test('a 7 MB answer', async () => {
    const { sessionId: s } = await client.createSession();
    const row = Array.from({ length: 2000 }, (_, i): Collider => ({ id: BigInt(i + 1), shape: Shapes.sphere(0.4),
      pose: { position: vec3(i, 0, 0) } }));
    await client.addColliders(s, row);
    const queries = Array.from({ length: 100 }, () => ({ raycast: { origin: vec3(-1, 0.1, 0),
      translation: vec3(2002, 0, 0), allHits: true } }));
    const r = await client.query(s, queries);
    assert.equal(r.results.length, 100);
    assert.ok(r.results.every((x) => x.hits.length === 1024 && x.truncated));
  });
});

describe('rewind', () => {
  // A sphere at x = 0 on tick 10 and x = 10 on tick 11: the past is asked by tick, between ticks too.
  test('queries at past ticks', async () => {
    const { sessionId: s } = await client.createSession();
    await client.applyTick(s, 10n, [{ add: { id: 1n, shape: Shapes.sphere(1) } }]);
    await client.applyTick(s, 11n, [{ move: { id: 1n, pose: { position: vec3(10, 0, 0) } } }]);
    const info = await client.getSession(s);
    assert.deepEqual(info.ticks, { oldest: 10n, newest: 11n });
    const ray = (x: number) => ({ origin: vec3(x, 5, 0), translation: vec3(0, -10, 0) });
    assert.equal((await client.rewind(10).raycast(s, ray(0).origin, ray(0).translation))?.id, 1n);
    assert.equal(await client.rewind(11).raycast(s, ray(0).origin, ray(0).translation), undefined);
    assert.equal((await client.rewind(10.5).raycast(s, ray(5).origin, ray(5).translation))?.id, 1n);
    assert.equal((await client.raycast(s, ray(10).origin, ray(10).translation))?.id, 1n);
    // A query's own atTick wins over the rewind's.
    const r = await client.rewind(10).query(s, [{ raycast: ray(10), atTick: 11 }, { raycast: ray(10) }]);
    assert.equal(r.results[0].hits.length, 1);
    assert.equal(r.results[1].hits.length, 0);
    await rejectsWith(client.rewind(3).raycast(s, ray(0).origin, ray(0).translation), Code.OUT_OF_RANGE);
  });
});

describe('maps', () => {
  // The demo map is listed, described, and a session on it sees its colliders.
  test('list, get, a session on a map', async () => {
    const maps = await client.listMaps();
    const arena = maps.find((m) => m.mapId === 'arena');
    assert.ok(arena, JSON.stringify(maps));
    assert.match(arena.sha256, /^[0-9a-f]{64}$/);
    assert.ok(arena.colliderCount > 0 && arena.bounds);
    assert.deepEqual(await client.getMap('arena'), { ...arena, sessionCount: arena.sessionCount });
    const s = await client.createSession({ mapId: 'arena' });
    assert.equal(s.mapId, 'arena');
    assert.equal(s.mapColliderCount, arena.colliderCount);
    const b = arena.bounds!;
    const mid = vec3((b.min.x + b.max.x) / 2, b.max.y + 1, (b.min.z + b.max.z) / 2);
    const hit = await client.raycast(s.sessionId, mid, vec3(0, b.min.y - b.max.y - 2, 0));
    assert.ok(hit, 'a ray down through the middle of the map hits it');
    await rejectsWith(client.getMap('nowhere'), Code.NOT_FOUND);
    await rejectsWith(client.createSession({ mapId: 'nowhere' }), Code.NOT_FOUND);
  });
});
