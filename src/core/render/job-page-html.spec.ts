import { generateSchedule } from '../engine/generator';
import { toPipelineModel, validateProfile } from '../pipeline/pipeline-model';
import { heatColor, renderHeatStripSvg } from './heat-strip-svg';
import { renderJobPage } from './job-page-html';
import { JobPageView } from './job-page.type';
import { renderTimelineSvg } from './timeline-svg';

function view(overrides: Partial<JobPageView> = {}): JobPageView {
  const t = [10, 10, 10, 10];
  const run = generateSchedule(toPipelineModel(validateProfile({ stages: 4, microbatches: 12, fMs: t, bMs: t, wMs: t, linkMs: [0, 0, 20] })), { warmup: [7, 5, 3, 1] });
  return {
    jobId: 'job-1',
    stages: 4,
    microbatches: 12,
    dp: 1,
    iteration: 41,
    iterationMs: 420,
    scheduleVersion: 2,
    handshake: null,
    stragglers: [{ kind: 'pipeline', where: 'dp 0 link 2-3 (rank 2 → 3)', extraMs: 20, note: 'breaks Eq. 1 for the schedule in force' }],
    heat: {
      iterations: [39, 40, 41],
      iterationMs: [410, 420, Number.NaN],
      rows: [
        { label: 'dp 0 link 1-2', straggler: false, baselineMs: 0.1, values: [0.1, 0.1, 0.1] },
        { label: 'dp 0 link 2-3', straggler: true, baselineMs: 0.1, values: [20.1, Number.NaN, 20.1] },
      ],
      hiddenRows: 0,
    },
    versions: [
      { version: 1, fromIteration: 0, reason: 'initial', detail: 'initial plan', predictedMs: 390, previousPredictedMs: null, measuredMs: 395, inForce: false },
      { version: 2, fromIteration: 30, reason: 'straggler', detail: 'dp 0 link 2 +20.0 ms: re-planned', predictedMs: 410, previousPredictedMs: 460, measuredMs: null, inForce: true },
    ],
    timelineSvg: renderTimelineSvg([{ title: 'in force: v2', run, slowLinks: [2] }]),
    links: { timeline: '/jobs/job-1/timeline.svg', json: '/jobs/job-1' },
    ...overrides,
  };
}

describe('renderJobPage', () => {
  it('shows the stragglers, the heat strip, the versions (newest first, the one in force marked) and the timeline', () => {
    const html = renderJobPage(view());
    expect(html.startsWith('<!DOCTYPE html>')).toBe(true);
    expect(html).toContain('<li class="straggler" data-kind="pipeline"><span class="kind">pipeline</span>dp 0 link 2-3 (rank 2 → 3): +20.0 ms');
    expect(html).toMatch(/<g class="heat-row straggler" data-row="1">/);
    expect(html.indexOf('data-version="2"')).toBeLessThan(html.indexOf('data-version="1"'));
    expect(html).toMatch(/<tr class="version in-force" data-version="2"><td>v2 \(in force\)<\/td><td class="num">30<\/td><td>straggler<\/td><td class="num">410 ms <span class="muted">\(was 460 ms\)<\/span><\/td><td class="num">-<\/td>/);
    expect(html).toContain('<svg xmlns="http://www.w3.org/2000/svg" class="pipemorph-timeline"');
  });

  it('for a data-parallel job shows the rings of its timeline and says how to read them', () => {
    const single = renderJobPage(view());
    expect(single).not.toContain('all-reduce');
    const run = generateSchedule(toPipelineModel(validateProfile({ stages: 2, microbatches: 2, fMs: [1, 1], bMs: [1, 1], wMs: [1, 1], linkMs: [0] })), { warmup: [2, 1] });
    const allReduce = [0, 1].map((s) => ({ startMs: run.iterationMs, endMs: run.iterationMs + 100, slow: s === 0 }));
    const html = renderJobPage(view({ dp: 2, timelineSvg: renderTimelineSvg([{ title: 'in force: v1', run, allReduce }]) }));
    expect(html).toContain('each stage\'s ring is drawn after its last op (red: a slow ring link)');
    expect(html.match(/<rect class="all-reduce( slow)?"/g)).toEqual(['<rect class="all-reduce slow"', '<rect class="all-reduce"']);
  });

  it('loads nothing from elsewhere and runs no script', () => {
    const html = renderJobPage(view());
    expect(html).not.toMatch(/<script|<link |<img |src=|@import|url\((?!#)/i);
    expect([...html.matchAll(/href="([^"]*)"/g)].map((m) => m[1])).toEqual(['/jobs/job-1/timeline.svg', '/jobs/job-1']);
  });

  it('escapes every text it shows (a hostile detail, label or note cannot inject markup)', () => {
    const evil = '<script>alert(1)</script>';
    const html = renderJobPage(
      view({
        handshake: evil,
        stragglers: [{ kind: 'compute', where: evil, extraMs: 1, note: evil }],
        heat: { iterations: [1], iterationMs: [1], rows: [{ label: evil, straggler: true, baselineMs: 0, values: [1] }], hiddenRows: 0 },
        versions: [{ version: 1, fromIteration: 0, reason: evil, detail: evil, predictedMs: 1, previousPredictedMs: null, measuredMs: 1, inForce: true }],
      }),
    );
    expect(html).not.toContain('<script>');
    expect(html.split('&lt;script&gt;alert(1)&lt;/script&gt;').length - 1).toBeGreaterThanOrEqual(6);
  });

  it('says so when there is nothing yet', () => {
    const html = renderJobPage(view({ stragglers: [], heat: { iterations: [], iterationMs: [], rows: [], hiddenRows: 0 }, versions: [], timelineSvg: null, scheduleVersion: null }));
    expect(html).toContain('No straggler');
    expect(html).toContain('No link samples yet.');
    expect(html).toContain('No schedule published yet.');
  });
});

describe('renderHeatStripSvg', () => {
  it('colours each cell by its delay above the baseline, grey when not reported', () => {
    const strip = view().heat;
    const svg = renderHeatStripSvg(strip);
    const cells = (row: number) => [...svg.split(`data-row="${row}"`)[1].split('</g>')[0].matchAll(/<rect [^>]*fill="([^"]+)"/g)].map((m) => m[1]);
    expect(cells(0)).toEqual([heatColor(0), heatColor(0), heatColor(0)]);
    expect(cells(1)).toEqual([heatColor(1), '#e4e7eb', heatColor(1)]);
    expect(heatColor(0)).not.toBe(heatColor(1));
    expect(renderHeatStripSvg(strip)).toBe(svg);
  });
});
