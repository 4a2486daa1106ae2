import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { MAX_TTL_MS, MIN_TTL_MS } from '@tokenlease/coordinator';
import { inspect } from 'node:util';
import { hashedKeyName } from '@tokenlease/shared/key-hash';
import { thrown } from '@tokenlease/shared/testing';
import { parseSweepArgs, sweepArgsToArgv, USAGE, type SweepArgs } from './args.js';
import { SweepArgsError } from './args-error.js';
import { formatDurationUs, parseDurationUs, DURATION_US_MAX } from './duration.js';
import { formatWorkload, parseWorkload, WORKLOAD_NAMES, type Workload } from './workload.js';

const SEED = 1234;
const parse = (argv: string[]): SweepArgs => parseSweepArgs(argv, () => SEED);

const refusal = (argv: string[]): SweepArgsError => thrown(SweepArgsError, () => parse(argv));

describe('parseSweepArgs defaults', () => {
  it('fills in every default and draws the seed', () => {
    expect(parse([])).toEqual({
      agents: 20,
      capacityTokens: 500,
      refill: { tokens: 1000, periodMs: 1000 },
      workload: { name: 'zipf', load: 1.5, exponent: 1 },
      leaseSizesTokens: [5, 10, 25, 50, 100],
      ttlsMs: [1000, 2000, 5000],
      allowancesTokens: [0],
      leaseModes: ['chunk', 'rate'],
      refreshesMs: [250, 500, 1000, 2000],
      reportsMs: [0, 100],
      latencyUs: 1000,
      durationMs: 60_000,
      seed: SEED,
      seedFromFlag: false,
      json: false,
      htmlPath: null,
      targetUtilization: 0.97,
      whatIf: [],
      help: false,
      tracePaths: [],
      traceFormat: 'tokenlease',
      traceFields: null,
      keyHash: null,
      traceKey: null,
      byKeyTop: null,
      window: null,
      concurrency: null,
    });
  });

  it('draws a 32-bit seed when none is given', () => {
    const seed = parseSweepArgs([]).seed;
    expect(Number.isSafeInteger(seed) && seed >= 0 && seed < 2 ** 32).toBe(true);
  });
});

describe('parseSweepArgs accepts every flag', () => {
  const cases: [string[], Partial<SweepArgs>][] = [
    [['--agents', '1'], { agents: 1 }],
    [['--agents=100000'], { agents: 100_000 }],
    [['--capacity', '1000'], { capacityTokens: 1000 }],
    [['--refill', '500/s'], { refill: { tokens: 500, periodMs: 1000 } }],
    [['--refill', '60/min'], { refill: { tokens: 60, periodMs: 60_000 } }],
    [['--refill', '2/1000ms'], { refill: { tokens: 2, periodMs: 1000 } }],
    [['--workload', 'steady'], { workload: { name: 'steady', load: 1.5 } }],
    [['--workload', 'zipf:s=1.2,load=1.5'], { workload: { name: 'zipf', load: 1.5, exponent: 1.2 } }],
    [['--workload', 'bursty:on=500,off=1500,load=2'], { workload: { name: 'bursty', load: 2, onMs: 500, offMs: 1500 } }],
    [['--lease-sizes', '1,10,100'], { leaseSizesTokens: [1, 10, 100] }],
    [['--lease-sizes', '100,10,10,1'], { leaseSizesTokens: [1, 10, 100] }],
    [['--lease-sizes', '500'], { leaseSizesTokens: [500] }],
    [['--ttls', '1s,5s'], { ttlsMs: [1000, 5000] }],
    [['--ttls', '2m,10ms,1.5s'], { ttlsMs: [10, 1500, 120_000] }],
    [['--ttls', '1h'], { ttlsMs: [3_600_000] }],
    [['--allowances', '0,2000'], { allowancesTokens: [0, 2000] }],
    [['--lease-modes', 'chunk'], { leaseModes: ['chunk'] }],
    [['--lease-modes', 'rate'], { leaseModes: ['rate'] }],
    [['--lease-modes', 'rate,chunk,rate'], { leaseModes: ['chunk', 'rate'] }],
    [['--refreshes', '250,500,1000,2000'], { refreshesMs: [250, 500, 1000, 2000] }],
    [['--refreshes', '2s,100ms,1.5s'], { refreshesMs: [100, 1500, 2000] }],
    [['--refreshes', '1ms,1h'], { refreshesMs: [1, 3_600_000] }],
    [['--reports', '0'], { reportsMs: [0] }],
    [['--reports', '0,100ms'], { reportsMs: [0, 100] }],
    [['--reports', '1s,250,0ms,250ms'], { reportsMs: [0, 250, 1000] }],
    [['--reports', '1ms,1h'], { reportsMs: [1, 3_600_000] }],
    [['--latency', '0ms'], { latencyUs: 0 }],
    [['--latency', '0.25ms'], { latencyUs: 250 }],
    [['--latency', '10s'], { latencyUs: 10_000_000 }],
    [['--duration', '30s'], { durationMs: 30_000 }],
    [['--duration', '2m'], { durationMs: 120_000 }],
    [['--seed', '0'], { seed: 0, seedFromFlag: true }],
    [['--seed', '4294967295'], { seed: 4_294_967_295, seedFromFlag: true }],
    [['--json'], { json: true }],
    [['--html', 'out/sweep.html'], { htmlPath: 'out/sweep.html' }],
    [['--html=-dash.html'], { htmlPath: '-dash.html' }],
    [['--target-utilization', '0.97'], { targetUtilization: 0.97 }],
    [['--target-utilization', '1'], { targetUtilization: 1 }],
    [['--target-utilization', '.5'], { targetUtilization: 0.5 }],
    [['--help'], { help: true }],
    [['-h'], { help: true }],
  ];
  it.each(cases)('%j', (argv, expected) => {
    expect(parse(argv)).toMatchObject(expected);
  });

  it('does not validate the other flags under --help', () => {
    expect(parse(['--help', '--agents', 'many']).help).toBe(true);
  });
});

