/** The built `pipemorph` CLI in a child process (npm run build first). */
import { spawn } from 'node:child_process';
import { join } from 'node:path';

export const CLI_BIN = join(__dirname, '..', '..', 'dist/src/cli/main.js');

export interface CliRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Async, so a Redis server or an HTTP server in the test's process keeps answering meanwhile. */
export function runCli(...args: string[]): Promise<CliRun> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [CLI_BIN, ...args]);
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}
