/**
 * FairIntake: turns per identity, order within one, and what a full intake sheds.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { FairIntake, seqOf, shedReply } from './fair-intake.js';

const drain = <T>(intake: FairIntake<T>): T[] => {
  const out: T[] = [];
  for (let item = intake.take(); item !== undefined; item = intake.take()) out.push(item);
  return out;
};

describe('FairIntake', () => {
  it('serves identities in turn, one request each per round, each identity in its own order', () => {
    const intake = new FairIntake<string>(100);
    for (let i = 0; i < 5; i += 1) intake.offer('flood', `f${i}`);
    intake.offer('quiet', 'q0');
    intake.offer('other', 'o0');
    intake.offer('other', 'o1');
    expect(drain(intake)).toEqual(['f0', 'q0', 'o0', 'f1', 'o1', 'f2', 'f3', 'f4']);
    expect(intake.size).toBe(0);
    expect(intake.identities).toBe(0);
  });

  it('puts a newcomer’s first request behind at most one of each identity queued, however long their queues', () => {
    const intake = new FairIntake<string>(100_000);
    for (let i = 0; i < 50_000; i += 1) intake.offer('flood', `f${i}`);
    intake.take();
    intake.offer('honest', 'h');
    expect([intake.take(), intake.take()]).toEqual(['f1', 'h']);
  });

  it('when full, sheds the flooder’s request and makes room for a quiet identity’s by shedding the flooder’s newest', () => {
    const intake = new FairIntake<string>(4);
    for (let i = 0; i < 4; i += 1) expect(intake.offer('flood', `f${i}`)).toEqual({ queued: true, shed: null });
    expect(intake.offer('flood', 'f4')).toEqual({ queued: false, shed: 'f4' });
    expect(intake.offer('quiet', 'q0')).toEqual({ queued: true, shed: 'f3' });
    expect(intake.offer('quiet', 'q1')).toEqual({ queued: true, shed: 'f2' });
    // Now as long as the flooder's queue: the newcomer sheds its own.
    expect(intake.offer('quiet', 'q2')).toEqual({ queued: false, shed: 'q2' });
    expect(intake.size).toBe(4);
    expect(drain(intake)).toEqual(['f0', 'q0', 'f1', 'q1']);
  });

  it('refuses a capacity that is not a positive integer', () => {
    for (const capacity of [0, -1, 1.5, Number.NaN]) expect(() => new FairIntake(capacity)).toThrow(RangeError);
  });

  it('never holds more than its capacity, loses nothing it did not shed, and keeps each identity’s order (property)', () => {
    const seed = Number(process.env['SEED'] ?? Date.now() % 2 ** 31);
    console.log(`fair-intake.test.ts: fast-check seed ${seed} (replay: SEED=${seed} npx vitest run src/core/fair-intake.test.ts)`);
    const step = fc.oneof(
      fc.record({ offer: fc.constantFrom('a', 'b', 'c', 'd', 'constructor', '__proto__') }),
      fc.constant({ take: true }),
    );
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 12 }), fc.array(step, { maxLength: 300 }), (capacity, steps) => {
        const intake = new FairIntake<{ id: string; n: number }>(capacity);
        const offered = new Map<string, number>();
        const shed = new Set<string>();
        const taken: { id: string; n: number }[] = [];
        for (const s of steps) {
          if ('offer' in s) {
            const n = offered.get(s.offer) ?? 0;
            offered.set(s.offer, n + 1);
            const result = intake.offer(s.offer, { id: s.offer, n });
            if (result.shed !== null) shed.add(`${result.shed.id}#${result.shed.n}`);
          } else {
            const item = intake.take();
            if (item !== undefined) taken.push(item);
          }
          expect(intake.size).toBeLessThanOrEqual(capacity);
        }
        taken.push(...drain(intake));
        const all = [...offered].flatMap(([id, count]) => Array.from({ length: count }, (_, n) => `${id}#${n}`));
        const out = taken.map((t) => `${t.id}#${t.n}`);
        // Every request is taken or shed, exactly once.
        expect([...out, ...shed].sort()).toEqual(all.sort());
        for (const id of offered.keys()) {
          const mine = taken.filter((t) => t.id === id).map((t) => t.n);
          expect(mine).toEqual([...mine].sort((x, y) => x - y));
        }
      }),
      { seed, numRuns: 300 },
    );
  });

  it('answers a shed request unavailable with a retry hint, quoting its seq read from the bytes', () => {
    const bytes = (text: string): Uint8Array => new TextEncoder().encode(text);
    expect(shedReply(bytes('{"v":2,"op":"acquire","agentId":"a","seq":41,"pool":"api"}'))).toMatchObject({
      kind: 'error',
      code: 'unavailable',
      fault: 'coordinator',
      seq: 41,
      retryAfterMs: 250,
    });
    expect(seqOf(bytes('{"seq":0}'))).toBe(0);
    for (const text of ['', '{}', '{"seq":-1}', '{"seq":"7"}', '{"seq":99999999999999999}', 'not json "seq":', '"seq":x']) {
      expect(seqOf(bytes(text))).toBeNull();
    }
    // Whatever JSON.parse reads as a safe seq, the scan reads alike when the message carries it once.
    for (const seq of [1, 12, 2 ** 40, Number.MAX_SAFE_INTEGER]) expect(seqOf(bytes(JSON.stringify({ v: 2, seq })))).toBe(seq);
  });
});
