/**
 * Bounded pools and fair holding: caps on live leases and held requests
 * refuse `unavailable` and change nothing; a lease over its share of B is
 * not extended while another request waits, so its tokens go round.
 *
 * Pool "p" is the standard pool of pool.fixtures.ts (capacity 100, 1 token
 * per ms, TTL 1 s, leases ≤ 20, minimum grant 5, holds ≤ 200 ms), full
 * from FULL_AT.
 */
import { describe, expect, it } from 'vitest';
import { FULL_AT, MS, S, acquire, grantOf, internals, makePool, status, tick } from './pool.fixtures.js';

describe('caps', () => {
  it('refuses a lease beyond maxLeases as unavailable, until one expires, and changes nothing', () => {
    const pool = makePool({ fields: { maxLeases: 2 } });
    grantOf(acquire(pool, FULL_AT, { agentId: 'a', seq: 1, tokensWanted: 5 }));
    grantOf(acquire(pool, FULL_AT, { agentId: 'b', seq: 1, tokensWanted: 5 }));
    const before = internals(pool);
    const [refused] = acquire(pool, FULL_AT, { agentId: 'c', seq: 1, tokensWanted: 5 });
    expect(refused?.reply).toMatchObject({ kind: 'error', code: 'unavailable', fault: 'coordinator', retryAfterMs: 1000 });
    expect(internals(pool)).toBe(before);
    // A lease already held renews as usual.
    grantOf(acquire(pool, FULL_AT + MS, { agentId: 'a', seq: 2, tokensWanted: 5 }));
    expect(grantOf(acquire(pool, FULL_AT + 1001 * MS, { agentId: 'c', seq: 2, tokensWanted: 5 })).tokensGranted).toBe(5);
  });

  it('refuses a request that would wait beyond maxWaiting, and changes nothing', () => {
    const pool = makePool({ fields: { maxWaiting: 2 } });
    // Drain the level so that requests wait.
    for (const id of ['a', 'b', 'c', 'd', 'e']) grantOf(acquire(pool, FULL_AT, { agentId: id, seq: 1, tokensWanted: 20 }));
    expect(acquire(pool, FULL_AT, { agentId: 'w1', seq: 1, holdMs: 200 })).toEqual([]);
    expect(acquire(pool, FULL_AT, { agentId: 'w2', seq: 1, holdMs: 200 })).toEqual([]);
    const before = internals(pool);
    const [refused] = acquire(pool, FULL_AT, { agentId: 'w3', seq: 1, holdMs: 200 });
    expect(refused?.reply).toMatchObject({ kind: 'error', code: 'unavailable', retryAfterMs: 200 });
    expect(internals(pool)).toBe(before);
    // One that may not wait is still answered at once.
    expect(grantOf(acquire(pool, FULL_AT, { agentId: 'w4', seq: 1, holdMs: 0 })).tokensGranted).toBe(0);
  });
});

