/**
 * rediss:// with mutual TLS: a local TLS-only redis-server that requires client certificates, a CA
 * generated here with openssl, and the daemon configured with redis.tls (CA, client certificate and
 * key). Without the client certificate the daemon stays up and unready instead of exiting.
 */
import { INestApplication } from '@nestjs/common';
import Redis from 'ioredis';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FakeJob, waitFor } from './support/fake-job';
import { RedisServer } from './support/redis-server';
import { startDaemon, testConfig } from './support/test-daemon';

const dir = mkdtempSync(join(tmpdir(), 'pipemorph-tls-'));
const file = (name: string) => join(dir, name);
let server: RedisServer;
const apps: INestApplication[] = [];

function openssl(...args: string[]): void {
  execFileSync('openssl', args, { stdio: 'ignore' });
}

/** A CA, a server certificate for 127.0.0.1 and a client certificate, all signed by the CA. */
function certificates(): void {
  openssl('req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', file('ca.key'), '-out', file('ca.crt'), '-days', '1', '-subj', '/CN=pipemorph-test-ca');
  writeFileSync(file('server.ext'), 'subjectAltName=IP:127.0.0.1\n');
  for (const who of ['server', 'client']) {
    openssl('req', '-newkey', 'rsa:2048', '-nodes', '-keyout', file(`${who}.key`), '-out', file(`${who}.csr`), '-subj', `/CN=${who === 'server' ? '127.0.0.1' : 'pipemorph-daemon'}`);
    openssl('x509', '-req', '-in', file(`${who}.csr`), '-CA', file('ca.crt'), '-CAkey', file('ca.key'), '-CAcreateserial', '-out', file(`${who}.crt`), '-days', '1', ...(who === 'server' ? ['-extfile', file('server.ext')] : []));
  }
}

beforeAll(async () => {
  certificates();
  server = await RedisServer.start({ tls: { cert: file('server.crt'), key: file('server.key'), ca: file('ca.crt'), clientCert: file('client.crt'), clientKey: file('client.key') } });
});

afterAll(async () => {
  for (const app of apps) await app.close();
  await server?.stop();
});

it('runs the daemon over rediss:// with a CA, a client certificate and key from config', async () => {
  const daemon = await startDaemon(testConfig((c) => (c.redis.tls = { caFile: file('ca.crt'), certFile: file('client.crt'), keyFile: file('client.key') }), server.url()));
  apps.push(daemon.app);
  const redis = new Redis(server.url(), server.clientTls());
  const job = new FakeJob(redis, { jobId: 'tls-job', stages: 2, microbatches: 4 });
  await job.register();
  await waitFor('the initial schedule over TLS', () => job.committed(), 20000);
  expect((await fetch(`${daemon.url}/health/ready`)).status).toBe(200);
  redis.disconnect();
});

it('stays up and unready without the client certificate mutual TLS requires', async () => {
  const daemon = await startDaemon(testConfig((c) => (c.redis.tls = { caFile: file('ca.crt'), certFile: '', keyFile: '' }), server.url()));
  apps.push(daemon.app);
  await new Promise((resolve) => setTimeout(resolve, 1000));
  expect((await fetch(`${daemon.url}/health/ready`)).status).toBe(503);
  expect((await fetch(`${daemon.url}/health/live`)).status).toBe(200);
});
