// Retries as the C++ client does them (client/src/client.cc): UNAVAILABLE
// only, idempotent calls only, within the call's deadline. The server is a
// port nobody listens on, so every attempt fails with UNAVAILABLE.
import { before, test } from 'node:test';
import * as assert from 'node:assert/strict';
import * as net from 'net';
import { Client, Code, Shapes, vec3, type ClientOptions } from '../src';
import { rejectsWith } from './support/expect';

let address: string;
before(async () => {
  // A port the kernel hands out, then closed again: connections are refused.
  const probe = net.createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  address = `127.0.0.1:${(probe.address() as net.AddressInfo).port}`;
  await new Promise((resolve) => probe.close(resolve));
});

// A client that records its retries: [method, failed attempt, code].
function recording(options: ClientOptions = {}): { client: Client; retries: Array<[string, number, number]> } {
  const retries: Array<[string, number, number]> = [];
  const client = new Client(address, {
    retry: { maxAttempts: 3, initialBackoffMs: 1, maxBackoffMs: 2 }, jitterSeed: 7, defaultTimeoutMs: 10000,
    onRetry: (method, n, e) => retries.push([method, n, e.code]), ...options,
  });
  return { client, retries };
}

// Idempotent calls are tried max_attempts times, then fail with UNAVAILABLE.
test('idempotent calls are retried', async () => {
  const { client, retries } = recording();
  await rejectsWith(client.getSession('s'), Code.UNAVAILABLE);
  await rejectsWith(client.createSession('with-id'), Code.UNAVAILABLE);
  await rejectsWith(client.raycast('s', vec3(0, 0, 0), vec3(1, 0, 0)), Code.UNAVAILABLE);
  await rejectsWith(client.listColliderPages('s', () => {}), Code.UNAVAILABLE);
  assert.deepEqual(retries, [
    ['GetSession', 1, Code.UNAVAILABLE], ['GetSession', 2, Code.UNAVAILABLE],
    ['CreateSession', 1, Code.UNAVAILABLE], ['CreateSession', 2, Code.UNAVAILABLE],
    ['Query', 1, Code.UNAVAILABLE], ['Query', 2, Code.UNAVAILABLE],
    ['ListColliders', 1, Code.UNAVAILABLE], ['ListColliders', 2, Code.UNAVAILABLE],
  ]);
  client.close();
});

// Calls that change the session are tried once.
test('the others are not', async () => {
  const { client, retries } = recording();
  await rejectsWith(client.createSession(), Code.UNAVAILABLE);
  await rejectsWith(client.deleteSession('s'), Code.UNAVAILABLE);
  await rejectsWith(client.addColliders('s', [{ id: 1n, shape: Shapes.sphere(1) }]), Code.UNAVAILABLE);
  await rejectsWith(client.move('s', { shape: Shapes.sphere(1), displacement: vec3(1, 0, 0), applyToId: 1n }),
    Code.UNAVAILABLE);
  await rejectsWith(client.getSession('s', { allowRetry: false }), Code.UNAVAILABLE);
  assert.deepEqual(retries, []);
  client.close();
});

// No wait is started that would pass the deadline.
test('the deadline bounds the retries', async () => {
  const { client, retries } = recording({ retry: { maxAttempts: 5, initialBackoffMs: 60000, maxBackoffMs: 60000 } });
  await rejectsWith(client.getSession('s', { timeoutMs: 2000 }), Code.UNAVAILABLE);
  assert.deepEqual(retries, []);
  client.close();
});
