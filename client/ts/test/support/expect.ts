// Shared assertions of the tests.
import * as assert from 'node:assert/strict';
import { HitboxError } from '../../src';

/** Asserts that `p` rejects with a HitboxError of `code` whose message contains `part`. */
export async function rejectsWith(p: Promise<unknown>, code: number, part = ''): Promise<HitboxError> {
  const e = await p.then(() => undefined, (err: unknown) => err);
  assert.ok(e instanceof HitboxError, `expected a HitboxError, got ${String(e)}`);
  assert.equal(e.code, code, e.message);
  assert.ok(e.details.includes(part), `"${e.details}" should contain "${part}"`);
  return e;
}
