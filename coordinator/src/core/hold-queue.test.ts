/** HoldQueue and MinHeap: arrival order, hold deadlines and the turn sum, with removals anywhere. */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { HoldQueue, type Waiter } from './hold-queue.js';
import type { LeaseRecord } from './lease-table.js';
import { MinHeap } from './min-heap.js';

const waiter = (agentId: string, deadlineUs: number, thresholdTokens = 1): Waiter<string> => ({
  record: { agentId } as LeaseRecord,
  wantTokens: thresholdTokens,
  thresholdTokens,
  to: agentId,
  deadlineUs,
  heldAtUs: 0,
});
const ids = (ws: readonly Waiter<string>[]): string[] => ws.map((w) => w.record.agentId);

describe('HoldQueue', () => {
  it('keeps arrival order through removals at the head, middle and tail', () => {
    const q = new HoldQueue<string>();
    for (const [i, id] of ['a', 'b', 'c', 'd', 'e'].entries()) q.push(waiter(id, 100 + i, i + 1));
    expect(q.turnsTokens).toBe(15);
    q.remove('a');
    q.remove('c');
    q.remove('e');
    expect(ids(q.inOrder())).toEqual(['b', 'd']);
    expect(q.head()?.record.agentId).toBe('b');
    expect(q.turnsTokens).toBe(2 + 4);
    q.push(waiter('a', 50));
    expect(ids(q.inOrder())).toEqual(['b', 'd', 'a']);
  });

  it('answers ended holds in arrival order and skips removed ones', () => {
    const q = new HoldQueue<string>();
    q.push(waiter('late', 300));
    q.push(waiter('x', 200));
    q.push(waiter('y', 100));
    q.push(waiter('gone', 50));
    q.remove('gone');
    expect(q.earliestDeadlineUs()).toBe(100);
    expect(ids(q.takeDue(200))).toEqual(['x', 'y']);
    expect(ids(q.inOrder())).toEqual(['late']);
    expect(q.earliestDeadlineUs()).toBe(300);
    expect(ids(q.takeAll())).toEqual(['late']);
    expect([q.size, q.turnsTokens, q.earliestDeadlineUs()]).toEqual([0, 0, Infinity]);
  });

  it('matches a plain array model under random pushes, removals and due takes', () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.constantFrom('push', 'remove', 'due'), fc.integer({ min: 0, max: 30 }), fc.integer({ min: 0, max: 1000 })), {
          maxLength: 200,
        }),
        (ops) => {
          const q = new HoldQueue<string>();
          let model: Waiter<string>[] = [];
          for (const [op, n, t] of ops) {
            const id = `a${n}`;
            if (op === 'push' && model.every((w) => w.record.agentId !== id)) {
              const w = waiter(id, t, n + 1);
              q.push(w);
              model.push(w);
            } else if (op === 'remove') {
              q.remove(id);
              model = model.filter((w) => w.record.agentId !== id);
            } else if (op === 'due') {
              expect(ids(q.takeDue(t))).toEqual(ids(model.filter((w) => w.deadlineUs <= t)));
              model = model.filter((w) => w.deadlineUs > t);
            }
            expect(ids(q.inOrder())).toEqual(ids(model));
            expect(q.turnsTokens).toBe(model.reduce((s, w) => s + w.thresholdTokens, 0));
            expect(q.earliestDeadlineUs()).toBe(Math.min(Infinity, ...model.map((w) => w.deadlineUs)));
          }
        },
      ),
    );
  });
});

describe('MinHeap', () => {
  it('pops keys in ascending order, each with its value, across growth and interleaved pushes', () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: -1e6, max: 1e6 }), { maxLength: 200 }), fc.integer({ min: 0, max: 200 }), (keys, popAfter) => {
        const h = new MinHeap<string>();
        const popped: number[] = [];
        const take = (): void => {
          const value = h.top;
          expect(value).toBe(`v${h.topKey}`);
          popped.push(h.topKey);
          h.pop();
        };
        for (const [i, k] of keys.entries()) {
          h.push(k, `v${k}`);
          if (i === popAfter) take();
        }
        while (h.size > 0) take();
        expect(h.topKey).toBe(Infinity);
        expect(h.top).toBeUndefined();
        const sorted = [...keys].sort((a, b) => a - b);
        if (popAfter >= keys.length) expect(popped).toEqual(sorted);
        else {
          // The one taken early was the least pushed by then; what is left leaves in ascending order.
          expect(popped[0]).toBe(Math.min(...keys.slice(0, popAfter + 1)));
          expect(popped.slice(1)).toEqual([...popped.slice(1)].sort((a, b) => a - b));
          expect([...popped].sort((a, b) => a - b)).toEqual(sorted);
        }
      }),
    );
  });
});
