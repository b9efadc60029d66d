import { entrySamples } from './entry-samples';

describe('entrySamples', () => {
  it('counts the samples that made a straggler and those since, up to K', () => {
    expect(entrySamples(3, 0, 3)).toBe(3);
    expect(entrySamples(2, 0, 3)).toBe(2); // two severe samples made it
    expect(entrySamples(2, 1, 3)).toBe(3);
    expect(entrySamples(3, 5, 3)).toBe(3);
  });

  it('never sizes by one sample unless one made it', () => {
    expect(entrySamples(1, 0, 3)).toBe(1); // the fleet named it: its first bad sample made it
    expect(entrySamples(0, 0, 3)).toBe(1);
    expect(entrySamples(3, 0, 3)).toBeGreaterThan(1);
  });
});
