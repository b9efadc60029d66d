import Redis from 'ioredis';

/**
 * Waits until consumer group `group` has read and acknowledged every entry of `stream`: what any
 * client can see of the daemon's progress (it acknowledges a report only once fully handled,
 * decision included), without reading the daemon's memory.
 */
export async function streamDrained(redis: Redis, stream: string, group: string, timeoutMs = 30000, pollMs = 1): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const groups = (await redis.xinfo('GROUPS', stream)) as Array<Array<string | number | null>>;
    const g = groups.find((x) => x[x.indexOf('name') + 1] === group);
    if (g) {
      const pending = Number(g[g.indexOf('pending') + 1]);
      const lag = g[g.indexOf('lag') + 1];
      if (pending === 0 && lag !== null && Number(lag) === 0) return;
    }
    if (Date.now() > deadline) throw new Error(`${stream} not drained by group ${group} within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, pollMs));
  }
}
