/**
 * Helpers for the operations tests: the metric names the daemon exports, metric names a PromQL
 * expression uses, promtool, kustomize, and GitHub's heading anchors.
 */
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { MetricsService } from '../../src/daemon/metrics/metrics.service';

export const ROOT = join(__dirname, '..', '..');

/**
 * Every series name a scrape of the daemon can contain, from MetricsService's registry (so also
 * labelled metrics that have no series yet): histograms and summaries with their suffixes.
 */
export async function exportedSeriesNames(): Promise<Set<string>> {
  const metrics = new MetricsService();
  const names = new Set<string>();
  for (const m of await metrics.registry.getMetricsAsJSON()) {
    names.add(m.name);
    const type = String(m.type);
    if (type === 'histogram') for (const suffix of ['_bucket', '_sum', '_count']) names.add(m.name + suffix);
    if (type === 'summary') for (const suffix of ['_sum', '_count']) names.add(m.name + suffix);
  }
  metrics.registry.clear();
  return names;
}

/** PromQL words that are not metric names (aggregations, operators, modifiers). Functions are recognised by the "(" after them. */
const KEYWORDS = new Set(['by', 'without', 'on', 'ignoring', 'group_left', 'group_right', 'and', 'or', 'unless', 'offset', 'bool', 'inf', 'nan', 'atan2', 'start', 'end']);

/**
 * Metric names used by a PromQL expression (also Grafana's `label_values(metric, label)` and
 * template variables), and names in __name__="..." matchers: string literals, label matchers {...}, label lists of by/without/on/
 * ignoring/group_left/group_right, range and subquery durations, Grafana variables and numbers
 * are removed first; what remains and is not followed by "(" or a keyword is a metric name.
 */
export function metricNamesIn(expr: string): string[] {
  const names: string[] = [...expr.matchAll(/__name__\s*=\s*"([A-Za-z_:][A-Za-z0-9_:]*)"/g)].map((m) => m[1]);
  let s = expr
    .replace(/"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`[^`]*`/g, ' ') // strings
    .replace(/\$\{[^}]*\}|\$[A-Za-z_][A-Za-z0-9_]*/g, ' '); // Grafana variables
  s = s.replace(/\{[^}]*\}/g, ' '); // label matchers
  s = s.replace(/\[[^\]]*\]/g, ' '); // ranges and subqueries
  s = s.replace(/\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, ' $1 '); // label lists
  s = s.replace(/label_values\s*\(\s*([A-Za-z_:][A-Za-z0-9_:]*)\s*,[^)]*\)/g, ' $1 '); // Grafana's label_values(metric, label)
  s = s.replace(/(?<![A-Za-z0-9_:.])\d+(?:\.\d+)?(?:e[+-]?\d+)?(?:ms|s|m|h|d|w|y)?(?![A-Za-z0-9_:])/gi, ' '); // numbers, durations
  const token = /[A-Za-z_:][A-Za-z0-9_:]*/g;
  for (let m = token.exec(s); m; m = token.exec(s)) {
    const word = m[0];
    const rest = s.slice(m.index + word.length);
    if (/^\s*(\(|(by|without)\b)/.test(rest)) continue; // a function, or an aggregation (also "sum by (...) (...)")
    if (KEYWORDS.has(word.toLowerCase())) continue;
    names.push(word);
  }
  return [...new Set(names)];
}

export interface Run {
  status: number | null;
  stdout: string;
  stderr: string;
}

export function run(command: string, args: string[], input?: string, timeoutMs = 60000): Run {
  const result = spawnSync(command, args, { cwd: ROOT, input, encoding: 'utf8', timeout: timeoutMs });
  if (result.error) throw new Error(`${command} ${args.join(' ')}: ${result.error.message} (scripts/ensure-prometheus.sh installs promtool; kubectl must be on PATH)`);
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}

/** A Kubernetes object as rendered by kustomize. */
export interface K8sObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  [key: string]: any;
}

/** `kubectl kustomize dir` (offline), parsed. */
export function kustomize(dir: string): K8sObject[] {
  const result = run('kubectl', ['kustomize', join(ROOT, dir)]);
  if (result.status !== 0) throw new Error(`kubectl kustomize ${dir} failed: ${result.stderr}`);
  return parseAllDocuments(result.stdout).map((doc) => {
    if (doc.errors.length > 0) throw new Error(`kubectl kustomize ${dir}: ${doc.errors[0].message}`);
    return doc.toJS() as K8sObject;
  });
}

/** GitHub's anchor for a Markdown heading: lower case, punctuation dropped, spaces to hyphens. */
export function githubAnchor(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');
}

/** Anchors of every heading in a Markdown text (duplicates get -1, -2 like on GitHub). */
export function markdownAnchors(markdown: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  let fenced = false;
  for (const line of markdown.split('\n')) {
    if (/^\s*```/.test(line)) fenced = !fenced;
    const m = !fenced && /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (!m) continue;
    const base = githubAnchor(m[1].replace(/`/g, ''));
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    anchors.add(n === 0 ? base : `${base}-${n}`);
  }
  return anchors;
}
