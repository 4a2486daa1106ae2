import { describe, expect, it } from 'vitest';
import { ID_LENGTH_MAX, isProtocolId } from '@tokenlease/shared';
import { movedAgentId } from './moved-id.js';

const SUFFIX = 'AbCdEfGhIjKlMnOp';

/** The coordinator's rule under bindIdentity (coordinator-core.ts, agentOfIdentity), restated. */
const ofIdentity = (agentId: string, identity: string): boolean => agentId === identity || agentId.startsWith(`${identity}.`);

describe('movedAgentId', () => {
  const cases: readonly (readonly [string, string, string])[] = [
    ['a plain id', 'host-12-ab', `host-12-ab.~${SUFFIX}`],
    ['an id under an identity', 'checkout.host-12-ab', `checkout.host-12-ab.~${SUFFIX}`],
    ['the bare identity', 'checkout', `checkout.~${SUFFIX}`],
  ];
  it.each(cases)('%s moves to <id>.~<suffix>, still a protocol id', (_name, agentId, moved) => {
    expect(movedAgentId(agentId, SUFFIX)).toBe(moved);
    expect(isProtocolId(moved)).toBe(true);
    expect(ofIdentity(moved, 'checkout') || !agentId.startsWith('checkout')).toBe(true);
  });

  it('cuts a long id from its end, keeping its identity and the whole suffix', () => {
    const agentId = `checkout.${'x'.repeat(ID_LENGTH_MAX - 9)}`;
    const moved = movedAgentId(agentId, SUFFIX);
    expect(moved).toHaveLength(ID_LENGTH_MAX);
    expect(moved.endsWith(`.~${SUFFIX}`)).toBe(true);
    expect(ofIdentity(moved, 'checkout')).toBe(true);
    expect(isProtocolId(moved)).toBe(true);
  });

  it.each(['', 'short', 'with space in it!', 'x'.repeat(33), 'AbCdEfGhIjKlMn.p'])(
    'refuses a suffix that is not fresh base64url: %j',
    (suffix) => {
      expect(() => movedAgentId('agent-1', suffix)).toThrow(/invariant broken/);
    },
  );
});
