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
 *   node scripts/run-jest-groups.js [--list]
 */
const { spawn } = require('node:child_process');
const { readdirSync, readFileSync } = require('node:fs');
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

function run(name, args) {
  return new Promise((resolve) => {
    const started = Date.now();
    // test/support/test-daemon.ts refuses database 0 to daemons of the own-db group.
    const env = { ...process.env, PIPEMORPH_TEST_GROUP: name };
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
  const codes = await Promise.all([
    run('own-db', ['--runInBand', ...patterns]),
    run('shared', ['--runInBand', ...patterns.flatMap((p) => ['--testPathIgnorePatterns', p])]),
  ]);
  process.exit(Math.max(...codes));
}

main().catch((error) => {
  process.stderr.write(`${error.stack}\n`);
  process.exit(1);
});
