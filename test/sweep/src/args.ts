/**
 * Command line of the lease-size sweep: `npm run sweep -- [flags]`.
 *
 * Guarantees: `parseSweepArgs` returns a fully validated SweepArgs (every
 * default filled in, lists sorted ascending without duplicates, the seed
 * always set) or throws a SweepArgsError whose one-line message names the
 * flag and the form it accepts; unknown flags, stray arguments, missing
 * values and flags given twice are refused the same way (but --trace and
 * --trace-field, which add up). Nothing here reads a clock or the
 * environment (the key secret's variable is handed in); the only randomness
 * is the default seed and an access log's default key secret, each drawn by
 * an injectable function. `sweepArgsToArgv` prints flags that parse back to
 * the same SweepArgs, so a run can always be replayed; the key secret is
 * never printed (trace-args.ts).
 */
import { parseArgs } from 'node:util';
import { MAX_TTL_MS, MIN_TTL_MS } from '@tokenlease/coordinator';
import { formatRate, makeRate, parseRate, tokenScale, type Rate } from '@tokenlease/shared';
import { SweepArgsError } from './args-error.js';
import { formatDurationUs, parseDurationUs } from './duration.js';
import type { SweepInput } from './run-sweep.js';
import { LEASE_MODES, tokenleaseSettings, type LeaseMode } from './settings.js';
import { BY_KEY_TOP_DEFAULT, BY_KEY_TOP_MAX } from './by-key.js';
import { ACCESS_LOG_DEFAULTS, formatTraceFields } from './trace-fields.js';
import { readTraceArgs, traceArgv, traceLabel, withByKeyValue, KEY_RULE_DEFAULT, type TraceArgs, type TraceOutside } from './trace-args.js';
import { KEY_SECRET_ENV } from './trace-key-hash.js';
import { formatWorkload, parseWorkload, workloadUsage } from './workload.js';
import { formatWhatIf, parseWhatIf, type WhatIfLimit } from './what-if.js';
import { formatWindow, parseWindow } from './window-args.js';
import { formatConcurrency, parseConcurrency, parseServiceMs, type SweepConcurrency } from './concurrency-args.js';
import type { SweepWindow } from './window-sweep.js';

/**
 * SweepArgs — one validated sweep request: what the sweep runs (SweepInput,
 * whole tokens, ms and µs) and how the command reports it;
 * `targetUtilization` a fraction in (0, 1].
 */
export interface SweepArgs extends SweepInput, TraceArgs {
  /** True when the seed came from `--seed`, false when drawn at random. */
  readonly seedFromFlag: boolean;
  /** Print JSON rows instead of the table. */
  readonly json: boolean;
  /** Where to write the HTML report, or null for none. */
  readonly htmlPath: string | null;
  /** Utilization a recommended setting must reach, fraction in (0, 1]. */
  readonly targetUtilization: number;
  /** Candidate limits to report denials for (what-if.ts); empty: none. */
  readonly whatIf: readonly WhatIfLimit[];
  /** `--help` was given: print USAGE; other flags were not validated. */
  readonly help: boolean;
  /** `--window N/W`: sweep a sliding-window pool of N per W (capacity N, refill N per W, chunk leases, no allowance); null: a bucket. */
  readonly window: SweepWindow | null;
  /** `--concurrency N/D --service S`: sweep a concurrency pool of N slots held at most D, requests served in S on average; null: a bucket. */
  readonly concurrency: SweepConcurrency | null;
}

/** MAX_COMBINATIONS — most tokenlease settings (chunk and rate rows) one sweep runs. */
export const MAX_COMBINATIONS = 1000;

const TOKENS_MAX = 1_000_000_000;
/** AGENTS_MAX — most agents a sweep simulates: `--agents`, and the distinct instances of a `--trace`. */
export const AGENTS_MAX = 100_000;
const LATENCY_US_MAX = 10_000_000;
const DURATION_MS_MAX = 86_400_000;
const SEED_MAX = 2 ** 32 - 1;

