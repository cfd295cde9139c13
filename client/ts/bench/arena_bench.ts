// The arena tick through the TypeScript client: hitboxd (--threads 1) as a
// child process on loopback, one Tick stream, one tick in flight, as
// hitbox-arena-bench's BM_ArenaTickService does for the C++ client. Reports
// per tick the client's CPU (this process, less the game's own work of making
// the queries and reading the positions), the server's CPU, and ticks per
// second of wall time.
//
//   node dist/bench/arena_bench.js [--ticks 2000] [--by-id] [--json]
//   (HITBOXD=path/to/hitboxd; default build/bin/hitboxd)
import * as fs from 'fs';
import { Client, type QueryResult, type TickResult, type Vec3 } from '../src';
import { Hitboxd } from '../test/support/hitboxd';
import { DEFAULT_ARENA, arenaTickQueries, generateArena } from './arena';

const args = process.argv.slice(2);
const flag = (name: string) => args.includes(name);
const value = (name: string, fallback: number) => {
  const i = args.indexOf(name);
  return i >= 0 ? Number(args[i + 1]) : fallback;
};

/** CPU seconds of this process (all threads). */
function cpu(): number {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1e6;
}

/** CPU seconds of process `pid` (utime + stime of /proc/pid/stat). */
function processCpu(pid: number): number {
  const fields = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

async function main(): Promise<void> {
  const ticks = value('--ticks', 2000);
  const warmup = value('--warmup', 50);
  const byId = flag('--by-id');
  const server = await Hitboxd.start();
  const client = new Client(server.address, { defaultTimeoutMs: 60000 });
  try {
    const o = DEFAULT_ARENA;
    const arena = await generateArena(client, o);
    await client.createSession('arena');
    await client.addColliders('arena', arena.colliders);
    const stream = client.openTickStream('arena');
    let positions: Vec3[] = arena.spawn.slice();
    let tick = 0;
    let game = 0;
    const advance = (results: QueryResult[]) => {
      positions = results.slice(0, positions.length).map((r) => r.move!.position);
    };
    const one = async () => {
      let c0 = cpu();
      const queries = arenaTickQueries(arena, o, positions, ++tick, byId);
      game += cpu() - c0;
      const r: TickResult = await stream.tick([], queries);
      c0 = cpu();
      advance(r.results);
      game += cpu() - c0;
    };
    for (let i = 0; i < warmup; ++i) await one();
    game = 0;
    const server0 = processCpu(server.pid);
    const client0 = cpu();
    const wall0 = process.hrtime.bigint();
    for (let i = 0; i < ticks; ++i) await one();
    const wall = Number(process.hrtime.bigint() - wall0) / 1e9;
    const clientCpu = cpu() - client0 - game;
    const serverCpu = processCpu(server.pid) - server0;
    await stream.finish();
    const out = {
      node: process.version, by_id: byId, ticks, queries_per_tick: arenaTickQueries(arena, o, positions, tick + 1).length,
      client_cpu_us: +(clientCpu / ticks * 1e6).toFixed(1),
      game_cpu_us: +(game / ticks * 1e6).toFixed(1),
      server_cpu_us: +(serverCpu / ticks * 1e6).toFixed(1),
      ticks_per_second: +(ticks / wall).toFixed(1),
      wall_us_per_tick: +(wall / ticks * 1e6).toFixed(1),
    };
    if (flag('--json')) console.log(JSON.stringify(out));
    else for (const [k, v] of Object.entries(out)) console.log(`${k.padEnd(18)} ${v}`);
  } finally {
    client.close();
    await server.stop();
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
