import { spawn } from 'node:child_process';
import { join } from 'node:path';

export const PYTHON = '/usr/bin/python3';
export const PYTHON_CLIENT = join(__dirname, '../../clients/python');

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