describe('parseSweepArgs refuses bad values with one line naming the flag and the form', () => {
  const cases: [string[], string, string][] = [
    [['--agents', '0'], '--agents', 'whole number in [1, 100000]'],
    [['--agents', '2.5'], '--agents', 'whole number'],
    [['--agents', 'many'], '--agents', 'whole number'],
    [['--agents', '100001'], '--agents', '[1, 100000]'],
    [['--agents'], '--agents', '--agents VALUE'],
    [['--agents', '-3'], '--agents', '--agents=VALUE'],
    [['--capacity', '0'], '--capacity', 'whole number'],
    [['--capacity', '1e3'], '--capacity', 'whole number'],
    [['--refill', 'fast'], '--refill', '<tokens>/<period>'],
    [['--refill', '0/s'], '--refill', '<tokens>/<period>'],
    [['--refill', '500/fortnight'], '--refill', '<tokens>/<period>'],
    [['--workload', 'spiky'], '--workload', 'steady | bursty | diurnal | zipf | churn | weighted'],
    [['--workload', 'zipf:q=1'], '--workload', 's=, load='],
    [['--workload', 'zipf:s'], '--workload', 'zipf:k=v'],
    [['--workload', 'zipf:'], '--workload', 'zipf:k=v'],
    [['--workload', 'zipf:s=1,s=2'], '--workload', 'give it once'],
    [['--workload', 'zipf:s=-1'], '--workload', 'decimal number'],
    [['--workload', 'zipf:s=11'], '--workload', '[0, 10]'],
    [['--workload', 'steady:load=0'], '--workload', '(0, 1000]'],
    [['--workload', 'bursty:on=0'], '--workload', 'duration like 500ms'],
    [['--workload', 'bursty:on=0.5ms'], '--workload', 'whole ms'],
    [['--workload', 'diurnal:amp=1.5'], '--workload', '[0, 1]'],
    [['--workload', 'churn:crash=2'], '--workload', '[0, 1]'],
    [['--workload', 'weighted:heavy=1.5'], '--workload', '[0, 1]'],
    [['--workload', 'weighted:ratio=2.5'], '--workload', 'a whole number in [1, 1000000]'],
    [['--workload', 'weighted:ratio=0'], '--workload', 'a whole number in [1, 1000000]'],
    [['--lease-sizes', '0'], '--lease-sizes', 'whole number in [1, 500]'],
    [['--lease-sizes', '501'], '--lease-sizes', 'no larger than the capacity 500'],
    [['--lease-sizes', '10,,20'], '--lease-sizes', 'comma-separated list'],
    [['--lease-sizes', '10, 20'], '--lease-sizes', 'whole number'],
    [['--lease-sizes', ''], '--lease-sizes', 'comma-separated list'],
    [['--ttls', '5'], '--ttls', 'ms, s, m or h'],
    [['--ttls', '5ms'], '--ttls', '[10ms, 1h]'],
    [['--ttls', '2h'], '--ttls', '[10ms, 1h]'],
    [['--ttls', '1.0005s'], '--ttls', 'whole milliseconds'],
    [['--ttls', '-1s'], '--ttls', '--ttls=VALUE'],
    [['--lease-modes', 'trickle'], '--lease-modes', 'chunk, rate or chunk,rate'],
    [['--lease-modes', 'chunk,'], '--lease-modes', 'chunk, rate or chunk,rate'],
    [['--refreshes', '0'], '--refreshes', '[1ms, 1h]'],
    [['--refreshes', '2h'], '--refreshes', '[1ms, 1h]'],
    [['--refreshes', '0.5ms'], '--refreshes', 'whole milliseconds'],
    [['--refreshes', '1s,,2s'], '--refreshes', 'comma-separated list'],
    [['--reports', '2h'], '--reports', '[0ms, 1h]'],
    [['--reports', '0.5ms'], '--reports', 'whole milliseconds'],
    [['--reports', 'off'], '--reports', 'ms, s, m or h'],
    [['--reports', '0,,100'], '--reports', 'comma-separated list'],
    [
      [
        '--lease-sizes',
        Array.from({ length: 100 }, (_, i) => i + 1).join(','),
        '--ttls',
        '1s,2s,5s',
        '--reports',
        '0,10,100,1000',
        '--lease-modes',
        'chunk',
      ],
      '--lease-sizes',
      'gives 1200 settings; at most 1000',
    ],
    [['--allowances', '-5'], '--allowances', '--allowances=VALUE'],
    [['--allowances=-5'], '--allowances', 'whole number in [0,'],
    [['--latency', '1'], '--latency', 'ms, s, m or h'],
    [['--latency', '0.0001ms'], '--latency', 'whole microseconds'],
    [['--latency', '11s'], '--latency', '[0ms, 10s]'],
    [['--duration', '0s'], '--duration', 'duration in [1ms, 24h]'],
    [['--duration', '25h'], '--duration', '[1ms, 24h]'],
    [['--seed', 'abc'], '--seed', 'whole number in [0, 4294967295]'],
    [['--seed', '4294967296'], '--seed', '[0, 4294967295]'],
    [['--target-utilization', '97'], '--target-utilization', 'fraction in (0, 1]'],
    [['--target-utilization', '0'], '--target-utilization', 'fraction in (0, 1]'],
    [['--target-utilization', '97%'], '--target-utilization', 'decimal like 0.97'],
    [['--html='], '--html', '--html sweep.html'],
    [['--json=yes'], '--json', 'takes no value'],
    [['--help=1'], '--help', 'takes no value'],
    [['--bogus', '1'], '--bogus', 'see --help'],
    [['-x'], '-x', 'see --help'],
    [['sweep'], '(arguments)', 'every value follows its flag'],
    [['--agents', '3', '--agents', '4'], '--agents', 'give it once'],
    [
      [
        '--lease-sizes',
        Array.from({ length: 40 }, (_, i) => i + 1).join(','),
        '--ttls',
        '1s,2s,3s,4s,5s,6s,7s,8s,9s,10s',
        '--allowances',
        '0,1,2',
      ],
      '--lease-sizes',
      'at most 1000',
    ],
    [
      [
        '--lease-modes',
        'rate',
        '--refreshes',
        Array.from({ length: 400 }, (_, i) => i + 1).join(','),
        '--ttls',
        '1s,2s,5s',
        '--allowances',
        '0,1',
      ],
      '--refreshes',
      'gives 2400 settings; at most 1000',
    ],
  ];
  it.each(cases)('%j', (argv, flag, form) => {
    const error = refusal(argv);
    expect(error).toBeInstanceOf(Error);
    expect(error.flag).toBe(flag);
    expect(error.message.startsWith(`${flag}: `)).toBe(true);
    expect(error.message).toContain(form);
    expect(error.message).not.toContain('\n');
  });
});

