/**
 * Ownership: rendezvous hashing of units to members. Determinism, one
 * preferred owner per unit, an even enough spread, minimal movement when a
 * member joins or leaves (examples and a fast-check property), and the plan
 * a member derives from it.
 *
 * Replay the property with `SEED=<n> npx vitest run src/core/ownership.test.ts`
 * (the seed is printed).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { poolNameProblem } from '@tokenlease/shared';
import { propertySeed } from '@tokenlease/shared/testing';
import { CATCH_ALL_UNIT, ownershipUnits, planOwnership, preferredOwner, rendezvousScore } from './ownership.js';

const THREE = ['coord-a', 'coord-b', 'coord-c'];
const UNITS = ownershipUnits(Array.from({ length: 300 }, (_, i) => `pool-${i}`));

/** owners — the preferred owner of each unit. */
const owners = (units: readonly string[], members: readonly string[]): Map<string, string | null> =>
  new Map(units.map((u) => [u, preferredOwner(u, members)]));

/** unitsOf — the units `member` is preferred for. */
const unitsOf = (member: string, units: readonly string[], members: readonly string[]): Set<string> =>
  new Set(units.filter((u) => preferredOwner(u, members) === member));

describe('rendezvousScore', () => {
  it('is a deterministic unsigned 32-bit integer', () => {
    for (const [member, unit] of [
      ['coord-a', 'pool-1'],
      ['', ''],
      ['é', CATCH_ALL_UNIT],
      ['x'.repeat(500), 'y'],
    ] as const) {
      const score = rendezvousScore(member, unit);
      expect(Number.isInteger(score) && score >= 0 && score < 2 ** 32).toBe(true);
      expect(rendezvousScore(member, unit)).toBe(score);
    }
  });

  it('separates member from unit, so moving a character across the boundary changes the score', () => {
    expect(rendezvousScore('ab', 'c')).not.toBe(rendezvousScore('a', 'bc'));
  });

  it('spreads close names: neighbouring units get scores that differ in many bits', () => {
    const bitsDiffering = (a: number, b: number): number => [...((a ^ b) >>> 0).toString(2)].filter((c) => c === '1').length;
    let total = 0;
    for (let i = 0; i < 100; i += 1)
      total += bitsDiffering(rendezvousScore('coord-a', `pool-${i}`), rendezvousScore('coord-a', `pool-${i + 1}`));
    // About 16 of 32 on average for a good mix.
    expect(total / 100).toBeGreaterThan(12);
    expect(total / 100).toBeLessThan(20);
  });
});

describe('preferredOwner', () => {
  it('is null without members', () => {
    expect(preferredOwner('pool-1', [])).toBeNull();
  });

  it('is the member of highest score, whatever the order of the list', () => {
    for (const unit of UNITS.slice(0, 50)) {
      const best = [...THREE].sort((a, b) => rendezvousScore(b, unit) - rendezvousScore(a, unit))[0];
      expect(preferredOwner(unit, THREE)).toBe(best);
      expect(preferredOwner(unit, [...THREE].reverse())).toBe(best);
      expect(preferredOwner(unit, [THREE[1] ?? '', THREE[2] ?? '', THREE[0] ?? ''])).toBe(best);
    }
  });

  it('breaks a tie of scores by the smaller id, in either order', () => {
    // "costarring" and "liquid" collide under 32-bit FNV-1a, so they tie on every unit.
    expect(rendezvousScore('costarring', 'pool-1')).toBe(rendezvousScore('liquid', 'pool-1'));
    expect(preferredOwner('pool-1', ['liquid', 'costarring'])).toBe('costarring');
    expect(preferredOwner('pool-1', ['costarring', 'liquid'])).toBe('costarring');
  });

  it('gives every unit exactly one owner, a member of the list', () => {
    const counts = new Map(THREE.map((m) => [m, 0]));
    for (const [unit, owner] of owners(UNITS, THREE)) {
      expect(THREE, `owner of ${unit}`).toContain(owner);
      counts.set(owner ?? '', (counts.get(owner ?? '') ?? 0) + 1);
    }
    expect([...counts.values()].reduce((a, b) => a + b, 0)).toBe(UNITS.length);
  });

  it('spreads 300 units over 3 members: each gets between 20% and 47%', () => {
    const units = UNITS.slice(0, 300);
    for (const member of THREE) {
      const share = unitsOf(member, units, THREE).size / units.length;
      expect(share, member).toBeGreaterThanOrEqual(0.2);
      expect(share, member).toBeLessThanOrEqual(0.47);
    }
  });

  it('moves only the units the newcomer wins when a 4th member joins', () => {
    const before = owners(UNITS, THREE);
    const after = owners(UNITS, [...THREE, 'coord-d']);
    let moved = 0;
    for (const unit of UNITS) {
      if (after.get(unit) === before.get(unit)) continue;
      expect(after.get(unit), `${unit} moved between old members`).toBe('coord-d');
      moved += 1;
    }
    // About a quarter of the units, not a reshuffle.
    expect(moved).toBeGreaterThan(UNITS.length * 0.1);
    expect(moved).toBeLessThan(UNITS.length * 0.4);
  });

  it('moves only the leaver’s units when a member leaves', () => {
    const before = owners(UNITS, THREE);
    const after = owners(UNITS, ['coord-a', 'coord-c']);
    for (const unit of UNITS) {
      if (before.get(unit) === 'coord-b') expect(after.get(unit)).not.toBe('coord-b');
      else expect(after.get(unit), `${unit} moved though its owner stayed`).toBe(before.get(unit));
    }
  });
});

