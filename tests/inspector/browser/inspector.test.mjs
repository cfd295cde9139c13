// The inspector page in a real browser: Debian's headless chromium driven by
// playwright-core against the real hitboxd binary with the demo map (arena)
// and a session whose colliders move and whose queries are recorded
// (inspector_driver), live over the session's event stream, with a watch;
// and a map of a million triangles generated here. Screenshots go to
// $HITBOX_SCREENSHOT_DIR.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, writeFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { chromium } from 'playwright-core';

const HITBOXD = process.env.HITBOXD;
const DRIVER = process.env.INSPECTOR_DRIVER;
const MAPS = process.env.HITBOX_MAPS_DIR;
const SHOTS = process.env.HITBOX_SCREENSHOT_DIR;
const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';
const ADMIN = 'inspector-browser-admin-0123456789';
const TICKS = 40;
const run = promisify(execFile);

// Starts hitboxd with `args` (maps from `maps`, with the demo session when
// they are the examples'); resolves once its log names both ports.
function startHitboxd(args, maps = MAPS) {
  const proc = spawn(HITBOXD, ['--listen', '127.0.0.1:0', '--http-listen', '127.0.0.1:0',
    '--maps', maps, ...(maps === MAPS ? ['--demo'] : []), '--record-queries', '16', '--threads', '1', ...args],
  { stdio: ['ignore', 'pipe', 'pipe'] });
  let log = '';
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('hitboxd did not start:\n' + log)), 120000);
    const onData = (chunk) => {
      log += chunk;
      const grpc = /hitboxd listening on \S+ \(port (\d+)\)/.exec(log);
      const http = /inspector at http:\/\/[^/]+:(\d+)\//.exec(log);
      if (grpc && http) {
        clearTimeout(timer);
        resolve({ proc, grpc: Number(grpc[1]), http: Number(http[1]), log: () => log });
      }
    };
    proc.stdout.on('data', onData);
    proc.stderr.on('data', onData);
    proc.on('exit', (code) => reject(new Error('hitboxd exited with ' + code + ':\n' + log)));
  });
}

// Plays the driver's ticks on `server`; its JSON line (session, token).
// `more`: further driver arguments (--continue T --ticks N: more ticks).
async function drive(server, token, more = ['--map', 'arena', '--ticks', String(TICKS)]) {
  const args = ['--address', '127.0.0.1:' + server.grpc, ...more];
  if (token) args.push('--token', token);
  const { stdout } = await run(DRIVER, args);
  return JSON.parse(stdout);
}

async function apiGet(server, path, token) {
  const headers = token ? { Authorization: 'Bearer ' + token } : {};
  const res = await fetch('http://127.0.0.1:' + server.http + path, { headers });
  return { status: res.status, body: await res.json() };
}

// Polls `fn` in the page until it returns a truthy value or the deadline passes.
async function until(page, what, fn, arg, timeout = 30000) {
  try {
    return await page.waitForFunction(fn, arg, { timeout, polling: 100 });
  } catch (e) {
    throw new Error('timed out waiting for ' + what + ': ' + e.message);
  }
}