describe('--window N/W', () => {
  it('sweeps a window pool of N per W: capacity N, refill N per W, chunk leases without allowance, the lease sizes up to N', () => {
    expect(parse(['--window', '100/1s'])).toMatchObject({
      window: { limitTokens: 100, windowMs: 1000 },
      capacityTokens: 100,
      refill: { tokens: 100, periodMs: 1000 },
      leaseModes: ['chunk'],
      allowancesTokens: [0],
      leaseSizesTokens: [5, 10, 25, 50, 100],
    });
    expect(parse(['--window', '20/60s']).leaseSizesTokens).toEqual([5, 10]);
    expect(parse(['--window', '3/60s']).leaseSizesTokens).toEqual([3]);
    expect(parse(['--window', '30/60s', '--lease-sizes', '30']).leaseSizesTokens).toEqual([30]);
  });

  it.each([
    ['100/1s', 100, 1000],
    ['100/60s', 100, 60_000],
    ['5000/1m', 5000, 60_000],
    ['100/min', 100, 60_000],
    ['100/s', 100, 1000],
    ['1/250ms', 1, 250],
    ['100/1.5s', 100, 1500],
  ])('reads %s as %i per %i ms', (text, limitTokens, windowMs) => {
    expect(parse(['--window', text]).window).toEqual({ limitTokens, windowMs });
  });

  it.each([
    [['--window', '100'], '--window', 'like 100/1s'],
    [['--window', '100/'], '--window', 'like 100/1s'],
    [['--window', '/1s'], '--window', 'like 100/1s'],
    [['--window', '0/1s'], '--window', 'a limit in tokens'],
    [['--window=-1/1s'], '--window', 'like 100/1s'],
    [['--window', '1e3/1s'], '--window', 'like 100/1s'],
    [['--window', '100/0s'], '--window', 'whole milliseconds'],
    [['--window', '100/1.5ms'], '--window', 'whole milliseconds'],
    [['--window', '100/25h'], '--window', 'whole milliseconds'],
    [['--window', '100/day'], '--window', 'whole milliseconds'],
    [['--window', '100/__proto__'], '--window', 'whole milliseconds'],
    [['--window', '100/1s', '--capacity', '100'], '--capacity', 'does not apply with --window'],
    [['--window', '100/1s', '--refill', '100/s'], '--refill', 'does not apply with --window'],
    [['--window', '100/1s', '--html', 'x.html'], '--html', 'does not apply with --window'],
    [['--window', '100/1s', '--what-if', '100@100/s'], '--what-if', 'does not apply with --window'],
    [['--window', '100/1s', '--allowances', '5'], '--allowances', 'must be 0'],
    [['--window', '100/1s', '--lease-modes', 'chunk,rate'], '--lease-modes', 'must be chunk'],
    [['--window', '100/1s', '--lease-sizes', '101'], '--lease-sizes', 'no larger than'],
    [['--window', '100/1s', '--window', '50/1s'], '--window', 'is given twice'],
  ])('refuses %j naming %s', (argv, flag, form) => {
    const error = refusal(argv);
    expect(error.flag).toBe(flag);
    expect(error.message.startsWith(`${flag}: `)).toBe(true);
    expect(error.message).toContain(form);
    expect(error.message).not.toContain('\n');
  });
});

