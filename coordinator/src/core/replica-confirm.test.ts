import { describe, expect, it } from 'vitest';
import { thrown } from '@tokenlease/shared/testing';
import { CoordinatorError } from '../errors.js';
import { confirmWrite, type ConfirmedWrite } from './replica-confirm.js';

describe('confirmWrite', () => {
  it.each<[string, unknown, unknown, number, ConfirmedWrite]>([
    ['written, no replica asked', 1, null, 0, { outcome: 'written' }],
    ['fenced, no replica asked', 0, null, 0, { outcome: 'fenced' }],
    ['written and confirmed by the one replica asked', 1, 1, 1, { outcome: 'written' }],
    ['written and confirmed by more replicas than asked', 1, 2, 1, { outcome: 'written' }],
    ['written but confirmed by none in time', 1, 0, 1, { outcome: 'unconfirmed', replicasAcked: 0 }],
    ['written but confirmed by too few', 1, 1, 2, { outcome: 'unconfirmed', replicasAcked: 1 }],
    ['fenced: nothing to confirm, whatever WAIT said', 0, 0, 1, { outcome: 'fenced' }],
    ['fenced even when WAIT said nothing useful', 0, 'x', 1, { outcome: 'fenced' }],
    ['a script reply other than 1 counts as fenced', 'OK', 1, 1, { outcome: 'fenced' }],
  ])('%s', (_name, scriptReply, waitReply, required, expected) => {
    expect(confirmWrite(scriptReply, waitReply, required)).toEqual(expected);
  });

  it.each<[string, unknown]>([
    ['no WAIT reply', null],
    ['a negative count', -1],
    ['a fraction', 0.5],
    ['a string', '1'],
  ])('refuses %s from WAIT as state-invalid', (_name, waitReply) => {
    expect(thrown(CoordinatorError, () => confirmWrite(1, waitReply, 1)).code).toBe('state-invalid');
  });
});
