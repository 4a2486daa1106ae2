/**
 * The row sketch does the checks it is timed with: a renewal finds its
 * agent's row by the lease id, under the agent's id and secret and a newer
 * sequence number, and anything else throws without changing the row.
 */
import { describe, expect, it } from 'vitest';
import { LeaseIdForm } from '@tokenlease/coordinator/internal';
import { encodeMessage, type LeaseRequest } from '@tokenlease/shared';
import { seededRandom } from '@tokenlease/shared/testing';
import { RowSketch, rowSketchRound } from './row-sketch.js';

const ids = new LeaseIdForm('sketch.');

/** renewal — agent `i`'s acquire as the sketch's simulated agents spell it, with `change` applied. */
function renewal(i: number, seq: number, change: Partial<LeaseRequest> = {}): Uint8Array {
  return encodeMessage({
    v: 2,
    op: 'acquire',
    agentId: `agent-${i}`,
    pool: 'sketch',
    leaseSecret: `s${i.toString(36).padStart(23, '0')}`,
    seq,
    leaseId: ids.issue(i, i + 1),
    tokensLeft: 0,
    tokensWanted: 100,
    demandPerSecond: 5,
    holdMs: 0,
    clockMs: 1,
    ...change,
  });
}

describe('RowSketch', () => {
  it('renews an agent in the row its lease id names, topping its bound up to what it reports plus the grant', () => {
    const sketch = new RowSketch(4, seededRandom(1));
    sketch.open();
    const first = sketch.renew(renewal(2, 2), 1_000);
    expect(first).toMatchObject({ kind: 'grant', seq: 2, leaseId: ids.issue(2, 3), tokensGranted: 100, tokensHeld: 100 });
    const second = sketch.renew(renewal(2, 3, { tokensLeft: 40, tokensWanted: 2_000 }), 2_000);
    expect(second).toMatchObject({ seq: 3, tokensGranted: 960, tokensHeld: 1_000 });
  });

  it.each<[string, Partial<LeaseRequest>, RegExp]>([
    ['another secret', { leaseSecret: `s${'1'.padStart(23, '0')}` }, /not agent-2's under its secret/],
    ['another agent', { agentId: 'agent-1' }, /not agent-1's/],
    ['the same secret one character short', { leaseSecret: `s${'2'.padStart(22, '0')}` }, /under its secret/],
    ['an id of no row', { leaseId: ids.issue(9, 10) }, /names no row/],
    ['no lease id', { leaseId: null }, /names no row/],
    ['an old sequence number', { seq: 1 }, /old sequence number/],
  ])('throws for %s, and the row is as it was', (_what, change, message) => {
    const sketch = new RowSketch(4, seededRandom(1));
    sketch.open();
    expect(() => sketch.renew(renewal(2, 5, change), 1_000)).toThrow(message);
    expect(sketch.renew(renewal(2, 2), 2_000)).toMatchObject({ seq: 2, tokensHeld: 100 });
  });

  it('measures renewals of random agents for the time asked, each a well-formed renewal', () => {
    const round = rowSketchRound(1_000, 50);
    expect(round.leases).toBe(1_000);
    expect(round.calls).toBeGreaterThan(0);
    expect(round.cpuMs).toBeGreaterThanOrEqual(50);
    // The figure is the renewals over their CPU time (rounded to the ms in the report).
    expect(Math.abs((round.calls / round.renewalsPerSecond) * 1000 - round.cpuMs)).toBeLessThanOrEqual(1);
  });
});
