/**
 * A keeper given a grant verifier (the agent's public keys) takes only grants signed for
 * the request they answer; the verifier here stands in for Ed25519 (adapters/grant-verifier.ts).
 */
import { describe, expect, it } from 'vitest';
import { grantSigningText, type LeaseGrant } from '@tokenlease/shared';
import { keeperOptions } from './keeper-options.js';
import { LeaseKeeper } from './lease-keeper.js';
import { askFor, BASE, grantFor, TEST_SECRET, testHooks } from './lease-keeper.fixtures.js';

const GOOD_SIG = 'G'.repeat(86);

/** A keeper whose verifier accepts GOOD_SIG alone, and records every text it was asked about. */
function signedKeeper(): { keeper: LeaseKeeper; texts: string[] } {
  const texts: string[] = [];
  const verify = (text: string, sig: string): boolean => {
    texts.push(text);
    return sig === GOOD_SIG;
  };
  let seq = 100;
  const keeper = new LeaseKeeper(
    'agent-1',
    'pool-a',
    () => ++seq,
    keeperOptions(BASE),
    () => 0.5,
    TEST_SECRET,
    testHooks(verify),
  );
  return { keeper, texts };
}

describe('LeaseKeeper with grant keys', () => {
  it('takes a grant signed for its request, the signature checked over that request’s agent and pool', () => {
    const { keeper, texts } = signedKeeper();
    const ask = askFor(keeper, 20, 0);
    const grant = grantFor(ask, { sig: GOOD_SIG });
    keeper.onReply(ask.seq, grant, 1_000);
    expect(keeper.takeRejection()).toBeNull();
    expect(keeper.slot.takeAt(20, 2_000)).toBe(true);
    expect(texts).toEqual([grantSigningText(grant, { agentId: 'agent-1', pool: 'pool-a' })]);
  });

  const refused: readonly (readonly [string, Partial<LeaseGrant>, RegExp])[] = [
    ['an unsigned grant', {}, /carries no signature/],
    ['a grant signed by another key', { sig: 'B'.repeat(86) }, /none of the configured keys/],
  ];
  it.each(refused)('refuses %s, nothing of it spendable', (_name, fields, why) => {
    const { keeper } = signedKeeper();
    const ask = askFor(keeper, 20, 0);
    keeper.onReply(ask.seq, grantFor(ask, fields), 1_000);
    expect(keeper.takeRejection()).toMatch(why);
    expect(keeper.slot.takeAt(1, 2_000)).toBe(false);
    expect(keeper.stats).toMatchObject({ tokensGranted: 0, lastErrorCode: 'implausible-grant' });
  });
});
