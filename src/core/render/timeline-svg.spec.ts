import fc from 'fast-check';
import { generateSchedule } from '../engine/generator';
import { summarizeRun } from '../engine/simulation-report';
import { simulateSchedule } from '../engine/simulator';
import { formatOp } from '../pipeline/op';
import { toPipelineModel, validateProfile } from '../pipeline/pipeline-model';
import { PipelineModel } from '../pipeline/pipeline-model.type';
import { TimelinePanel, TimelineRun } from './timeline-panel.type';
import { COMPACT_ABOVE_OPS, px, renderTimelineSvg, timelineLayout, TimelineLayout } from './timeline-svg';

/** The paper's Fig. 4/5 pipeline (theorem1.spec.ts): S = 4, N = 12, every op 10 ms, warm-up [7, 5, 3, 1]. */
function fig4(linkMs: number[] = [0, 0, 0]): PipelineModel {
  const t = [10, 10, 10, 10];
  return toPipelineModel(validateProfile({ stages: 4, microbatches: 12, fMs: t, bMs: t, wMs: t, linkMs }));
}

interface Block {
  stage: number;
  op: string;
  x: number;
  y: number;
  width: number;
}

/** The op blocks of one panel, read back from the SVG text, with the row each sits in. */
function blocksOf(svg: string, panel: number): { rows: number[]; blocks: Block[] } {
  const body = svg.split('<g class="panel"')[panel + 1].split('<g class="panel"')[0];
  const rows: number[] = [];
  const blocks: Block[] = [];
  for (const row of body.split('<g class="row" data-stage="').slice(1)) {
    const stage = Number(row.slice(0, row.indexOf('"')));
    rows.push(stage);
    const group = /^[^]*?<g class="blocks" transform="translate\(0 ([\d.]+)\)">([^]*?)<\/g>/.exec(row);
    if (!group) continue;
    for (const m of group[2].matchAll(/<rect class="([FBW])" data-op="([FBW]\d+)" x="([-\d.]+)" width="([\d.]+)"/g)) {
      if (m[1] !== m[2][0]) continue;
      blocks.push({ stage, op: m[2], x: Number(m[3]), y: Number(group[1]), width: Number(m[4]) });
    }
  }
  return { rows, blocks };
}

/** Mismatches between the SVG's blocks and the run's times (empty when the picture is right). */
function mismatches(svg: string, panel: number, run: TimelineRun, layout: TimelineLayout): string[] {
  const { rows, blocks } = blocksOf(svg, panel);
  const problems: string[] = [];
  if (rows.join() !== Array.from({ length: run.stages }, (_, s) => s).join()) problems.push(`rows ${rows.join()}`);
  const per = 3 * run.microbatches;
  const seen = new Set<string>();
  for (const b of blocks) {
    const key = `${b.stage}:${b.op}`;
    if (seen.has(key)) problems.push(`${key} twice`);
    seen.add(key);
    const code = run.order[b.stage].find((c) => formatOp(c) === b.op);
    if (code === undefined) {
      problems.push(`${key} is not an op`);
      continue;
    }
    const k = b.stage * per + code;
    if (Math.abs(b.x - (layout.left + run.start[k] * layout.scale)) > 0.006) problems.push(`${key} x ${b.x}`);
    if (Math.abs(b.x + b.width - (layout.left + run.end[k] * layout.scale)) > 0.012) problems.push(`${key} end ${b.x + b.width}`);
    if (Math.abs(b.y - (layout.panelTops[panel] + b.stage * (layout.rowHeight + layout.rowGap))) > 0.006) problems.push(`${key} y ${b.y}`);
  }
  if (seen.size !== run.stages * per) problems.push(`${seen.size} blocks for ${run.stages * per} ops`);
  return problems;
}

