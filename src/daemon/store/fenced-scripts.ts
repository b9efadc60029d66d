/**
 * Lua scripts for every schedule write. Each first checks that the caller's fencing epoch is
 * still the job's epoch, so a replica that lost the job (paused, partitioned, replaced) can
 * never publish. All keys of one job share a hash tag, so the scripts also run on a cluster.
 */

/**
 * KEYS: epoch, version. ARGV: epoch, floor. Returns the new version or -1 when fenced. The version
 * is above `floor` (the highest version the daemon or the ranks know of), so a counter lost with
 * Redis's data never hands out a version number again (protocol §5.6).
 */
export const NEXT_VERSION = `
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return -1 end
local v = redis.call('INCR', KEYS[2])
local floor = tonumber(ARGV[2])
if v <= floor then
  v = floor + 1
  redis.call('SET', KEYS[2], v)
end
return v
`;

/** KEYS: epoch. ARGV: floor. A new epoch above `floor` (the highest epoch known outside Redis). */
export const BUMP_EPOCH = `
local e = redis.call('INCR', KEYS[1])
local floor = tonumber(ARGV[1])
if e <= floor then
  e = floor + 1
  redis.call('SET', KEYS[1], e)
end
return e
`;

/**
 * KEYS: owner, epoch. ARGV: owner id, ttl ms, the owner's epoch, floor. For an owner whose writes
 * were fenced: only while it holds the lease, renews it and, when the job's epoch is no longer the
 * owner's (changed behind its back: another client's INCR, a stale replica's bump), takes a new one
 * above it and above `floor`. Returns the new epoch, 0 when the epoch is still the owner's, -1 when
 * the lease is not the owner's (nothing changed). A value that is not a number counts as 0.
 */
export const RETAKE_EPOCH = `
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return -1 end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
local current = redis.call('GET', KEYS[2])
if current == ARGV[3] then return 0 end
local e = math.floor(tonumber(current or '0') or 0) + 1
local floor = tonumber(ARGV[4])
if e <= floor then e = floor + 1 end
redis.call('SET', KEYS[2], e)
return e
`;

/**
 * KEYS: owner. ARGV: owner id, ttl ms. Takes a free lease, or one this owner id already holds: a
 * daemon restarted under the same id (same pod) takes its jobs back at once instead of waiting for
 * its own lease to expire. Returns 1 when taken.
 */
export const ACQUIRE_LEASE = `
local holder = redis.call('GET', KEYS[1])
if holder and holder ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return 1
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

/**
 * KEYS: replicas (sorted set). ARGV: replica id, ttl ms (0: the replica leaves). On Redis's clock
 * (TIME), so replicas' clocks may disagree: drops expired members, adds or removes this one,
 * returns how many replicas are live.
 */
export const REPLICA_HEARTBEAT = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
local ttl = tonumber(ARGV[2])
if ttl > 0 then redis.call('ZADD', KEYS[1], now + ttl, ARGV[1]) else redis.call('ZREM', KEYS[1], ARGV[1]) end
return redis.call('ZCARD', KEYS[1])
`;

/** KEYS: owner. ARGV: owner id. */
/**
 * KEYS: owner, offer. ARGV: owner id, ttl ms. The lease holder offers the job to a replica under
 * its share (JobRegistry.shedExcess): it keeps leading until one takes it (TAKE_OFFERED). 0 when
 * the lease is not the caller's.
 */
export const OFFER_LEASE = `
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[2], ARGV[1], 'PX', ARGV[2])
return 1
`;

/** KEYS: offer. ARGV: owner id. Withdraws the caller's offer (another's is left alone). */
export const WITHDRAW_OFFER = `
if redis.call('GET', KEYS[1]) == ARGV[1] then redis.call('DEL', KEYS[1]) end
return 1
`;

/** KEYS: owner, offer. The lease's holder and the replica offering it ({false, false}: free, not offered). */
export const LEASE_STATE = `
return {redis.call('GET', KEYS[1]), redis.call('GET', KEYS[2])}
`;

/**
 * KEYS: owner, offer, pending. ARGV: the offering owner, the taker, ttl ms. Moves an offered lease
 * from its holder to the taker in one step, never through a free lease: only while the holder
 * still holds and offers it, and not while a switch is prepared (the job changes hands between
 * switches, as a job handed back by release did). 1 when taken.
 */
export const TAKE_OFFERED = `
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
if redis.call('GET', KEYS[2]) ~= ARGV[1] then return 0 end
if redis.call('EXISTS', KEYS[3]) == 1 then return 0 end
redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
redis.call('DEL', KEYS[2])
return 1
`;

export const RELEASE_LEASE = `
if redis.call('GET', KEYS[1]) == ARGV[1] then redis.call('DEL', KEYS[1]) end
return 1
`;

/**
 * KEYS: overrides. ARGV: what the key must hold ('absent', 'any', or 'text': exactly ARGV[2]);
 * '1' to delete, else '0'; the new text. Compare-and-set of a job's overrides (operator writes,
 * not fenced by epoch: any replica's API may write them; 'any' also deletes a key of another
 * type). Returns 1 when written, 0 when the key held something else.
 */
export const REPLACE_OVERRIDES = `
if ARGV[1] ~= 'any' then
  local cur = redis.call('GET', KEYS[1])
  if ARGV[1] == 'absent' then
    if cur then return 0 end
  elseif cur ~= ARGV[2] then
    return 0
  end
end
if ARGV[3] == '1' then redis.call('DEL', KEYS[1]) else redis.call('SET', KEYS[1], ARGV[4]) end
return 1
`;