describe('--concurrency N/D --service S', () => {
  it('sweeps a concurrency pool: capacity N, load 1 as N requests per mean service time, chunk leases, sizes up to N', () => {
    expect(parse(['--concurrency', '20/2s', '--service', '100ms'])).toMatchObject({
      concurrency: { limit: 20, maxHoldMs: 2000, serviceMs: 100 },
      capacityTokens: 20,
      refill: { tokens: 20, periodMs: 100 },
      leaseModes: ['chunk'],
      allowancesTokens: [0],
      leaseSizesTokens: [5, 10],
      window: null,
    });
    expect(parse(['--concurrency', '3/500ms', '--service', '1.5s']).concurrency).toEqual({ limit: 3, maxHoldMs: 500, serviceMs: 1500 });
  });

  it('prints flags that parse back to the same sweep', () => {
    const args = parse(['--concurrency', '8/1.5s', '--service', '40ms', '--lease-sizes', '2,8']);
    expect(sweepArgsToArgv(args)).toEqual(expect.arrayContaining(['--concurrency', '8/1.5s', '--service', '40ms']));
    expect(parseSweepArgs(sweepArgsToArgv(args), () => SEED)).toEqual({ ...args, seedFromFlag: true });
  });

  it.each([
    [['--concurrency', '20/2s'], '--service', 'is required with --concurrency'],
    [['--service', '50ms'], '--service', 'applies only with --concurrency'],
    [['--concurrency', '20'], '--concurrency', 'like 50/2s'],
    [['--concurrency', '0/2s', '--service', '1ms'], '--concurrency', 'a number of slots'],
    [['--concurrency', '1000001/2s', '--service', '1ms'], '--concurrency', 'a number of slots'],
    [['--concurrency', '20/0s', '--service', '1ms'], '--concurrency', 'whole milliseconds'],
    [['--concurrency', '20/2h', '--service', '1ms'], '--concurrency', 'whole milliseconds'],
    [['--concurrency', '20/2s', '--service', '0.5ms'], '--service', 'whole milliseconds'],
    [['--concurrency', '20/2s', '--service', 'fast'], '--service', 'whole milliseconds'],
    [['--concurrency', '20/2s', '--service', '1ms', '--window', '20/1s'], '--concurrency', 'give one'],
    [['--concurrency', '20/2s', '--service', '1ms', '--capacity', '20'], '--capacity', 'does not apply with --concurrency'],
    [['--concurrency', '20/2s', '--service', '1ms', '--html', 'x.html'], '--html', 'does not apply with --concurrency'],
    [['--concurrency', '20/2s', '--service', '1ms', '--allowances', '2'], '--allowances', 'must be 0'],
    [['--concurrency', '20/2s', '--service', '1ms', '--lease-modes', 'rate'], '--lease-modes', 'must be chunk'],
    [['--concurrency', '20/2s', '--service', '1ms', '--lease-sizes', '21'], '--lease-sizes', 'no larger than'],
  ])('refuses %j naming %s', (argv, flag, form) => {
    const error = refusal(argv);
    expect(error.flag).toBe(flag);
    expect(error.message.startsWith(`${flag}: `)).toBe(true);
    expect(error.message).toContain(form);
    expect(error.message).not.toContain('\n');
  });
});

