/**
 * Lua scripts for every schedule write. Each first checks that the caller's fencing epoch is
 * still the job's epoch, so a replica that lost the job (paused, partitioned, replaced) can
 * never publish. All keys of one job share a hash tag, so the scripts also run on a cluster.
 */

/** KEYS: epoch, version. ARGV: epoch. Returns the new version or -1 when fenced. */
export const NEXT_VERSION = `
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return -1 end
return redis.call('INCR', KEYS[2])
`;

/** KEYS: epoch, pending, control. ARGV: epoch, schedule JSON, event JSON, control maxlen. */
export const PREPARE = `
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 'fenced' end
if redis.call('EXISTS', KEYS[2]) == 1 then return 'busy' end
redis.call('SET', KEYS[2], ARGV[2])
redis.call('XADD', KEYS[3], 'MAXLEN', '~', ARGV[4], '*', 'm', ARGV[3])
return 'ok'
`;

/** KEYS: epoch, pending, schedule, control. ARGV: epoch, version, committed JSON, event JSON, control maxlen. */
export const COMMIT = `
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 'fenced' end
local pending = redis.call('GET', KEYS[2])
if not pending then return 'stale' end
if tostring(cjson.decode(pending)['version']) ~= ARGV[2] then return 'stale' end
redis.call('SET', KEYS[3], ARGV[3])
redis.call('DEL', KEYS[2])
redis.call('XADD', KEYS[4], 'MAXLEN', '~', ARGV[5], '*', 'm', ARGV[4])
return 'ok'
`;

/** KEYS: epoch, pending, control. ARGV: epoch, version, event JSON, control maxlen. */
export const ABORT = `
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 'fenced' end
local pending = redis.call('GET', KEYS[2])
if pending and tostring(cjson.decode(pending)['version']) == ARGV[2] then redis.call('DEL', KEYS[2]) end
redis.call('XADD', KEYS[3], 'MAXLEN', '~', ARGV[4], '*', 'm', ARGV[3])
return 'ok'
`;

/** KEYS: epoch, schedule, control. ARGV: epoch, committed JSON, event JSON, control maxlen. */
export const COMMIT_DIRECT = `
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 'fenced' end
redis.call('SET', KEYS[2], ARGV[2])
redis.call('XADD', KEYS[3], 'MAXLEN', '~', ARGV[4], '*', 'm', ARGV[3])
return 'ok'
`;

/** KEYS: owner. ARGV: owner id, ttl ms. */
export const RENEW_LEASE = `
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 1
`;

/** KEYS: owner. ARGV: owner id. */
export const RELEASE_LEASE = `
if redis.call('GET', KEYS[1]) == ARGV[1] then redis.call('DEL', KEYS[1]) end
return 1
`;
