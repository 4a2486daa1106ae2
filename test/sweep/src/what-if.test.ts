/**
 * What if: denials of candidate limits, worked by hand on small arrival
 * lists, and on a sweep's own arrivals against the ideal; the flag parses,
 * refuses bad limits with one line, and replays.
 */
import { describe, expect, it } from 'vitest';
import { makeRate } from '@tokenlease/shared';
import type { Arrival } from '@tokenlease/sim';
import { SweepArgsError } from './args-error.js';
import { parseSweepArgs, sweepArgsToArgv } from './args.js';
import { idealAdmitted } from './ideal.js';
import { arrivalsOf, type SweepInput } from './run-sweep.js';
import { renderHtml } from './html.js';
import { recommend } from './recommend.js';
import { formatWhatIf, parseWhatIf, renderWhatIf, whatIf, WHAT_IF_COLUMNS } from './what-if.js';

const S = 1_000_000;
const req = (tUs: number, cost = 1, waitMs = 0): Arrival => ({ tUs, agent: 0, incarnation: 0, cost, waitMs });

describe('whatIf', () => {
  // Ten tries of cost 1 at t = 0, then one every 100 ms for a second.
  const arrivals = [...Array.from({ length: 10 }, () => req(0)), ...Array.from({ length: 10 }, (_, i) => req((i + 1) * (S / 10)))];

  it.each<[string, number, string, number]>([
    // name, B, r, denied requests
    ['a limit above the demand denies nothing', 10, '10/s', 0],
    ['a bucket of 5 denies half the burst; 10/s serves the rest', 5, '10/s', 5],
    ['a bucket of 5 at 5/s also denies every other later try', 5, '5/s', 10],
    ['a bucket of 1 at 1/s admits the first and the one after a second', 1, '1/s', 18],
  ])('%s', (_name, capacityTokens, rate, denied) => {
    const [row] = whatIf(arrivals, parseWhatIf(`${capacityTokens}@${rate}`));
    expect(row).toMatchObject({
      capacityTokens,
      refill: rate,
      offeredCount: 20,
      offeredTokens: 20,
      deniedCount: denied,
      deniedTokens: denied,
    });
    expect(row?.deniedPer1k).toBe((1000 * denied) / 20);
  });

  it('counts tokens and requests apart, lets takes wait, and denies a cost above B', () => {
    const [row] = whatIf([req(0, 3), req(0, 2, 600), req(0, 9)], [{ capacityTokens: 5, refill: makeRate(5, 1000) }]);
    // 3 at once; the take of 2 waits for 2 tokens (400 ms) within its 600 ms; 9 never fits.
    expect(row).toMatchObject({ deniedCount: 1, deniedTokens: 9, offeredTokens: 14 });
  });

  it('on a sweep’s arrivals of cost 1, denies exactly what the ideal cannot admit (tries only)', () => {
    const input: SweepInput = {
      agents: 5,
      capacityTokens: 50,
      refill: makeRate(100, 1000),
      workload: { name: 'zipf', load: 2, exponent: 1, takeShare: 0 },
      leaseSizesTokens: [5],
      ttlsMs: [1000],
      allowancesTokens: [0],
      leaseModes: ['chunk'],
      refreshesMs: [1000],
      reportsMs: [0],
      latencyUs: 1000,
      durationMs: 5000,
      seed: 7,
    };
    const { arrivals: all } = arrivalsOf(input);
    expect(all.every((a) => a.cost === 1 && a.waitMs === 0)).toBe(true);
    const [same, tighter, looser] = whatIf(all, parseWhatIf('50@100/s,25@50/s,500@1000/s'));
    expect(same?.offeredCount).toBe(all.length);
    expect(same?.deniedTokens).toBe(all.length - idealAdmitted(all, 50, makeRate(100, 1000)));
    expect(tighter?.deniedCount).toBeGreaterThan(same?.deniedCount ?? Infinity);
    // With takes in the mix it still denies at least what the ideal cannot admit.
    const mixed = arrivalsOf({ ...input, workload: { name: 'zipf', load: 2, exponent: 1 } }).arrivals;
    const [withTakes] = whatIf(mixed, parseWhatIf('50@100/s'));
    expect(withTakes?.deniedTokens).toBeGreaterThanOrEqual(mixed.length - idealAdmitted(mixed, 50, makeRate(100, 1000)));
    expect(looser?.deniedCount).toBeLessThan(same?.deniedCount ?? -1);
    expect(same?.deniedCount).toBeGreaterThan(0);
  });
});

describe('--what-if', () => {
  it('parses candidates, drops repeats, and replays', () => {
    const args = parseSweepArgs(['--what-if', '300@500/s,1000@2/1000ms,300@500/s', '--seed', '1']);
    expect(args.whatIf.map((l) => [l.capacityTokens, l.refill.tokens, l.refill.periodMs])).toEqual([
      [300, 500, 1000],
      [1000, 2, 1000],
    ]);
    expect(formatWhatIf(args.whatIf)).toBe('300@500/s,1000@2/s');
    expect(parseSweepArgs(sweepArgsToArgv(args)).whatIf).toEqual(args.whatIf);
    expect(parseSweepArgs(['--seed', '1']).whatIf).toEqual([]);
    expect(sweepArgsToArgv(parseSweepArgs(['--seed', '1']))).not.toContain('--what-if');
  });

  it.each([['300'], ['0@1/s'], ['300@fast'], ['@1/s'], ['1,2'], [''], [Array.from({ length: 21 }, (_, i) => `${i + 1}@1/s`).join(',')]])(
    'refuses %j with one line naming the flag',
    (text) => {
      expect(() => parseWhatIf(text)).toThrow(SweepArgsError);
      expect(() => parseWhatIf(text)).toThrow(/--what-if/);
    },
  );

  it('prints the same columns in the text table and the HTML report', () => {
    const rows = whatIf([req(0), req(0)], parseWhatIf('1@1/s'));
    const text = renderWhatIf(rows);
    for (const [name] of WHAT_IF_COLUMNS) expect(text).toContain(name);
    expect(text).toMatch(/B=1, r=1\/s +2 +1 +500\.0 +1$/m);
    const args = parseSweepArgs(['--seed', '1', '--what-if', '1@1/s']);
    const html = renderHtml({ rows: [], args, recommendation: recommend([], 0.97), whatIf: rows, generatedBy: 'test' });
    expect(html).toContain('What if: denials at candidate limits');
    for (const [name] of WHAT_IF_COLUMNS) expect(html).toContain(`>${name}</th>`);
    expect(renderHtml({ rows: [], args, recommendation: recommend([], 0.97), generatedBy: 'test' })).not.toContain('What if');
  });
});
