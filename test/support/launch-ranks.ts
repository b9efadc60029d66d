import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';

export const PYTHON = '/usr/bin/python3';

/** The repository's root above `from`: the tests run from test/support, the benches from dist/test/support. */
function repositoryRoot(from: string): string {
  for (let dir = from; dir !== dirname(dir); dir = dirname(dir)) if (existsSync(join(dir, 'package.json'))) return dir;
  throw new Error(`no package.json above ${from}`);
}

export const REPOSITORY_ROOT = repositoryRoot(__dirname);
export const PYTHON_CLIENT = join(REPOSITORY_ROOT, 'clients', 'python');

/** Runs `python3 -m pipemorph.launch ARGS` (real rank processes) from clients/python; resolves with its exit code and stderr. */
export function launchRanks(args: string[]): Promise<{ code: number; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(PYTHON, ['-m', 'pipemorph.launch', ...args], { cwd: PYTHON_CLIENT, stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('error', reject);
    child.on('exit', (code) => resolve({ code: code ?? 1, stderr }));
  });
}
