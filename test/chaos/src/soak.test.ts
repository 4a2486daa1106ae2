/**
 * The soak's five-minute form (`npm run soak -- --duration 1h` is the long
 * one): a durable fleet with churn, template pools and faults at random;
 * every pool's envelope holds, every fault is verified, and the
 * coordinators' heap, handles and timers, Redis's keys and NATS's
 * subscriptions stay bounded (soak.ts says how).
 */
import { describe, expect, it } from 'vitest';
import { seedFromEnv } from '@tokenlease/shared/testing';
import { parseDuration, parseSoakArgs, SoakArgsError } from './soak-args.js';
import { runSoak } from './soak.js';

const seed = seedFromEnv();

describe('the soak', () => {
  it('reads its flags, and refuses a bad one with one line naming it', () => {
    expect(parseSoakArgs(['--duration', '1h', '--seed', '7', '--json'])).toEqual({
      durationMs: 3_600_000,
      seed: 7,
      json: true,
      help: false,
    });
    expect(parseDuration('90s')).toBe(90_000);
    expect(parseDuration('5min')).toBe(300_000);
    expect(parseDuration('1.5h')).toBe(5_400_000);
    for (const bad of [['--duration', '1d'], ['--duration', '30s'], ['--duration', '-1h'], ['--seed', 'x'], ['--nope']]) {
      expect(() => parseSoakArgs(bad), bad.join(' ')).toThrow(SoakArgsError);
    }
  });

  it('five minutes of churn, template pools and faults: envelope kept, figures bounded', async () => {
    const lines: string[] = [];
    const report = await runSoak({ durationMs: 300_000, seed, log: (line) => lines.push(line) });
    console.log(`soak (SEED=${seed}): ${JSON.stringify({ ...report, samples: report.samples.length })}`);
    expect(report.problems).toEqual([]);
    expect(report.envelopeViolations).toBe(0);
    expect(report.admitted).toBeGreaterThan(0);
    expect(report.poolsJudged).toBeGreaterThan(5);
    expect(Object.values(report.faults).reduce((a, b) => a + b, 0)).toBeGreaterThan(3);
  }, 420_000);
});
