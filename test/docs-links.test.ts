/**
 * Every relative link in README.md and docs/*.md lands: the file or folder exists (relative to the
 * Markdown file, so a link from docs/ to a repository file needs ../), and a #fragment into a
 * Markdown file names one of its headings (GitHub's anchors) or an <a id> in it.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { markdownAnchors, ROOT } from './support/ops';

const files = [join(ROOT, 'README.md'), ...readdirSync(join(ROOT, 'docs')).filter((f) => f.endsWith('.md')).sort().map((f) => join(ROOT, 'docs', f))];

/** Link targets of a Markdown text, outside fenced blocks and inline code. */
function linkTargets(markdown: string): string[] {
  const targets: string[] = [];
  let fenced = false;
  for (const line of markdown.split('\n')) {
    if (/^\s*```/.test(line)) fenced = !fenced;
    if (fenced) continue;
    const prose = line.replace(/`[^`]*`/g, '``');
    for (const m of prose.matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)) targets.push(m[1]);
  }
  return targets;
}

function anchorsOf(path: string): Set<string> {
  const text = readFileSync(path, 'utf8');
  const anchors = markdownAnchors(text);
  for (const m of text.matchAll(/<a\s+(?:id|name)="([^"]+)"/g)) anchors.add(m[1]);
  return anchors;
}

/** What is wrong with one link of `from`, or null. */
function broken(from: string, target: string): string | null {
  if (/^[a-z][a-z0-9+.-]*:/i.test(target)) return null; // http:, https:, mailto:
  const [path, fragment] = target.split('#', 2) as [string, string | undefined];
  const file = path === '' ? from : resolve(dirname(from), decodeURI(path));
  if (!existsSync(file)) return `${relative(ROOT, file)} does not exist`;
  if (fragment === undefined || fragment === '') return null;
  if (!file.endsWith('.md') || statSync(file).isDirectory()) return null;
  return anchorsOf(file).has(fragment) ? null : `no heading #${fragment} in ${relative(ROOT, file)}`;
}

describe('links in README.md and docs/*.md', () => {
  it('covers the README and the moved reference documents', () => {
    expect(files.map((f) => relative(ROOT, f))).toEqual(expect.arrayContaining(['README.md', 'docs/benchmarks.md', 'docs/cli.md', 'docs/real-ranks.md', 'docs/faults.md', 'docs/operations.md', 'docs/protocol.md']));
  });

  it.each(files.map((f) => [relative(ROOT, f), f]))('every relative link of %s resolves', (_name, from) => {
    const targets = linkTargets(readFileSync(from, 'utf8'));
    if (from.endsWith('README.md')) expect(targets.length).toBeGreaterThan(20);
    const problems = targets.map((t) => [t, broken(from, t)]).filter(([, problem]) => problem !== null);
    expect(problems).toEqual([]);
  });

  it('the check itself flags a missing file, a root-relative link from docs/ and a missing heading', () => {
    const doc = join(ROOT, 'docs', 'benchmarks.md');
    expect(broken(doc, 'bench/results/e2e.json')).toMatch(/does not exist/);
    expect(broken(doc, '../bench/results/e2e.json')).toBeNull();
    expect(broken(doc, 'protocol.md#no-such-heading')).toMatch(/no heading/);
    expect(broken(doc, 'protocol.md#send-time')).toBeNull();
    expect(broken(join(ROOT, 'README.md'), '#quick-start')).toBeNull();
    expect(linkTargets('a [x](y.md) `[z](w.md)`\n```\n[q](r.md)\n```\n![i](img/a.svg)')).toEqual(['y.md', 'img/a.svg']);
  });
});
