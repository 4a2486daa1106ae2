/**
 * The Redis state store: the only file in tokenlease that imports `ioredis`.
 *
 * It moves pool state and ownership records in and out of Redis with Lua
 * scripts, each touching the keys of one pool only, and makes no decision.
 * Key layout (`<p>` is the key prefix, default `tokenlease`; every key of a
 * pool carries the hash tag `{<pool>}`, so a pool's scripts run on one
 * Redis Cluster slot):
 *
 *   <p>:{<pool>}:owner   hash  member, epoch   PEXPIRE ownership TTL
 *   <p>:{<pool>}:epoch   int   last epoch handed out for the pool
 *   <p>:{<pool>}:level   int   level in whole tokens at the last write
 *   <p>:{<pool>}:leases  hash  agent id -> lease JSON (leaseId, boundTokens, lastSeq, lastReply)
 *   <p>:members          zset  member -> Redis time (ms) its heartbeat expires
 *
 * The catch-all unit `*` has an owner and an epoch record only. The members
 * set is the one key outside a pool's tag: only the heartbeat script
 * touches it, alone, so in a cluster it lives on the slot of its own name
 * and no script spans two slots.
 *
 * A cluster (`redis+cluster://`) is reached through ioredis's Cluster
 * client, which sends each script to the primary owning its slot; a
 * Sentinel URL through ioredis's sentinel support, which asks the
 * sentinels for the master's current primary at each (re)connection. With
 * replica confirmation (`replicas` > 0) a pool's write is followed, in the
 * same pipeline and so on the same connection to the same node, by
 * `WAIT replicas timeout`; a write fewer replicas acknowledged in time is
 * reported as the store not answering (core/replica-confirm.ts).
 * Fencing: a write or renewal names the member and the epoch of its claim;
 * the script refuses it unless the owner record (alive, not expired) names
 * both. Redis must keep its data across a restart (`appendonly yes` and
 * `appendfsync always`): a pool Redis has no record of starts full.
 */
import { EventEmitter } from 'node:events';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { Cluster, Redis, type RedisOptions, type StandaloneConnectionOptions } from 'ioredis';
import type standaloneConnectorModule from 'ioredis/built/connectors/StandaloneConnector.js';
import { CoordinatorError } from '../errors.js';
import { confirmWrite } from '../core/replica-confirm.js';
import { onlineReplicas, replicaShortfall, slotRanges } from '../core/replica-shortfall.js';
import { appendOnlyVerdict, connectReason } from '../core/redis-connect-reason.js';
import { checkKeyPrefix, checkRedisUrl, resolveRedisOptions, type RedisConnectOptions } from '../core/redis-options.js';
import { REDIS_ENV, REDIS_FLAGS, type RedisField } from '../core/redis-settings.js';
import { decodePersistedLease, encodePersistedLease, parseLevelTokens, type PoolChanges } from '../core/pool-state.js';

const CLAIM = `
local cur = redis.call('HGET', KEYS[1], 'member')
local cleared = 0
if cur and cur ~= ARGV[1] then
  local ttl = redis.call('PTTL', KEYS[1])
  -- An owner record that never expires (or outlives any ownership TTL) would keep the pool unserved forever.
  if ttl >= 0 and ttl <= tonumber(ARGV[3]) then return {0, ttl} end
  redis.call('DEL', KEYS[1])
  cleared = 1
end
-- Read first: a key of the wrong type fails the script before anything is written.
local level = redis.call('GET', KEYS[3])
local leases = redis.call('HGETALL', KEYS[4])
local epoch = redis.call('INCR', KEYS[2])
redis.call('HSET', KEYS[1], 'member', ARGV[1], 'epoch', epoch)
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return {1, epoch, level, leases, cleared}`;

const OWNED = `
local o = redis.call('HMGET', KEYS[1], 'member', 'epoch')
if o[1] ~= ARGV[1] or o[2] ~= ARGV[2] then return 0 end`;

const RENEW = `${OWNED}
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return 1`;

const WRITE = `${OWNED}
redis.call('SET', KEYS[2], ARGV[3])
local n = tonumber(ARGV[4])
for i = 5, 4 + 2 * n, 2 do redis.call('HSET', KEYS[3], ARGV[i], ARGV[i + 1]) end
for i = 5 + 2 * n, #ARGV do redis.call('HDEL', KEYS[3], ARGV[i]) end
return 1`;

