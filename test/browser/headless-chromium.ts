/** Headless Chromium for the page tests (Debian's `chromium`, installed by scripts/ensure-chromium.sh). */
import { execFile, spawnSync } from 'node:child_process';

export function chromiumBinary(): string {
  for (const candidate of [process.env.CHROMIUM, 'chromium', 'chromium-browser']) {
    if (candidate && spawnSync('sh', ['-c', `command -v "${candidate}"`]).status === 0) return candidate;
  }
  throw new Error('chromium is not installed: run bash scripts/ensure-chromium.sh');
}

/**
 * One headless Chromium run with the private profile `profileDir` (other runs on the machine may
 * hold theirs). Asynchronous: the daemon answering the browser runs in the test's process.
 */
export function chromium(profileDir: string, args: string[]): Promise<string> {
  const flags = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--hide-scrollbars', '--no-first-run', `--user-data-dir=${profileDir}`];
  return new Promise((resolve, reject) => {
    execFile(chromiumBinary(), [...flags, ...args], { encoding: 'utf8', timeout: 60000, maxBuffer: 64 << 20 }, (error, stdout, stderr) => {
      if (error) reject(new Error(`chromium failed: ${error.message} ${stderr.slice(-500)}`));
      else resolve(stdout);
    });
  });
}
