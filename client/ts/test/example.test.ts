// The example game loop (examples/game_loop.ts) runs against hitboxd as the
// docs say, and walks its player into the wall.
import { after, before, test } from 'node:test';
import * as assert from 'node:assert/strict';
import { execFile } from 'child_process';
import * as path from 'path';
import { Hitboxd } from './support/hitboxd';

let server: Hitboxd;
before(async () => {
  server = await Hitboxd.start();
});
after(async () => {
  if (server) assert.equal(await server.stop(), 0, server.output());
});

test('examples/game_loop', async () => {
  const script = path.resolve(__dirname, '../examples/game_loop.js');
  const out = await new Promise<string>((resolve, reject) =>
    execFile(process.execPath, [script, server.address], (err, stdout, stderr) =>
      (err ? reject(new Error(`${err.message}\n${stderr}`)) : resolve(stdout))));
  assert.match(out, /tick 44: the ray from z 4\.300 hits collider 2 \(user data 0xbeef\) 0\.45 m ahead; .*blocked/);
  assert.match(out, /collider 1000 is at z 4\.340/);
});