const RELEASE = `${OWNED}
redis.call('DEL', KEYS[1])
return 1`;

const FORGET = `${OWNED}
redis.call('DEL', KEYS[1], KEYS[2], KEYS[3], KEYS[4])
return 1`;

const HEARTBEAT = `
local t = redis.call('TIME')
local nowMs = t[1] * 1000 + math.floor(t[2] / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', nowMs)
-- A heartbeat further ahead than any ownership TTL is impossible: such a member would be counted alive forever.
local impossible = redis.call('ZREMRANGEBYSCORE', KEYS[1], '(' .. (nowMs + tonumber(ARGV[3])), '+inf')
if ARGV[2] ~= '0' then redis.call('ZADD', KEYS[1], nowMs + tonumber(ARGV[2]), ARGV[1]) else redis.call('ZREM', KEYS[1], ARGV[1]) end
return {impossible, redis.call('ZRANGE', KEYS[1], 0, -1)}`;

/** OWNERSHIP_TTL_MS_MAX — the longest ownership TTL; an owner record or heartbeat further ahead is damaged. */
export const OWNERSHIP_TTL_MS_MAX = 600_000;

/** Claim, Members — what a claim and a heartbeat answer (core/ownership-store.ts, where the ownership driver reads them). */
export type { Claim, Members } from '../core/ownership-store.js';
import type { Claim, Members } from '../core/ownership-store.js';

/** StateStore — pool state and ownership records; every method rejects with CoordinatorError('store-unavailable') when the store cannot answer. */
export interface StateStore {
  /** heartbeat — marks `member` alive for `ttlMs` (0: gone) and lists the live members. */
  heartbeat(member: string, ttlMs: number): Promise<Members>;
  /** ownerOf — the live owner of `unit`, or null when nobody owns it now. */
  ownerOf(unit: string): Promise<string | null>;
  /** claim — takes `unit` for `member` for `ttlMs` unless another member holds it, with a new epoch. */
  claim(unit: string, member: string, ttlMs: number): Promise<Claim>;
  /** renew — extends the claim `epoch` of `member` on `unit`; false when it is no longer theirs. */
  renew(unit: string, member: string, epoch: number, ttlMs: number): Promise<boolean>;
  /** write — applies `changes` to `unit` if `member` still owns it under `epoch`; false when fenced. */
  write(unit: string, member: string, epoch: number, changes: PoolChanges): Promise<boolean>;
  /** release — gives `unit` up (the state stays for the next owner); false when it was no longer theirs. */
  release(unit: string, member: string, epoch: number): Promise<boolean>;
  /** forget — deletes `unit`'s records, ownership and state (an evicted template pool); false when fenced. */
  forget(unit: string, member: string, epoch: number): Promise<boolean>;
  /** durabilityWarning — why Redis may lose acknowledged writes on a restart, or null when it is set up to keep them (or will not say). */
  durabilityWarning(): Promise<string | null>;
  /** replicaWarning — which primaries have fewer replicas online than a write must be confirmed by, or null (none, none asked, or they will not say). */
  replicaWarning(): Promise<string | null>;
  /** close — closes the connection to Redis. */
  close(): Promise<void>;
}

/** RedisStoreOptions — the store's key prefix and timeouts. */
export interface RedisStoreOptions {
  /** Key prefix; no braces. Default `tokenlease`. */
  readonly keyPrefix?: string;
  /** Longest wait for one command, ms (default 1000); then the store counts as unavailable. */
  readonly commandTimeoutMs?: number;
  /** Longest wait for the first connection, ms (default 3000). */
  readonly connectTimeoutMs?: number;
}

/** parseRedisUrl — `url` if it is a redis:// or rediss:// URL; throws CoordinatorError('config-invalid') otherwise, showing the URL redacted. */
export function parseRedisUrl(url: string): URL {
  return checkRedisUrl(url);
}

