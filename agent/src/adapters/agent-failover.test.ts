/**
 * Agent with `failoverPrefixes`, on a bus where nobody answers on the first
 * prefix and a coordinator stand-in grants on the second: the pool moves
 * there, says so once, and admits from the grant it gets there.
 */
import { describe, expect, it } from 'vitest';
import { TokenleaseError } from '@tokenlease/shared';
import type { Bus } from '@tokenlease/shared/nats';
import { AgentError } from '../errors.js';
import { Agent, type AgentEvent } from './agent.js';
import { grantOf, standInBus } from './bus.fixtures.js';

/** A bus with nobody on `relay.` and a coordinator on `root.`; `subjects` records where each request went. */
function busWithoutRelay(subjects: string[]): Bus {
  return standInBus((subject, req) => {
    subjects.push(subject);
    if (subject.startsWith('relay.')) throw new TokenleaseError('bus-no-responders', `no responders on ${subject}`);
    if (req.op !== 'acquire') throw new Error('only acquires here');
    return grantOf(req.seq, 'R1', 5, 5);
  });
}

describe('Agent failover between coordinators', () => {
  it('moves a pool to the next prefix when nobody answers, and admits from there', async () => {
    const subjects: string[] = [];
    const events: AgentEvent[] = [];
    const agent = await Agent.connect({
      bus: busWithoutRelay(subjects),
      subjectPrefix: 'relay',
      failoverPrefixes: ['root'],
      keeper: { initialTokens: 5, replyTimeoutMs: 50 },
      onEvent: (event) => events.push(event),
    });
    try {
      const limiter = agent.limiter('api');
      expect(await limiter.ready()).toBe(true);
      expect(limiter.tryTake(5)).toBe(true);
      expect(subjects[0]?.startsWith('relay.')).toBe(true);
      expect(subjects[subjects.length - 1]?.startsWith('root.')).toBe(true);
      expect(events.filter((e) => e.type === 'coordinator-moved')).toEqual([{ type: 'coordinator-moved', pool: 'api', prefix: 'root' }]);
    } finally {
      await agent.close({ timeoutMs: 100 });
    }
  });

  it('refuses failover prefixes that are not subject prefixes', async () => {
    const bus = busWithoutRelay([]);
    await expect(Agent.connect({ bus, failoverPrefixes: ['a.*'] })).rejects.toBeInstanceOf(TokenleaseError);
    await expect(Agent.connect({ bus, failoverPrefixes: [5] as unknown as string[] })).rejects.toBeInstanceOf(AgentError);
  });
});
