/**
 * `npm run bench:demo`: one run of the live demo (`npm run demo`, both acts, emulated ranks) on a
 * redis-server of its own, recorded in bench/results/demo.json with its stamp: the demo's tables,
 * transcripts and figures in README.md and docs/demo.md are rendered from it (issue 30, item 2).
 * About a minute. The demo's own output passes through.
 */
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startOwnRedis } from '../src/support/own-redis-server';
import { REPO_ROOT, startStamp } from '../src/support/results-stamp';

async function main(): Promise<void> {
  const stamp = startStamp('npm run bench:demo');
  const server = await startOwnRedis();
  const dir = mkdtempSync(join(tmpdir(), 'pipemorph-demo-bench-'));
  const recorded = join(dir, 'demo.json');
  try {
    const env: NodeJS.ProcessEnv = { ...process.env, REDIS_URL: server.url(), PORT: '0', DEMO_RESULTS: recorded, DEMO_TIMELINES: join(dir, 'timelines') };
    delete env.DEMO_ACTS;
    delete env.DEMO_RANKS;
    const code = await new Promise<number | null>((resolve, reject) => {
      const child = spawn(process.execPath, [join(REPO_ROOT, 'dist', 'src', 'demo', 'demo.js')], { env, stdio: ['ignore', 'inherit', 'inherit'] });
      child.on('error', reject);
      child.on('exit', resolve);
    });
    if (code !== 0) throw new Error(`the demo exited ${code}`);
    const result = { ...(JSON.parse(readFileSync(recorded, 'utf8')) as Record<string, unknown>), stamp: stamp() };
    const results = join(REPO_ROOT, 'bench', 'results');
    mkdirSync(results, { recursive: true });
    writeFileSync(join(results, 'demo.json'), `${JSON.stringify(result, null, 2)}\n`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
    await server.stop();
  }
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : error);
  process.exit(1);
});