describe('--trace FILE', () => {
  it('takes the file to replay and leaves the fleet, demand and duration to it', () => {
    expect(parse(['--trace', 'traffic.jsonl', '--capacity', '500']).tracePaths).toEqual(['traffic.jsonl']);
    expect(parse([]).tracePaths).toEqual([]);
  });

  it('takes several files, as --trace each or listed after one (a shell glob), in command-line order', () => {
    expect(parse(['--trace', 'a.jsonl', '--trace=b.csv', '--json']).tracePaths).toEqual(['a.jsonl', 'b.csv']);
    expect(parse(['--trace', 'logs/1.jsonl', 'logs/2.jsonl', 'logs/3.jsonl', '--seed', '1', '--trace', 'z.jsonl']).tracePaths).toEqual([
      'logs/1.jsonl',
      'logs/2.jsonl',
      'logs/3.jsonl',
      'z.jsonl',
    ]);
  });

  it('takes one key of the trace to replay alone', () => {
    expect(parse(['--trace', 'traffic.jsonl', '--key', '9f2c1a']).traceKey).toBe('9f2c1a');
    expect(parse(['--trace', 'traffic.jsonl']).traceKey).toBeNull();
  });

  it('takes --by-key with or without N', () => {
    expect(parse(['--trace', 't.jsonl', '--by-key']).byKeyTop).toBe(20);
    expect(parse(['--trace', 't.jsonl', '--by-key', '--json']).byKeyTop).toBe(20);
    expect(parse(['--trace', 't.jsonl', '--by-key', '5']).byKeyTop).toBe(5);
    expect(parse(['--trace', 't.jsonl', '--by-key=1000']).byKeyTop).toBe(1000);
  });

  it.each([
    [['--trace', 'x.jsonl', '--agents', '3'], '--agents', 'does not apply with --trace'],
    [['--trace', 'x.jsonl', '--workload', 'steady'], '--workload', 'does not apply with --trace'],
    [['--trace', 'x.jsonl', '--duration', '10s'], '--duration', 'does not apply with --trace'],
    [['--trace', 'x.jsonl', '--window', '100/1s'], '--window', 'does not take --trace yet'],
    [['--trace='], '--trace', 'needs a file name'],
    [['--trace'], '--trace', 'needs a value'],
    [['--trace', 'a', '--trace', 'a'], '--trace', 'names "a" twice'],
    [['stray.jsonl', '--trace', 'a'], '(arguments)', 'unexpected argument stray.jsonl'],
    [['--key', '9f2c1a'], '--key', 'give the trace too'],
    [['--by-key'], '--by-key', 'give --trace FILE too'],
    [['--trace-format', 'nginx-json'], '--trace-format', 'give --trace FILE too'],
    [['--trace', 'x.jsonl', '--key='], '--key', 'must be a key of 1 to 256 characters'],
    [['--trace', 'x.jsonl', '--key', 'k'.repeat(257)], '--key', 'must be a key of 1 to 256 characters'],
    [['--trace', 'x.jsonl', '--by-key', '0'], '--by-key', 'in [1, 1000]'],
    [['--trace', 'x.jsonl', '--by-key=1001'], '--by-key', 'in [1, 1000]'],
    [['--trace', 'x.jsonl', '--by-key', '2', '--by-key'], '--by-key', 'is given twice'],
    [['--trace', 'x.jsonl', '--trace-format', 'apache'], '--trace-format', 'use tokenlease, nginx-json, envoy-json'],
    [['--trace', 'x.jsonl', '--trace-field', 'key=k'], '--trace-field', 'applies to access logs only'],
    [['--trace', 'x.jsonl', '--key-secret', 'x'.repeat(16)], '--key-secret', 'applies to access logs only'],
  ])('refuses %j naming %s', (argv, flag, form) => {
    const error = refusal(argv);
    expect(error.flag).toBe(flag);
    expect(error.message).toContain(form);
    expect(error.message).not.toContain('\n');
  });
});

