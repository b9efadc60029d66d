import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DemoRecord } from './demo-record';

describe('DemoRecord', () => {
  let dir: string;
  beforeEach(() => (dir = mkdtempSync(join(tmpdir(), 'pipemorph-demo-record-'))));
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('records an act as printed, without the terminal colours, and writes it to the file it names', () => {
    const path = join(dir, 'demo.json');
    const record = new DemoRecord(path);
    record.begin('pipeline', 770);
    record.intro('emulated job: 8 stages');
    record.line(12, 'v1 slow', '\x1b[31m████\x1b[0m it  12   2192 ms');
    record.phase('straggler, old schedule', 4, 2191, 770);
    record.phase('straggler, static ZB only', null, 2192, 770);
    record.switched({ version: 2, effectiveIteration: 16, kind: 'straggler', detail: 'link 6', predictedMs: 846, previousMs: 2192 });
    record.mixed([]);
    record.write({ speed: 5 });
    const written = JSON.parse(readFileSync(path, 'utf8'));
    expect(written.bench).toBe('demo');
    expect(written.acts.pipeline.lines[0].text).toBe('████ it  12   2192 ms');
    expect(written.acts.pipeline.phases.map((p: { iterations: number | null }) => p.iterations)).toEqual([4, null]);
    expect(written.acts.pipeline.phases[0].vsHealthy).toBeCloseTo(2191 / 770, 6);
    expect(written.acts.pipeline.switches[0].effectiveIteration).toBe(16);
  });

  it('writes nothing without DEMO_RESULTS: a plain `npm run demo` leaves bench/results alone', () => {
    const saved = process.env.DEMO_RESULTS;
    delete process.env.DEMO_RESULTS;
    try {
      const record = new DemoRecord();
      record.begin('pipeline', 770);
      record.write();
      expect(record.enabled).toBe(false);
      // The twin: the same record given a file writes it.
      process.env.DEMO_RESULTS = join(dir, 'demo.json');
      const named = new DemoRecord();
      named.begin('pipeline', 770);
      named.write();
      expect(existsSync(join(dir, 'demo.json'))).toBe(true);
    } finally {
      if (saved === undefined) delete process.env.DEMO_RESULTS;
      else process.env.DEMO_RESULTS = saved;
    }
  });
});