describe('fair holding', () => {
  it('lets five leases that renew without spending lapse once another agent waits, so it gets tokens within one TTL', () => {
    const pool = makePool();
    const hoarders = ['h1', 'h2', 'h3', 'h4', 'h5'];
    const leaseIds = new Map(
      hoarders.map((id) => [id, grantOf(acquire(pool, FULL_AT, { agentId: id, seq: 1, tokensWanted: 20 })).leaseId]),
    );
    expect(status(pool, FULL_AT).levelTokens).toBe(0);
    let seq = 1;
    let honestTokens = 0;
    let honestSeq = 0;
    for (let t = FULL_AT + 100 * MS; t <= FULL_AT + 3 * S; t += 100 * MS) {
      seq += 1;
      for (const id of hoarders) {
        const replies = acquire(pool, t, { agentId: id, seq, leaseId: leaseIds.get(id) ?? null, tokensLeft: 20, tokensWanted: 0 });
        const g = replies.find((d) => d.to === `${id}#${seq}`)?.reply;
        if (g?.kind === 'grant') leaseIds.set(id, g.leaseId);
      }
      honestSeq += 1;
      for (const d of [
        ...acquire(pool, t, { agentId: 'honest', seq: honestSeq, holdMs: 200, tokensWanted: 20 }),
        ...tick(pool, t + 50 * MS),
      ]) {
        if (d.reply.kind === 'grant' && d.to.startsWith('honest')) honestTokens += d.reply.tokensGranted;
      }
    }
    expect(honestTokens).toBeGreaterThanOrEqual(20);
  });

  it('lets renewals that land between another agent’s holds lapse too, and grows no lease past its share: shares hold over a TTL, not at one instant', () => {
    const pool = makePool();
    const hoarders = ['h1', 'h2', 'h3', 'h4', 'h5'];
    const leaseIds = new Map(
      hoarders.map((id) => [id, grantOf(acquire(pool, FULL_AT, { agentId: id, seq: 1, tokensWanted: 20 })).leaseId]),
    );
    const held = new Map(hoarders.map((id) => [id, 20]));
    // Six leases live once the honest agent asks: a share of B is 100 / 6.
    const shareTokens = Math.floor(100 / 6);
    let seq = 1;
    let honestTokens = 0;
    let extendedOverShare = 0;
    for (let t = FULL_AT + 100 * MS; t <= FULL_AT + 3 * S; t += 100 * MS) {
      // The honest agent waits 50 ms and its hold ends; the hoarders renew 25 ms later, when nobody waits.
      for (const d of [...acquire(pool, t, { agentId: 'honest', seq, holdMs: 50, tokensWanted: 20 }), ...tick(pool, t + 50 * MS)]) {
        if (d.reply.kind === 'grant' && d.to.startsWith('honest')) honestTokens += d.reply.tokensGranted;
      }
      seq += 1;
      for (const id of hoarders) {
        const replies = acquire(pool, t + 75 * MS, {
          agentId: id,
          seq,
          leaseId: leaseIds.get(id) ?? null,
          tokensLeft: held.get(id) ?? 0,
          tokensWanted: 20,
        });
        const g = replies.find((d) => d.to === `${id}#${seq}`)?.reply;
        if (g?.kind === 'grant') {
          const tokens = (g.leaseId === leaseIds.get(id) ? (held.get(id) ?? 0) : 0) + g.tokensGranted;
          // The leases granted before the honest agent came lapse together at 1 s: the first to come back see fewer live
          // leases, so a larger share, until their next renewal. Counted from the next round on.
          if (t > FULL_AT + S && g.ttlMs >= 1000 && tokens > shareTokens) extendedOverShare += 1;
          held.set(id, tokens);
          leaseIds.set(id, g.leaseId);
        }
      }
    }
    // Without the window, the hoarders' renewals (never while the honest agent waits) are extended for good: 0 tokens.
    // Without the cap on grants while contended, a hoarder whose lease lapsed comes back with a full lease of 20.
    expect(honestTokens).toBeGreaterThanOrEqual(100);
    expect(extendedOverShare).toBe(0);
  });

  it('answers a renewal over its share while others wait with no tokens and only the time its lease has left', () => {
    const pool = makePool();
    const g = grantOf(acquire(pool, FULL_AT, { agentId: 'big', seq: 1, tokensWanted: 20 }));
    for (const id of ['a', 'b', 'c', 'd']) grantOf(acquire(pool, FULL_AT, { agentId: id, seq: 1, tokensWanted: 20 }));
    expect(acquire(pool, FULL_AT + 10 * MS, { agentId: 'w', seq: 1, holdMs: 200, tokensWanted: 20 })).toEqual([]);
    const renewal = grantOf(
      acquire(pool, FULL_AT + 150 * MS, { agentId: 'big', seq: 2, leaseId: g.leaseId, tokensLeft: 20, tokensWanted: 5 }),
    );
    expect(renewal).toMatchObject({ tokensGranted: 0, tokensHeld: 20, ttlMs: 850, retryAfterMs: 0 });
  });
});
