import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError, DEFAULT_CONFIG_PATH, loadConfig } from './load-config';
import { rebalanceConfigOf } from './rebalance-config-of';

describe('config section rebalance', () => {
  it('ships on, 5% over re-planning alone, 10 GB/s handoff', () => {
    expect(rebalanceConfigOf(loadConfig({}))).toEqual({ enabled: true, minGain: 0.05, handoffGBps: 10, maxCandidates: 512, refineCandidates: 4 });
    expect(loadConfig({}).rebalance.extraLeadIterations).toBe(2);
  });

  it('takes environment overrides and refuses bad values naming the key', () => {
    expect(loadConfig({ PIPEMORPH__rebalance__enabled: 'false', PIPEMORPH__rebalance__handoffGBps: '25' }).rebalance).toMatchObject({ enabled: false, handoffGBps: 25 });
    const bad: Array<[string, string, RegExp]> = [
      ['minGain', '1', /rebalance\.minGain must be < 1/],
      ['handoffGBps', '0', /rebalance\.handoffGBps must be > 0/],
      ['refineCandidates', '0', /rebalance\.refineCandidates must be >= 1/],
      ['enabled', '"yes"', /rebalance\.enabled must be boolean/],
    ];
    for (const [key, value, pattern] of bad) {
      expect(() => loadConfig({ [`PIPEMORPH__rebalance__${key}`]: value })).toThrow(ConfigError);
      expect(() => loadConfig({ [`PIPEMORPH__rebalance__${key}`]: value })).toThrow(pattern);
    }
  });

  it('gives a config file written before re-balancing the defaults', () => {
    const old = JSON.parse(readFileSync(DEFAULT_CONFIG_PATH, 'utf8'));
    delete old.rebalance;
    const path = join(mkdtempSync(join(tmpdir(), 'pipemorph-')), 'old.json');
    writeFileSync(path, JSON.stringify(old));
    expect(loadConfig({ PIPEMORPH_CONFIG: path }).rebalance.minGain).toBe(0.05);
    expect(loadConfig({ PIPEMORPH_CONFIG: path, PIPEMORPH__rebalance__minGain: '0.1' }).rebalance.minGain).toBe(0.1);
  });
});
