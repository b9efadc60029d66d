import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError, DEFAULT_CONFIG_PATH, loadConfig } from './load-config';

function expectConfigError(env: NodeJS.ProcessEnv, pattern: RegExp): void {
  expect(() => loadConfig(env)).toThrow(ConfigError);
  expect(() => loadConfig(env)).toThrow(pattern);
}

describe('loadConfig', () => {
  it('loads the documented defaults', () => {
    const config = loadConfig({});
    expect(config.redis.url).toBe('redis://127.0.0.1:6379');
    expect(config.control.planner).toBe('adaptive');
    expect(config.detection.enterAfter).toBe(3);
    expect(DEFAULT_CONFIG_PATH).toMatch(/config[/\\]default\.json$/);
  });

  it('applies environment overrides, parsed as JSON when they parse', () => {
    const config = loadConfig({ REDIS_URL: 'redis://redis.pipemorph:6380/0', PORT: '9090', PIPEMORPH__control__minGain: '0.1', PIPEMORPH__control__planner: 'search' });
    expect(config.redis.url).toBe('redis://redis.pipemorph:6380/0');
    expect(config.http.port).toBe(9090);
    expect(config.control.minGain).toBe(0.1);
    expect(config.control.planner).toBe('search');
  });

  it('takes Redis Cluster and Sentinel nodes as a comma list or JSON', () => {
    expect(loadConfig({ REDIS_CLUSTER_NODES: 'r0:7000, r1:7001' }).redis.cluster?.nodes).toEqual(['r0:7000', 'r1:7001']);
    expect(loadConfig({ PIPEMORPH__redis__cluster__nodes: '["r0:7000"]' }).redis.cluster?.nodes).toEqual(['r0:7000']);
    const sentinel = loadConfig({ REDIS_SENTINELS: 's0:26379', PIPEMORPH__redis__sentinelName: 'mymaster' }).redis;
    expect([sentinel.sentinels, sentinel.sentinelName]).toEqual([['s0:26379'], 'mymaster']);
  });

  it('takes the operator token from the environment as a string, and never names it in an error', () => {
    expect(loadConfig({}).http.operatorToken).toBe('');
    expect(loadConfig({ PIPEMORPH_OPERATOR_TOKEN: '12345678901234567890' }).http.operatorToken).toBe('12345678901234567890');
    expect(loadConfig({ PIPEMORPH__http__operatorToken: '00000000000000000001' }).http.operatorToken).toBe('00000000000000000001');
    const short = 'short-secret';
    expectConfigError({ PIPEMORPH_OPERATOR_TOKEN: short }, /http\.operatorToken must match pattern/);
    expect(() => loadConfig({ PIPEMORPH_OPERATOR_TOKEN: short })).not.toThrow(new RegExp(short));
    expectConfigError({ PIPEMORPH_OPERATOR_TOKEN: 'has a space in it, sixteen+' }, /http\.operatorToken must match pattern/);
  });

  it('loads a config file written before http.operatorToken existed, and lets the environment set it', () => {
    const dir = mkdtempSync(join(tmpdir(), 'pipemorph-config-'));
    const old = loadConfig({}) as { http: Record<string, unknown> };
    delete old.http.operatorToken;
    writeFileSync(join(dir, 'old.json'), JSON.stringify(old));
    expect(loadConfig({ PIPEMORPH_CONFIG: join(dir, 'old.json') }).http.operatorToken).toBe('');
    expect(loadConfig({ PIPEMORPH_CONFIG: join(dir, 'old.json'), PIPEMORPH_OPERATOR_TOKEN: 'a-token-of-20-chars!' }).http.operatorToken).toBe('a-token-of-20-chars!');
  });

  it.each<[NodeJS.ProcessEnv, RegExp]>([
    [{ PIPEMORPH__control__minGain: '2' }, /control\.minGain must be <= 1/],
    [{ PIPEMORPH__control__planner: 'magic' }, /control\.planner must be one of \["adaptive","search","optimal"\]/],
    [{ PORT: 'eighty' }, /http\.port must be integer/],
    [{ REDIS_URL: 'localhost:6379' }, /redis\.url must match pattern/],
    [{ PIPEMORPH__detection__windowSize: '2' }, /detection\.windowSize must be >= 3/],
    [{ PIPEMORPH__control__typo: '1' }, /environment PIPEMORPH__control__typo: no config key "control.typo"/],
    [{ PIPEMORPH__nosection__x: '1' }, /no config section "nosection"/],
    [{ PIPEMORPH__jobs__maintenanceCron: '"every five seconds"' }, /maintenanceCron "every five seconds" is not a cron expression/],
    [{ PIPEMORPH__redis__tls: '{"caFile":"/nonexistent/ca.pem","certFile":"","keyFile":""}' }, /redis\.tls\.caFile "\/nonexistent\/ca\.pem" does not exist/],
    [{ PIPEMORPH__redis__tls: `{"caFile":"","certFile":"${__filename}","keyFile":""}` }, /redis\.tls\.certFile and redis\.tls\.keyFile go together/],
    [{ REDIS_CLUSTER_NODES: 'redis://r0:7000' }, /redis\.cluster\.nodes\.0 must match pattern/],
    [{ REDIS_CLUSTER_NODES: 'r0:7000', REDIS_SENTINELS: 's0:26379', PIPEMORPH__redis__sentinelName: 'm' }, /redis\.cluster\.nodes and redis\.sentinels exclude each other/],
    [{ REDIS_SENTINELS: 's0:26379' }, /redis\.sentinels needs redis\.sentinelName/],
  ])('refuses %j with a message naming the key', (env, pattern) => {
    expectConfigError(env, pattern);
  });

  it('refuses an unreadable or malformed file, and unknown keys in it', () => {
    const dir = mkdtempSync(join(tmpdir(), 'pipemorph-config-'));
    expectConfigError({ PIPEMORPH_CONFIG: join(dir, 'missing.json') }, /cannot load config file .*missing\.json/);
    writeFileSync(join(dir, 'bad.json'), '{"redis": ');
    expectConfigError({ PIPEMORPH_CONFIG: join(dir, 'bad.json') }, /cannot load config file/);
    const extra = { ...loadConfig({}), surprise: true };
    writeFileSync(join(dir, 'extra.json'), JSON.stringify(extra));
    expectConfigError({ PIPEMORPH_CONFIG: join(dir, 'extra.json') }, /has unknown field "surprise"/);
  });
});
