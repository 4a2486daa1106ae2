/**
 * The systems `npm run bench:compare` runs one fleet workload through, and
 * that workload: four client processes offering cost-1 requests as Poisson
 * arrivals at uneven rates that sum to four times the refill, so the limit
 * binds and a share fixed per client (B/N, r/N) is too small for the busy
 * clients and too large for the quiet ones.
 *
 * Every system is set to the same bucket: capacity B = 2,000 tokens and
 * refill r = 2,000/s (B is one second of refill, so that a limiter of
 * "B points per B/r seconds" means the same thing).
 */

/** FLEET — the workload every system runs. */
export const FLEET = {
  capacityTokens: 2000,
  refillPerSecond: 2000,
  /** Offered requests per second of each client process (cost 1 each). */
  demandsPerSecond: [250, 250, 1500, 6000],
  /** The allowance of the allowance row, tokens (A = 10 % of B). */
  allowanceTokens: 200,
  leaseTtlMs: 2000,
  maxLeaseTokens: 100,
} as const;

/**
 * WINDOW — the limit of the window rows (`--parts window`): at most N =
 * 2,000 tokens in every window of W = 1 s, the fleet's numbers read as a
 * strict sliding window (a bucket of B = 2,000 refilled at 2,000/s admits up
 * to 4,000 in some second). Same clients, same arrivals.
 */
export const WINDOW = { limitTokens: 2000, windowMs: 1000 } as const;

/** DeciderKind — how a client decides: a tokenlease agent, Redis per request, or a bucket of its own. */
export type DeciderKind = 'tokenlease' | 'redis-lua' | 'rlf-redis' | 'redis-window-log' | 'local';

/** System — one row of the comparison. */
export interface System {
  /** Its name in the JSON rows and on the command line of a client. */
  readonly name: string;
  /** What it is, in the table's words. */
  readonly label: string;
  readonly kind: DeciderKind;
  /** The coordinator's pool fields beyond capacity and refill (tokenlease rows). */
  readonly pool?: Readonly<Record<string, number | string>>;
  /** The allowance A it promises on top of B + r·T, tokens (0: none). */
  readonly allowanceTokens: number;
  /** It limits to N per W (WINDOW), judged over every window, not against B + r·T; a tokenlease row then runs a window pool. */
  readonly window?: boolean;
  /** A tokenlease row's agents report what they spent every `reportMs` between renewals (KeeperOptions.reportMs). */
  readonly reportMs?: number;
}

const LEASES = { leaseTtlMs: FLEET.leaseTtlMs, maxLeaseTokens: FLEET.maxLeaseTokens };

/** BASELINE — the row every ratio is taken against. */
export const BASELINE = 'tokenlease-chunk';

/** SYSTEMS — the rows, in the order they run and print. */
export const SYSTEMS: readonly System[] = [
  { name: BASELINE, label: 'tokenlease chunk leases (strict)', kind: 'tokenlease', pool: LEASES, allowanceTokens: 0 },
  {
    name: 'tokenlease-rate',
    label: 'tokenlease rate leases',
    kind: 'tokenlease',
    pool: { ...LEASES, leaseMode: 'rate' },
    allowanceTokens: 0,
  },
  {
    name: 'tokenlease-allowance',
    label: `tokenlease chunk leases, allowance ${FLEET.allowanceTokens}`,
    kind: 'tokenlease',
    pool: { ...LEASES, allowance: FLEET.allowanceTokens },
    allowanceTokens: FLEET.allowanceTokens,
  },
  {
    name: 'tokenlease-lease-1',
    label: 'tokenlease, lease size 1 (a round-trip per token)',
    kind: 'tokenlease',
    pool: { ...LEASES, maxLeaseTokens: 1 },
    allowanceTokens: 0,
  },
  { name: 'redis-lua', label: 'Redis token bucket per request (ioredis, Lua)', kind: 'redis-lua', allowanceTokens: 0 },
  { name: 'rlf-redis', label: 'rate-limiter-flexible, Redis store', kind: 'rlf-redis', allowanceTokens: 0 },
  { name: 'local-buckets', label: 'local buckets of B/N, no coordination', kind: 'local', allowanceTokens: 0 },
];

/** WINDOW_BASELINE — the row every ratio of the window table is taken against. */
export const WINDOW_BASELINE = 'tokenlease-window';

/** WINDOW_SYSTEMS — the rows of the window table (N per W, WINDOW), in the order they run and print. */
export const WINDOW_SYSTEMS: readonly System[] = [
  {
    name: WINDOW_BASELINE,
    label: 'tokenlease window pool, chunk leases',
    kind: 'tokenlease',
    pool: LEASES,
    allowanceTokens: 0,
    window: true,
  },
  {
    name: 'tokenlease-window-lease-20',
    label: 'tokenlease window pool, lease size 20',
    kind: 'tokenlease',
    pool: { ...LEASES, maxLeaseTokens: 20 },
    allowanceTokens: 0,
    window: true,
  },
  {
    name: 'tokenlease-window-reports',
    label: 'tokenlease window pool, usage reports every 100 ms',
    kind: 'tokenlease',
    pool: LEASES,
    allowanceTokens: 0,
    window: true,
    reportMs: 100,
  },
  {
    name: 'redis-window-log',
    label: 'Redis sliding-window log per request (ioredis, Lua)',
    kind: 'redis-window-log',
    allowanceTokens: 0,
    window: true,
  },
];
