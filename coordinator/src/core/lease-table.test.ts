/**
 * LeaseTable keeps the soonest expiry exact as leases open, extend, end
 * and lapse, so the coordinator wakes exactly when a lease may lapse; and
 * finds a lease by the row its id names exactly as by its agent.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { propertySeed } from '@tokenlease/shared/testing';
import { LeaseTable, type LeaseRecord } from './lease-table.js';
import { SECRET } from './pool.fixtures.js';

describe('LeaseTable soonest expiry', () => {
  it('follows opens, extensions of the soonest lease, removals and reclaims', () => {
    const table = new LeaseTable('e-');
    expect(table.earliestExpiryUs()).toBe(Infinity);
    const a = table.open('a', SECRET, 1, 1_000, 'anon');
    const b = table.open('b', SECRET, 1, 2_000, 'anon');
    table.open('c', SECRET, 1, 3_000, 'anon');
    expect(table.earliestExpiryUs()).toBe(1_000);
    table.extend(b, 1_500); // never shortens
    expect(b.expiresAtUs).toBe(2_000);
    table.extend(a, 2_500); // the soonest moves on to b
    expect(table.earliestExpiryUs()).toBe(2_000);
    table.remove(b);
    expect(table.earliestExpiryUs()).toBe(2_500);
    expect(table.reclaimExpired(2_499)).toEqual([]);
    expect(table.reclaimExpired(2_500)).toEqual(['a']);
    expect(table.earliestExpiryUs()).toBe(3_000);
    expect(table.reclaimExpired(3_000)).toEqual(['c']);
    expect(table.earliestExpiryUs()).toBe(Infinity);
    expect(table.boundTokensSum).toBe(0);
  });

  it('queues a lease once however often it is renewed, and still ends it at its last expiry', () => {
    const table = new LeaseTable('e-');
    const heapSize = (): number => (table as unknown as { expiries: { size: number } }).expiries.size;
    const leases = ['a', 'b', 'c'].map((id, i) => table.open(id, SECRET, 1, 1_000 + i, 'anon'));
    for (let renewal = 1; renewal <= 1_000; renewal += 1) for (const lease of leases) table.extend(lease, 1_000 + 10 * renewal);
    expect(heapSize()).toBe(3);
    expect(table.earliestExpiryUs()).toBe(11_000);
    expect(table.reclaimExpired(10_999)).toEqual([]);
    expect(table.size).toBe(3);
    expect(heapSize()).toBe(3);
    table.extend(leases[1] as LeaseRecord, 20_000);
    expect(table.reclaimExpired(11_000).sort()).toEqual(['a', 'c']);
    expect(table.earliestExpiryUs()).toBe(20_000);
    expect(table.reclaimExpired(20_000)).toEqual(['b']);
    expect(heapSize()).toBe(0);
  });

  it('ends a retired part at its own expiry, apart from the lease its agent opened since', () => {
    const table = new LeaseTable('e-');
    const old = table.open('a', SECRET, 1, 1_000, 'anon');
    table.setBound(old, 5);
    table.extend(old, 4_000);
    table.retire(old, 3);
    const next = table.open('a', SECRET, 2, 2_000, 'anon');
    expect(table.boundTokensSum).toBe(3);
    expect(table.earliestExpiryUs()).toBe(2_000);
    expect(table.reclaimExpired(2_000)).toEqual(['a']);
    expect(table.get('a')).toBeUndefined();
    expect(table.retiredOf('a')?.boundTokens).toBe(3);
    expect(table.reclaimExpired(3_999)).toEqual([]);
    expect(table.reclaimExpired(4_000)).toEqual(['a']);
    expect(table.retiredCount).toBe(0);
    expect(table.boundTokensSum).toBe(0);
    expect(next.expiresAtUs).toBe(2_000);
  });
});

describe('LeaseTable weight sums', () => {
  it('sums the weights of all live leases, and of those whose agents report demand', () => {
    const table = new LeaseTable('w-');
    const a = table.open('a', SECRET, 1, 1_000, 'anon');
    const b = table.open('b', SECRET, 1, 1_000, 'anon');
    table.setWeight(a, 3);
    expect([table.weightsSum, table.demandingWeightsSum]).toEqual([4, 0]);
    table.setDemand(a, 10);
    expect(table.demandingWeightsSum).toBe(3);
    table.setWeight(a, 5); // a weight changed while demanding counts at once
    table.setDemand(b, 2);
    expect([table.weightsSum, table.demandingWeightsSum]).toEqual([6, 6]);
    table.setDemand(a, 0); // gone idle: its lease still weighs in the whole sum only
    expect([table.weightsSum, table.demandingWeightsSum]).toEqual([6, 1]);
    table.setDemand(a, 7);
    table.remove(a);
    expect([table.weightsSum, table.demandingWeightsSum]).toEqual([1, 1]);
    expect(table.reclaimExpired(1_000)).toEqual(['b']);
    expect([table.weightsSum, table.demandingWeightsSum]).toEqual([0, 0]);
  });
});

describe('LeaseTable demand columns', () => {
  it('hold each live lease’s demand and weight once, through opens, changes, removals and retirements', () => {
    const table = new LeaseTable('d-');
    const records = Array.from({ length: 6 }, (_, i) => table.open(`a${i}`, SECRET, 1, 10_000, 'anon'));
    records.forEach((r, i) => {
      table.setDemand(r, 10 * (i + 1));
      table.setWeight(r, i + 1);
    });
    const columns = (): [number, number][] => {
      const c = table.demandColumns();
      return Array.from({ length: c.count }, (_, i) => [c.demandPerSecond[i] as number, c.weight[i] as number] as [number, number]).sort(
        (a, b) => a[0] - b[0],
      );
    };
    const expected = (): [number, number][] =>
      [...table.all()].map((r) => [r.demandPerSecond, r.weight] as [number, number]).sort((a, b) => a[0] - b[0]);
    expect(columns()).toEqual(expected());
    table.remove(records[1] as LeaseRecord);
    table.setDemand(records[5] as LeaseRecord, 7);
    table.setBound(records[2] as LeaseRecord, 4);
    table.retire(records[2] as LeaseRecord, 2);
    const reopened = table.open('a2', SECRET, 2, 20_000, 'anon');
    table.setDemand(reopened, 99);
    table.remove(records[0] as LeaseRecord);
    expect(columns()).toEqual(expected());
    expect(columns()).toEqual([
      [7, 6],
      [40, 4],
      [50, 5],
      [99, 1],
    ]);
    for (const r of [...table.all()]) table.remove(r);
    expect(table.demandColumns().count).toBe(0);
  });
});

describe('LeaseTable lookup by the row a lease id names', () => {
  it('refuses to end a lease that is not live, and leaves the table as it was', () => {
    const table = new LeaseTable('7-');
    const a = table.open('a', SECRET, 1, 1_000, 'anon');
    table.setBound(a, 4);
    table.retire(a, 3);
    const b = table.open('b', SECRET, 1, 1_000, 'anon');
    // b took a's row: ending a again must not free it.
    expect(b.row).toBe(0);
    const part = table.retiredOf('a');
    for (const gone of [a, part]) expect(() => table.remove(gone as LeaseRecord)).toThrow(/is not live/);
    expect(table.find('b', b.leaseId)).toBe(b);
    expect([table.size, table.boundTokensSum]).toEqual([1, 3]);
  });

  type Op =
    | { kind: 'open'; agent: number }
    | { kind: 'adopt'; agent: number; id: number }
    | { kind: 'remove'; agent: number }
    | { kind: 'retire'; agent: number }
    | { kind: 'ask'; agent: number; id: number };
  const AGENTS = 6;
  const opArb: fc.Arbitrary<Op> = fc.oneof(
    fc.record({ kind: fc.constant('open' as const), agent: fc.nat(AGENTS - 1) }),
    fc.record({ kind: fc.constant('adopt' as const), agent: fc.nat(AGENTS - 1), id: fc.nat(1_000) }),
    fc.record({ kind: fc.constant('remove' as const), agent: fc.nat(AGENTS - 1) }),
    fc.record({ kind: fc.constant('retire' as const), agent: fc.nat(AGENTS - 1) }),
    fc.record({ kind: fc.constant('ask' as const), agent: fc.nat(AGENTS - 1), id: fc.nat(1_000) }),
  );

  it('finds what the map of agents finds, and names a lease exactly when its id is the one given', () => {
    const seed = propertySeed('src/core/lease-table.test.ts');
    let asked = 0;
    let byOwnId = 0;
    let byOthersId = 0;
    fc.assert(
      fc.property(fc.array(opArb, { minLength: 30, maxLength: 120, size: 'max' }), (ops) => {
        const table = new LeaseTable('7-');
        // Every id seen: issued here (live or ended), kept from another owner, of another table, made up.
        const ids: string[] = ['7-0.00000001', '7-1.00000001', '6-0.00000001', '7-00.00000001', 'L1', '7-'];
        const agent = (i: number): string => `agent-${i}`;
        for (const op of ops) {
          const a = agent(op.agent);
          const live = table.get(a);
          if (op.kind === 'open' && live === undefined) ids.push(table.open(a, SECRET, 1, 1_000, 'anon').leaseId);
          if (op.kind === 'adopt' && live === undefined) table.adopt(a, SECRET, null, ids[op.id % ids.length] ?? 'L1', 1, 1, 1_000);
          if (op.kind === 'remove' && live !== undefined) table.remove(live);
          if (op.kind === 'retire' && live !== undefined) table.retire(live, 0);
          if (op.kind !== 'ask') continue;
          const id = ids[op.id % ids.length] ?? null;
          const others = [...table.all()].filter((r) => r !== live && r.serial >= 0).map((r) => r.leaseId);
          for (const name of [id, null, live?.leaseId ?? null]) {
            asked += 1;
            expect(table.find(a, name)).toBe(live);
            if (live !== undefined && live.serial >= 0 && live.leaseId === name) byOwnId += 1;
            if (name !== null && others.includes(name)) byOthersId += 1;
          }
          for (const record of table.all())
            for (const name of [id, record.leaseId, null]) expect(table.names(record, name)).toBe(record.leaseId === name);
        }
      }),
      { seed, numRuns: 300 },
    );
    // Not vacuous: lookups went by their own lease's row, and by rows holding another agent's lease.
    console.log(`lease-table: ${asked} lookups, ${byOwnId} by the agent's own id, ${byOthersId} by another live lease's`);
    expect(byOwnId).toBeGreaterThan(100);
    expect(byOthersId).toBeGreaterThan(100);
  });
});