/** SWEEP_DEFAULTS — the value of every flag that is not given, as typed on a command line. */
export const SWEEP_DEFAULTS = {
  agents: '20',
  capacity: '500',
  refill: '1000/s',
  workload: 'zipf',
  'lease-sizes': '5,10,25,50,100',
  ttls: '1s,2s,5s',
  allowances: '0',
  'lease-modes': 'chunk,rate',
  refreshes: '250ms,500ms,1s,2s',
  reports: '0,100ms',
  latency: '1ms',
  duration: '60s',
  'target-utilization': '0.97',
} as const;

/** USAGE — the `--help` text. */
export const USAGE = `Usage: tokenlease-sweep [flags]   (in the repository: npm run sweep -- [flags])

Simulates the fleet on one workload for every combination of lease size,
lease TTL, allowance and usage-report interval (chunk leases) and of
refresh interval, TTL and allowance (rate leases), next to two baselines
(central: a round-trip per request to one exact bucket; local: independent
buckets of r/N per agent), and recommends the setting with the fewest
coordinator messages per 1,000 admissions that reaches the target
utilization without ever exceeding the envelope B + A + r*T. Messages are
round-trips (column RT/1k) plus one-way usage reports (rep/1k, counted
apart); the cost (msg/1k) weighs a report like a round-trip.

  --agents N                 agents in the fleet (default ${SWEEP_DEFAULTS.agents}; 1..${AGENTS_MAX})
  --capacity B               pool capacity, tokens (default ${SWEEP_DEFAULTS.capacity})
  --refill RATE              refill rate like 500/s, 2/1000ms, 60/min (default ${SWEEP_DEFAULTS.refill})
  --workload NAME[:k=v,...]  demand shape (default ${SWEEP_DEFAULTS.workload}); see below
  --trace FILE ...           replay a recorded trace instead of a workload: one agent per
                             instance, each arrival at its time with its cost, for the
                             trace's span (replaces --agents, --workload and --duration);
                             several files (--trace a --trace b, or --trace logs/*.jsonl)
                             are merged by time; times are ms from the trace's start or
                             since the epoch, spanning at most 24h; see docs/trace-format.md
  --trace-format F           tokenlease (JSON Lines or CSV, the default), nginx-json or
                             envoy-json (JSON access logs, lines in any order)
  --trace-field NAME=PATH    where an access log's time, instance, cost or key is, once per
                             NAME: a field name, or names joined by . into nested objects
                             (\\. for a dot in a name); time=PATH:s|ms|us gives a numeric
                             time's unit (default s); NAME= maps none (no instance field:
                             every line is the one instance "log").
                             ${fieldDefaults('nginx-json')};
                             ${fieldDefaults('envoy-json')} (ISO 8601)
  --key-rule NAME            an access log's keys go by NAME:<digest>, the pools the
                             middleware's keyed rule NAME charges (default ${KEY_RULE_DEFAULT})
  --key-secret S             the middleware's keySecret (at least 16 bytes) that hashes an
                             access log's keys; default $${KEY_SECRET_ENV}, else a
                             random one (names then mean nothing outside the run); never printed
  --key K                    with --trace: replay only the arrivals of key K (as the trace
                             holds it, a hashed key; an access log's raw key, hashed here):
                             what the limit does to one key's traffic
  --key-pool NAME            an access log's one key by its pool name (NAME:<digest>) instead
  --by-key [N]               with --trace: also run every key through its own exact bucket at
                             B/r and each --what-if limit, and list the N keys denied most
                             (default ${BY_KEY_TOP_DEFAULT}, 1..${BY_KEY_TOP_MAX})
  --window N/W               sweep a strict sliding-window pool instead: at most N in every
                             window of W, like 100/1s or 100/60s (replaces --capacity and
                             --refill; chunk leases, no allowance, no --html or --what-if);
                             the baseline is an exact central per-request sliding-window log
  --concurrency N/D          sweep a concurrency pool instead: at most N requests in flight,
                             each holding its slot at most D, like 50/2s (replaces --capacity
                             and --refill; chunk leases, no allowance, no --html or --what-if);
                             the baseline is one central semaphore every request asks
  --service D                with --concurrency: mean time a request holds its slot
                             (exponential); a workload's load 1 is N requests in flight
  --lease-sizes N,N,...      maxLeaseTokens to try, 1..B (default ${SWEEP_DEFAULTS['lease-sizes']}; with --window or --concurrency those ≤ N)
  --ttls D,D,...             lease TTLs to try, ${formatDurationUs(MIN_TTL_MS * 1000)}..${formatDurationUs(MAX_TTL_MS * 1000)} (default ${SWEEP_DEFAULTS.ttls})
  --allowances N,N,...       extra burst tokens A to try, 0 = strict (default ${SWEEP_DEFAULTS.allowances})
  --lease-modes M,M          chunk and/or rate leases (default ${SWEEP_DEFAULTS['lease-modes']})
  --refreshes D,D,...        rate leases: agents' refresh intervals to try, 1ms..${formatDurationUs(MAX_TTL_MS * 1000)}; bare
                             numbers are ms (default ${SWEEP_DEFAULTS.refreshes}); each runs with every
                             TTL of at least twice it, or else at a TTL of twice it
  --reports D,D,...          chunk leases: agents' usage-report intervals to try, 0 = off,
                             up to ${formatDurationUs(MAX_TTL_MS * 1000)}; bare numbers are ms (default ${SWEEP_DEFAULTS.reports});
                             rate leases ignore it
  --latency D                mean one-way network delay, 0..10s (default ${SWEEP_DEFAULTS.latency})
  --duration D               simulated time per combination, up to 24h (default ${SWEEP_DEFAULTS.duration})
  --seed N                   seed, 0..${SEED_MAX} (default random; always printed)
  --target-utilization F     fraction of the ideal bucket's admissions to reach, (0, 1] (default ${SWEEP_DEFAULTS['target-utilization']})
  --what-if B@RATE,...       also report how many requests an ideal central bucket at each
                             candidate limit would deny on the same arrivals (and at B/r)
  --json                     print the rows as JSON instead of a table
  --html FILE                also write a self-contained HTML report to FILE
  -h, --help                 print this text

Durations D are a number with a unit ms, s, m or h: 500ms, 1.5s, 2m.
At most ${MAX_COMBINATIONS} settings (chunk and rate rows) per run.

Workloads (load = offered demand in tokens, averaged over the run, as a
multiple of the refill rate; parameters as k=v after a colon, e.g.
zipf:s=1.2,load=1.5 or bursty:on=500,off=1500,load=2; defaults shown):
${workloadUsage('  ')}
`;

