/**
 * The cost of signed grants (bench part 7): what a coordinator spends to
 * sign one grant (the signed text and an Ed25519 signature, as ReplyLog
 * does as the grant leaves) and what an agent spends to check one (the
 * same text and a verification, as the keeper does with one key).
 */
import { generateKeyPairSync, sign, verify } from 'node:crypto';
import { grantSigningText, type LeaseGrant } from '@tokenlease/shared';
import { timeCalls, type Timing } from './measure.js';

export interface GrantSigningFigures {
  /** ns per grant signed by the coordinator. */
  readonly sign: Timing;
  /** ns per grant checked by the agent. */
  readonly verify: Timing;
}

const GRANT: LeaseGrant = {
  v: 2,
  kind: 'grant',
  seq: 123_456,
  leaseId: '1234567-checkout.host-12-abcdef01',
  tokensGranted: 20,
  tokensHeld: 20,
  ttlMs: 2000,
  epoch: 1_234_567,
  maxLeaseTokens: 100,
  capacityTokens: 1000,
  refillTokens: 1000,
  refillPeriodMs: 1000,
  retryAfterMs: 0,
};
const FOR = { agentId: 'checkout.host-12-abcdef01', pool: 'api' };

/** grantSigningFigures — sign and verify timed over `batches` batches of 100 grants. */
export function grantSigningFigures(batches: number): GrantSigningFigures {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  const sig = sign(null, Buffer.from(grantSigningText(GRANT, FOR)), privateKey);
  let seq = GRANT.seq;
  let valid = 0;
  const signTiming = timeCalls(
    (n) => {
      for (let i = 0; i < n; i += 1) sign(null, Buffer.from(grantSigningText({ ...GRANT, seq: (seq += 1) }, FOR)), privateKey);
    },
    batches,
    100,
  );
  const verifyTiming = timeCalls(
    (n) => {
      for (let i = 0; i < n; i += 1) if (verify(null, Buffer.from(grantSigningText(GRANT, FOR)), publicKey, sig)) valid += 1;
    },
    batches,
    100,
  );
  if (valid === 0) throw new Error('grant signing bench: no signature verified');
  return { sign: signTiming, verify: verifyTiming };
}
