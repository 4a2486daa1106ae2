/**
 * PoolSchedule: each pool due once at its latest instant, stale entries
 * skipped, forgotten pools never due, and the heap kept near the live size.
 */
import { describe, expect, it } from 'vitest';
import { PoolSchedule } from './pool-schedule.js';

describe('PoolSchedule', () => {
  it('hands out each pool once, at its latest instant, earliest first', () => {
    const s = new PoolSchedule<string>();
    s.set('a', 30);
    s.set('b', 10);
    s.set('c', Infinity);
    s.set('a', 20); // moved earlier: its entry at 30 is stale
    expect(s.nextUs()).toBe(10);
    expect(s.takeDue(15)).toEqual(['b']);
    expect(s.takeDue(15)).toEqual([]);
    expect(s.nextUs()).toBe(20);
    s.set('a', 40); // moved later: the entry at 20 is stale now
    expect(s.takeDue(35)).toEqual([]);
    expect(s.takeDue(40)).toEqual(['a']);
    expect(s.nextUs()).toBe(Infinity);
    expect(s.size).toBe(1); // c, without work
  });

  it('never hands out a forgotten pool, and is empty after clear', () => {
    const s = new PoolSchedule<string>();
    s.set('a', 1);
    s.set('b', 2);
    s.forget('a');
    expect(s.takeDue(5)).toEqual(['b']);
    s.set('c', 1);
    s.clear();
    expect(s.nextUs()).toBe(Infinity);
    expect(s.takeDue(5)).toEqual([]);
  });

  it('keeps its heap near the live pools however often instants move', () => {
    const s = new PoolSchedule<number>();
    for (let i = 0; i < 10; i += 1) s.set(i, 1000 + i);
    for (let round = 0; round < 10_000; round += 1) s.set(round % 10, 2000 + round);
    const heapSize = (s as unknown as { heap: { size: number } }).heap.size;
    expect(heapSize).toBeLessThanOrEqual(2 * 10 + 64 + 1);
    expect(s.takeDue(Number.MAX_SAFE_INTEGER)).toHaveLength(10);
  });
});
