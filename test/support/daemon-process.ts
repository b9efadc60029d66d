/**
 * The daemon as a separate process (dist/src/daemon/main.js), for faults that need a real process:
 * kill -9, SIGSTOP, start-up with Redis down. Its configuration is written to a temporary file
 * (PIPEMORPH_CONFIG); its output is kept for assertions (e.g. no password in the logs).
 */
import { ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { PipemorphConfig } from '../../src/daemon/config/pipemorph-config.type';
import { DAEMON_NODE_FLAGS } from '../../src/daemon/runtime/node-flags';
import { freePort } from './redis-server';
import { assertTestDatabase } from './test-daemon';

/** The repository root, from the sources (test/support) or from their build (dist/test/support, for benches). */
function repositoryRoot(from: string): string {
  for (let dir = from; dir !== dirname(dir); dir = dirname(dir)) if (existsSync(join(dir, 'package.json'))) return dir;
  throw new Error(`no package.json above ${from}`);
}

export const DAEMON_MAIN = join(repositoryRoot(__dirname), 'dist/src/daemon/main.js');

export class DaemonProcess {
  private child: ChildProcess | null = null;
  output = '';

  private constructor(readonly port: number, private readonly configPath: string) {}

  /** Starts a daemon with `config` (http.host and http.port are replaced: 127.0.0.1 and a free port). */
  static async start(config: PipemorphConfig): Promise<DaemonProcess> {
    assertTestDatabase(config.redis.url);
    const port = await freePort(20000, 29999);
    const dir = mkdtempSync(join(tmpdir(), 'pipemorph-daemon-'));
    const path = join(dir, 'config.json');
    writeFileSync(path, JSON.stringify({ ...config, http: { ...config.http, host: '127.0.0.1', port } }));
    const daemon = new DaemonProcess(port, path);
    daemon.launch();
    return daemon;
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  get pid(): number | undefined {
    return this.child?.pid;
  }

  get running(): boolean {
    return this.child !== null && this.child.exitCode === null && this.child.signalCode === null;
  }

  /** (Re)starts the process with the same configuration and port. */
  launch(): void {
    const env: NodeJS.ProcessEnv = { ...process.env, PIPEMORPH_CONFIG: this.configPath };
    delete env.REDIS_URL;
    delete env.PORT;
    // PIPEMORPH_DAEMON_NODE_ARGS: extra node flags for the daemon only (e.g. --cpu-prof when profiling a bench).
    const nodeArgs = (process.env.PIPEMORPH_DAEMON_NODE_ARGS ?? '').split(' ').filter(Boolean);
    const child = spawn(process.execPath, [...DAEMON_NODE_FLAGS, ...nodeArgs, DAEMON_MAIN], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout!.on('data', (d: Buffer) => (this.output += d.toString()));
    child.stderr!.on('data', (d: Buffer) => (this.output += d.toString()));
    this.child = child;
  }

  async status(path: string, timeoutMs = 2000): Promise<number> {
    try {
      return (await fetch(this.url + path, { signal: AbortSignal.timeout(timeoutMs) })).status;
    } catch {
      return 0;
    }
  }

  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  async json(path: string): Promise<any> {
    try {
      const response = await fetch(this.url + path, { signal: AbortSignal.timeout(2000) });
      return response.ok ? await response.json() : null;
    } catch {
      return null;
    }
  }

  signal(signal: NodeJS.Signals): void {
    this.child?.kill(signal);
  }

  /** Sends `signal` (SIGKILL: kill -9; SIGTERM: clean stop) and waits for the exit. */
  async stop(signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
    const child = this.child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    if (signal !== 'SIGCONT') child.kill('SIGCONT'); // a stopped process must run to handle SIGTERM
    child.kill(signal);
    await exited;
  }
}
