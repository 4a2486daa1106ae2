import { describe, expect, it } from 'vitest';
import type { Reply } from '@tokenlease/shared';
import { AgentClocks } from './clock-check.js';
import { startTrack } from './clock-watch.js';
import { acquire, FULL_AT, type AcquireFields, grantOf, makePool, MS, S } from './pool.fixtures.js';
import type { Pool } from './pool.js';

/** expiresInMs — what the pool says of agent `a`'s lease at `nowUs`: ms until it stops counting it. */
function expiresInMs(pool: Pool<string>, nowUs: number): number | undefined {
  return pool.status(nowUs, [], 'a').agentLease?.expiresInMs;
}

function errorOf(deliveries: readonly { reply: Reply }[]): Extract<Reply, { kind: 'error' }> {
  expect(deliveries).toHaveLength(1);
  const reply = deliveries[0]?.reply;
  if (reply?.kind !== 'error') throw new Error(`expected a refusal, got ${JSON.stringify(reply)}`);
  return reply;
}

describe('the clock check of a pool (TTL 1 s, limit 5%)', () => {
  it('renews an agent whose clock keeps the coordinator’s rate, however long', () => {
    const pool = makePool();
    let leaseId: string | null = null;
    for (let i = 0; i < 40; i += 1) {
      const nowUs = FULL_AT + i * 400 * MS;
      const grant = grantOf(acquire(pool, nowUs, { agentId: 'a', seq: i + 1, leaseId, tokensWanted: 1, clockMs: 77_000 + i * 400 }));
      leaseId = grant.leaseId;
    }
  });

  it('refuses a slow clock’s renewal, counts its lease as long as that clock makes it last, and refuses its agent from then on', () => {
    const pool = makePool();
    let leaseId: string | null = null;
    // Half the coordinator's rate: suspected at 1.2 s (the track restarts there), still granted; confirmed at 2.4 s.
    for (const [seq, atMs, clockMs] of [
      [1, 0, 1_000],
      [2, 600, 1_300],
      [3, 1_200, 1_600],
      [4, 1_800, 1_900],
    ] as const) {
      leaseId = grantOf(acquire(pool, FULL_AT + atMs * MS, { agentId: 'a', seq, leaseId, tokensWanted: 1, clockMs })).leaseId;
    }
    const atUs = FULL_AT + 2_400 * MS;
    const refusal = errorOf(acquire(pool, atUs, { agentId: 'a', seq: 5, leaseId, clockMs: 2_200 }));
    expect(refusal).toMatchObject({ code: 'clock-drift', fault: 'peer', seq: 5 });
    expect(refusal.message).toMatch(/clock ran slow: 50\.0% of the coordinator's over 1\.2 s/);
    // Last granted at FULL_AT + 1.8 s with a TTL of 1 s, spent for 2 s on a clock at half the rate: counted until FULL_AT + 3.8 s.
    expect(expiresInMs(pool, atUs)).toBe(1_400);
    expect(refusal.retryAfterMs).toBe(1_400);
    expect(pool.takeTally().clockDrifts).toBe(1);
    // Still refused once the lease is gone, with a new sequence and no lease.
    const later = FULL_AT + 4 * S;
    expect(errorOf(acquire(pool, later, { agentId: 'a', seq: 6, clockMs: 3_000 })).code).toBe('clock-drift');
    expect(pool.status(later, []).leases).toBe(0);
    expect(pool.takeTally().clockDrifts).toBe(0);
    // Another agent is served as before.
    grantOf(acquire(pool, later, { agentId: 'b', seq: 1, clockMs: 0 }));
  });

  it('judges an agent whose lease lapsed between two requests against its earlier readings', () => {
    const pool = makePool();
    grantOf(acquire(pool, FULL_AT, { agentId: 'a', seq: 1, clockMs: 0 }));
    // Each next request comes 3 s later by the coordinator's clock, 1 s by its own: its lease lapsed meanwhile.
    grantOf(acquire(pool, FULL_AT + 3 * S, { agentId: 'a', seq: 2, clockMs: 1_000 }));
    expect(errorOf(acquire(pool, FULL_AT + 6 * S, { agentId: 'a', seq: 3, clockMs: 2_000 })).code).toBe('clock-drift');
  });

  it('refuses a fast clock without lengthening its lease beyond its probation (it stops early)', () => {
    const pool = makePool();
    let leaseId: string | null = null;
    for (const [seq, atMs, clockMs] of [
      [1, 0, 1_000],
      [2, 500, 2_000],
      [3, 1_000, 3_000],
      [4, 1_500, 4_000],
    ] as const) {
      leaseId = grantOf(acquire(pool, FULL_AT + atMs * MS, { agentId: 'a', seq, leaseId, tokensWanted: 1, clockMs })).leaseId;
    }
    const atUs = FULL_AT + 2_000 * MS;
    expect(errorOf(acquire(pool, atUs, { agentId: 'a', seq: 5, leaseId, clockMs: 5_000 })).message).toMatch(/clock ran fast: 200\.0%/);
    // Never verified, its last renewal (at 1.5 s) was on probation: two TTLs.
    expect(expiresInMs(pool, atUs)).toBe(1_500);
  });

  it('counts the leases of an agent whose clock is not verified yet for two TTLs, then for one', () => {
    const pool = makePool();
    let leaseId: string | null = null;
    const at = (ms: number): number => FULL_AT + ms * MS;
    leaseId = grantOf(acquire(pool, at(0), { agentId: 'a', seq: 1, tokensWanted: 1, clockMs: 500 })).leaseId;
    expect(expiresInMs(pool, at(0))).toBe(2_000);
    leaseId = grantOf(acquire(pool, at(600), { agentId: 'a', seq: 2, leaseId, tokensWanted: 1, clockMs: 1_100 })).leaseId;
    expect(expiresInMs(pool, at(600))).toBe(2_000);
    // 1.2 s of readings judged within the limit: verified; the next renewal counts one TTL (the probation's end stays).
    leaseId = grantOf(acquire(pool, at(1_200), { agentId: 'a', seq: 3, leaseId, tokensWanted: 1, clockMs: 1_700 })).leaseId;
    grantOf(acquire(pool, at(2_800), { agentId: 'a', seq: 4, leaseId, tokensWanted: 1, clockMs: 3_300 }));
    expect(expiresInMs(pool, at(2_800))).toBe(1_000);
    // Without a reading, or with the check off, a lease is counted one TTL from the start.
    grantOf(acquire(pool, at(0), { agentId: 'b', seq: 1, tokensWanted: 1 }));
    expect(pool.status(at(0), [], 'b').agentLease?.expiresInMs).toBe(1_000);
    const off = makePool({ fields: { clockDriftLimit: 0 } });
    grantOf(acquire(off, at(0), { agentId: 'a', seq: 1, tokensWanted: 1, clockMs: 0 }));
    expect(off.status(at(0), [], 'a').agentLease?.expiresInMs).toBe(1_000);
  });

  it('checks nothing with clockDriftLimit 0, nor for requests without a reading', () => {
    const off = makePool({ fields: { clockDriftLimit: 0 } });
    const on = makePool();
    for (const [pool, withClock] of [
      [off, true],
      [on, false],
    ] as const) {
      let leaseId: string | null = null;
      for (let i = 0; i < 10; i += 1) {
        const fields: AcquireFields = { agentId: 'a', seq: i + 1, leaseId, tokensWanted: 1, ...(withClock ? { clockMs: i * 100 } : {}) };
        leaseId = grantOf(acquire(pool, FULL_AT + i * 600 * MS, fields)).leaseId;
      }
    }
  });

  it('starts afresh for the same agent id under another secret (a restarted process)', () => {
    const pool = makePool();
    grantOf(acquire(pool, FULL_AT, { agentId: 'a', seq: 1, clockMs: 0 }));
    grantOf(acquire(pool, FULL_AT + 2 * S, { agentId: 'a', seq: 2, clockMs: 100 }));
    expect(errorOf(acquire(pool, FULL_AT + 4 * S, { agentId: 'a', seq: 3, clockMs: 200 })).code).toBe('clock-drift');
    // The same id under another secret: a new process, whose clock is judged afresh.
    grantOf(acquire(pool, FULL_AT + 5 * S, { agentId: 'a', seq: 1, clockMs: 5, leaseSecret: 'another-secret-of-128-bits' }));
  });
});

describe('AgentClocks', () => {
  it('knows an agent under its secret only, keeps the ones that asked last, at most `most`, and forgets the quiet', () => {
    const clocks = new AgentClocks();
    clocks.start('a', 's', startTrack(0, 0), 0, 2, -Infinity);
    expect(clocks.asked('a', 's', 1)).toBeDefined();
    expect(clocks.asked('a', 'other', 1)).toBeUndefined();
    clocks.start('b', 's', startTrack(0, 0), 2, 2, -Infinity);
    // 'a' asked after 'b' started: 'b' is the one that asked longest ago.
    expect(clocks.asked('a', 's', 3)).toBeDefined();
    clocks.start('c', 's', startTrack(0, 0), 4, 2, -Infinity);
    expect(clocks.size).toBe(2);
    expect(clocks.asked('b', 's', 5)).toBeUndefined();
    expect(clocks.asked('a', 's', 5)).toBeDefined();
    expect(clocks.asked('c', 's', 6)).toBeDefined();
    // Both quiet since before 100: a start at 200 forgets them, whatever room there is.
    clocks.start('d', 's', startTrack(0, 0), 200, 1000, 100);
    expect(clocks.size).toBe(1);
  });

  it('takes the clock a lease kept only while it is still the one known', () => {
    const clocks = new AgentClocks();
    const kept = clocks.start('a', 's', startTrack(0, 0), 0, 10, -Infinity);
    expect(clocks.asked('a', 's', 1, kept)).toBe(kept);
    expect(kept.askedUs).toBe(1);
    // The same id restarted under another secret: the kept clock is the old process's, and is not taken.
    const restarted = clocks.start('a', 't', startTrack(0, 0), 2, 10, -Infinity);
    expect(clocks.asked('a', 's', 3, kept)).toBeUndefined();
    expect(clocks.asked('a', 't', 3, kept)).toBe(restarted);
    // Forgotten for being quiet: a lease's reference does not bring it back.
    clocks.start('b', 's', startTrack(0, 0), 500, 10, 100);
    expect(clocks.asked('a', 't', 501, restarted)).toBeUndefined();
  });

  it('gives an agent that asked since it was placed a second chance before the quiet ones behind it', () => {
    const clocks = new AgentClocks();
    for (const [i, id] of ['a', 'b', 'c'].entries()) clocks.start(id, 's', startTrack(0, 0), i, 10, -Infinity);
    clocks.asked('a', 's', 150);
    // 'a' is first in order but asked at 150; 'b' and 'c' are quiet since before 100.
    clocks.start('d', 's', startTrack(0, 0), 200, 10, 100);
    expect(clocks.asked('a', 's', 201)).toBeDefined();
    expect(clocks.asked('b', 's', 201)).toBeUndefined();
    expect(clocks.asked('c', 's', 201)).toBeUndefined();
    expect(clocks.size).toBe(2);
  });
});
