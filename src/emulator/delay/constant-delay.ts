import { checkDelay, checkLink } from './delay-check';
import { DelayModel } from './delay-model.type';

/** The same extra delay on chosen links all the time (link -> ms; others 0). */
export function constantDelay(delays: Record<number, number>): DelayModel {
  // Copied into a Map so the caller mutating its object later cannot change a running model.
  const byLink = new Map<number, number>();
  for (const [key, ms] of Object.entries(delays)) {
    const link = Number(key);
    checkLink(link, 'constant delay');
    checkDelay(ms, `constant delay of link ${link}`);
    byLink.set(link, ms);
  }
  const entries = [...byLink].sort((a, b) => a[0] - b[0]).map(([link, ms]) => `${link}=${ms}`);
  return {
    name: entries.length > 0 ? `const:${entries.join(',')}` : 'none',
    delayMs: (link: number): number => byLink.get(link) ?? 0,
    nicFailed: (): boolean => false,
  };
}
