// Tokens and TLS against the real hitboxd (docs/security.md): the admin token
// from --admin-token-file, session tokens kept by the Client and sent as
// `authorization: Bearer` on calls and tick streams, TLS and mutual TLS with
// certificates made by the openssl tool at test time.
import { after, before, describe, test } from 'node:test';
import * as assert from 'node:assert/strict';
import { execFileSync } from 'child_process';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { Client, Code, vec3 } from '../src';
import { rejectsWith } from './support/expect';
import { Hitboxd } from './support/hitboxd';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'hitbox-ts-auth-'));
const file = (name: string) => path.join(dir, name);
const ADMIN = 'a'.repeat(24) + '-admin-token';
fs.writeFileSync(file('admin.token'), ADMIN + '\n');
after(() => fs.rmSync(dir, { recursive: true, force: true }));

const ray = { origin: vec3(0, 5, 0), translation: vec3(0, -10, 0) };

describe('tokens', () => {
  let server: Hitboxd;
  before(async () => {
    server = await Hitboxd.start(['--admin-token-file', file('admin.token')]);
  });
  after(async () => {
    if (server) assert.equal(await server.stop(), 0, server.output());
  });

  // The admin creates; the session's token is kept and sent on its calls and streams.
  test('session tokens', async () => {
    const admin = new Client(server.address, { token: ADMIN });
    const anon = new Client(server.address);
    await rejectsWith(anon.createSession(), Code.UNAUTHENTICATED);
    const info = await admin.createSession('tok');
    assert.equal(admin.sessionToken('tok'), info.token);
    assert.equal((await admin.getSession('tok')).sessionId, 'tok');

    await rejectsWith(anon.getSession('tok'), Code.UNAUTHENTICATED);
    const game = new Client(server.address);
    game.setSessionToken('tok', info.token);
    await game.addColliders('tok', [{ id: 1n, shape: { sphere: { radius: 1 } } }]);
    assert.equal((await game.raycast('tok', ray.origin, ray.translation))?.id, 1n);
    await rejectsWith(game.listSessions(), Code.UNAUTHENTICATED, 'admin token');
    const holder = new Client(server.address, { token: info.token });
    await rejectsWith(holder.listSessions(), Code.PERMISSION_DENIED);
    const stream = game.openTickStream('tok');
    assert.equal((await stream.tick([], [{ raycast: ray }])).results[0].hits[0].id, 1n);
    await stream.finish();

    const wrong = new Client(server.address);
    wrong.setSessionToken('tok', 'f'.repeat(64));
    await rejectsWith(wrong.getSession('tok'), Code.PERMISSION_DENIED);
    // A tick stream without a token ends with the server's refusal.
    const refused = anon.openTickStream('tok');
    await rejectsWith(refused.tick([], [{ raycast: ray }]), Code.UNAUTHENTICATED);
    assert.equal(refused.error?.code, Code.UNAUTHENTICATED);

    assert.equal(await anon.checkHealth(), 'SERVING', 'health needs no token');
    assert.ok((await admin.listSessions()).some((s) => s.sessionId === 'tok'));
    await admin.deleteSession('tok');
    for (const c of [admin, anon, game, wrong, holder]) c.close();
  });
});

