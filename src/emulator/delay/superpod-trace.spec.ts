import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { InputError } from '../../core/input-error';
import { parseDelayTrace, TRACE_TAIL_ITERATIONS } from './superpod-trace';

/** The PipeMorph artifact's superpod trace, as the repository carries it (bench/traces). */
function superpodText(): string {
  return readFileSync(join(__dirname, '../../../bench/traces/superpod-link-delays.trace'), 'utf8');
}

/** The InputError message parseDelayTrace throws for `text`, or fails the test. */
function errorOf(text: string): string {
  try {
    parseDelayTrace(text);
  } catch (e) {
    expect(e).toBeInstanceOf(InputError);
    return (e as Error).message;
  }
  throw new Error(`expected an InputError for ${JSON.stringify(text)}`);
}

describe('parseDelayTrace on the superpod trace', () => {
  const model = parseDelayTrace(superpodText());

  it('injects and ends the first straggler: 30 ms on link 2 from iteration 15 to 85', () => {
    expect(model.delayMs(2, 0, 14)).toBe(0);
    expect(model.delayMs(2, 0, 15)).toBe(30);
    expect(model.delayMs(2, 0, 20)).toBe(30);
    expect(model.delayMs(2, 12345, 84)).toBe(30);
    expect(model.delayMs(2, 0, 85)).toBe(0);
    expect(model.delayMs(2, 0, 100)).toBe(0);
    expect(model.delayMs(1, 0, 20)).toBe(0);
    expect(model.delayMs(3, 0, 20)).toBe(0);
  });

  it('applies multi-link events to every listed link: 40 ms on links 0 and 5 at iteration 150', () => {
    expect(model.delayMs(0, 0, 150)).toBe(40);
    expect(model.delayMs(5, 0, 150)).toBe(40);
    for (const link of [1, 2, 3, 4, 6]) expect(model.delayMs(link, 0, 150)).toBe(0);
    expect(model.delayMs(0, 0, 190)).toBe(0);
    // Three links at once, 50 ms (340..410).
    for (const link of [2, 3, 6]) expect(model.delayMs(link, 0, 400)).toBe(50);
    expect(model.delayMs(6, 0, 410)).toBe(0);
  });

  it('has no straggler between events and none after the last one ends', () => {
    for (const iteration of [0, 10, 100, 200, 1000, 1029]) for (let link = 0; link < 7; link++) expect(model.delayMs(link, 0, iteration)).toBe(0);
  });

  it('fails the NIC on every link from iteration 1030 on, with no extra delay', () => {
    for (let link = 0; link < 7; link++) {
      expect(model.nicFailed(link, 0)).toBe(false);
      expect(model.nicFailed(link, 1029)).toBe(false);
      expect(model.nicFailed(link, 1030)).toBe(true);
      expect(model.nicFailed(link, 1099)).toBe(true);
      expect(model.delayMs(link, 0, 1030)).toBe(0);
      expect(model.delayMs(link, 0, 1099)).toBe(0);
    }
  });

  it('suggests running 70 iterations past the last event (1100)', () => {
    expect(TRACE_TAIL_ITERATIONS).toBe(70);
    expect(model.suggestedIterations).toBe(1100);
  });
});

describe('parseDelayTrace', () => {
  it('skips blank lines and comments, accepts CRLF and spaces, and converts seconds to ms exactly', () => {
    const model = parseDelayTrace('# header\r\n\r\n  5 ; 0_1 , 3_4 ; 0.07 \r\n   # note\n9;;0.00\n12;3_4;1.5\n');
    expect(model.delayMs(0, 0, 5)).toBe(70);
    expect(model.delayMs(3, 0, 8)).toBe(70);
    expect(model.delayMs(3, 0, 12)).toBe(1500);
    expect(model.delayMs(0, 0, 12)).toBe(70);
    expect(model.nicFailed(0, 1000)).toBe(false);
    expect(model.suggestedIterations).toBe(12 + 70);
  });

  it('drops a straggler still open when the NIC fails: only the failure remains', () => {
    const model = parseDelayTrace('5;1_2;0.02\n30;;inf\n');
    expect(model.delayMs(1, 0, 29)).toBe(20);
    expect(model.nicFailed(1, 29)).toBe(false);
    expect(model.delayMs(1, 0, 30)).toBe(0);
    expect(model.nicFailed(1, 30)).toBe(true);
    expect(model.nicFailed(6, 30)).toBe(true);
    expect(model.suggestedIterations).toBe(100);
  });

  it('lets a later event at the same iteration override an earlier one', () => {
    const model = parseDelayTrace('5;1_2;0.02\n5;1_2;0.05\n');
    expect(model.delayMs(1, 0, 5)).toBe(50);
  });

  it('rejects a link that does not join neighbouring stages, naming the line', () => {
    expect(errorOf('15;2_3;0.03\n# c\n85;2_4;0.00')).toMatch(/^line 3: "2_4" is not a pipeline link/);
    expect(errorOf('15;3_2;0.03')).toMatch(/^line 1: "3_2"/);
    expect(errorOf('15;2-3;0.03')).toMatch(/^line 1: "2-3"/);
    expect(errorOf('15;2_3,;0.03')).toMatch(/^line 1: "" is not a pipeline link/);
  });

  it('rejects a bad delay or iteration, naming the line', () => {
    expect(errorOf('15;2_3;0.03\n20;2_3;fast')).toMatch(/^line 2: delay "fast"/);
    expect(errorOf('15;2_3;-0.03')).toMatch(/^line 1: delay "-0.03"/);
    expect(errorOf('15;2_3;')).toMatch(/^line 1: delay ""/);
    expect(errorOf('15;2_3;1e-2')).toMatch(/^line 1: delay "1e-2"/);
    expect(errorOf('x;2_3;0.03')).toMatch(/^line 1: iteration "x"/);
    expect(errorOf('1.5;2_3;0.03')).toMatch(/^line 1: iteration "1.5"/);
    expect(errorOf('15;2_3')).toMatch(/^line 1: expected ITERATION;LINKS;DELAY_S/);
    expect(errorOf('15;2_3;0.03;4')).toMatch(/^line 1: expected/);
  });

  it('rejects decreasing iterations, naming the line', () => {
    expect(errorOf('15;2_3;0.03\n\n85;2_3;0.00\n80;0_1;0.01')).toMatch(/^line 4: iteration 80 comes after iteration 85/);
  });

  it('rejects a NIC failure with links, a second failure and events after it', () => {
    expect(errorOf('10;0_1;inf')).toMatch(/^line 1: "inf" \(NIC failure\) takes no links/);
    expect(errorOf('10;;inf\n10;0_1;0.02')).toMatch(/^line 2: event after the NIC failure at iteration 10/);
    expect(errorOf('10;;inf\n20;;inf')).toMatch(/^line 2: event after the NIC failure/);
  });

  it('rejects a trace with no events', () => {
    expect(errorOf('')).toMatch(/no events/);
    expect(errorOf('# only a comment\n\n')).toMatch(/no events/);
  });
});
