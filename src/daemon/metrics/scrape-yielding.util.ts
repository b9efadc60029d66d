import { Registry } from 'prom-client';

/** Longest stretch of formatting between two yields to the event loop, ms. */
const SLICE_MS = 4;

const yieldToLoop = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/**
 * The registry's text exposition (the same text as `registry.metrics()`), formatted one metric at a
 * time with a yield to the event loop every few ms. Why: prom-client formats every metric in one
 * chain of microtasks, so at 10,000 ranks a scrape held the event loop for 40-110 ms (formatting
 * and the collection of its garbage), and a straggler revealed meanwhile waited for all of it
 * (bench:scale's slowest 8 x 32 reactions). Between slices, ingest and control steps run.
 */
export async function scrapeYielding(registry: Registry, sliceMs = SLICE_MS): Promise<string> {
  const parts: string[] = [];
  let since = performance.now();
  for (const metric of registry.getMetricsAsArray()) {
    parts.push(await registry.getSingleMetricAsString(metric.name));
    if (performance.now() - since >= sliceMs) {
      await yieldToLoop();
      since = performance.now();
    }
  }
  return `${parts.join('\n\n')}\n`;
}
