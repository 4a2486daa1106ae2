/**
 * The lease ids a table issues: each names its row and serial, is longer
 * than the 10 characters JSON.parse interns, and is read back only in the
 * canonical form it was issued in.
 */
import { describe, expect, it } from 'vitest';
import { leaseIdPrefix, LeaseIdForm, SERIAL_DIGITS_MIN } from './lease-id.js';

describe('LeaseIdForm', () => {
  it.each([
    ['3-', 0, 1, '3-0.00000001'],
    ['3-', 35, 36, '3-z.00000010'],
    ['14.2-', 36, 36 ** 8, '14.2-10.100000000'],
    ['a-', 123_456, 2 ** 40, 'a-2n9c.e13wu1og'],
  ])('issues %s row %i serial %i as %s, and reads it back', (prefix, row, serial, id) => {
    const form = new LeaseIdForm(prefix);
    expect(form.issue(row, serial)).toBe(id);
    expect(form.read(id)).toBe(true);
    expect([form.row, form.serial]).toEqual([row, serial]);
  });

  it('prefixes ids with the epoch, and with the restarts within it after the first start', () => {
    expect([leaseIdPrefix(40, 0), leaseIdPrefix(40, 2)]).toEqual(['14-', '14.2-']);
    const [first, restarted] = [new LeaseIdForm(leaseIdPrefix(40, 0)), new LeaseIdForm(leaseIdPrefix(40, 2))];
    expect(first.read(restarted.issue(0, 1))).toBe(false);
    expect(restarted.read(first.issue(0, 1))).toBe(false);
  });

  it('issues ids longer than 10 characters, so JSON.parse never interns them', () => {
    const form = new LeaseIdForm('0-');
    expect(form.issue(0, 0).length).toBe(2 + 1 + 1 + SERIAL_DIGITS_MIN);
    expect(form.issue(0, 0).length).toBeGreaterThan(10);
  });

  it.each([
    ['another prefix', '4-0.00000001'],
    ['an id of the same epoch after a restart', '3.1-0.00000001'],
    ['no row', '3-.00000001'],
    ['a row with a leading zero', '3-01.00000001'],
    ['no dot', '3-000000001'],
    ['no serial', '3-0.'],
    ['a serial of fewer digits than issued', '3-0.0000001'],
    ['a serial padded past its digits', '3-0.000000001'],
    ['upper-case digits', '3-A.00000001'],
    ['something after the serial', '3-0.00000001x'],
    ['a second dot', '3-0.0000.0001'],
    ['a row past the safe integers', `3-${'z'.repeat(12)}.00000001`],
    ['a serial past the safe integers', `3-0.${'z'.repeat(12)}`],
    ['an id of a kept lease', 'L1'],
  ])('reads no row from %s (%s)', (_, id) => {
    const form = new LeaseIdForm('3-');
    expect(form.read('3-5.00000007')).toBe(true);
    expect(form.read(id)).toBe(false);
    // A failed read leaves the last good one as it was.
    expect([form.row, form.serial]).toEqual([5, 7]);
  });

  it('answers an id read again as it did, whichever ids came between', () => {
    const form = new LeaseIdForm('3-');
    const [a, b] = [form.issue(4, 9), form.issue(7, 2)];
    for (const [id, answer, row, serial] of [
      [a, true, 4, 9],
      [a, true, 4, 9],
      ['3-01.00000001', false, 4, 9],
      [b, true, 7, 2],
      [`${a}`, true, 4, 9],
      ['3-01.00000001', false, 4, 9],
      [a, true, 4, 9],
    ] as const) {
      expect(form.read(id)).toBe(answer);
      expect([form.row, form.serial]).toEqual([row, serial]);
    }
  });

  it('reads every id it issues back to its row and serial, and no two ids alike', () => {
    const form = new LeaseIdForm('1a.3-');
    const seen = new Set<string>();
    for (const row of [0, 1, 9, 10, 35, 36, 1295, 1296, 99_999, 2 ** 31]) {
      for (const serial of [0, 1, 35, 36, 36 ** 7, 36 ** 8 - 1, 36 ** 8, 2 ** 53 - 1]) {
        const id = form.issue(row, serial);
        expect(seen.has(id)).toBe(false);
        seen.add(id);
        expect(form.read(id)).toBe(true);
        expect([form.row, form.serial]).toEqual([row, serial]);
      }
    }
  });
});
