import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { validate as validateCron } from 'node-cron';
import configSchema from '../../../schemas/config.schema.json';
import defaults from '../../../config/default.json';
import { compileSchema } from '../../protocol/schema-validator';
import { PipemorphConfig } from './pipemorph-config.type';

export class ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ConfigError';
  }
}

/** config/default.json, found from the source tree or from dist/. */
export const DEFAULT_CONFIG_PATH = join(__dirname, '..', '..', '..', ...(__dirname.includes(`${join('dist', 'src')}`) ? ['..'] : []), 'config', 'default.json');

const schema = compileSchema<PipemorphConfig>(configSchema);

/** Short aliases for the settings every deployment touches. */
const ALIASES: Record<string, string> = {
  REDIS_URL: 'redis.url',
  REDIS_CLUSTER_NODES: 'redis.cluster.nodes',
  REDIS_SENTINELS: 'redis.sentinels',
  PORT: 'http.port',
  PIPEMORPH_OPERATOR_TOKEN: 'http.operatorToken',
};
const PREFIX = 'PIPEMORPH__';

/** Node lists may be given as a comma-separated list (`host:port,host:port`) as well as JSON. */
const LIST_ALIASES = new Set(['REDIS_CLUSTER_NODES', 'REDIS_SENTINELS']);

/** Secrets are taken as given: a token of digits must not turn into a number. */
const STRING_KEYS = new Set(['http.operatorToken']);

function parseValue(raw: string, name = '', path = ''): unknown {
  if (STRING_KEYS.has(path)) return raw;
  if (LIST_ALIASES.has(name) && !raw.trim().startsWith('[')) return raw.split(',').map((s) => s.trim()).filter((s) => s !== '');
  try {
    return JSON.parse(raw);
  } catch {
    return raw; // a bare string such as a URL
  }
}

function setPath(target: Record<string, unknown>, path: string, value: unknown, source: string): void {
  const parts = path.split('.');
  let node = target;
  for (const part of parts.slice(0, -1)) {
    const next = node[part];
    if (typeof next !== 'object' || next === null) throw new ConfigError(`${source}: no config section "${part}"`);
    node = next as Record<string, unknown>;
  }
  const leaf = parts[parts.length - 1];
  if (!(leaf in node)) throw new ConfigError(`${source}: no config key "${path}"`);
  node[leaf] = value;
}

/**
 * Loads the config file (PIPEMORPH_CONFIG or config/default.json), applies environment overrides
 * (`PIPEMORPH__section__key=value`, values parsed as JSON when they parse, plus the aliases
 * REDIS_URL and PORT) and validates the result. Any problem is a ConfigError naming the key.
 */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): PipemorphConfig {
  const path = env.PIPEMORPH_CONFIG ?? DEFAULT_CONFIG_PATH;
  let raw: Record<string, unknown>;
  try {
    raw = JSON.parse(readFileSync(path, 'utf8'));
  } catch (error) {
    throw new ConfigError(`cannot load config file ${path}: ${(error as Error).message}`);
  }
  // Optional in older config files: the environment may still set it.
  const http = raw.http as Record<string, unknown> | undefined;
  if (typeof http === 'object' && http !== null && !('operatorToken' in http)) http.operatorToken = '';
  // Added with re-balancing (docs/rebalancing.md): an older file gets the shipped defaults.
  if (!('rebalance' in raw)) raw.rebalance = { ...defaults.rebalance };
  // Added with the fleet view (docs/fleet.md).
  if (!('fleet' in raw)) raw.fleet = { ...defaults.fleet };
  // Added with the fleet prior (docs/fleet.md): a fleet section without it gets the default.
  const fleet = raw.fleet as Record<string, unknown> | undefined;
  if (typeof fleet === 'object' && fleet !== null && !('prior' in fleet)) fleet.prior = defaults.fleet.prior;
  for (const [name, value] of Object.entries(env)) {
    if (value === undefined) continue;
    if (name in ALIASES) setPath(raw, ALIASES[name], parseValue(value, name, ALIASES[name]), `environment ${name}`);
    else if (name.startsWith(PREFIX)) {
      const path = name.slice(PREFIX.length).split('__').join('.');
      setPath(raw, path, parseValue(value, name, path), `environment ${name}`);
    }
  }
  const problem = schema.check(raw);
  if (problem) throw new ConfigError(`invalid config (${path} with environment overrides): ${problem.replace(/^\//, '').replace(/\//g, '.')}`);
  const config = raw as unknown as PipemorphConfig;
  if (!validateCron(config.jobs.maintenanceCron)) throw new ConfigError(`invalid config: jobs.maintenanceCron "${config.jobs.maintenanceCron}" is not a cron expression`);
  for (const [name, file] of Object.entries(config.redis.tls)) {
    if (file && !existsSync(file)) throw new ConfigError(`invalid config: redis.tls.${name} ${JSON.stringify(file)} does not exist`);
  }
  if ((config.redis.tls.certFile === '') !== (config.redis.tls.keyFile === '')) throw new ConfigError('invalid config: redis.tls.certFile and redis.tls.keyFile go together');
  const clustered = (config.redis.cluster?.nodes ?? []).length > 0;
  const sentinels = (config.redis.sentinels ?? []).length > 0;
  if (clustered && sentinels) throw new ConfigError('invalid config: redis.cluster.nodes and redis.sentinels exclude each other');
  if (sentinels && !config.redis.sentinelName) throw new ConfigError('invalid config: redis.sentinels needs redis.sentinelName (the master name Sentinel monitors)');
  if (config.detection.baselineWarmup > config.detection.windowSize * 64) throw new ConfigError('invalid config: detection.baselineWarmup is unreasonably large for detection.windowSize');
  return config;
}
