/** smallestAfter, the page selection of `pools` listings: the same as sorting everything, with a heap of one page. */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { propertySeed } from '@tokenlease/shared/testing';
import { smallestAfter } from './pool-list.js';

describe('smallestAfter', () => {
  it.each<[string[], string | undefined, number, string[]]>([
    [['c', 'a', 'b'], undefined, 2, ['a', 'b']],
    [['c', 'a', 'b'], 'a', 5, ['b', 'c']],
    [['c', 'a', 'b'], 'c', 5, []],
    [['b', 'a'], undefined, 0, []],
    [[], undefined, 3, []],
  ])('%j after %s, %i of them: %j', (names, after, count, expected) => {
    expect(smallestAfter(names, after, count)).toEqual(expected);
  });

  it('equals sorting every name after `after` and taking the first `count` (property)', () => {
    const seed = propertySeed('src/core/pool-list.test.ts');
    fc.assert(
      fc.property(
        fc.uniqueArray(fc.string({ maxLength: 4 }), { maxLength: 200 }),
        fc.option(fc.string({ maxLength: 3 }), { nil: undefined }),
        fc.integer({ min: 0, max: 60 }),
        (names, after, count) => {
          const expected = names
            .filter((n) => after === undefined || n > after)
            .sort((a, b) => (a < b ? -1 : 1))
            .slice(0, count);
          expect(smallestAfter(names, after, count)).toEqual(expected);
        },
      ),
      { seed, numRuns: 500 },
    );
  });
});
