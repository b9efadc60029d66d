import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import { scrapeYielding } from './scrape-yielding.util';

function registryWithSeries(series: number): Registry {
  const registry = new Registry();
  const gauge = new Gauge({ name: 'test_link_delay_ms', help: 'per link', labelNames: ['job', 'link'], registers: [registry] });
  const counter = new Counter({ name: 'test_reports_total', help: 'reports', labelNames: ['type'], registers: [registry] });
  const histogram = new Histogram({ name: 'test_step_seconds', help: 'steps', buckets: [0.001, 0.01], registers: [registry] });
  for (let i = 0; i < series; i++) gauge.set({ job: `j${i % 7}`, link: String(i) }, i / 3);
  counter.inc({ type: 'report' }, 5);
  histogram.observe(0.004);
  return registry;
}

describe('scrapeYielding', () => {
  it('gives the same text as prom-client', async () => {
    const registry = registryWithSeries(500);
    expect(await scrapeYielding(registry)).toBe(await registry.metrics());
    expect(await scrapeYielding(registry, 0)).toBe(await registry.metrics());
  });

  it('lets other work run between metrics (prom-client alone does not)', async () => {
    const registry = registryWithSeries(2000);
    const ranDuring = async (scrape: () => Promise<string>): Promise<boolean> => {
      let ran = false;
      setImmediate(() => (ran = true));
      const pending = scrape();
      const before = ran;
      await pending;
      return !before && ran;
    };
    // The can-fail twin: prom-client's own chain of microtasks does not let the immediate run.
    let plain = false;
    setImmediate(() => (plain = true));
    await registry.metrics();
    expect(plain).toBe(false);
    expect(await ranDuring(() => scrapeYielding(registry, 0))).toBe(true);
  });

  it('with the shipped slice, yields once formatting has taken longer than it', async () => {
    // Metrics whose collection takes 5 ms each (longer than the 4 ms slice on any machine): the
    // shipped default must let other work run between them. Nothing here asserts a duration.
    const registry = new Registry();
    for (let i = 0; i < 3; i++) {
      new Gauge({
        name: `test_slow_${i}`,
        help: 'slow to collect',
        registers: [registry],
        collect() {
          const until = performance.now() + 5;
          while (performance.now() < until);
          this.set(i);
        },
      });
    }
    let ran = false;
    setImmediate(() => (ran = true));
    const pending = scrapeYielding(registry);
    expect(ran).toBe(false);
    const text = await pending;
    expect(ran).toBe(true);
    expect(text).toBe(await registry.metrics());
    // Twin: prom-client alone holds the loop through all three.
    let plain = false;
    setImmediate(() => (plain = true));
    await registry.metrics();
    expect(plain).toBe(false);
  });
});
