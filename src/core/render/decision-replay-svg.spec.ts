import { DecisionReplayChart, renderDecisionReplaySvg } from './decision-replay-svg';

/**
 * A small XML well-formedness check (no parser among the dependencies): every tag closes in
 * order, attribute values are quoted without raw `<` or `&`, text has no raw `<` and only
 * known entities.
 */
function expectWellFormed(xml: string): void {
  const stack: string[] = [];
  const token = /<(\/?)([A-Za-z][\w-]*)((?:\s+[\w:-]+="[^"]*")*)\s*(\/?)>|([^<]+)|(<)/g;
  let m: RegExpExecArray | null;
  let roots = 0;
  while ((m = token.exec(xml)) !== null) {
    const [, closing, name, attrs, selfClosing, text, stray] = m;
    if (stray) throw new Error(`stray "<" at ${m.index}: ${xml.slice(m.index, m.index + 40)}`);
    if (text !== undefined) {
      if (stack.length === 0 && text.trim() !== '') throw new Error(`text outside the root: ${text.slice(0, 40)}`);
      const bad = text.match(/&(?!(amp|lt|gt|quot|#39);)/);
      if (bad) throw new Error(`raw "&" in text: ${text.slice(0, 60)}`);
      continue;
    }
    for (const a of (attrs ?? '').matchAll(/="([^"]*)"/g)) {
      if (/[<]|&(?!(amp|lt|gt|quot|#39);)/.test(a[1])) throw new Error(`unescaped attribute value ${a[1]}`);
    }
    if (closing) {
      const open = stack.pop();
      if (open !== name) throw new Error(`</${name}> closes <${open}>`);
    } else if (!selfClosing) {
      if (stack.length === 0) roots++;
      stack.push(name);
    } else if (stack.length === 0) {
      roots++;
    }
  }
  expect(stack).toEqual([]);
  expect(roots).toBe(1);
}

function chart(overrides: Partial<DecisionReplayChart> = {}): DecisionReplayChart {
  // 7000 iterations downsampled to every 10th (1000 px: 7 iterations a pixel).
  const points: Array<[number, number]> = Array.from({ length: 700 }, (_, k) => [10 * k, k >= 200 && k <= 500 ? 30 + (k % 3) : 0.2]);
  return {
    title: 'pipemorph replay: corpus-27',
    subtitle: 'rec.jsonl · config config/default.json',
    firstIteration: 0,
    lastIteration: 6999,
    series: [
      { label: 'dp 0 link 2-3', kind: 'pipeline', points, spans: [[2001, 5005]] },
      { label: 'ring rank 5 -> 9', kind: 'data-parallel', points: [[0, 0], [3000, 25], [6999, 0]], spans: [[3000, 3200]] },
    ],
    hiddenSeries: 0,
    switches: [
      { iteration: -1, effectiveIteration: 0, kind: 'initial', version: 1, reason: 'first schedule of the job' },
      { iteration: 2001, effectiveIteration: 2006, kind: 'straggler', version: 2, reason: 'gain 140.4 ms/iteration beats its cost (200 ms)' },
      { iteration: 5005, effectiveIteration: 5011, kind: 'recovery', version: 3, reason: 'healthy again' },
    ],
    declined: [{ iteration: 2120, kind: 'straggler' }, { iteration: 2121, kind: 'straggler' }, { iteration: 6000, kind: 'recovery' }],
    ...overrides,
  };
}

describe('renderDecisionReplaySvg', () => {
  it('draws one row per link with its estimate, straggler spans, labelled switch markers and declined ticks, as well-formed XML', () => {
    const svg = renderDecisionReplaySvg(chart());
    expectWellFormed(svg);
    expect(svg.startsWith('<svg xmlns="http://www.w3.org/2000/svg" class="decision-replay"')).toBe(true);
    expect(svg.match(/<g class="link-row"/g)).toHaveLength(2);
    expect(svg).toContain('data-kind="data-parallel"');
    expect(svg.match(/<polyline class="estimate"/g)).toHaveLength(2);
    expect(svg.match(/class="straggler-span"/g)).toHaveLength(2);
    const markers = [...svg.matchAll(/<g class="switch-marker" data-kind="([^"]+)" data-version="(\d+)" data-iteration="(-?\d+)">/g)].map((m) => [m[1], Number(m[2]), Number(m[3])]);
    expect(markers).toEqual([['initial', 1, -1], ['straggler', 2, 2001], ['recovery', 3, 5005]]);
    const labels = [...svg.matchAll(/class="switch-label"[^>]*>([^<]*)</g)].map((m) => m[1]);
    expect(labels).toEqual(['initial v1', 'straggler v2', 'recovery v3']);
    // Iterations 2120 and 2121 fall in one pixel column: one tick, its tooltip counts both.
    expect(svg.match(/class="declined-tick"/g)).toHaveLength(2);
    expect(svg).toContain('2 declined (straggler) at iterations 2120-2121');
    expect(svg).toContain('>iteration</text>');
    expect(svg).toContain('extra ms');
  });

  it('escapes every text it shows', () => {
    const evil = '<script>alert("x")</script> & co';
    const svg = renderDecisionReplaySvg(chart({
      title: evil,
      subtitle: `it's ${evil}`,
      series: [{ label: evil, kind: 'pipeline', points: [[0, 1], [10, 50]], spans: [[5, 10]] }],
      switches: [{ iteration: 5, effectiveIteration: 8, kind: 'straggler', version: 2, reason: evil }],
      declined: [{ iteration: 7, kind: evil }],
    }));
    expectWellFormed(svg);
    expect(svg).not.toContain('<script>');
    expect(svg).toContain('&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; co');
    expect(svg).toContain('it&#39;s');
  });

  it('stays bounded for a long job with thousands of switches: one marker and one tick per pixel column', () => {
    const switches = Array.from({ length: 20000 }, (_, k) => ({ iteration: 10 * k, effectiveIteration: 10 * k + 3, kind: k % 2 ? 'recovery' : 'straggler', version: k + 2, reason: 'x' }));
    const declined = Array.from({ length: 50000 }, (_, k) => ({ iteration: 4 * k, kind: 'straggler' }));
    const svg = renderDecisionReplaySvg(chart({ firstIteration: 0, lastIteration: 200000, switches, declined }));
    expectWellFormed(svg);
    expect((svg.match(/<g class="switch-marker"/g) ?? []).length).toBeLessThanOrEqual(1001);
    expect((svg.match(/class="declined-tick"/g) ?? []).length).toBeLessThanOrEqual(1001);
    expect(svg.length).toBeLessThan(3_000_000);
    expect(svg).toContain('switches v');
  });

  it('says when no link straggled, and how many straggling links it leaves out', () => {
    expect(renderDecisionReplaySvg(chart({ series: [] }))).toContain('no link straggled');
    expect(renderDecisionReplaySvg(chart({ hiddenSeries: 3 }))).toContain('3 more straggling links not drawn');
  });

  it('is deterministic', () => {
    expect(renderDecisionReplaySvg(chart())).toBe(renderDecisionReplaySvg(chart()));
  });
});