function unavailable(error: unknown): CoordinatorError {
  if (error instanceof CoordinatorError) return error;
  const text = error instanceof Error ? error.message : String(error);
  // Redis answered, but a key holds something a script cannot work on: not ours, or damaged.
  if (text.includes('WRONGTYPE'))
    return new CoordinatorError('state-invalid', `Redis holds a key of the wrong type: ${text}`, { cause: error });
  return new CoordinatorError('store-unavailable', `Redis did not answer: ${text}`, { cause: error });
}

/** The options of a Redis URL given alone: its own login, TLS (trusting the system's CAs) for rediss://, default replica confirmation. */
function urlOnly(url: string): RedisConnectOptions {
  const resolved = resolveRedisOptions({ redis: url }, {});
  if (resolved === null) throw new CoordinatorError('config-invalid', 'the Redis URL is empty');
  return resolved;
}

/** The bytes of a TLS file; CoordinatorError('config-invalid') naming its setting when unreadable. */
function readTlsFile(field: RedisField, path: string): Buffer {
  try {
    return readFileSync(path);
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    const name = `--${REDIS_FLAGS[field]} or ${REDIS_ENV[field]}`;
    // Named by its setting, never by its path, and without Node's error (which holds the path) as a cause.
    throw new CoordinatorError('config-invalid', `cannot read the file of ${name} (${typeof code === 'string' ? code : 'unreadable'})`, {
      field: REDIS_ENV[field],
    });
  }
}

/** ignoreSocketError — a socket's later errors: the client has already heard the first and acts on its close. */
function ignoreSocketError(): void {}

/**
 * connectRedisStore — a store on the Redis that `target` names (a URL, or
 * resolved options with a login and TLS files apart: one server, a Cluster
 * or Sentinel), connected; rejects with one-line CoordinatorErrors holding
 * no secret: `config-invalid` for a bad URL or key prefix or an unreadable
 * TLS file, `store-unavailable` for a server that cannot be reached or
 * refuses the login.
 */
export async function connectRedisStore(target: string | RedisConnectOptions, options: RedisStoreOptions = {}): Promise<StateStore> {
  const connection = typeof target === 'string' ? urlOnly(target) : target;
  if (connection.cluster === null && connection.sentinel === null) checkRedisUrl(connection.url);
  const prefix = checkKeyPrefix(options.keyPrefix ?? 'tokenlease');
  const redisOptions = redisOptionsOf(connection, options);
  // Sentinels that cannot name the master at start fail the start (a few tries); once connected, they are asked forever.
  let started = false;
  const client = clientOf(connection, redisOptions, (times) => (started || times <= 3 ? 250 : null));
  const lastError = watchErrors(client);
  try {
    await client.connect();
    started = true;
  } catch (error) {
    client.disconnect();
    throw await connectFailure(connection, redisOptions, error, lastError());
  }
  return new RedisStore(client, prefix, connection.replicas, connection.replicaTimeoutMs);
}

/** redisOptionsOf — ioredis's options for `connection`: no offline queue, no retried command, timeouts, the login apart, the TLS files read. */
function redisOptionsOf(connection: RedisConnectOptions, options: RedisStoreOptions): RedisOptions {
  const tls = connection.tls;
  return {
    lazyConnect: true,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    // A write's WAIT may take its whole replica timeout before Redis answers.
    commandTimeout: (options.commandTimeoutMs ?? 1000) + (connection.replicas > 0 ? connection.replicaTimeoutMs : 0),
    connectTimeout: options.connectTimeoutMs ?? 3000,
    retryStrategy: () => 250,
    // A Sentinel's client needs ioredis's own Sentinel connector, and is guarded after its first error (watchErrors).
    ...(connection.sentinel === null ? { Connector: GuardedConnector } : {}),
    ...(connection.user === null ? {} : { username: connection.user }),
    ...(connection.password === null ? {} : { password: connection.password }),
    ...(tls === null
      ? {}
      : {
          tls: {
            ...(tls.caFile === null ? {} : { ca: readTlsFile('caFile', tls.caFile) }),
            ...(tls.certFile === null ? {} : { cert: readTlsFile('certFile', tls.certFile) }),
            ...(tls.keyFile === null ? {} : { key: readTlsFile('keyFile', tls.keyFile) }),
          },
        }),
  };
}

