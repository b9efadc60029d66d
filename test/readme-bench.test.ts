/** README benchmark tables equal what the committed bench results say (bench/readme-tables.ts). */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { readmeBlocks, renderReadme } from '../bench/readme-tables';

const root = join(__dirname, '..');
const results = join(root, 'bench', 'results');
const readme = readFileSync(join(root, 'README.md'), 'utf8');

describe('README benchmark tables', () => {
  it('has every bench table as a marked block', () => {
    expect(readmeBlocks(readme)).toEqual(expect.arrayContaining(['real', 'topology', 'prediction', 'e2e', 'e2e-dp', 'e2e-paced', 'engine-speed', 'engine-quality', 'daemon', 'render', 'soak']));
  });

  it('every marked table equals its rendering from bench/results (npm run readme:tables rewrites them)', () => {
    expect(renderReadme(readme, results)).toBe(readme);
  });

  it('catches a number changed by hand', () => {
    const start = readme.indexOf('<!-- bench:real -->');
    const tampered = readme.slice(0, start) + readme.slice(start).replace(/\| (\d+) \|/, (_m, n: string) => `| ${Number(n) + 1} |`);
    expect(tampered).not.toBe(readme);
    expect(renderReadme(tampered, results)).not.toBe(tampered);
  });
});
