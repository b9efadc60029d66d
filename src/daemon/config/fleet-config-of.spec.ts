import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DEFAULT_FLEET_CONFIG } from '../../core/fleet/fleet-config.type';
import { fleetConfigOf } from './fleet-config-of';
import { ConfigError, DEFAULT_CONFIG_PATH, loadConfig } from './load-config';

describe('config section fleet', () => {
  it('ships the core thresholds, on, every 5 s with 30 s expiry', () => {
    const config = loadConfig({});
    expect(fleetConfigOf(config)).toEqual(DEFAULT_FLEET_CONFIG);
    expect(config.fleet).toMatchObject({ enabled: true, intervalMs: 5000, ttlMs: 30000 });
  });

  it('takes environment overrides and refuses bad values naming the key', () => {
    expect(loadConfig({ PIPEMORPH__fleet__nicMinJobs: '3' }).fleet.nicMinJobs).toBe(3);
    const bad: Array<[string, string, RegExp]> = [
      ['minSlowFraction', '0', /fleet\.minSlowFraction must be > 0/],
      ['nicMinPeers', '0', /fleet\.nicMinPeers must be >= 1/],
      ['uplinkMinBoundaries', '1', /fleet\.uplinkMinBoundaries must be >= 2/],
      ['intervalMs', '5', /fleet\.intervalMs must be >= 100/],
    ];
    for (const [key, value, pattern] of bad) expect(() => loadConfig({ [`PIPEMORPH__fleet__${key}`]: value })).toThrow(pattern);
    expect(() => loadConfig({ PIPEMORPH__fleet__enabled: '"yes"' })).toThrow(ConfigError);
  });

  it('gives a config file written before the fleet view the defaults', () => {
    const old = JSON.parse(readFileSync(DEFAULT_CONFIG_PATH, 'utf8'));
    delete old.fleet;
    const path = join(mkdtempSync(join(tmpdir(), 'pipemorph-')), 'old.json');
    writeFileSync(path, JSON.stringify(old));
    expect(loadConfig({ PIPEMORPH_CONFIG: path }).fleet.minSlowFraction).toBe(0.5);
  });
});