/** clientOf — a cluster's, a Sentinel's (asking its sentinels by `sentinelRetry`) or one server's client, not yet connected. */
function clientOf(
  connection: RedisConnectOptions,
  redisOptions: RedisOptions,
  sentinelRetry: (times: number) => number | null,
): Redis | Cluster {
  const { cluster, sentinel } = connection;
  if (cluster !== null) return clusterClient(cluster, redisOptions);
  if (sentinel !== null) {
    return new Redis({ ...redisOptions, sentinels: [...sentinel.seeds], name: sentinel.master, sentinelRetryStrategy: sentinelRetry });
  }
  return singleClient(connection, redisOptions);
}

/**
 * watchErrors — connection errors surface as failed commands and the
 * client keeps reconnecting. Returns the last error heard, which says why
 * a first connect failed. A Sentinel's socket is guarded here, at its
 * first error; every other socket from the start (GuardedConnector).
 */
function watchErrors(client: Redis | Cluster): () => unknown {
  let lastError: unknown = null;
  client.on('error', (error: unknown) => {
    lastError = error;
    if (client instanceof Redis) guard(client);
  });
  client.on('node error', (error: unknown) => {
    lastError = error;
  });
  return () => lastError;
}

/** connectFailure — the one-line `store-unavailable` error of a first connect that failed with `error` (`lastError`: the client's last). */
async function connectFailure(
  connection: RedisConnectOptions,
  redisOptions: RedisOptions,
  error: unknown,
  lastError: unknown,
): Promise<CoordinatorError> {
  const tls = connection.tls;
  const seeds = connection.cluster === null ? null : await seedReason(connection.cluster, redisOptions, tls?.certFile === null);
  return new CoordinatorError(
    'store-unavailable',
    `cannot connect to Redis at ${connection.shown}: ${seeds ?? connectReason(error, lastError, tls !== null && tls.certFile === null)}`,
    { cause: error },
  );
}

/**
 * StandaloneConnector — ioredis's connector to one server, which its index
 * does not export: required by path, so that Node and the test runner's
 * loader both see the CommonJS module as it is (its class under `default`).
 */
const { default: StandaloneConnector } = createRequire(import.meta.url)(
  'ioredis/built/connectors/StandaloneConnector.js',
) as typeof standaloneConnectorModule;
type StandaloneConnector = InstanceType<typeof StandaloneConnector>;

const guarded = new WeakSet<object>();
/** guard — keeps a Sentinel client's socket's second error from ending the process (GuardedConnector says why). */
function guard(node: Redis): void {
  // The first error reaches here before the socket can emit again.
  const socket: unknown = node.stream;
  if (socket instanceof EventEmitter && !guarded.has(socket)) {
    guarded.add(socket);
    socket.on('error', ignoreSocketError);
  }
}

/**
 * GuardedConnector — ioredis's connector to one server, whose sockets hear
 * every error from the moment they exist. ioredis listens only once for a
 * socket's error; a second one (a TLS alert, then the peer's reset) would
 * go unheard and end the process. Every connection a client opens goes
 * through it: a cluster's nodes, and the copies it opens to ask a node for
 * the slots, which no error listener of ours could reach.
 */
class GuardedConnector extends StandaloneConnector {
  /** ioredis hands every connector the client's options, typed unknown. */
  constructor(options: unknown) {
    super(options as StandaloneConnectionOptions);
  }

  override async connect(onEvent: Parameters<StandaloneConnector['connect']>[0]) {
    const stream = await super.connect(onEvent);
    stream.on('error', ignoreSocketError);
    return stream;
  }
}

/**
 * seedReason — why a cluster's seeds (the first three) refuse us, asked of
 * each as one Redis, or null when each answers that way: the cluster
 * client says only that no seed is available, hiding a certificate or a
 * login refused.
 */
async function seedReason(
  seeds: NonNullable<RedisConnectOptions['cluster']>,
  redisOptions: RedisOptions,
  tlsWithoutCert: boolean,
): Promise<string | null> {
  for (const seed of seeds.slice(0, 3)) {
    const probe = new Redis({ ...redisOptions, host: seed.host, port: seed.port, retryStrategy: () => null });
    let last: unknown = null;
    probe.on('error', (error: unknown) => {
      last = error;
    });
    try {
      await probe.connect();
    } catch (error) {
      return connectReason(error, last, tlsWithoutCert);
    } finally {
      probe.disconnect();
    }
  }
  return null;
}

