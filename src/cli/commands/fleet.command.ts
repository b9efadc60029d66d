import Redis from 'ioredis';
import { buildFleetView } from '../../core/fleet/fleet-view';
import { FleetView } from '../../core/fleet/fleet-view.type';
import { InputError } from '../../core/input-error';
import { fleetConfigOf } from '../../daemon/config/fleet-config-of';
import { FleetStore } from '../../daemon/fleet/fleet-store';
import { expectOnly, stringOption } from '../cli-args';
import { loadReplayConfig } from '../replay-config';

export const FLEET_OPTIONS = ['url', 'redis', 'config', 'set', 'json'];

/** How many nodes the text lists (the slowest); --json has them all. */
const NODE_ROWS = 20;

function table(head: string[], rows: string[][]): string[] {
  const widths = head.slice(0, -1).map((h, k) => Math.max(h.length, ...rows.map((r) => r[k].length)));
  const line = (cells: string[]) => cells.map((c, k) => (k < widths.length ? c.padEnd(widths[k]) : c)).join('  ').trimEnd();
  return [line(head), ...rows.map(line)];
}

/** The text output: the suspects with their reason and runbook step, then the nodes with slow evidence. */
export function formatFleet(view: FleetView, source: string): string {
  const out = [`fleet view from ${source}: ${view.jobs.length} jobs, ${view.nodes.length} nodes${view.asOf > 0 ? `, evidence as of ${new Date(view.asOf).toISOString()}` : ''}`, ''];
  if (view.suspects.length === 0) out.push('suspects: none');
  else {
    out.push(`suspects (${view.suspects.length}, most confident first):`);
    view.suspects.forEach((s, k) => {
      out.push(`${k + 1}. ${s.id}  confidence ${s.confidence.toFixed(2)}  jobs ${s.jobs.join(', ')}`);
      out.push(`   ${s.reason}`);
      out.push(`   -> ${s.action}`);
    });
  }
  const hot = view.nodes.filter((n) => n.slowLinks > 0 || n.compute.slow > 0).sort((p, q) => q.slowLinks - p.slowLinks || q.compute.slow - p.compute.slow || (p.node < q.node ? -1 : 1));
  if (hot.length > 0) {
    out.push('', 'nodes with slow evidence:');
    const rows = hot.slice(0, NODE_ROWS).map((n) => [n.node, n.locality ?? '-', `${n.slowLinks}/${n.slowLinks + n.healthyLinks}`, String(n.slowPeers), n.extraMs > 0 ? `+${n.extraMs.toFixed(1)} ms` : '-', n.compute.slow > 0 ? `${n.compute.ratio.toFixed(2)}x` : '-', n.slowJobs.concat(n.compute.slowJobs).filter((j, i, a) => a.indexOf(j) === i).join(', ')]);
    out.push(...table(['node', 'locality', 'slow links', 'slow peers', 'extra', 'compute', 'jobs'], rows));
    if (hot.length > NODE_ROWS) out.push(`... ${hot.length - NODE_ROWS} more (--json has them all)`);
  }
  return out.join('\n') + '\n';
}

async function fromDaemon(url: string): Promise<FleetView> {
  let response: Response;
  try {
    response = await fetch(`${url.replace(/\/+$/, '')}/fleet`);
  } catch (error) {
    throw new InputError(`cannot reach the daemon at ${url}: ${(error as Error).message}`);
  }
  if (!response.ok) throw new InputError(`the daemon at ${url} answered ${response.status} to GET /fleet`);
  return (await response.json()) as FleetView;
}

async function fromRedis(url: string, config: ReturnType<typeof loadReplayConfig>): Promise<FleetView> {
  const redis = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null, connectTimeout: 5000, enableOfflineQueue: false });
  let connectionError: Error | null = null;
  redis.on('error', (error: Error) => (connectionError = error));
  try {
    await redis.connect();
    return buildFleetView(await new FleetStore(redis).readAll(config.fleet.maxJobs, false), fleetConfigOf(config));
  } catch (error) {
    throw new InputError(`cannot read the fleet's evidence from Redis at ${url.replace(/\/\/[^@/]*@/, '//***@')}: ${(connectionError ?? (error as Error)).message}`);
  } finally {
    redis.disconnect();
  }
}

/**
 * `fleet`: the fleet view, from a daemon (`--url`, its GET /fleet) or computed here from the
 * evidence in Redis (`--redis`, with the thresholds of --config and --set, as a daemon with that
 * config computes it). Text by default, the view as JSON with --json.
 */
export async function fleetCommand(options: Map<string, string | true>, lists: Map<string, string[]>): Promise<string> {
  expectOnly(options, FLEET_OPTIONS, 'fleet');
  const url = stringOption(options, 'url');
  const redisUrl = stringOption(options, 'redis');
  if ((url === undefined) === (redisUrl === undefined)) throw new InputError('fleet needs exactly one of --url http://daemon:8080 or --redis redis://host:port');
  const sets = lists.get('set') ?? [];
  const configPath = stringOption(options, 'config');
  if (url !== undefined && (configPath !== undefined || sets.length > 0)) throw new InputError('--config and --set go with --redis (a daemon uses its own)');
  const view = url !== undefined ? await fromDaemon(url) : await fromRedis(redisUrl!, loadReplayConfig(configPath, sets));
  return options.has('json') ? JSON.stringify(view) + '\n' : formatFleet(view, url ?? redisUrl!.replace(/\/\/[^@/]*@/, '//***@'));
}