describe('access logs: --trace-format, --trace-field, --key-rule, --key-secret', () => {
  const SECRET = 'a-service-key-secret-0123';
  const RAW = 'sk_live_RAW_KEY_4242';
  const access = (argv: string[], keySecretEnv?: string): SweepArgs =>
    parseSweepArgs(['--trace', 'access.log', '--trace-format', 'nginx-json', ...argv], () => SEED, {
      keySecretEnv,
      drawKeySecret: () => new TextEncoder().encode('drawn-for-this-run-only'),
    });

  it("takes the format's fields, overridden one by one", () => {
    expect(access([]).traceFields).toEqual({
      time: { text: 'msec', names: ['msec'] },
      timeUnit: 's',
      instance: { text: 'hostname', names: ['hostname'] },
      cost: null,
      key: null,
    });
    expect(
      access(['--trace-field', 'key=headers.x-api-key', '--trace-field=time=ts:ms', '--trace-field', 'instance=']).traceFields,
    ).toEqual({
      time: { text: 'ts', names: ['ts'] },
      timeUnit: 'ms',
      instance: null,
      cost: null,
      key: { text: 'headers.x-api-key', names: ['headers', 'x-api-key'] },
    });
  });

  it('hashes --key at once, under the secret from the flag, the environment or a random one, and keeps no raw key or secret', () => {
    const fromEnv = access(['--key', RAW], SECRET);
    expect(fromEnv.keyHash).toMatchObject({ rule: 'key', secretFrom: 'environment' });
    expect(fromEnv.traceKey).toBe(hashedKeyName(new TextEncoder().encode(SECRET), 'key', RAW));
    const fromFlag = access(['--key', RAW, '--key-secret', SECRET, '--key-rule', 'tenant'], 'another-secret-in-the-environment');
    expect(fromFlag.keyHash).toMatchObject({ rule: 'tenant', secretFrom: 'flag' });
    expect(fromFlag.traceKey).toBe(hashedKeyName(new TextEncoder().encode(SECRET), 'tenant', RAW));
    expect(access(['--key', RAW]).keyHash?.secretFrom).toBe('random');
    for (const args of [fromEnv, fromFlag]) {
      const printed = `${JSON.stringify(args)} ${sweepArgsToArgv(args).join(' ')} ${inspect(args, { depth: null })}`;
      expect(printed).not.toContain(RAW);
      expect(printed).not.toContain(SECRET);
    }
  });

  it('takes a key by its pool name with --key-pool', () => {
    const name = hashedKeyName(new TextEncoder().encode(SECRET), 'key', RAW);
    expect(access(['--key-pool', name], SECRET).traceKey).toBe(name);
  });

  it.each([
    [['--trace-field', 'user=x'], '--trace-field', 'NAME one of time, instance, cost, key'],
    [['--trace-field', 'key'], '--trace-field', 'is not NAME=PATH'],
    [['--trace-field', 'key=a', '--trace-field', 'key=b'], '--trace-field', 'maps key twice'],
    [['--trace-field', 'time='], '--trace-field', 'every line needs a time'],
    [['--trace-field', 'key=a..b'], '--trace-field', 'has an empty name'],
    [['--trace-field', 'key=a\\'], '--trace-field', 'lone \\'],
    [['--key-rule', 'a.b'], '--key-rule', "may not contain '.'"],
    [['--key-rule='], '--key-rule', 'must not be empty'],
    [['--key-secret', 'short'], '--key-secret', 'at least 16 bytes'],
    [['--key', RAW, '--key-pool', 'key:x'], '--key-pool', 'give one'],
    [['--key-pool', 'key:tooShort'], '--key-pool', 'key: and 22 base64url characters'],
    [['--key='], '--key', 'needs the raw key'],
  ])('refuses %j naming %s', (argv, flag, form) => {
    const error = thrown(SweepArgsError, () => access(argv));
    expect(error.flag).toBe(flag);
    expect(error.message).toContain(form);
    expect(error.message).not.toContain(RAW);
  });

  it('refuses a short secret in the environment without showing it', () => {
    const error = thrown(SweepArgsError, () => access([], 'short-secret'));
    expect(error.flag).toBe('TOKENLEASE_KEY_SECRET');
    expect(error.message).not.toContain('short-secret');
  });
});