/** fieldDefaults — a format's default fields as --trace-field would give them, unmapped ones left out. */
function fieldDefaults(format: 'nginx-json' | 'envoy-json'): string {
  const fields = ACCESS_LOG_DEFAULTS.get(format);
  const given = fields === undefined ? [] : formatTraceFields(fields).filter((field) => !field.endsWith('='));
  return `${format}: ${given.join(' ')}`;
}

const OPTIONS = {
  agents: { type: 'string' },
  capacity: { type: 'string' },
  refill: { type: 'string' },
  workload: { type: 'string' },
  'lease-sizes': { type: 'string' },
  ttls: { type: 'string' },
  allowances: { type: 'string' },
  'lease-modes': { type: 'string' },
  refreshes: { type: 'string' },
  reports: { type: 'string' },
  latency: { type: 'string' },
  duration: { type: 'string' },
  seed: { type: 'string' },
  json: { type: 'boolean' },
  html: { type: 'string' },
  'target-utilization': { type: 'string' },
  'what-if': { type: 'string' },
  window: { type: 'string' },
  concurrency: { type: 'string' },
  service: { type: 'string' },
  trace: { type: 'string', multiple: true },
  'trace-format': { type: 'string' },
  'trace-field': { type: 'string', multiple: true },
  'key-rule': { type: 'string' },
  'key-secret': { type: 'string' },
  key: { type: 'string' },
  'key-pool': { type: 'string' },
  'by-key': { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

/** A fresh seed in [0, 2^32 − 1]; the one place the sweep's arguments draw randomness. */
const randomSeed = (): number => Math.floor(Math.random() * 2 ** 32) >>> 0;

function integer(flag: string, text: string, min: number, max: number, what: string): number {
  const value = /^\d+$/.test(text) ? Number(text) : Number.NaN;
  if (!Number.isSafeInteger(value) || value < min || value > max) {
    throw new SweepArgsError(flag, `${JSON.stringify(text)} is not ${what}; use a whole number in [${min}, ${max}]`);
  }
  return value;
}

function durationUs(flag: string, text: string, minUs: number, maxUs: number, wholeMs: boolean): number {
  const us = parseDurationUs(text);
  if (us === null || us < minUs || us > maxUs || (wholeMs && us % 1000 !== 0)) {
    const grain = wholeMs ? 'whole milliseconds' : 'whole microseconds';
    throw new SweepArgsError(
      flag,
      `${JSON.stringify(text)} is not a duration in [${formatDurationUs(minUs)}, ${formatDurationUs(maxUs)}] of ${grain}; use a number with ms, s, m or h, like 500ms, 2s, 1m`,
    );
  }
  return us;
}

function list<T extends number>(flag: string, text: string, item: (one: string) => T): readonly T[] {
  if (text === '' || text.split(',').some((one) => one === '')) {
    throw new SweepArgsError(
      flag,
      `${JSON.stringify(text)} has an empty item; use a comma-separated list without spaces, like ${flag === '--ttls' ? '1s,2s' : '10,100'}`,
    );
  }
  return [...new Set(text.split(',').map(item))].sort((a, b) => a - b);
}

/** Node's parseArgs errors, rewritten to one line naming the flag. */
function rethrowParseError(error: unknown): never {
  const code = (error as { code?: unknown }).code;
  const message = error instanceof Error ? error.message : String(error);
  // Node quotes the option as '--name', '-n' or '-n, --name'; prefer the long name.
  const quoted = /'(-[^']*)'/.exec(message)?.[1] ?? '';
  const flag = /--[\w-]+/.exec(quoted)?.[0] ?? /-\w/.exec(quoted)?.[0] ?? '(arguments)';
  if (code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION') throw new SweepArgsError(flag, 'is not a sweep flag; see --help for the accepted flags');
  if (code === 'ERR_PARSE_ARGS_UNEXPECTED_POSITIONAL') {
    throw new SweepArgsError(
      '(arguments)',
      `unexpected argument ${/'([^']*)'/.exec(message)?.[1] ?? ''}; every value follows its flag, like --agents 20`,
    );
  }
  if (code === 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE') {
    if (/does not take an argument/.test(message)) throw new SweepArgsError(flag, 'takes no value; write it alone, like --json');
    throw new SweepArgsError(flag, `needs a value; write ${flag} VALUE, or ${flag}=VALUE for a value starting with "-" (see --help)`);
  }
  throw error;
}

function parseStrict(argv: readonly string[]) {
  try {
    return parseArgs({ args: withByKeyValue(argv), options: OPTIONS, strict: true, allowPositionals: true, tokens: true });
  } catch (error) {
    return rethrowParseError(error);
  }
}

type Values = ReturnType<typeof parseStrict>['values'];

/** ADDING_UP — the flags that may be given more than once, each adding a value. */
const ADDING_UP: ReadonlySet<string> = new Set(['trace', 'trace-field']);

/**
 * readValues — the flags' values, and the trace's files in command-line
 * order: each --trace's, and the arguments after the first --trace (so a
 * shell glob `--trace logs/*.jsonl` gives them all). Any other stray
 * argument, and a flag given twice, is refused.
 */
function readValues(argv: readonly string[]): { readonly values: Values; readonly tracePaths: string[] } {
  const parsed = parseStrict(argv);
  const seen = new Set<string>();
  const tracePaths: string[] = [];
  for (const token of parsed.tokens) {
    if (token.kind === 'positional') {
      if (tracePaths.length === 0)
        throw new SweepArgsError('(arguments)', `unexpected argument ${token.value}; every value follows its flag, like --agents 20`);
      tracePaths.push(token.value);
    }
    if (token.kind !== 'option') continue;
    if (token.name === 'trace') tracePaths.push(token.value ?? '');
    if (seen.has(token.name) && !ADDING_UP.has(token.name))
      throw new SweepArgsError(`--${token.name}`, 'is given twice; give it once (lists take commas, like --ttls 1s,2s)');
    seen.add(token.name);
  }
  return { values: parsed.values, tracePaths };
}

function readRefill(text: string): Rate {
  try {
    return parseRate(text);
  } catch (error) {
    // parseRate's own message already shows the accepted form when the form is wrong.
    const detail = error instanceof Error ? error.message : String(error);
    const formHint = detail.includes('<tokens>/<period>') ? '' : '; use <tokens>/<period> like 500/s, 2/1000ms or 60/min';
    throw new SweepArgsError('--refill', `${detail}${formHint}`);
  }
}

function readLeaseModes(text: string): LeaseMode[] {
  const names = text.split(',');
  const unknown = names.find((name) => !(LEASE_MODES as readonly string[]).includes(name));
  if (unknown !== undefined) {
    throw new SweepArgsError('--lease-modes', `${JSON.stringify(unknown)} is not a lease mode; use chunk, rate or chunk,rate`);
  }
  return LEASE_MODES.filter((mode) => names.includes(mode));
}

function readFraction(flag: string, text: string): number {
  const value = /^\d*\.?\d+$/.test(text) ? Number(text) : Number.NaN;
  if (!(value > 0 && value <= 1)) {
    throw new SweepArgsError(flag, `${JSON.stringify(text)} is not a fraction in (0, 1]; use a decimal like 0.97 (not a percentage)`);
  }
  return value;
}

/**
 * parseSweepArgs — validates `argv` (the arguments after `--`, without the
 * node and script paths) into SweepArgs. Throws SweepArgsError on any bad
 * flag or value. `drawSeed` supplies the seed when `--seed` is absent
 * (default: Math.random, an integer in [0, 2^32 − 1]); `outside`, the
 * environment's key secret and the source of a random one (trace-args.ts).
 * With `--help` the other values are not validated and the defaults are
 * returned.
 */
export function parseSweepArgs(argv: readonly string[], drawSeed: () => number = randomSeed, outside: TraceOutside = {}): SweepArgs {
  const given = readValues(argv);
  const help = given.values.help === true;
  const v: Values = help ? {} : given.values;
  const text = <K extends keyof typeof SWEEP_DEFAULTS>(key: K): string => v[key] ?? SWEEP_DEFAULTS[key];

  const agents = integer('--agents', text('agents'), 1, AGENTS_MAX, 'a number of agents');
  const window = v.window === undefined ? null : readWindowFlags(v);
  const concurrency = readConcurrencyFlags(v);
  const traceArgs = readTraceArgs(v, help ? [] : given.tracePaths, outside);
  // A concurrency pool's workload load is in-flight demand as a multiple of N: N requests per mean service time is load 1.
  const refill =
    window !== null
      ? makeRate(window.limitTokens, window.windowMs)
      : concurrency !== null
        ? makeRate(concurrency.limit, concurrency.serviceMs)
        : readRefill(text('refill'));
  const limitTokens = window?.limitTokens ?? concurrency?.limit ?? null;
  const capacityTokens = limitTokens ?? integer('--capacity', text('capacity'), 1, TOKENS_MAX, 'a capacity in tokens');
  const workload = parseWorkload(text('workload'));
  const sizesText = limitTokens === null || v['lease-sizes'] !== undefined ? text('lease-sizes') : defaultWindowSizes(limitTokens);
  const leaseSizesTokens = list('--lease-sizes', sizesText, (one) =>
    integer('--lease-sizes', one, 1, capacityTokens, `a lease size in tokens no larger than the capacity ${capacityTokens}`),
  );
  const ttlsMs = list('--ttls', text('ttls'), (one) => durationUs('--ttls', one, MIN_TTL_MS * 1000, MAX_TTL_MS * 1000, true) / 1000);
  const allowancesTokens = list('--allowances', text('allowances'), (one) =>
    integer('--allowances', one, 0, TOKENS_MAX, 'an allowance in tokens'),
  );
  const largestAllowance = allowancesTokens[allowancesTokens.length - 1] ?? 0;
  try {
    tokenScale(capacityTokens + largestAllowance, refill);
  } catch (error) {
    const detail = error instanceof Error ? error.message : String(error);
    throw new SweepArgsError(
      '--capacity',
      `${capacityTokens} plus the largest allowance ${largestAllowance} does not fit the exact arithmetic (${detail}); use a smaller capacity or allowance`,
    );
  }
  const leaseModes = limitTokens === null ? readLeaseModes(text('lease-modes')) : readLeaseModes(v['lease-modes'] ?? 'chunk');
  // Refresh and report intervals longer than any lease can live are of no use: the longest TTL bounds them too.
  const refreshesMs = list(
    '--refreshes',
    text('refreshes'),
    (one) => durationUs('--refreshes', /^\d+$/.test(one) ? `${one}ms` : one, 1000, MAX_TTL_MS * 1000, true) / 1000,
  );
  const reportsMs = list(
    '--reports',
    text('reports'),
    (one) => durationUs('--reports', /^\d+$/.test(one) ? `${one}ms` : one, 0, MAX_TTL_MS * 1000, true) / 1000,
  );
  const combinations = tokenleaseSettings({
    allowancesTokens,
    ttlsMs,
    leaseSizesTokens,
    leaseModes,
    refreshesMs,
    reportsMs,
  }).length;
  if (combinations > MAX_COMBINATIONS) {
    const flag = leaseModes.includes('chunk') ? '--lease-sizes' : '--refreshes';
    throw new SweepArgsError(
      flag,
      `with the other lists (--lease-sizes, --refreshes, --reports, --ttls, --allowances) gives ${combinations} settings; at most ${MAX_COMBINATIONS}, so shorten the lists`,
    );
  }
  const latencyUs = durationUs('--latency', text('latency'), 0, LATENCY_US_MAX, false);
  const durationMs = durationUs('--duration', text('duration'), 1000, DURATION_MS_MAX * 1000, true) / 1000;
  const seedText = v.seed;
  const seed = seedText === undefined ? drawSeed() >>> 0 : integer('--seed', seedText, 0, SEED_MAX, 'a seed');
  const targetUtilization = readFraction('--target-utilization', text('target-utilization'));
  const htmlPath = v.html ?? null;
  if (htmlPath === '') throw new SweepArgsError('--html', 'needs a file name, like --html sweep.html');
  const whatIf = v['what-if'] === undefined ? [] : parseWhatIf(v['what-if']);
  return {
    agents,
    capacityTokens,
    refill,
    workload,
    leaseSizesTokens,
    ttlsMs,
    allowancesTokens,
    leaseModes,
    refreshesMs,
    reportsMs,
    latencyUs,
    durationMs,
    seed,
    seedFromFlag: seedText !== undefined,
    json: v.json === true,
    htmlPath,
    targetUtilization,
    whatIf,
    help,
    ...traceArgs,
    window,
    concurrency,
  };
}

/** readConcurrencyFlags — `--concurrency` and `--service`'s pool, refusing the flags a concurrency pool has no use for; null without them. */
function readConcurrencyFlags(v: Values): SweepConcurrency | null {
  if (v.concurrency === undefined) {
    if (v.service !== undefined) throw new SweepArgsError('--service', 'applies only with --concurrency N/D, whose requests it times');
    return null;
  }
  if (v.window !== undefined) throw new SweepArgsError('--concurrency', 'sweeps a concurrency pool; --window a window pool: give one');
  const pool = parseConcurrency(v.concurrency);
  if (v.service === undefined)
    throw new SweepArgsError('--service', 'is required with --concurrency: the mean time a request holds its slot, like 50ms');
  for (const flag of ['capacity', 'refill', 'html', 'what-if'] as const) {
    if (v[flag] !== undefined)
      throw new SweepArgsError(`--${flag}`, 'does not apply with --concurrency, whose N/D gives the limit and the hold bound');
  }
  if (v.allowances !== undefined && v.allowances !== '0')
    throw new SweepArgsError('--allowances', 'must be 0 with --concurrency: a concurrency pool has no allowance');
  if (v['lease-modes'] !== undefined && v['lease-modes'] !== 'chunk')
    throw new SweepArgsError('--lease-modes', 'must be chunk with --concurrency: slots are leased in chunks only');
  return { ...pool, serviceMs: parseServiceMs(v.service) };
}

/** readWindowFlags — `--window`'s pool, refusing the flags a window pool has no use for. */
function readWindowFlags(v: Values): SweepWindow {
  const window = parseWindow(v.window ?? '');
  for (const flag of ['capacity', 'refill', 'html', 'what-if'] as const) {
    if (v[flag] !== undefined)
      throw new SweepArgsError(`--${flag}`, 'does not apply with --window, whose N/W gives the limit and the window');
  }
  if (v.allowances !== undefined && v.allowances !== '0')
    throw new SweepArgsError('--allowances', 'must be 0 with --window: an allowance would only be a larger limit');
  if (v['lease-modes'] !== undefined && v['lease-modes'] !== 'chunk')
    throw new SweepArgsError('--lease-modes', 'must be chunk with --window: window pools lease chunks only');
  return window;
}

/** defaultWindowSizes — the default lease sizes no larger than the limit N (of a window or concurrency pool), or N alone when all are larger. */
function defaultWindowSizes(limitTokens: number): string {
  const sizes = SWEEP_DEFAULTS['lease-sizes'].split(',').filter((one) => Number(one) <= limitTokens);
  return sizes.length > 0 ? sizes.join(',') : String(limitTokens);
}

/** demandLabel — what the arrivals are, for headers and reports: `trace FILE` (its format, its key), or the workload's canonical text. */
export function demandLabel(args: Pick<SweepArgs, 'tracePaths' | 'traceFormat' | 'traceKey' | 'workload'>): string {
  return args.tracePaths.length === 0 ? formatWorkload(args.workload) : traceLabel(args);
}

/**
 * sweepArgsToArgv — flags that reproduce `args` exactly (every value spelled
 * out, the seed included, `--help` left out): `parseSweepArgs(sweepArgsToArgv(a))`
 * equals `a` apart from `seedFromFlag`, which becomes true, and an access
 * log's key secret, which is never printed (give it in the environment).
 */
export function sweepArgsToArgv(args: SweepArgs): string[] {
  const limits =
    args.window !== null
      ? ['--window', formatWindow(args.window)]
      : args.concurrency !== null
        ? ['--concurrency', formatConcurrency(args.concurrency), '--service', formatDurationUs(args.concurrency.serviceMs * 1000)]
        : ['--capacity', String(args.capacityTokens), '--refill', formatRate(args.refill)];
  const replayed = args.tracePaths.length > 0;
  const argv = [
    ...(replayed ? traceArgv(args) : ['--agents', String(args.agents)]),
    ...limits,
    ...(replayed ? [] : ['--workload', formatWorkload(args.workload)]),
    '--lease-sizes',
    args.leaseSizesTokens.join(','),
    '--ttls',
    args.ttlsMs.map((ms) => formatDurationUs(ms * 1000)).join(','),
    '--allowances',
    args.allowancesTokens.join(','),
    '--lease-modes',
    args.leaseModes.join(','),
    '--refreshes',
    args.refreshesMs.map((ms) => formatDurationUs(ms * 1000)).join(','),
    '--reports',
    args.reportsMs.map((ms) => formatDurationUs(ms * 1000)).join(','),
    '--latency',
    formatDurationUs(args.latencyUs),
    ...(replayed ? [] : ['--duration', formatDurationUs(args.durationMs * 1000)]),
    '--seed',
    String(args.seed),
    '--target-utilization',
    String(args.targetUtilization),
  ];
  if (args.json) argv.push('--json');
  if (args.htmlPath !== null) argv.push(`--html=${args.htmlPath}`);
  if (args.whatIf.length > 0) argv.push('--what-if', formatWhatIf(args.whatIf));
  return argv;
}
