/**
 * BatchReplies hands each simulated agent what its grant said, so its
 * next request renews that lease, and refuses, naming the agent, a batch
 * whose request got no grant, another kind of reply, or a grant of an
 * older request.
 */
import { describe, expect, it } from 'vitest';
import { decodeRequest, type LeaseGrant, type Reply } from '@tokenlease/shared';
import { seededRandom } from '@tokenlease/shared/testing';
import { BatchReplies } from './renewal-batches.js';
import { SimulatedAgents } from './simulated-agents.js';

/** requestOf — agent `index`'s next request, decoded. */
function requestOf(agents: SimulatedAgents, index: number): { seq: number; leaseId: string | null; tokensLeft: number } {
  const decoded = decodeRequest(agents.request(index, 1));
  if (!decoded.ok || decoded.value.op !== 'acquire') throw new Error('not an acquire');
  return decoded.value;
}

function grantOf(seq: number, leaseId: string, tokensHeld: number): LeaseGrant {
  return {
    v: 2,
    kind: 'grant',
    seq,
    leaseId,
    tokensGranted: tokensHeld,
    tokensHeld,
    ttlMs: 1000,
    epoch: 1,
    maxLeaseTokens: 1000,
    capacityTokens: 1000,
    refillTokens: 1000,
    refillPeriodMs: 1000,
    retryAfterMs: 0,
  };
}

describe('BatchReplies', () => {
  it('settles each agent on its grant: its next request names that lease, the next seq and a tenth less than it held', () => {
    const agents = new SimulatedAgents(3, seededRandom(1), 'p', 10);
    const replies = new BatchReplies();
    const batch = [2, 0];
    const seqs = batch.map((index) => requestOf(agents, index).seq);
    replies.note(1, grantOf(seqs[1] as number, 'lease-a', 50));
    replies.note(0, grantOf(seqs[0] as number, 'lease-c', 100));
    replies.settle(agents, batch, 'test');
    expect(requestOf(agents, 2)).toMatchObject({ seq: (seqs[0] as number) + 1, leaseId: 'lease-c', tokensLeft: 90 });
    expect(requestOf(agents, 0)).toMatchObject({ seq: (seqs[1] as number) + 1, leaseId: 'lease-a', tokensLeft: 45 });
    expect(requestOf(agents, 1)).toMatchObject({ seq: 1, leaseId: null });
  });

  it('refuses a request left unanswered, in the next batch too: what it noted is forgotten once settled', () => {
    const agents = new SimulatedAgents(2, seededRandom(1), 'p', 10);
    const replies = new BatchReplies();
    replies.note(0, grantOf(requestOf(agents, 0).seq, 'lease-a', 10));
    replies.settle(agents, [0], 'test');
    requestOf(agents, 0);
    expect(() => replies.settle(agents, [0], 'test')).toThrow('test: agent-0 seq 2 got undefined');
  });

  it('refuses a reply that is not a grant, and a grant of an older request', () => {
    const agents = new SimulatedAgents(2, seededRandom(1), 'p', 10);
    const replies = new BatchReplies();
    const seq = requestOf(agents, 1).seq;
    const refusal: Reply = { v: 2, kind: 'error', seq, code: 'unavailable', fault: 'coordinator', message: 'no', retryAfterMs: 5 };
    replies.note(0, refusal);
    expect(() => replies.settle(agents, [1], 'test')).toThrow(/test: agent-1 seq 1 got .*"unavailable"/);
    replies.note(0, grantOf(seq, 'lease-b', 10));
    replies.settle(agents, [1], 'test');
    requestOf(agents, 1);
    replies.note(0, grantOf(seq, 'lease-b', 10));
    expect(() => replies.settle(agents, [1], 'test')).toThrow('test: agent-1 seq 2 got a grant of seq 1');
  });
});