describe('sweepArgsToArgv', () => {
  const cases: [string[]][] = [
    [[]],
    [['--workload', 'bursty:on=0.5s,off=1500,load=2', '--latency', '0.2ms', '--json', '--html', 'a b.html']],
    [['--refill', '7/1500ms', '--ttls', '10ms,1.5s,2m', '--allowances', '0,2000', '--duration', '1.5s']],
    [['--workload', 'churn:up=2s,down=0,crash=0.5', '--target-utilization', '0.9', '--seed', '9']],
    [['--lease-modes', 'rate', '--refreshes', '100,1.5s,1m']],
    [['--reports', '0,100,1.5s', '--allowances', '0,500']],
    [['--reports', '250ms']],
    [['--window', '100/1s', '--lease-sizes', '1,100', '--json']],
    [['--window', '7/1500ms', '--allowances', '0', '--lease-modes', 'chunk']],
    [['--window', '100/min']],
    [['--trace', 'traffic.jsonl', '--capacity', '500', '--json']],
    [['--trace=a b,c.csv', '--what-if', '100@100/s']],
    [['--trace', 'traffic.jsonl', '--key', 'a key,with=signs']],
    [['--trace', 'a.jsonl', 'b c.csv', '--trace=-d.jsonl', '--by-key']],
    [['--trace', 'x.log', '--trace-format', 'envoy-json', '--by-key', '7', '--key', 'raw key']],
    [['--trace', 'x.log', '--trace-format', 'nginx-json', '--trace-field', 'key=a\\.b.c-d', '--trace-field', 'time=t:x:ms']],
    [
      [
        '--trace',
        'x.log',
        '--trace-format',
        'nginx-json',
        '--trace-field',
        'time=a\\:ms',
        '--trace-field',
        'instance=',
        '--key-rule=tenant',
      ],
    ],
  ];
  it.each(cases)('replays %j exactly', (argv) => {
    const outside = { keySecretEnv: 'the-service-key-secret' };
    const args = parseSweepArgs(argv, () => SEED, outside);
    expect(parseSweepArgs(sweepArgsToArgv(args), () => SEED, outside)).toEqual({ ...args, seedFromFlag: true });
  });
});

