#!/usr/bin/env node
/**
 * The jest part of `npm test`, as two groups run side by side, each in band: most of the suite's
 * wall time is real processes waiting (rank processes, daemons, redis-servers, Chromium), so two at
 * a time keep both cores busy, and in band within a group keeps a group's tests off each other.
 *
 * - own-db: test files that use a Redis database of their own (`redisUrlFor(N)`), and the Python
 *   suite (no Redis). No two of them run at once, so two of them may share a database.
 * - shared: the specs beside the code and every other test file; those use database 0 (some flush
 *   it) or start their own redis-servers.
 * The two groups never touch the same database: a daemon started in the own-db group on database 0
 * throws (test/support/test-daemon.ts assertTestDatabase). Each group's output is printed when it ends; the exit code is the worse of the two.
 *
 * Both groups run against a redis-server this script starts (a free port, a temporary directory, no
 * persistence) and stops: REDIS_URL is set to it for them, and the Redis the caller's REDIS_URL names
 * (a user's `npm start` or demo may be using it) is never touched, no database of it (issue 30, item
 * 4). Its address goes to the tests as PIPEMORPH_USER_REDIS_URL, which the guard refuses.
 *   node scripts/run-jest-groups.js [--list]
 */
const { spawn, spawnSync } = require('node:child_process');
const { mkdtempSync, readdirSync, readFileSync, rmSync } = require('node:fs');
const { createServer } = require('node:net');
const { tmpdir } = require('node:os');
const { join } = require('node:path');

const ROOT = join(__dirname, '..');
const JEST = require.resolve('jest/bin/jest');

/** Test files (relative to the repository) that run in the own-db group. */
function ownDbFiles() {
  const dir = join(ROOT, 'test');
  return readdirSync(dir)
    .filter((f) => f.endsWith('.test.ts'))
    .filter((f) => f === 'python-runtime.test.ts' || /redisUrlFor\(\s*[1-9]\d*\s*\)/.test(readFileSync(join(dir, f), 'utf8')))
    .map((f) => `test/${f}`)
    .sort();
}

/** A TCP port nothing listens on, from 6500-6599 (test/support/redis-server.ts takes 6400-6499). */
async function freePort() {
  const start = 6500 + Math.floor(Math.random() * 100);
  for (let k = 0; k < 100; k++) {
    const port = 6500 + ((start - 6500 + k) % 100);
    const free = await new Promise((resolve) => {
      const server = createServer();
      server.once('error', () => resolve(false));
      server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
    });
    if (free) return port;
  }
  throw new Error('no free port in 6500-6599 for the suite\'s redis-server');
}

/** Starts the suite's own redis-server; resolves with its port and a stop function. */
async function startRedis() {
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'pipemorph-suite-redis-'));
  const child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--save', '', '--appendonly', 'no', '--databases', '16'], { stdio: 'ignore' });
  const stop = () => {
    child.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  };
  for (let k = 0; k < 100; k++) {
    const ping = spawnSync('redis-cli', ['-p', String(port), 'ping'], { encoding: 'utf8' });
    if (ping.stdout && ping.stdout.trim() === 'PONG') return { port, stop };
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  stop();
  throw new Error(`the suite's redis-server did not start on port ${port}`);
}

function run(name, args, redisUrl) {
  return new Promise((resolve) => {
    const started = Date.now();
    // test/support/test-daemon.ts refuses database 0 to daemons of the own-db group, and the caller's Redis to every test.
    const env = { ...process.env, PIPEMORPH_TEST_GROUP: name, REDIS_URL: redisUrl, PIPEMORPH_USER_REDIS_URL: process.env.REDIS_URL || 'redis://127.0.0.1:6379' };
    const child = spawn(process.execPath, [JEST, ...args], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'], env });
    const chunks = [];
    child.stdout.on('data', (c) => chunks.push(c));
    child.stderr.on('data', (c) => chunks.push(c));
    child.on('close', (code, signal) => {
      const seconds = ((Date.now() - started) / 1000).toFixed(0);
      process.stdout.write(`\n===== jest group ${name}: exit ${code ?? signal} after ${seconds} s =====\n`);
      process.stdout.write(Buffer.concat(chunks));
      resolve(code ?? 1);
    });
  });
}

async function main() {
  const own = ownDbFiles();
  if (process.argv.includes('--list')) {
    process.stdout.write(`${own.join('\n')}\n`);
    return;
  }
  // Paths as regular expressions for jest: escape the dots.
  const patterns = own.map((f) => f.replace(/[.]/g, '\\.'));
  const redis = await startRedis();
  const url = `redis://127.0.0.1:${redis.port}`;
  process.stdout.write(`jest groups: the suite's own redis-server at ${url} (REDIS_URL ${process.env.REDIS_URL || 'redis://127.0.0.1:6379'} is left alone)\n`);
  let codes;
  try {
    codes = await Promise.all([
      run('own-db', ['--runInBand', ...patterns], url),
      run('shared', ['--runInBand', ...patterns.flatMap((p) => ['--testPathIgnorePatterns', p])], url),
    ]);
  } finally {
    redis.stop();
  }
  process.exit(Math.max(...codes));
}

main().catch((error) => {
  process.stderr.write(`${error.stack}\n`);
  process.exit(1);
});
