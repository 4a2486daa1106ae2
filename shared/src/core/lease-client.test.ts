/**
 * The lease client's rules of a lease's life: the expiry an agent and a
 * relay both count, and the sequence floor of a stale-sequence refusal.
 */
import { describe, expect, it } from 'vitest';
import type { Reply } from '../protocol/messages.js';
import { clientLeaseEndUs, seqAbove, staleSeqFloor } from './lease-client.js';

describe('clientLeaseEndUs', () => {
  const cases: readonly [number, number, number, number][] = [
    // firstSendUs, ttlMs, driftMargin, end µs
    [0, 3000, 0.1, 2_700_000],
    [5_000, 1000, 0.05, 955_000],
    [1_000, 2000, 0, 2_001_000],
    // Floored to whole µs: 1 ms less 1/3 of it is 666.67 µs.
    [0, 1, 1 / 3, 666],
    [7, 0, 0.1, 7],
  ];
  it.each(cases)('a lease first asked for at %i µs for %i ms with margin %d ends at %i µs', (firstSendUs, ttlMs, margin, endUs) => {
    expect(clientLeaseEndUs(firstSendUs, ttlMs, margin)).toBe(endUs);
  });

  it('ends before the coordinator’s expiry, counted from any grant instant at or after the first send', () => {
    for (const grantedUs of [0, 1, 499_999]) expect(clientLeaseEndUs(0, 500, 0.1)).toBeLessThan(grantedUs + 500_000);
  });
});

describe('sequence floor', () => {
  const error = (code: 'stale-sequence' | 'unavailable', seqFloor?: number): Reply => ({
    v: 2,
    kind: 'error',
    seq: 3,
    code,
    fault: 'peer',
    message: 'm',
    retryAfterMs: 0,
    ...(seqFloor === undefined ? {} : { seqFloor }),
  });

  it('is what a stale-sequence refusal names, and nothing else', () => {
    expect(staleSeqFloor(error('stale-sequence', 41))).toBe(41);
    expect(staleSeqFloor(error('stale-sequence'))).toBeNull();
    expect(staleSeqFloor(error('unavailable', 41))).toBeNull();
  });

  const next: readonly [number, number, number][] = [
    // lastSeq, floor, next
    [3, 0, 4],
    [3, 41, 42],
    [50, 41, 51],
    [0, 0, 1],
  ];
  it.each(next)('after seq %i with floor %i the next request takes %i', (lastSeq, floor, seq) => {
    expect(seqAbove(lastSeq, floor)).toBe(seq);
  });
});
