/**
 * The PyTorch rank runtime (clients/python/pipemorph): its unittest suite runs real rank processes
 * (torch.distributed, gloo on CPU, one process per stage) executing published schedules. It checks
 * that pipeline training with schedule switches and a delegation toggle gives the parameters of a
 * single-process reference, that a broken op order is refused, that GPU-direct sends go one at a time
 * while delegates overlap, that per-rank version records catch a skipped MIN agreement, that data
 * parallel replicas (per-stage gradient all-reduce) train like the reference on the union of their
 * microbatches (a skipped all-reduce is caught), and that a re-map hands the stage state to moved
 * ranks through the checkpoint (a moved rank that skips the load is caught).
 * scripts/ensure-python-torch.sh (pretest) installs Debian's python3-torch.
 */
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';

const PYTHON = '/usr/bin/python3';
const CLIENT = join(__dirname, '../clients/python');

describe('PyTorch rank runtime (real processes)', () => {
  it('passes its unittest suite', () => {
    const run = spawnSync(PYTHON, ['-m', 'unittest', 'discover', '-s', 'tests', '-t', '.'], { cwd: CLIENT, encoding: 'utf8', timeout: 300_000 });
    const output = `${run.stdout}\n${run.stderr}`;
    if (run.status !== 0) throw new Error(`python unittest failed (exit ${run.status}):\n${output.slice(-6000)}`);
    expect(output).toMatch(/\nOK/);
    expect(Number(/Ran (\d+) tests?/.exec(output)?.[1] ?? 0)).toBeGreaterThanOrEqual(11);
  }, 320_000);
});
