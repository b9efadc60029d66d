/**
 * End to end, re-mapping: the real daemon, an emulated (2 DP, 4 PP) job speaking protocol v1 over
 * a real Redis, virtual time. Replica 0 runs on rack A, replica 1 on rack B, so every stage's
 * data-parallel ring crosses the rack uplink; from iteration 12 that uplink is 30 ms slow.
 */
import { INestApplication } from '@nestjs/common';
import Redis from 'ioredis';
import { constantDelay } from '../src/emulator/delay/constant-delay';
import { DEFAULT_EMULATION, EmulatedJob, IterationResult } from '../src/emulator/emulated-job';
import { staticFabric } from '../src/emulator/fabric/static-fabric';
import { RankGroup } from '../src/emulator/rank-group';
import { uniform4 } from '../src/emulator/scenarios';
import { PublishedSchedule } from '../src/protocol/protocol-v1.type';
import { redisUrlFor, startDaemon, testConfig } from './support/test-daemon';

const REDIS_URL = redisUrlFor(14);
const redis = new Redis(REDIS_URL);
let daemon: { app: INestApplication; url: string } | null = null;
const groups: RankGroup[] = [];

afterAll(async () => {
  await daemon?.app.close();
  for (const g of groups) await g.cleanup();
  await redis.quit();
});

const SLOW_FROM = 12;
const rack = (rank: number) => (rank < 4 ? 'rack-a' : 'rack-b');

function job(): EmulatedJob {
  const localities = Array.from({ length: 8 }, (_, r) => rack(r));
  return new EmulatedJob(`test-remap-${process.pid}-${Date.now().toString(36)}`, uniform4(), 2, constantDelay({}), { ...DEFAULT_EMULATION, seed: 4 }, {
    fabric: staticFabric({ localities, localityLinks: [{ between: ['rack-a', 'rack-b'], extraMs: 30, from: SLOW_FROM }] }),
    allReduce: { gradientBytes: [3.5e9, 3.5e9, 3.5e9, 3.5e9] },
  });
}

const mean = (xs: Array<{ iterationMs: number }>) => xs.reduce((a, r) => a + r.iterationMs, 0) / xs.length;

