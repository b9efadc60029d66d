/**
 * The PyTorch rank runtime (clients/python/pipemorph): its unittest suite runs real rank processes
 * (torch.distributed, gloo on CPU, one process per stage) executing published schedules. It checks
 * that pipeline training with schedule switches and a delegation toggle gives the parameters of a
 * single-process reference, that a broken op order is refused, that GPU-direct sends go one at a time
 * while delegates overlap, that per-rank version records catch a skipped MIN agreement, that data
 * parallel replicas (per-stage gradient all-reduce) train like the reference on the union of their
 * microbatches (a skipped all-reduce is caught), and that a re-map hands the stage state to moved
 * ranks through the checkpoint (a moved rank that skips the load is caught). Through the integration API
 * (pipemorph.integration), a tiny GPT on 4 stages x dp 2 trains like its single-process reference across
 * a switch, a delegation toggle and a re-map (a skipped W op and stale weights after a re-map are
 * caught), and the package installs offline into a fresh venv and runs its example (tests/test_install.py).
 * The suite runs under pytest (its unittest classes too), as `cd clients/python && python3 -m pytest`.
 * scripts/ensure-python-torch.sh and scripts/ensure-python-pytest.sh (pretest) install Debian's
 * python3-torch and python3-pytest.
 */
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';

const PYTHON = '/usr/bin/python3';
const CLIENT = join(__dirname, '../clients/python');

describe('PyTorch rank runtime (real processes)', () => {
  it('passes its pytest suite', () => {
    const run = spawnSync(PYTHON, ['-m', 'pytest', '-q', '-p', 'no:cacheprovider', 'tests'], { cwd: CLIENT, encoding: 'utf8', timeout: 540_000 });
    const output = `${run.stdout}\n${run.stderr}`;
    if (run.status !== 0) throw new Error(`pytest failed (exit ${run.status}):\n${output.slice(-6000)}`);
    expect(output).not.toMatch(/\d+ (failed|skipped|errors?)\b/);
    expect(Number(/(\d+) passed/.exec(output)?.[1] ?? 0)).toBeGreaterThanOrEqual(30);
  }, 600_000);
});