describe('renderTimelineSvg on the paper\'s Fig. 4/5 example (4 stages x 12 microbatches)', () => {
  const healthy = generateSchedule(fig4(), { warmup: [7, 5, 3, 1] });
  const straggled = simulateSchedule(fig4([20, 0, 0]), healthy.order);
  const panels: TimelinePanel[] = [
    { title: 'Fig. 4: healthy', run: healthy },
    { title: 'Fig. 5: +20 ms on link 0', run: straggled, slowLinks: [0], linkNotes: { 0: '+20 ms' } },
  ];
  const svg = renderTimelineSvg(panels, { title: 'Fig. 4 / Fig. 5' });
  const layout = timelineLayout(panels, { title: 'Fig. 4 / Fig. 5' });

  it('draws one block per op at its simulated start and end, rows in stage order', () => {
    expect(healthy.iterationMs).toBe(390);
    expect(straggled.iterationMs).toBe(440);
    expect(mismatches(svg, 0, healthy, layout)).toEqual([]);
    expect(mismatches(svg, 1, straggled, layout)).toEqual([]);
    expect(blocksOf(svg, 0).blocks).toHaveLength(4 * 36);
    // Both panels share one time scale: 440 ms spans the plot width.
    expect(layout.scale).toBeCloseTo(1100 / 440, 9);
  });

  it('catches a picture that is wrong on purpose (a shifted block, a dropped block, swapped rows)', () => {
    const shifted = svg.replace(/(data-op="F3" x=")([\d.]+)/, (_, head: string, x: string) => head + px(Number(x) + 5));
    expect(mismatches(shifted, 0, healthy, layout).some((p) => p.includes('F3 x'))).toBe(true);
    const dropped = svg.replace(/<rect class="W" data-op="W11"[^>]*\/>/, '');
    expect(mismatches(dropped, 0, healthy, layout)).toContain(`${4 * 36 - 1} blocks for ${4 * 36} ops`);
    const swapped = svg.replace('data-stage="1"', 'data-stage="X"').replace('data-stage="2"', 'data-stage="1"').replace('data-stage="X"', 'data-stage="2"');
    expect(mismatches(swapped, 0, healthy, layout)[0]).toMatch(/^rows 0,2,1,3/);
  });

  it('puts iteration time and bubble rate in each panel title', () => {
    const bubble = summarizeRun(straggled, fig4().durations).bubbleRate;
    expect(svg).toContain(`Fig. 4: healthy · iteration 390 ms · bubble rate ${((summarizeRun(healthy, fig4().durations).bubbleRate) * 100).toFixed(1)}%`);
    expect(svg).toContain(`Fig. 5: +20 ms on link 0 · iteration 440 ms · bubble rate ${(bubble * 100).toFixed(1)}%`);
    expect(svg).toContain(`data-bubble-rate="${bubble.toFixed(4)}"`);
  });

  it('draws every message of the slow link as an arrow from sender row to receiver row, none for healthy links', () => {
    const messages = svg.split('<g class="panel"')[2].match(/<line class="msg (fwd|bwd)"[^>]*>/g) ?? [];
    expect(messages).toHaveLength(2 * 12);
    const m = straggled.messages;
    const k = Array.from({ length: m.count }, (_, i) => i).find((i) => m.link[i] === 0 && m.direction[i] === 0 && m.microbatch[i] === 0)!;
    const arrow = messages.find((line) => line.includes('class="msg fwd"') && line.includes('data-mb="0"'))!;
    expect(arrow).toContain(`x1="${px(layout.left + m.sentMs[k] * layout.scale)}"`);
    expect(arrow).toContain(`x2="${px(layout.left + m.arriveMs[k] * layout.scale)}"`);
    expect(m.arriveMs[k] - m.sentMs[k]).toBe(20);
    expect(svg.split('<g class="panel"')[1]).not.toContain('class="msg');
  });

  it('is deterministic and escapes text', () => {
    expect(renderTimelineSvg(panels, { title: 'Fig. 4 / Fig. 5' })).toBe(svg);
    const evil = renderTimelineSvg([{ title: '<script>alert("x")</script> & co', run: healthy, slowLinks: [1], linkNotes: { 1: '<b>' } }], { title: "it's <svg>" });
    expect(evil).not.toContain('<script>');
    expect(evil).not.toContain('<b>');
    expect(evil).toContain('&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; co');
    expect(evil).toContain('it&#39;s &lt;svg&gt;');
  });
});

describe('renderTimelineSvg with the data-parallel all-reduce after the pipeline', () => {
  const run = generateSchedule(fig4(), { warmup: [7, 5, 3, 1] });
  /** Each stage's ring from its last op: 50 ms, and 400 ms on stage 1 whose ring has a slow link. */
  const finish = Array.from({ length: 4 }, (_, s) => Math.max(...Array.from(run.order[s], (code) => run.end[s * 36 + code])));
  const rings = finish.map((startMs, s) => ({ startMs, endMs: startMs + (s === 1 ? 400 : 50), slow: s === 1, ...(s === 1 ? { note: 'ring link +30.0 ms' } : {}) }));
  const panels: TimelinePanel[] = [
    { title: 'slow ring', run, allReduce: rings },
    { title: 'healthy rings', run, allReduce: rings.map((r) => ({ ...r, endMs: r.startMs + 50, slow: false, note: undefined })) },
  ];
  const svg = renderTimelineSvg(panels);
  const layout = timelineLayout(panels);
  const endMs = Math.max(...rings.map((r) => r.endMs));

  it('draws each stage\'s ring as a bar from its last op to its end, the slow one marked, the iteration ending with the last ring', () => {
    expect(endMs).toBeGreaterThan(run.iterationMs + 300);
    expect(layout.scale).toBeCloseTo(1100 / endMs, 9);
    expect(mismatches(svg, 0, run, layout)).toEqual([]);
    const first = svg.split('<g class="panel"')[1];
    const bars = [...first.matchAll(/<rect class="all-reduce( slow)?" data-stage="(\d)"[^>]* x="([\d.]+)" y="([\d.]+)" width="([\d.]+)"/g)];
    expect(bars.map((b) => [Number(b[2]), b[1] === ' slow'])).toEqual([[0, false], [1, true], [2, false], [3, false]]);
    for (const b of bars) {
      const ring = rings[Number(b[2])];
      expect(Number(b[3])).toBeCloseTo(layout.left + ring.startMs * layout.scale, 2);
      expect(Number(b[5])).toBeCloseTo((ring.endMs - ring.startMs) * layout.scale, 2);
      expect(Number(b[4])).toBeCloseTo(layout.panelTops[0] + Number(b[2]) * (layout.rowHeight + layout.rowGap), 2);
    }
    expect(first).toContain('all-reduce 400 ms (ring link +30.0 ms)');
    expect(first).toContain(`data-iteration-ms="${px(endMs)}" data-pipeline-ms="390"`);
    expect(first).toContain(`slow ring · iteration ${endMs.toFixed(0)} ms (pipeline 390 ms, then the all-reduce) · bubble rate`);
    expect(svg.split('<g class="panel"')[2]).not.toContain('all-reduce slow');
    expect(svg).toContain('ring with a slow link');
  });

  it('leaves a picture without an all-reduce as it was', () => {
    const plain = renderTimelineSvg([{ title: 'plain', run }]);
    expect(plain).not.toContain('all-reduce');
    expect(plain).toContain('plain · iteration 390 ms · bubble rate');
    expect(plain).toContain('data-iteration-ms="390" data-bubble-rate');
  });
});

describe('renderTimelineSvg on random pipelines', () => {
  it('always draws one block per op where the engine put it (fast-check)', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 6 }).chain((S) =>
          fc.record({
            S: fc.constant(S),
            N: fc.integer({ min: 1, max: 10 }),
            times: fc.array(fc.double({ min: 0.5, max: 40, noNaN: true }), { minLength: 3 * S, maxLength: 3 * S }),
            links: fc.array(fc.double({ min: 0, max: 50, noNaN: true }), { minLength: S - 1, maxLength: S - 1 }),
          }),
        ),
        ({ S, N, times, links }) => {
          const model = toPipelineModel(
            validateProfile({ stages: S, microbatches: N, fMs: times.slice(0, S), bMs: times.slice(S, 2 * S), wMs: times.slice(2 * S), linkMs: links }),
          );
          const run = generateSchedule(model, { warmup: Array.from({ length: S }, (_, i) => Math.min(N, S - i)) });
          const panels = [{ title: 'random', run, slowLinks: links.map((_, i) => i) }];
          expect(mismatches(renderTimelineSvg(panels), 0, run, timelineLayout(panels))).toEqual([]);
        },
      ),
      { numRuns: 40 },
    );
  });
});