/** singleClient — one Redis, by its URL, with the login given apart winning over the URL's. */
function singleClient(connection: RedisConnectOptions, redisOptions: RedisOptions): Redis {
  // ioredis lets the URL's login win over the options': drop from the URL what is given apart.
  const url = new URL(connection.url);
  if (connection.user !== null) url.username = '';
  if (connection.password !== null) url.password = '';
  return new Redis(url.toString(), redisOptions);
}

/** clusterClient — a Redis Cluster from its seeds; every node is reached with `redisOptions` (login, TLS, timeouts). */
function clusterClient(seeds: RedisConnectOptions['cluster'] & object, redisOptions: RedisOptions): Cluster {
  const { lazyConnect, enableOfflineQueue, retryStrategy, ...nodeOptions } = redisOptions;
  void retryStrategy; // a cluster reconnects through its own strategy, and finds the new primary of a slot by itself
  return new Cluster(
    seeds.map((seed) => ({ host: seed.host, port: seed.port })),
    {
      lazyConnect: lazyConnect ?? true,
      enableOfflineQueue: enableOfflineQueue ?? false,
      clusterRetryStrategy: () => 250,
      slotsRefreshTimeout: redisOptions.connectTimeout ?? 3000,
      redisOptions: nodeOptions,
    },
  );
}

class RedisStore implements StateStore {
  constructor(
    private readonly redis: Redis | Cluster,
    private readonly prefix: string,
    /** Replicas that must acknowledge a write (WAIT) before it counts as written; 0: none asked. */
    private readonly replicas: number,
    private readonly replicaTimeoutMs: number,
  ) {}

  private keys(unit: string): [owner: string, epoch: string, level: string, leases: string] {
    const base = `${this.prefix}:{${unit}}:`;
    return [`${base}owner`, `${base}epoch`, `${base}level`, `${base}leases`];
  }

  private async run(script: string, keys: string[], args: (string | number)[]): Promise<unknown> {
    try {
      return await this.redis.eval(script, keys.length, ...keys, ...args);
    } catch (error) {
      throw unavailable(error);
    }
  }

  async heartbeat(member: string, ttlMs: number): Promise<Members> {
    const [dropped, members] = (await this.run(HEARTBEAT, [`${this.prefix}:members`], [member, ttlMs, OWNERSHIP_TTL_MS_MAX])) as [
      number,
      string[],
    ];
    return { members, droppedImpossible: Number(dropped) };
  }

  async ownerOf(unit: string): Promise<string | null> {
    try {
      return await this.redis.hget(this.keys(unit)[0], 'member');
    } catch (error) {
      throw unavailable(error);
    }
  }

  async claim(unit: string, member: string, ttlMs: number): Promise<Claim> {
    const result = (await this.run(CLAIM, this.keys(unit), [member, ttlMs, OWNERSHIP_TTL_MS_MAX])) as unknown[];
    if (result[0] === 0) return { taken: false, heldForMs: Math.max(0, Number(result[1])) };
    const epoch = Number(result[1]);
    const levelText = result[2] as string | null;
    const pairs = result[3] as string[];
    const clearedOwner = result[4] === 1;
    if (levelText === null && pairs.length === 0) return { taken: true, epoch, state: null, clearedOwner };
    try {
      const kept = [];
      for (let i = 0; i + 1 < pairs.length; i += 2) kept.push(decodePersistedLease(unit, pairs[i] as string, pairs[i + 1] as string));
      return {
        taken: true,
        epoch,
        state: { levelTokens: levelText === null ? 0 : parseLevelTokens(unit, levelText), leases: kept },
        clearedOwner,
      };
    } catch (error) {
      if (!(error instanceof CoordinatorError) || error.code !== 'state-invalid') throw error;
      // Damaged state is not adopted: the pool starts afresh and deletes these records.
      const agentIds = pairs.filter((_, i) => i % 2 === 0);
      return { taken: true, epoch, state: { damaged: error.message, agentIds }, clearedOwner };
    }
  }

  async renew(unit: string, member: string, epoch: number, ttlMs: number): Promise<boolean> {
    return (await this.run(RENEW, [this.keys(unit)[0]], [member, epoch, ttlMs])) === 1;
  }

