// The real hitboxd binary on a loopback port the kernel picks, for tests:
// started with --port-file and awaited until it listens, stopped with SIGTERM.
// The binary: $HITBOXD (CTest sets it), else ../../build/bin/hitboxd.
import { spawn, type ChildProcess } from 'child_process';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';

export const HITBOXD = process.env.HITBOXD ?? path.resolve(__dirname, '../../../../../build/bin/hitboxd');

export class Hitboxd {
  readonly dir: string;
  private constructor(private readonly child: ChildProcess, readonly port: number, dir: string,
    private readonly exited: Promise<number | null>, private readonly log: () => string) {
    this.dir = dir;
  }

  /** The process id. */
  get pid(): number {
    return this.child.pid ?? 0;
  }

  /** host:port to connect to. */
  get address(): string {
    return `127.0.0.1:${this.port}`;
  }

  /** What hitboxd wrote so far (stdout and stderr). */
  output(): string {
    return this.log();
  }

  /**
   * Starts hitboxd on `listenPort` (0: one the kernel picks) with `args` after
   * --listen, --port-file, --log-level, --threads and a short
   * --shutdown-grace-ms (an idle channel would hold a SIGTERM for the default 5 s).
   */
  static async start(args: string[] = [], threads = 1, listenPort = 0): Promise<Hitboxd> {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'hitbox-ts-'));
    const portFile = path.join(dir, 'port');
    let log = '';
    const child = spawn(HITBOXD, ['--listen', `127.0.0.1:${listenPort}`, '--port-file', portFile, '--log-level', 'warn',
      '--threads', String(threads), '--shutdown-grace-ms', '300', ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout!.on('data', (d) => (log += d));
    child.stderr!.on('data', (d) => (log += d));
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    // The port file is renamed into place once the server listens: wait for it
    // (a directory watch), or for the process to exit, or 60 s.
    const listening = new Promise<number>((resolve, reject) => {
      const read = () => {
        try {
          const p = parseInt(fs.readFileSync(portFile, 'utf8'), 10);
          if (p > 0) return p;
        } catch { /* not there yet */ }
        return 0;
      };
      const watcher = fs.watch(dir, () => {
        const p = read();
        if (p > 0) done(() => resolve(p));
      });
      const timer = setTimeout(() => done(() => reject(new Error(`hitboxd did not listen within 60 s:\n${log}`))), 60000);
      const done = (f: () => void) => {
        watcher.close();
        clearTimeout(timer);
        f();
      };
      child.on('error', (e) => done(() => reject(e)));
      exited.then((code) => done(() => reject(new Error(`hitboxd exited with ${code}:\n${log}`))));
      const p = read();
      if (p > 0) done(() => resolve(p));
    });
    let port: number;
    try {
      port = await listening;
    } catch (e) {
      child.kill('SIGKILL');
      fs.rmSync(dir, { recursive: true, force: true });
      throw e;
    }
    return new Hitboxd(child, port, dir, exited, () => log);
  }

  /** SIGTERM and wait: its exit code (0 for a clean stop). */
  async stop(): Promise<number | null> {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill('SIGTERM');
    const code = await this.exited;
    fs.rmSync(this.dir, { recursive: true, force: true });
    return code;
  }

  /** SIGKILL (a crash). */
  async kill(): Promise<void> {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill('SIGKILL');
    await this.exited;
  }
}