// Polls `fn` (async, in node) until it returns a truthy value, for 30 s at most.
async function eventually(what, fn) {
  for (let i = 0; i < 300; ++i) {
    const v = await fn();
    if (v) return v;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error('timed out waiting for ' + what);
}

// Clicks a collider of the game that is visible; resolves to its id.
async function clickSomeCollider(page, game) {
  let target = null;
  for (let id = game.first_id; id < game.first_id + game.colliders && !target; ++id) {
    const at = await page.evaluate((i) => window.hitboxInspector.colliderOnScreen(i), id);
    if (at && at.picks) target = { id, ...at };
  }
  assert.ok(target, 'some collider is visible');
  await page.mouse.click(target.x, target.y);
  return target.id;
}

let browser, open, secured, openGame, securedGame, tokenDir;

before(async () => {
  for (const [name, v] of Object.entries({ HITBOXD, INSPECTOR_DRIVER: DRIVER, HITBOX_MAPS_DIR: MAPS, HITBOX_SCREENSHOT_DIR: SHOTS })) {
    assert.ok(v, name + ' must be set (CTest sets it)');
  }
  mkdirSync(SHOTS, { recursive: true });
  tokenDir = mkdtempSync(join(tmpdir(), 'hitbox-inspector-'));
  writeFileSync(join(tokenDir, 'admin'), ADMIN + '\n');
  open = await startHitboxd([]);
  secured = await startHitboxd(['--admin-token-file', join(tokenDir, 'admin')]);
  openGame = await drive(open);
  securedGame = await drive(secured, ADMIN);
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    // WebGL on the CPU (SwiftShader): CI machines have no GPU.
    args: ['--no-sandbox', '--disable-dev-shm-usage', '--use-angle=swiftshader',
      '--enable-unsafe-swiftshader', '--ignore-gpu-blocklist'],
  });
});

after(async () => {
  if (browser) await browser.close();
  for (const s of [open, secured]) if (s) s.proc.kill('SIGTERM');
  if (tokenDir) rmSync(tokenDir, { recursive: true, force: true });
});

test('lists the session, draws it, selects a collider, rewinds with the slider', async () => {
  const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
  const errors = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  await page.goto('http://127.0.0.1:' + open.http + '/');
  const link = page.locator('a.session-link', { hasText: openGame.session });
  await link.waitFor({ timeout: 30000 });
  await page.locator('a.session-link', { hasText: 'demo' }).waitFor();
  await page.screenshot({ path: join(SHOTS, 'sessions.png') });

  await link.click();
  assert.equal(new URL(page.url()).hash, '#/sessions/' + openGame.session);
  const summary = await apiGet(open, '/api/sessions/' + openGame.session);
  assert.equal(summary.body.colliders, openGame.colliders);
  await until(page, 'the colliders drawn',
    (n) => window.hitboxInspector.drawnColliders() === n, summary.body.colliders);
  assert.equal(await page.locator('#drawn-count').textContent(), String(summary.body.colliders));
  assert.ok(Number(await page.locator('#map-triangles').textContent()) > 1000, 'the arena map is drawn');
  // Not blank: the map and colliders cover much of the frame in many colours.
  const stats = (await until(page, 'a rendered frame', () => {
    const s = window.hitboxInspector.pixelStats();
    return s.nonBackground > s.pixels * 0.05 && s.colours > 50 ? s : null;
  })).jsonValue();
  assert.ok((await stats).colours > 50);
  await page.screenshot({ path: join(SHOTS, 'session.png') });

  // Recorded queries: the ray and the sweep of each tick, with hits.
  await until(page, 'recorded queries', () => /\d+ queries, [1-9]\d* hits/.test(document.getElementById('queries').textContent));

  // Click a collider that is not hidden behind another: the panel shows its id.
  const picked = await clickSomeCollider(page, openGame);
  await until(page, 'the selection', (id) => document.getElementById('selection').textContent.startsWith('id ' + id + '\n'), picked);
  await page.screenshot({ path: join(SHOTS, 'selected.png') });

  // The slider shows the oldest tick of the history: the second collider
  // moves 0.25 m per tick, so it stands where the server's rewind put it then.
  const moving = openGame.first_id + 1;
  const world = await apiGet(open, '/api/sessions/' + openGame.session + '/world');
  const oldest = world.body.oldest_tick;
  const past = await apiGet(open, '/api/sessions/' + openGame.session + '/world?tick=' + oldest);
  const then = past.body.colliders.find((c) => c.id === moving);
  const now = world.body.colliders.find((c) => c.id === moving);
  assert.notDeepEqual(then.p, now.p, 'the collider moved inside the history window');
  await until(page, 'the live pose', ([id, x]) => window.hitboxInspector.colliderPose(id).p[0] === x, [moving, now.p[0]]);
  await page.locator('#tick-slider').fill(String(oldest));
  await until(page, 'the past pose', ([id, x, t]) =>
    window.hitboxInspector.tick() === t && window.hitboxInspector.colliderPose(id).p[0] === x, [moving, then.p[0], oldest]);
  assert.equal(await page.locator('#live').isChecked(), false);
  await page.screenshot({ path: join(SHOTS, 'past-tick.png') });
  assert.deepEqual(errors, []);
  await page.close();
});

