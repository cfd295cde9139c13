// Conformance through the package: the case files of ../shared/cases (every
// one in it, next/ and rewind/ but the two performance files big.json and
// next/big_level.json, which HITBOX_TS_CASES=all adds) and the real level
// ../shared/levels/level_inyard.json, loaded into a hitboxd session with the
// client, every query answered through it and judged by FORMAT.md's rules, as
// tests/service/e2e_test.cc does.
import { after, before, test } from 'node:test';
import * as assert from 'node:assert/strict';
import * as fs from 'fs';
import * as path from 'path';
import { Client } from '../src';
import { Hitboxd } from './support/hitboxd';
import { judge, loadCaseFile } from './support/cases';

const CASES = process.env.HITBOX_CASES_DIR ?? path.resolve(__dirname, '../../../../../shared/cases');
const ALL = process.env.HITBOX_TS_CASES === 'all';

function caseFiles(): string[] {
  if (!fs.existsSync(CASES)) return [];
  const json = (dir: string) => (fs.existsSync(dir) ? fs.readdirSync(dir) : [])
    .filter((f) => /\.json(\.gz)?$/.test(f)).sort().map((f) => path.join(dir, f));
  return [
    ...json(CASES),
    ...json(path.join(CASES, 'next')),
    ...json(path.join(CASES, 'rewind')),
    ...json(path.join(CASES, '../levels')),
  ].filter((f) => ALL || !/\/big(_level)?\.json/.test(f));
}

let server: Hitboxd;
let client: Client;
before(async () => {
  server = await Hitboxd.start([], 2);
  client = new Client(server.address, { defaultTimeoutMs: 60000 });
});
after(async () => {
  client?.close();
  if (server) assert.equal(await server.stop(), 0, server.output());
});

const files = caseFiles();
test('the case files are there', { skip: files.length === 0 ? `no case files in ${CASES}` : false }, () => {
  assert.ok(files.some((f) => f.endsWith('level_inyard.json')), 'levels/level_inyard.json');
});

for (const file of files) {
  test(`every answer of ${path.basename(file)} is right`, async () => {
    const cases = loadCaseFile(file);
    const { sessionId } = await client.createSession();
    const batch = 4096;
    for (let start = 0; start < cases.colliders.length; start += batch) {
      const adds = cases.colliders.slice(start, start + batch).map((c) => ({ add: c }));
      if (cases.ticks) await client.applyTick(sessionId, cases.ticks[0], adds);
      else await client.applyChanges(sessionId, adds);
    }
    if (cases.ticks) {
      // The later ticks' moves as a game server sends them: one tick each.
      const stream = client.openTickStream(sessionId);
      await Promise.all(cases.moves.map((m, k) => stream.tickAt(cases.ticks![0] + 1n + BigInt(k), m)));
      await stream.finish();
    }
    const failures: string[] = [];
    const counts: Record<string, [number, number]> = {};
    for (let start = 0; start < cases.queries.length; start += 1024) {
      const queries = cases.queries.slice(start, start + 1024);
      const { results } = await client.query(sessionId, queries);
      results.forEach((r, k) => {
        const i = start + k;
        assert.equal(r.tag, cases.expected[i].id, 'results come back in order with their tag');
        const kind = cases.kinds[i];
        counts[kind] ??= [0, 0];
        ++counts[kind][1];
        const why = judge(kind, cases.queries[i], cases.expected[i], r);
        if (why === undefined) ++counts[kind][0];
        else failures.push(`${cases.name} query ${cases.expected[i].id} (${kind}): ${why}`);
      });
    }
    await client.deleteSession(sessionId);
    const summary = Object.entries(counts).map(([k, [ok, n]]) => `${k} ${ok}/${n}`).join(', ');
    assert.deepEqual(failures.slice(0, 20), [], `${cases.name}: ${cases.colliders.length} colliders; ${summary}; ` +
      `${failures.length} wrong`);
  });
}
