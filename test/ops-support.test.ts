/** The operations tests' PromQL metric-name extractor and anchor rules, checked on known inputs. */
import { exportedSeriesNames, githubAnchor, markdownAnchors, metricNamesIn } from './support/ops';

describe('metricNamesIn', () => {
  it.each<[string, string[]]>([
    ['max by (job, kind) (pipemorph_stragglers) > 0', ['pipemorph_stragglers']],
    ['sum by (le) (increase(pipemorph_link_extra_delay_observed_seconds_bucket{job="$job",link=~"1|2"}[$__rate_interval]))', ['pipemorph_link_extra_delay_observed_seconds_bucket']],
    ['time() - pipemorph_ingest_last_read_timestamp_seconds > 60', ['pipemorph_ingest_last_read_timestamp_seconds']],
    ['max(pipemorph_jobs_registered) - (count(count by (job) (pipemorph_job_lease_epoch)) or vector(0)) > 0', ['pipemorph_jobs_registered', 'pipemorph_job_lease_epoch']],
    ['absent(up{job=~".*pipemorph.*"} == 1)', ['up']],
    ['a_metric / on (job) group_left(kind) b_metric offset 5m', ['a_metric', 'b_metric']],
    ['histogram_quantile(0.99, sum by (le) (rate(x_bucket[5m:1m])))', ['x_bucket']],
    ['label_values(pipemorph_schedule_version, job)', ['pipemorph_schedule_version']],
    ['{__name__="pipemorph_stragglers"} and 1e3 < bool 2', ['pipemorph_stragglers']],
    ['rate(process_cpu_seconds_total{job=~".*pipemorph.*"}[${__rate_interval}]) * 100', ['process_cpu_seconds_total']],
  ])('%s', (expr, names) => {
    expect(metricNamesIn(expr).sort()).toEqual([...names].sort());
  });
});

describe('exportedSeriesNames', () => {
  it('has the daemon metrics, histogram suffixes and the default process metrics', async () => {
    const names = await exportedSeriesNames();
    for (const name of ['pipemorph_link_extra_delay_seconds', 'pipemorph_planning_duration_seconds_bucket', 'pipemorph_publishes_total', 'process_cpu_seconds_total', 'nodejs_eventloop_lag_p99_seconds']) expect(names).toContain(name);
    expect(names).not.toContain('pipemorph_link_extra_delay_seconds_bucket');
  });
});

describe('markdown anchors', () => {
  it('follows GitHub', () => {
    expect(githubAnchor('PipemorphStragglerDetected')).toBe('pipemorphstragglerdetected');
    expect(githubAnchor('Scaling and upgrades')).toBe('scaling-and-upgrades');
    expect(githubAnchor('Metrics (Prometheus)')).toBe('metrics-prometheus');
    expect([...markdownAnchors('# A\n```\n# not a heading\n```\n## `B` c\n## A\n')]).toEqual(['a', 'b-c', 'a-1']);
  });
});