test('live: the stream moves a collider on screen without reload; watches drawn', async () => {
  const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
  const errors = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  const base = 'http://127.0.0.1:' + open.http;
  await page.goto(base + '/#/sessions/' + openGame.session);
  await until(page, 'the colliders drawn', (n) => window.hitboxInspector.drawnColliders() === n, openGame.colliders);
  await until(page, 'stream events', () => window.hitboxInspector.streamEvents() >= 2);
  // The driver's watch: drawn, and the one collider of the session inside
  // it lit up and listed (with the map's colliders that it touches).
  await until(page, 'the watch drawn', () =>
    window.hitboxInspector.watchesDrawn() === 1 && window.hitboxInspector.insideLit() === 1);
  assert.match(await page.locator('#watches').textContent(), /^watch 1 sphere: \d+ inside \((\d+, )*2001\)/);
  // The server counts the open stream.
  await eventually('the open stream counted', async () =>
    (await apiGet(open, '/api/sessions/' + openGame.session)).body.streams === 1);

  // More ticks while the page is open: the moving collider follows, on
  // screen, without a reload (a mark left on window survives).
  await page.evaluate(() => { window.notReloaded = true; });
  const moving = openGame.first_id + 1;
  const before = await page.evaluate((id) => window.hitboxInspector.colliderOnScreen(id), moving);
  const last = TICKS + 20;
  await drive(open, null, ['--session', openGame.session, '--continue', String(TICKS + 1), '--ticks', String(last)]);
  const x = -18 + 0.25 * last;  // inspector_driver's X(1, last)
  await until(page, 'the collider moved live', ([id, px]) =>
    window.notReloaded === true && window.hitboxInspector.colliderPose(id).p[0] === px, [moving, x]);
  const after = await page.evaluate((id) => window.hitboxInspector.colliderOnScreen(id), moving);
  assert.ok(Math.abs(after.x - before.x) > 5, 'moved on screen: ' + before.x + ' -> ' + after.x);
  assert.equal(await page.locator('#live').isChecked(), true);
  await page.screenshot({ path: join(SHOTS, 'live.png') });

  // The sessions page: rates and open streams per session.
  await page.goto(base + '/#/');
  const row = page.locator('#sessions tbody tr', { hasText: openGame.session });
  await row.waitFor();
  const heads = await page.locator('#sessions thead th').allTextContents();
  const col = (name) => heads.indexOf(name) + 1;
  for (const h of ['ticks/s', 'queries/s', 'streams']) assert.ok(heads.includes(h), h + ' in ' + heads);
  // Rates appear once the list was read twice (it refreshes every second).
  const rate = row.locator('td:nth-child(' + col('ticks/s') + ')');
  await eventually('a ticks/s rate', async () => /^\d+(\.\d)?$/.test(await rate.textContent()));
  assert.match(await row.locator('td:nth-child(' + col('streams') + ')').textContent(), /^\d+$/);
  assert.deepEqual(errors, []);
  await page.close();
});

