/**
 * A private redis-server for tests and benchmarks (and for tests that restart, kill, flush or persist Redis): never the shared
 * one at REDIS_URL. Ports come from 6400-6499 (first free one), data from a temporary directory.
 */
import Redis from 'ioredis';
import { ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface RedisServerOptions {
  /** AOF on (appendfsync always): a restart keeps every acknowledged write. */
  persistence?: boolean;
  port?: number;
  extraArgs?: string[];
  /** Serve TLS only on the port (plain port off), with these PEM files; clients must present a certificate signed by `ca`. */
  tls?: { cert: string; key: string; ca: string; clientCert: string; clientKey: string };
}

/** A TCP port nothing listens on, from 6400-6499 unless `from` says otherwise. */
export async function freePort(from = 6400, to = 6499): Promise<number> {
  const start = from + Math.floor(Math.random() * (to - from + 1));
  for (let k = 0; k <= to - from; k++) {
    const port = from + ((start - from + k) % (to - from + 1));
    const free = await new Promise<boolean>((resolve) => {
      const server = createServer();
      server.once('error', () => resolve(false));
      server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
    });
    if (free) return port;
  }
  throw new Error(`no free port in ${from}-${to}`);
}

export class RedisServer {
  private child: ChildProcess | null = null;
  readonly dir = mkdtempSync(join(tmpdir(), 'pipemorph-redis-'));

  private constructor(readonly port: number, private readonly options: RedisServerOptions) {}

  static async start(options: RedisServerOptions = {}): Promise<RedisServer> {
    const server = new RedisServer(options.port ?? (await freePort()), options);
    await server.launch();
    return server;
  }

  url(db = 0): string {
    return `${this.options.tls ? 'rediss' : 'redis'}://127.0.0.1:${this.port}/${db}`;
  }

  /** ioredis options for a client of this server (TLS with the test's client certificate). */
  clientTls(): { tls?: { ca: Buffer; cert: Buffer; key: Buffer } } {
    const tls = this.options.tls;
    return tls ? { tls: { ca: readFileSync(tls.ca), cert: readFileSync(tls.clientCert), key: readFileSync(tls.clientKey) } } : {};
  }

  get pid(): number | undefined {
    return this.child?.pid;
  }

  /** Starts the server (again), on the same port and directory: with persistence it reloads its data. */
  async launch(): Promise<void> {
    const persistence = this.options.persistence
      ? ['--appendonly', 'yes', '--appendfsync', 'always', '--save', '']
      : ['--appendonly', 'no', '--save', ''];
    const tls = this.options.tls;
    const ports = tls
      ? ['--port', '0', '--tls-port', String(this.port), '--tls-cert-file', tls.cert, '--tls-key-file', tls.key, '--tls-ca-cert-file', tls.ca, '--tls-auth-clients', 'yes']
      : ['--port', String(this.port)];
    this.child = spawn('redis-server', [...ports, '--bind', '127.0.0.1', '--dir', this.dir, ...persistence, ...(this.options.extraArgs ?? [])], { stdio: 'ignore' });
    const deadline = Date.now() + 10000;
    for (;;) {
      const client = new Redis(this.url(), { lazyConnect: true, enableReadyCheck: false, maxRetriesPerRequest: 0, retryStrategy: () => null, ...this.clientTls() });
      client.on('error', () => undefined); // refused while starting: expected
      try {
        await client.connect();
        if ((await client.ping()) === 'PONG') return;
      } catch (error) {
        if (/NOAUTH|WRONGPASS/.test(String((error as Error).message))) return; // up, with a password
      } finally {
        client.disconnect();
      }
      if (Date.now() > deadline) {
        await this.kill();
        throw new Error(`redis-server on port ${this.port} did not start`);
      }
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }

  /** Kills the server (SIGKILL): what it had not persisted is lost. */
  async kill(): Promise<void> {
    const child = this.child;
    if (!child || child.exitCode !== null) return;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGKILL');
    await exited;
    this.child = null;
  }

  async restart(): Promise<void> {
    await this.kill();
    await this.launch();
  }

  async stop(): Promise<void> {
    await this.kill();
    rmSync(this.dir, { recursive: true, force: true });
  }
}