describe('renderTimelineSvg on a large pipeline (compact paths)', () => {
  it('draws every op as one sub-path where the engine put it, one path per kind and row', () => {
    const t = [1, 1.2, 1, 1.1, 1, 1, 1.3, 1];
    const model = toPipelineModel(validateProfile({ stages: 8, microbatches: 1000, fMs: t, bMs: t, wMs: t, linkMs: [0, 0, 0, 5, 0, 0, 0] }));
    const run = generateSchedule(model, { warmup: [8, 7, 6, 5, 4, 3, 2, 1] });
    const panels = [{ title: 'large', run, slowLinks: [3] }];
    const svg = renderTimelineSvg(panels);
    const layout = timelineLayout(panels);
    expect(8 * 3000).toBeGreaterThan(COMPACT_ABOVE_OPS);
    expect(svg).not.toContain('<rect class="F"');
    const rows = svg.split('<g class="row" data-stage="').slice(1);
    expect(rows.map((r) => Number(r.slice(0, r.indexOf('"'))))).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    let wrong = 0;
    rows.forEach((row, s) => {
      for (const [kind, name] of ['F', 'B', 'W'].entries()) {
        const d = new RegExp(`<path class="${name}" transform="scale\\(0.01 1\\)" d="([^"]*)"`).exec(row)![1];
        const subpaths = [...d.matchAll(/M(\d+) 0h(\d+)v/g)].map((m) => [m[0], Number(m[1]) / 100, Number(m[2]) / 100]);
        const ops = Array.from(run.order[s]).filter((code) => code % 3 === kind);
        expect(subpaths).toHaveLength(ops.length);
        ops.forEach((code, i) => {
          const k = s * 3000 + code;
          if (Math.abs(Number(subpaths[i][1]) - (layout.left + run.start[k] * layout.scale)) > 0.006) wrong++;
          if (Math.abs(Number(subpaths[i][1]) + Number(subpaths[i][2]) - (layout.left + run.end[k] * layout.scale)) > 0.012) wrong++;
        });
      }
    });
    expect(wrong).toBe(0);
  });
});