test('with an admin token configured, nothing is readable without a token', async () => {
  const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
  assert.equal((await apiGet(secured, '/api/sessions')).status, 401);
  assert.equal((await apiGet(secured, '/api/sessions/' + securedGame.session + '/world')).status, 401);
  await page.goto('http://127.0.0.1:' + secured.http + '/');
  await page.locator('#token-form').waitFor({ state: 'visible' });
  assert.equal(await page.locator('a.session-link').count(), 0);
  await page.screenshot({ path: join(SHOTS, 'token-required.png') });

  // A session's token opens that session only.
  await page.locator('#token').fill(securedGame.token);
  await page.locator('#token-form button').click();
  await page.locator('a.session-link', { hasText: securedGame.session }).waitFor();
  assert.equal(await page.locator('a.session-link').count(), 1);
  await page.locator('a.session-link').click();
  await until(page, 'the colliders drawn', (n) => window.hitboxInspector.drawnColliders() === n, securedGame.colliders);

  // The admin token: every session (the demo's too).
  await page.locator('#home').click();
  await page.locator('#forget-token').click();
  await page.locator('#token-form').waitFor({ state: 'visible' });
  await page.locator('#token').fill(ADMIN);
  await page.locator('#token-form button').click();
  await page.locator('a.session-link', { hasText: 'demo' }).waitFor();
  assert.equal(await page.locator('a.session-link').count(), 2);
  await page.close();
});

// A map of a million triangles (a 708 x 708 grid of quads, a gentle wave,
// as an .obj) on its own hitboxd: drawn whole, and the page stays
// interactive (frames keep coming, a collider can still be selected).
// Times are printed, not judged: software GL on a shared machine.
test('a 1M-triangle map stays interactive', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'hitbox-bigmap-'));
  const n = 708;
  const lines = [];
  for (let i = 0; i <= n; ++i) {
    for (let j = 0; j <= n; ++j) {
      const x = -60 + 120 * i / n, z = -60 + 120 * j / n;
      lines.push('v ' + x.toFixed(3) + ' ' + (0.5 * Math.sin(x / 4) * Math.cos(z / 5)).toFixed(3) + ' ' + z.toFixed(3));
    }
  }
  for (let i = 0; i < n; ++i) {
    for (let j = 0; j < n; ++j) {
      const a = i * (n + 1) + j + 1, b = a + n + 1;  // .obj counts from 1
      lines.push('f ' + a + ' ' + (a + 1) + ' ' + b, 'f ' + (a + 1) + ' ' + (b + 1) + ' ' + b);
    }
  }
  writeFileSync(join(dir, 'big.obj'), lines.join('\n') + '\n');
  lines.length = 0;
  let big = null;
  const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
  try {
    big = await startHitboxd([], dir);
    const game = await drive(big, null, ['--map', 'big', '--ticks', '4']);
    const errors = [];
    page.on('pageerror', (e) => errors.push(String(e)));
    const t0 = Date.now();
    await page.goto('http://127.0.0.1:' + big.http + '/#/sessions/' + game.session);
    await until(page, 'the big map drawn', (t) => document.getElementById('map-triangles').textContent === t,
      String(2 * n * n), 240000);
    await until(page, 'the colliders drawn', (c) => window.hitboxInspector.drawnColliders() === c, game.colliders, 240000);
    const drawnAfter = Date.now() - t0;
    const f0 = await page.evaluate(() => window.hitboxInspector.frames());
    const t1 = Date.now();
    await until(page, 'frames drawn', (f) => window.hitboxInspector.frames() >= f + 5, f0, 240000);
    const f1 = await page.evaluate(() => window.hitboxInspector.frames());
    const fps = (f1 - f0) / ((Date.now() - t1) / 1000);
    const picked = await clickSomeCollider(page, game);
    const t2 = Date.now();
    await until(page, 'the selection', (id) => document.getElementById('selection').textContent.startsWith('id ' + id + '\n'), picked, 240000);
    console.log('1M-triangle map: ' + 2 * n * n + ' triangles drawn ' + drawnAfter + ' ms after load, ' +
      fps.toFixed(1) + ' frames/s, selection shown ' + (Date.now() - t2) + ' ms after the click');
    await page.screenshot({ path: join(SHOTS, 'big-map.png') });
    assert.deepEqual(errors, []);
  } finally {
    await page.close();
    if (big) big.proc.kill('SIGTERM');
    rmSync(dir, { recursive: true, force: true });
  }
});
