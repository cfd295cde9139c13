// A game server's loop through the TypeScript client: a session with a floor,
// a wall and a player capsule; then 60 ticks on one Tick stream, each moving
// the player towards the wall (collide-and-slide, applied to its collider)
// and firing a ray ahead of it. Run it against a hitboxd:
//
//   bash scripts/hitbox.sh run &                       # or build/bin/hitboxd
//   cd client/ts && npm ci && npm run build
//   node dist/examples/game_loop.js [127.0.0.1:50051]
//
// HITBOX_TOKEN: a token to create the session with (hitboxd's admin token),
// when hitboxd has credentials configured.
import { Client, HitboxError, Shapes, vec3, type Vec3 } from '../src';

async function main(address: string): Promise<void> {
  const client = new Client(address, { token: process.env.HITBOX_TOKEN });
  const { sessionId } = await client.createSession();  // the client keeps its token
  const player = 1000n;
  const capsule = Shapes.capsule(0.4, 0.5);  // radius 0.4 m, 1.8 m tall
  // A 40 x 1 x 40 m floor whose top is at y = 0, a wall 5 m ahead (+z) on layer 1, the player on layer 2.
  await client.addColliders(sessionId, [
    { id: 1n, shape: Shapes.box(20, 0.5, 20), pose: { position: vec3(0, -0.5, 0) } },
    { id: 2n, shape: Shapes.box(5, 2, 0.25), pose: { position: vec3(0, 2, 5) }, layer: 1, userData: 0xbeefn },
    { id: player, shape: capsule, pose: { position: vec3(0, 0.91, 0) }, layer: 2 },
  ]);

  const stream = client.openTickStream(sessionId);
  let at: Vec3 = vec3(0, 0.91, 0);
  for (let tick = 1; tick <= 60; ++tick) {
    // Walk at 6 m/s along +z for 1/60 s, with a little gravity.
    const { results } = await stream.tick([], [
      { move: { shape: capsule, pose: { position: at }, displacement: vec3(0, -0.02, 0.1), applyToId: player } },
      { raycast: { origin: vec3(at.x, 1.6, at.z), translation: vec3(0, 0, 20), filter: { ignoreIds: [player] } } },
    ]);
    const move = results[0].move!;
    const hit = results[1].hits[0];
    if (tick % 10 === 0 || move.blocked) {
      console.log(`tick ${String(tick).padStart(2)}: the ray from z ${at.z.toFixed(3)} ` +
        (hit ? `hits collider ${hit.id} (user data 0x${hit.userData.toString(16)}) ${(hit.fraction * 20).toFixed(2)} m ahead`
          : 'hits nothing') +
        `; the player walks to z ${move.position.z.toFixed(3)}${move.onGround ? ', on the ground' : ''}` +
        `${move.blocked ? ', blocked' : ''}`);
    }
    at = move.position;
    if (move.blocked) break;
  }
  await stream.finish();

  // The same world asked outside the stream: the player's collider followed its moves.
  const { colliders } = await client.getColliders(sessionId, [player]);
  console.log(`collider ${colliders[0].id} is at z ${colliders[0].pose.position!.z.toFixed(3)}`);
  await client.deleteSession(sessionId);
  client.close();
}

main(process.argv[2] ?? '127.0.0.1:50051').catch((e: unknown) => {
  console.error(e instanceof HitboxError ? `hitboxd answered ${e.message}` : e);
  process.exit(1);
});
