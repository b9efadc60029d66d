import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { DAEMON_NODE_FLAGS, missingNodeFlags } from './node-flags';

const root = join(__dirname, '../../..');

describe('the daemon node flags', () => {
  it('are in npm start (test/ops-deploy.test.ts keeps the image CMD equal to it)', () => {
    const start = (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts.start;
    expect(start).toBe(`node ${DAEMON_NODE_FLAGS.join(' ')} dist/src/daemon/main.js`);
  });

  it('are reported missing when a process lacks them', () => {
    expect(missingNodeFlags(['--no-memory-reducer', '--max-old-space-size=400'])).toEqual([]);
    expect(missingNodeFlags(['--max-old-space-size=400'])).toEqual(['--no-memory-reducer']);
  });
});
