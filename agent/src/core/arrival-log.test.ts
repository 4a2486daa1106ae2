/**
 * ArrivalLog and PoolSelection: arrivals come out in the order noted; a
 * full buffer stops the log for good (a trace never has a hole); pools are
 * chosen by name, prefix and a sample that is the same on every instance.
 */
import { describe, expect, it } from 'vitest';
import { nameHash32 } from '@tokenlease/shared';
import { ArrivalLog, nameShare, PoolArrivals, PoolSelection } from './arrival-log.js';

function drained(log: ArrivalLog): Array<[number, number, number]> {
  const out: Array<[number, number, number]> = [];
  log.drain((key, cost, atUs) => out.push([key, cost, atUs]));
  return out;
}

describe('ArrivalLog', () => {
  it('hands arrivals over in the order noted, each pool under its own key, and empties', () => {
    const log = new ArrivalLog(8);
    const a = new PoolArrivals(log, 0);
    const b = new PoolArrivals(log, 1);
    a.note(1, 10);
    b.note(3, 11);
    a.note(2, 11);
    expect(log.pending).toBe(3);
    expect(drained(log)).toEqual([
      [0, 1, 10],
      [1, 3, 11],
      [0, 2, 11],
    ]);
    expect(log.pending).toBe(0);
    a.note(1_000_000_000, 12);
    expect(drained(log)).toEqual([[0, 1_000_000_000, 12]]);
    expect(log.noted).toBe(4);
  });

  it('stops for good at the first arrival that finds the buffer full, keeping what it held', () => {
    const log = new ArrivalLog(2);
    const a = new PoolArrivals(log, 0);
    a.note(1, 1);
    a.note(1, 2);
    expect(log.overflowed).toBe(false);
    a.note(1, 3);
    expect(log.overflowed).toBe(true);
    expect(log.stopped).toBe(true);
    expect(drained(log)).toEqual([
      [0, 1, 1],
      [0, 1, 2],
    ]);
    a.note(1, 4); // drained, but stopped: a trace with a hole is never continued
    expect(log.pending).toBe(0);
  });

  it('notes nothing after stop()', () => {
    const log = new ArrivalLog(4);
    log.stop();
    new PoolArrivals(log, 0).note(1, 1);
    expect(log.pending).toBe(0);
    expect(log.overflowed).toBe(false);
  });
});

describe('PoolSelection', () => {
  it('takes exact names and prefix* patterns, or every pool without patterns', () => {
    const some = new PoolSelection(['api', 'tenant:*'], 1);
    expect(some.takes('api')).toBe(true);
    expect(some.takes('api2')).toBe(false);
    expect(some.takes('tenant:AbC')).toBe(true);
    expect(some.takes('tenant')).toBe(false);
    expect(new PoolSelection(null, 1).takes('anything')).toBe(true);
  });

  it('samples pools by a hash of the name: the same answer on every instance, about the share asked', () => {
    const names = Array.from({ length: 20_000 }, (_, i) => `tenant:${i.toString(36)}`);
    const first = new PoolSelection(['tenant:*'], 0.1);
    const second = new PoolSelection(['tenant:*'], 0.1);
    const taken = names.filter((name) => first.takes(name));
    expect(names.filter((name) => second.takes(name))).toEqual(taken);
    expect(taken.length / names.length).toBeGreaterThan(0.08);
    expect(taken.length / names.length).toBeLessThan(0.12);
    for (const name of taken) expect(nameShare(name)).toBeLessThan(0.1);
  });

  it('nameShare is the shared 32-bit name hash over 2^32', () => {
    for (const name of ['', 'a', 'tenant:AbC']) expect(nameShare(name)).toBe(nameHash32(name) / 2 ** 32);
  });
});
