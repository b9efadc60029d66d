import { relativeImports } from './import-graph';

describe('relativeImports', () => {
  it('finds named, type, re-exported, multi-line and side-effect imports, in either quote', () => {
    const text = [
      "import { a } from './a';",
      "import type { B } from '../b';",
      "export * from './c';",
      'import {',
      '  d,',
      '  e,',
      "} from './de';",
      "import './effect';",
      'import "./double";',
    ].join('\n');
    expect(relativeImports(text)).toEqual(['./a', '../b', './c', './de', './effect', './double']);
  });

  it('can fail: packages and relative-looking strings that are no import are left out', () => {
    const text = ["import { Redis } from 'ioredis';", "import 'reflect-metadata';", "export const RESULTS = './bench/results';", "const s = 'from ./x';"].join('\n');
    expect(relativeImports(text)).toEqual([]);
  });
});
