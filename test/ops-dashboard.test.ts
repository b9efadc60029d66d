/**
 * The Grafana dashboard: valid JSON with a stable uid, a Prometheus datasource variable every
 * panel and query uses, a job variable from pipemorph_schedule_version, unique panel ids, and
 * queries that name only metrics the daemon exports (or Prometheus' up).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { exportedSeriesNames, metricNamesIn, ROOT } from './support/ops';

interface Target {
  expr?: string;
  refId?: string;
  datasource?: { type?: string; uid?: string };
}
interface Panel {
  id: number;
  type: string;
  title: string;
  gridPos: { h: number; w: number; x: number; y: number };
  datasource?: { type?: string; uid?: string };
  targets?: Target[];
  panels?: Panel[];
}
interface Variable {
  name: string;
  type: string;
  query: string | { query: string };
  definition?: string;
  datasource?: { type?: string; uid?: string };
}

const dashboard = JSON.parse(readFileSync(join(ROOT, 'deploy/grafana/pipemorph.dashboard.json'), 'utf8'));
const panels: Panel[] = (dashboard.panels as Panel[]).flatMap((p) => [p, ...(p.panels ?? [])]);
const queryPanels = panels.filter((p) => p.type !== 'row');
const variables: Variable[] = dashboard.templating.list;
const DATASOURCE = { type: 'prometheus', uid: '${datasource}' };

describe('Grafana dashboard', () => {
  it('has the fields Grafana needs and a stable uid', () => {
    expect(dashboard.uid).toBe('pipemorph-overview');
    expect(typeof dashboard.title).toBe('string');
    expect(dashboard.schemaVersion).toBeGreaterThanOrEqual(36);
    expect(dashboard.id ?? null).toBeNull(); // provisioned: Grafana assigns the id
    expect(dashboard.time).toEqual({ from: expect.any(String), to: expect.any(String) });
  });

  it('has a Prometheus datasource variable and a job variable over pipemorph_schedule_version', () => {
    const datasource = variables.find((v) => v.name === 'datasource');
    expect(datasource).toMatchObject({ type: 'datasource', query: 'prometheus' });
    const job = variables.find((v) => v.name === 'job');
    expect(job).toMatchObject({ type: 'query', datasource: DATASOURCE });
    const query = typeof job!.query === 'string' ? job!.query : job!.query.query;
    expect(query).toBe('label_values(pipemorph_schedule_version, job)');
  });

  it('gives every panel a unique id and a place on the grid', () => {
    const ids = panels.map((p) => p.id);
    expect(new Set(ids).size).toBe(ids.length);
    for (const p of panels) {
      expect(Number.isInteger(p.id) && p.id > 0).toBe(true);
      expect(p.gridPos.x + p.gridPos.w).toBeLessThanOrEqual(24);
      expect(p.gridPos.h).toBeGreaterThan(0);
    }
  });

  it('queries through the datasource variable in every panel and target', () => {
    expect(queryPanels.length).toBeGreaterThanOrEqual(20);
    for (const p of queryPanels) {
      expect({ panel: p.title, datasource: p.datasource }).toEqual({ panel: p.title, datasource: DATASOURCE });
      expect({ panel: p.title, targets: (p.targets ?? []).length > 0 }).toEqual({ panel: p.title, targets: true });
      for (const t of p.targets ?? []) {
        expect({ panel: p.title, datasource: t.datasource }).toEqual({ panel: p.title, datasource: DATASOURCE });
        expect(typeof t.expr).toBe('string');
      }
      const refIds = (p.targets ?? []).map((t) => t.refId);
      expect(new Set(refIds).size).toBe(refIds.length);
    }
    for (const annotation of dashboard.annotations.list.filter((a: { builtIn?: number }) => !a.builtIn)) expect(annotation.datasource).toEqual(DATASOURCE);
  });

  it('shows what operators need: link delay by link and time, stragglers, versions, predictions, delegation, ingest and daemon health', () => {
    const exprs = queryPanels.flatMap((p) => (p.targets ?? []).map((t) => ({ type: p.type, expr: t.expr! })));
    const uses = (metric: string, type?: string) => exprs.some((e) => metricNamesIn(e.expr).includes(metric) && (!type || e.type === type));
    expect(uses('pipemorph_link_extra_delay_observed_seconds_bucket', 'heatmap')).toBe(true);
    expect(uses('pipemorph_link_extra_delay_seconds', 'state-timeline')).toBe(true);
    for (const metric of [
      'pipemorph_stragglers', 'pipemorph_schedule_version', 'pipemorph_predicted_iteration_seconds', 'pipemorph_delegated_ranks',
      'pipemorph_ingest_messages_total', 'pipemorph_ingest_lag_entries', 'pipemorph_ingest_pending_entries', 'pipemorph_ingest_last_read_timestamp_seconds',
      'pipemorph_jobs_owned', 'pipemorph_job_lease_epoch', 'up', 'process_cpu_seconds_total', 'pipemorph_planning_duration_seconds_bucket',
    ]) expect({ metric, shown: uses(metric) }).toEqual({ metric, shown: true });
    expect(exprs.some((e) => /histogram_quantile\(0\.99,/.test(e.expr) && e.expr.includes('pipemorph_planning_duration_seconds_bucket'))).toBe(true);
    expect(exprs.some((e) => /result="rejected"/.test(e.expr))).toBe(true);
  });

  it('names only metrics the daemon exports (and up)', async () => {
    const exported = await exportedSeriesNames();
    const queries = [
      ...queryPanels.flatMap((p) => (p.targets ?? []).map((t) => ({ where: p.title, expr: t.expr! }))),
      ...variables.filter((v) => v.type === 'query').map((v) => ({ where: `variable ${v.name}`, expr: typeof v.query === 'string' ? v.query : v.query.query })),
      ...dashboard.annotations.list.filter((a: { expr?: string }) => a.expr).map((a: { name: string; expr: string }) => ({ where: `annotation ${a.name}`, expr: a.expr })),
    ];
    for (const { where, expr } of queries) {
      const names = metricNamesIn(expr);
      expect({ where, expr, names: names.length > 0 }).toEqual({ where, expr, names: true });
      expect({ where, unknown: names.filter((n) => n !== 'up' && !exported.has(n)) }).toEqual({ where, unknown: [] });
    }
  });
});
