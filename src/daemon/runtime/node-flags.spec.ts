import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { DAEMON_NODE_FLAGS, missingNodeFlags } from './node-flags';

const root = join(__dirname, '../../..');

describe('the daemon node flags', () => {
  it('are in every production launch: the image CMD and npm start', () => {
    const cmd = /^CMD (\[.*\])$/m.exec(readFileSync(join(root, 'Dockerfile'), 'utf8'));
    expect(cmd).not.toBeNull();
    const argv = JSON.parse(cmd![1]) as string[];
    expect(argv.slice(1, -1)).toEqual([...DAEMON_NODE_FLAGS]);
    const start = (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts.start;
    expect(start).toBe(`node ${DAEMON_NODE_FLAGS.join(' ')} dist/src/daemon/main.js`);
  });

  it('are reported missing when a process lacks them', () => {
    expect(missingNodeFlags(['--no-memory-reducer', '--max-old-space-size=400'])).toEqual([]);
    expect(missingNodeFlags(['--max-old-space-size=400'])).toEqual(['--no-memory-reducer']);
  });
});