describe('minimal movement (property)', () => {
  const memberArb = fc.stringMatching(/^[a-z0-9-]{1,12}$/);
  const membersArb = fc.uniqueArray(memberArb, { minLength: 1, maxLength: 6 });
  const unitsArb = fc.uniqueArray(fc.string({ minLength: 1, maxLength: 10 }), { minLength: 1, maxLength: 40 });

  it('a joining member takes only units it wins; a leaving member gives up only its own', () => {
    const seed = propertySeed('src/core/ownership.test.ts');
    fc.assert(
      fc.property(membersArb, memberArb, unitsArb, (members, newcomer, units) => {
        fc.pre(!members.includes(newcomer));
        const before = owners(units, members);
        const joined = owners(units, [...members, newcomer]);
        for (const unit of units) {
          if (joined.get(unit) !== before.get(unit)) expect(joined.get(unit)).toBe(newcomer);
        }
        // Leaving is joining backwards: the newcomer leaves again.
        const left = owners(
          units,
          members.filter((m) => m !== newcomer),
        );
        expect(left).toEqual(before);
        const leaver = members[0] ?? '';
        const rest = members.slice(1);
        const afterLeave = owners(units, rest);
        for (const unit of units) {
          if (before.get(unit) !== leaver) expect(afterLeave.get(unit)).toBe(before.get(unit));
          else expect(afterLeave.get(unit)).toBe(preferredOwner(unit, rest));
        }
      }),
      { seed, numRuns: 300 },
    );
  });
});

describe('planOwnership', () => {
  it('claims the units it is preferred for and owns none of, in unit order', () => {
    const plan = planOwnership('coord-b', THREE, UNITS, new Set());
    expect(plan.release).toEqual([]);
    expect(plan.claim).toEqual(UNITS.filter((u) => preferredOwner(u, THREE) === 'coord-b'));
  });

  it('is empty when it owns exactly what it is preferred for', () => {
    expect(planOwnership('coord-b', THREE, UNITS, unitsOf('coord-b', UNITS, THREE))).toEqual({ claim: [], release: [] });
  });

  it('claims and releases exactly the difference when the member list changes', () => {
    for (const [name, members] of [
      ['a 4th member joins', [...THREE, 'coord-d']],
      ['coord-c leaves', ['coord-a', 'coord-b']],
      ['one leaves and another joins', ['coord-a', 'coord-b', 'coord-d']],
    ] as const) {
      for (const me of ['coord-a', 'coord-b']) {
        const owned = unitsOf(me, UNITS, THREE);
        const wanted = unitsOf(me, UNITS, members);
        const plan = planOwnership(me, members, UNITS, owned);
        expect(plan.claim, `${name}: ${me} claims`).toEqual(UNITS.filter((u) => wanted.has(u) && !owned.has(u)));
        expect(plan.release, `${name}: ${me} releases`).toEqual(UNITS.filter((u) => owned.has(u) && !wanted.has(u)));
        // Applying the plan gives exactly the preferred set.
        const next = new Set([...owned, ...plan.claim]);
        for (const u of plan.release) next.delete(u);
        expect(next).toEqual(wanted);
      }
    }
  });

  it('releases the units of a member that owns everything', () => {
    const plan = planOwnership('coord-a', THREE, UNITS, new Set(UNITS));
    expect(plan.claim).toEqual([]);
    expect(plan.release).toEqual(UNITS.filter((u) => preferredOwner(u, THREE) !== 'coord-a'));
  });

  it('leaves alone what it owns beyond the units (template pools)', () => {
    const owned = new Set([...unitsOf('coord-a', UNITS, THREE), 'tenant:acme']);
    expect(planOwnership('coord-a', THREE, UNITS, owned)).toEqual({ claim: [], release: [] });
  });

  it('plans nothing for a member missing from the list, whatever it owns', () => {
    expect(planOwnership('coord-x', THREE, UNITS, new Set())).toEqual({ claim: [], release: [] });
    expect(planOwnership('coord-x', THREE, UNITS, new Set(UNITS))).toEqual({ claim: [], release: [] });
    expect(planOwnership('coord-a', [], UNITS, new Set(UNITS))).toEqual({ claim: [], release: [] });
  });
});

describe('ownershipUnits', () => {
  it('lists the configured pools in order, then CATCH_ALL_UNIT', () => {
    expect(ownershipUnits(['b', 'a'])).toEqual(['b', 'a', CATCH_ALL_UNIT]);
    expect(ownershipUnits([])).toEqual([CATCH_ALL_UNIT]);
    expect(UNITS).toHaveLength(301);
    expect(UNITS[UNITS.length - 1]).toBe(CATCH_ALL_UNIT);
  });

  it('uses a catch-all that no pool name can be', () => {
    expect(poolNameProblem(CATCH_ALL_UNIT)).not.toBeNull();
  });
});