describe('TLS', { skip: !hasOpenssl() && 'no openssl tool' }, () => {
  before(() => makeCerts());

  // TLS with the CA given, the host name checked (and overridden); plaintext does not connect.
  test('server TLS', async () => {
    const server = await Hitboxd.start(['--admin-token-file', file('admin.token'), '--tls-cert', file('server.pem'),
      '--tls-key', file('server.key')]);
    try {
      const c = new Client(server.address, { token: ADMIN, tls: { caFile: file('ca.pem') }, retry: { maxAttempts: 1 } });
      const { sessionId } = await c.createSession();
      const stream = c.openTickStream(sessionId);
      assert.equal((await stream.tick([], [{ raycast: ray }])).revision, 0n);
      await stream.finish();
      const named = new Client(`localhost:${server.port}`, { token: ADMIN, tls: { caFile: file('ca.pem'), serverName: 'localhost' } });
      assert.equal((await named.getSession(sessionId)).sessionId, sessionId);
      const plain = new Client(server.address, { token: ADMIN, retry: { maxAttempts: 1 } });
      await rejectsWith(plain.getSession(sessionId), Code.UNAVAILABLE);
      const otherCa = new Client(server.address, { token: ADMIN, tls: { caFile: file('other-ca.pem') }, retry: { maxAttempts: 1 } });
      await rejectsWith(otherCa.getSession(sessionId), Code.UNAVAILABLE);
      for (const x of [c, named, plain, otherCa]) x.close();
    } finally {
      await server.stop();
    }
  });

  // Mutual TLS: a client certificate is needed, and enough to create sessions.
  test('mutual TLS', async () => {
    const server = await Hitboxd.start(['--tls-cert', file('server.pem'), '--tls-key', file('server.key'),
      '--tls-client-ca', file('ca.pem')]);
    try {
      const c = new Client(server.address, { tls: { caFile: file('ca.pem'), certFile: file('client.pem'),
        keyFile: file('client.key') } });
      const { sessionId } = await c.createSession();
      assert.equal(await c.checkHealth(), 'SERVING');
      const bare = new Client(server.address, { tls: { caFile: file('ca.pem') }, retry: { maxAttempts: 1 } });
      const e = await bare.getSession(sessionId).then(() => undefined, (err) => err);
      assert.ok(e && (e.code === Code.UNAVAILABLE || e.code === Code.UNAUTHENTICATED), String(e));
      for (const x of [c, bare]) x.close();
    } finally {
      await server.stop();
    }
  });

  // An unreadable file fails every call and stream, naming it; nothing is sent.
  test('unreadable files', async () => {
    const c = new Client('127.0.0.1:1', { tls: { caFile: file('missing.pem') } });
    await rejectsWith(c.checkHealth(), Code.FAILED_PRECONDITION, 'tls.caFile');
    await rejectsWith(c.openTickStream('x').tick(), Code.FAILED_PRECONDITION, 'missing.pem');
    const half = new Client('127.0.0.1:1', { tls: { caFile: file('ca.pem'), certFile: file('client.pem') } });
    await rejectsWith(half.getSession('x'), Code.FAILED_PRECONDITION, 'both certFile and keyFile');
    c.close();
    half.close();
  });
});

function hasOpenssl(): boolean {
  try {
    execFileSync('openssl', ['version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

// A CA, a server certificate for localhost and 127.0.0.1, a client certificate, and another CA.
function makeCerts(): void {
  const ssl = (...args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: 'ignore' });
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  fs.writeFileSync(file('server.ext'), 'subjectAltName=DNS:localhost,IP:127.0.0.1\nbasicConstraints=CA:FALSE\n' +
    'extendedKeyUsage=serverAuth\n');
  fs.writeFileSync(file('client.ext'), 'basicConstraints=CA:FALSE\nextendedKeyUsage=clientAuth\n');
  ssl('req', '-x509', ...ec, '-days', '2', '-subj', '/CN=hitbox-ts-ca', '-keyout', 'ca.key', '-out', 'ca.pem');
  ssl('req', '-x509', ...ec, '-days', '2', '-subj', '/CN=hitbox-ts-other-ca', '-keyout', 'other-ca.key', '-out', 'other-ca.pem');
  ssl('req', ...ec, '-subj', '/CN=localhost', '-keyout', 'server.key', '-out', 'server.csr');
  ssl('x509', '-req', '-days', '2', '-in', 'server.csr', '-CA', 'ca.pem', '-CAkey', 'ca.key', '-CAcreateserial',
    '-extfile', 'server.ext', '-out', 'server.pem');
  ssl('req', ...ec, '-subj', '/CN=hitbox-ts-client', '-keyout', 'client.key', '-out', 'client.csr');
  ssl('x509', '-req', '-days', '2', '-in', 'client.csr', '-CA', 'ca.pem', '-CAkey', 'ca.key', '-CAcreateserial',
    '-extfile', 'client.ext', '-out', 'client.pem');
}