describe('workloads', () => {
  const cases: [string, Workload][] = [
    ['steady', { name: 'steady', load: 1.5 }],
    ['steady:load=3', { name: 'steady', load: 3 }],
    ['bursty', { name: 'bursty', load: 1.5, onMs: 500, offMs: 1500 }],
    ['bursty:off=2s,on=250ms', { name: 'bursty', load: 1.5, onMs: 250, offMs: 2000 }],
    ['diurnal', { name: 'diurnal', load: 1.5, periodMs: 30_000, amplitude: 0.8 }],
    ['diurnal:period=1m,amp=0', { name: 'diurnal', load: 1.5, periodMs: 60_000, amplitude: 0 }],
    ['zipf', { name: 'zipf', load: 1.5, exponent: 1 }],
    ['churn', { name: 'churn', load: 1.5, upMs: 10_000, downMs: 5000, crashFraction: 0.25 }],
    ['weighted', { name: 'weighted', load: 1.5, heavyFraction: 0.2, heavyRatio: 10 }],
    ['weighted:heavy=0,ratio=1,load=0.5', { name: 'weighted', load: 0.5, heavyFraction: 0, heavyRatio: 1 }],
  ];
  it.each(cases)('%s', (text, expected) => {
    expect(parseWorkload(text)).toEqual(expected);
    expect(parseWorkload(formatWorkload(expected))).toEqual(expected);
  });

  it('every workload and parameter appears in the usage text with its default', () => {
    for (const name of WORKLOAD_NAMES) {
      expect(USAGE).toContain(`  ${name} `);
      for (const pair of formatWorkload(parseWorkload(name)).split(':')[1]?.split(',') ?? []) expect(USAGE).toContain(pair);
    }
  });

  it('takes the TTLs the coordinator accepts, no more and no fewer', () => {
    expect(parse(['--ttls', `${MIN_TTL_MS}ms,${MAX_TTL_MS}ms`]).ttlsMs).toEqual([MIN_TTL_MS, MAX_TTL_MS]);
    expect(refusal(['--ttls', `${MIN_TTL_MS - 1}ms`]).flag).toBe('--ttls');
    expect(refusal(['--ttls', `${MAX_TTL_MS + 1}ms`]).flag).toBe('--ttls');
  });

  it('every flag appears in the usage text', () => {
    for (const flag of [
      '--agents',
      '--capacity',
      '--refill',
      '--workload',
      '--lease-sizes',
      '--ttls',
      '--allowances',
      '--lease-modes',
      '--refreshes',
      '--reports',
      '--latency',
      '--duration',
      '--seed',
      '--json',
      '--html',
      '--target-utilization',
      '--window',
      '--help',
    ]) {
      expect(USAGE).toContain(flag);
    }
  });
});

describe('durations', () => {
  const cases: [string, number | null][] = [
    ['0ms', 0],
    ['1ms', 1000],
    ['0.2ms', 200],
    ['0.001ms', 1],
    ['1.5s', 1_500_000],
    ['2m', 120_000_000],
    ['24h', 86_400_000_000],
    ['0.0001ms', null],
    ['25h', null],
    ['1', null],
    ['s', null],
    ['-1s', null],
    ['1 s', null],
    ['1e3ms', null],
    ['.5s', null],
    ['1S', null],
  ];
  it.each(cases)('parseDurationUs(%j) = %j', (text, us) => {
    expect(parseDurationUs(text)).toBe(us);
  });

  it('formatDurationUs reads back exactly (property)', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: DURATION_US_MAX }), (us) => {
        expect(parseDurationUs(formatDurationUs(us))).toBe(us);
      }),
    );
  });
});