describe('daemon + emulated job: a slow data-parallel boundary', () => {
  it('is detected, re-mapped onto a pipeline edge, the residual straggler absorbed, and the iteration time drops', async () => {
    daemon = await startDaemon(testConfig((c) => (c.remap.minIntervalMs = 0), REDIS_URL));
    const group = new RankGroup(redis, job(), { lockstep: true, deviceActivations: [12, 12, 12, 12], hostActivations: 64 });
    groups.push(group);
    await group.register();
    await group.connect();
    const results: IterationResult[] = [];
    for (let i = 0; i < 70; i++) results.push(await group.step());
    const h = group.history;
    expect(h.filter((x) => new Set(x.versions).size > 1)).toEqual([]);

    // The re-map: one committed schedule with reason 'remap' and a topology.
    const learned = group.learned() as PublishedSchedule[];
    const remap = learned.find((s) => s.reason.kind === 'remap');
    expect(remap).toBeDefined();
    const topology = remap!.topology!;
    expect(topology.version).toBe(1);
    expect(remap!.reason.links.some((l) => l.kind === 'data-parallel')).toBe(true);
    const at = (dp: number, pp: number) => topology.ranks.find((r) => r.dp === dp && r.pp === pp)!.rank;
    // Every ring inside one rack now; each pipeline crosses the uplink once.
    for (let pp = 0; pp < 4; pp++) expect(rack(at(0, pp))).toBe(rack(at(1, pp)));
    for (let dp = 0; dp < 2; dp++) {
      const crossings = [0, 1, 2].filter((l) => rack(at(dp, l)) !== rack(at(dp, l + 1)));
      expect(crossings).toHaveLength(1);
    }
    expect(topology.moved.length).toBeGreaterThan(0);
    // The residual pipeline straggler comes with the switch: more slackness at the crossing link, delegation on its ends.
    const crossing = [0, 1, 2].find((l) => rack(at(0, l)) !== rack(at(0, l + 1)))!;
    expect(remap!.delegation.map((d) => d.rank).sort()).toEqual([at(0, crossing), at(0, crossing + 1), at(1, crossing), at(1, crossing + 1)].sort());
    // Eq. 1: slackness at the crossing link of at least (2 x 30 ms + f + b) / (f + b) = 4 warm-up forwards.
    for (const p of remap!.pipelines) expect(p.warmup[crossing] - p.warmup[crossing + 1]).toBeGreaterThanOrEqual(4);
    expect(remap!.prediction.newMs).toBeLessThan(remap!.prediction.previousMs! / 3);

    // Iteration times: healthy, then slow on the old layout, then back near healthy.
    const switchedAt = results.findIndex((r) => r.topologyVersion === 1);
    expect(switchedAt).toBeGreaterThan(SLOW_FROM);
    const healthy = mean(results.slice(2, SLOW_FROM));
    const slow = mean(results.slice(SLOW_FROM, switchedAt));
    const after = mean(results.slice(switchedAt + 3));
    expect(slow).toBeGreaterThan(3 * healthy);
    expect(after).toBeLessThan(slow / 3);
    expect(after).toBeLessThan(1.3 * healthy);
    // No flapping: one re-map, and the layout stays.
    expect(learned.filter((s) => s.reason.kind === 'remap')).toHaveLength(1);
    expect(results[results.length - 1].topologyVersion).toBe(1);

    // The daemon runs the new layout too: its rebuilt detector sees the boundary as a pipeline straggler, no ring straggles.
    const view = (await (await fetch(`${daemon!.url}/jobs/${group.job.jobId}`)).json()) as {
      topology: { version: number; pendingVersion: number | null };
      stragglers: { pipeline: Array<{ link: number; upRank: number; downRank: number }>; dataParallel: unknown[] };
    };
    expect(view.topology).toMatchObject({ version: 1, pendingVersion: null });
    const scrape = await (await fetch(`${daemon!.url}/metrics`)).text();
    expect(scrape).toContain(`pipemorph_topology_version{job="${group.job.jobId}"} 1`);
    expect(scrape).toMatch(new RegExp(`pipemorph_replans_total\\{job="${group.job.jobId}",kind="remap"\\} 1\\b`));
    expect(view.stragglers.dataParallel).toEqual([]);
    expect(view.stragglers.pipeline.map((l) => [l.link, l.upRank, l.downRank])).toEqual([0, 1].map((dp) => [crossing, at(dp, crossing), at(dp, crossing + 1)]));

    // What an operator sees is true: the initial prediction includes the all-reduce (the job ran it),
    // and the before/after picture of the re-map, drawn once the new layout runs, shows the slow
    // rings of the layout it left and the healthy ones of the layout it took, at what the job ran.
    expect(learned[0].prediction.newMs).toBeGreaterThan(0.95 * healthy);
    expect(learned[0].prediction.newMs).toBeLessThan(1.05 * healthy);
    expect(learned[learned.length - 1].reason.kind).toBe('remap');
    const svg = await (await fetch(`${daemon!.url}/jobs/${group.job.jobId}/timeline.svg`)).text();
    const [, beforePanel, inForcePanel] = svg.split('<g class="panel"');
    const drawnMs = (panel: string) => Number(/data-iteration-ms="([\d.]+)"/.exec(panel)![1]);
    expect(beforePanel.match(/<rect class="all-reduce slow"/g)).toHaveLength(4);
    expect(inForcePanel.match(/<rect class="all-reduce"/g)).toHaveLength(4);
    expect(drawnMs(beforePanel)).toBeGreaterThan(0.9 * slow);
    expect(drawnMs(beforePanel)).toBeLessThan(1.1 * slow);
    expect(drawnMs(inForcePanel)).toBeGreaterThan(0.9 * after);
    expect(drawnMs(inForcePanel)).toBeLessThan(1.1 * after);

    // A daemon replica that takes the job over adopts the re-mapped layout from the committed schedule.
    await daemon!.app.close();
    daemon = await startDaemon(testConfig((c) => (c.remap.minIntervalMs = 0), REDIS_URL));
    const more: IterationResult[] = [];
    for (let i = 0; i < 15; i++) more.push(await group.step());
    const adopted = (await (await fetch(`${daemon.url}/jobs/${group.job.jobId}`)).json()) as { epoch: number; topology: { version: number } };
    expect(adopted.epoch).toBeGreaterThan(1);
    expect(adopted.topology.version).toBe(1);
    expect(group.learned().filter((s) => s.reason.kind === 'remap' || s.reason.kind === 'recovery')).toHaveLength(1);
    expect(mean(more)).toBeLessThan(1.3 * healthy);
  });
});
