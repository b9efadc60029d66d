/**
 * Alerting rules: promtool accepts them and their unit tests pass (every alert both firing and
 * not firing), the PrometheusRule in deploy/base is generated from them, every metric they use
 * is one the daemon exports, and every runbook link lands on a heading of docs/operations.md.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { exportedSeriesNames, markdownAnchors, metricNamesIn, ROOT, run } from './support/ops';

// eslint-disable-next-line @typescript-eslint/no-require-imports
const generator = require('../scripts/gen-prometheus-rule.js') as { render(text?: string): string; RULES_FILE: string; OUTPUT_FILE: string };

const RULES = 'deploy/prometheus/pipemorph.rules.yml';
const RULE_TESTS = 'deploy/prometheus/pipemorph.rules.test.yml';
const RUNBOOK_BASE = 'https://github.com/pipemorph/pipemorph/blob/main/docs/operations.md#';

interface AlertRule {
  alert: string;
  expr: string;
  for?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}
const rules = parse(readFileSync(join(ROOT, RULES), 'utf8')) as { groups: Array<{ name: string; rules: AlertRule[] }> };
const alerts = rules.groups.flatMap((g) => g.rules);

describe('alerting rules', () => {
  it('pass promtool check rules', () => {
    const result = run('promtool', ['check', 'rules', RULES]);
    expect(result.stderr).toBe('');
    expect(result.status).toBe(0);
    expect(result.stdout).toMatch(new RegExp(`SUCCESS: ${alerts.length} rules found`));
  });

  it('pass their promtool unit tests', () => {
    const result = run('promtool', ['test', 'rules', RULE_TESTS]);
    expect(`${result.stdout}${result.stderr}`).toMatch(/SUCCESS/);
    expect(result.status).toBe(0);
  });

  it('each have unit tests where they fire and where they do not', () => {
    const tests = parse(readFileSync(join(ROOT, RULE_TESTS), 'utf8')) as { tests: Array<{ alert_rule_test?: Array<{ alertname: string; exp_alerts?: unknown[] }> }> };
    const cases = tests.tests.flatMap((t) => t.alert_rule_test ?? []);
    for (const { alert } of alerts) {
      const mine = cases.filter((c) => c.alertname === alert);
      expect({ alert, fires: mine.some((c) => (c.exp_alerts ?? []).length > 0) }).toEqual({ alert, fires: true });
      expect({ alert, silent: mine.some((c) => (c.exp_alerts ?? []).length === 0) }).toEqual({ alert, silent: true });
    }
    expect(new Set(cases.map((c) => c.alertname))).toEqual(new Set(alerts.map((a) => a.alert)));
  });

  it('cover the required situations, each with a severity, a summary, a description and a runbook', () => {
    expect(alerts.map((a) => a.alert)).toEqual(
      expect.arrayContaining(['PipemorphStragglerDetected', 'PipemorphStragglerNotAbsorbed', 'PipemorphRanksNotAcknowledging', 'PipemorphIngestStalled', 'PipemorphIngestLagging', 'PipemorphRejectedMessages', 'PipemorphDown', 'PipemorphJobsWithoutLeader']),
    );
    expect(new Set(alerts.map((a) => a.alert)).size).toBe(alerts.length);
    for (const a of alerts) {
      expect({ alert: a.alert, severity: a.labels?.severity }).toEqual({ alert: a.alert, severity: expect.stringMatching(/^(info|warning|critical)$/) });
      expect(Object.keys(a.annotations ?? {}).sort()).toEqual(['description', 'runbook_url', 'summary']);
      expect(a.annotations!.runbook_url).toBe(RUNBOOK_BASE + a.alert.toLowerCase());
    }
  });

  it('link runbooks that exist as headings in docs/operations.md', () => {
    const anchors = markdownAnchors(readFileSync(join(ROOT, 'docs/operations.md'), 'utf8'));
    const missing = alerts.map((a) => a.annotations!.runbook_url.slice(RUNBOOK_BASE.length)).filter((anchor) => !anchors.has(anchor));
    expect(missing).toEqual([]);
  });

  it('use only metrics the daemon exports (and up)', async () => {
    const exported = await exportedSeriesNames();
    for (const a of alerts) {
      const names = metricNamesIn(a.expr);
      expect({ alert: a.alert, names: names.length > 0 }).toEqual({ alert: a.alert, names: true });
      expect({ alert: a.alert, unknown: names.filter((n) => n !== 'up' && !exported.has(n)) }).toEqual({ alert: a.alert, unknown: [] });
    }
  });
});

describe('PrometheusRule', () => {
  it('is generated from the rule file (node scripts/gen-prometheus-rule.js)', () => {
    expect(readFileSync(generator.OUTPUT_FILE, 'utf8')).toBe(generator.render());
    const check = run(process.execPath, ['scripts/gen-prometheus-rule.js', '--check']);
    expect(check.status).toBe(0);
  });

  it('carries exactly the rule groups', () => {
    const manifest = parse(readFileSync(generator.OUTPUT_FILE, 'utf8'));
    expect(manifest.kind).toBe('PrometheusRule');
    expect(manifest.spec.groups).toEqual(rules.groups);
  });

  it('notices a rule file that changed', () => {
    const changed = readFileSync(generator.RULES_FILE, 'utf8').replace('> 1.2', '> 1.3');
    expect(generator.render(changed)).not.toBe(readFileSync(generator.OUTPUT_FILE, 'utf8'));
  });
});