  async write(unit: string, member: string, epoch: number, changes: PoolChanges): Promise<boolean> {
    const [owner, , level, leases] = this.keys(unit);
    const args: (string | number)[] = [member, epoch, changes.levelTokens, changes.upserts.length];
    for (const lease of changes.upserts) args.push(lease.agentId, encodePersistedLease(lease));
    args.push(...changes.removes);
    const keys = [owner, level, leases];
    if (this.replicas === 0) return confirmWrite(await this.run(WRITE, keys, args), null, 0).outcome === 'written';
    // One pipeline: the cluster client sends it whole to the node owning the pool's slot, so WAIT
    // counts the replicas that hold this write (and every earlier one of this connection).
    let replies: [Error | null, unknown][] | null;
    try {
      replies = await this.redis
        .pipeline()
        .eval(WRITE, keys.length, ...keys, ...args)
        .wait(this.replicas, this.replicaTimeoutMs)
        .exec();
    } catch (error) {
      throw unavailable(error);
    }
    const [written, waited] = replies ?? [];
    if (written === undefined || waited === undefined) throw unavailable(new Error('the write and its WAIT were not answered'));
    const failed = written[0] ?? waited[0];
    if (failed !== null) {
      // The cluster client follows no redirection for a pipeline that holds a write: learn the slots again,
      // so the retry finds the slot's new primary (after a failover) instead of being sent back forever.
      if (this.redis instanceof Cluster && /^(MOVED|ASK|CLUSTERDOWN|TRYAGAIN)\b/.test(failed.message)) this.redis.refreshSlotsCache();
      throw unavailable(failed);
    }
    const confirmed = confirmWrite(written[1], waited[1], this.replicas);
    if (confirmed.outcome === 'unconfirmed')
      throw new CoordinatorError(
        'store-unavailable',
        `pool ${JSON.stringify(unit)}: the write was acknowledged by ${confirmed.replicasAcked} of ${this.replicas} replicas within ${this.replicaTimeoutMs} ms`,
        { pool: unit },
      );
    return confirmed.outcome === 'written';
  }

  async release(unit: string, member: string, epoch: number): Promise<boolean> {
    return (await this.run(RELEASE, [this.keys(unit)[0]], [member, epoch])) === 1;
  }

  async forget(unit: string, member: string, epoch: number): Promise<boolean> {
    return (await this.run(FORGET, this.keys(unit), [member, epoch])) === 1;
  }

  async durabilityWarning(): Promise<string | null> {
    if (this.redis instanceof Redis) return appendOnlyWarning(this.redis);
    if (this.replicas === 0)
      return 'Redis Cluster without replica confirmation (--redis-replicas 0): a primary that fails over may lose acknowledged grants, and over-admit';
    for (const node of this.redis.nodes('master')) {
      const warning = await appendOnlyWarning(node);
      if (warning !== null) return `${node.options.host ?? '?'}:${node.options.port ?? '?'}: ${warning}`;
    }
    return null;
  }

  async replicaWarning(): Promise<string | null> {
    if (this.replicas === 0) return null;
    const redis = this.redis;
    const primaries = redis instanceof Redis ? [redis] : redis.nodes('master');
    const said = await Promise.all(
      primaries.map(async (node) => {
        const name = `${node.options.host ?? '?'}:${node.options.port ?? '?'}`;
        const info = await node.info('replication').catch(() => '');
        return { node: name, slots: redis instanceof Cluster ? slotRanges(redis.slots, name) : '', replicas: onlineReplicas(info) };
      }),
    );
    return replicaShortfall(this.replicas, said);
  }

  async close(): Promise<void> {
    try {
      await this.redis.quit();
    } catch {
      this.redis.disconnect();
    }
  }
}

/** appendOnlyWarning — why `node` may lose acknowledged writes on its restart, or null when it keeps them (or will not say). */
async function appendOnlyWarning(node: Redis): Promise<string | null> {
  let reply: unknown;
  try {
    reply = await node.call('CONFIG', 'GET', 'append*');
  } catch {
    return null; // CONFIG is often disabled on managed Redis: nothing to say.
  }
  return appendOnlyVerdict(reply);
}
