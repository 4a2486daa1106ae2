/**
 * How the scaling probes drive renewals, alike for the coordinator core
 * (lease-scaling.ts) and the row sketch (row-sketch.ts), so their figures
 * compare: batches of distinct agents picked at random, a virtual clock
 * moving by a fixed step per request, and a warm-up before the timed
 * renewals.
 */
import type { Reply } from '@tokenlease/shared';
import type { Random } from '@tokenlease/shared/testing';
import type { SimulatedAgents } from './simulated-agents.js';

/** BATCH_SIZE — renewals per batch, each by a distinct agent (fewer with fewer agents). */
export const BATCH_SIZE = 500;
/** WARMUP_MS — CPU time renewed before the timed renewals, ms. */
export const WARMUP_MS = 200;
/** VIRTUAL_US_PER_CALL — virtual time per request: 100,000 requests per virtual second. */
export const VIRTUAL_US_PER_CALL = 10;
/** SEED — the probes' random seed (plus the lease count, so each count draws its own agents). */
export const SEED = 2026;
/**
 * HOST_UPTIME_US — where the in-process benches' virtual clock starts: a
 * host up for 30 days, µs. The coordinator's clock is the host's monotonic
 * clock (µs since boot). Past about 36 minutes of uptime its readings no
 * longer fit V8's small integers, so each time a lease or an agent's clock
 * keeps is a heap number of its own, one more object for a renewal to
 * reach. A virtual clock started near zero measured a heap no long-running
 * coordinator has (about a tenth faster at 100k leases).
 */
export const HOST_UPTIME_US = 30 * 86_400 * 1_000_000;

/** distinctPicks — `k` distinct entries of `picks` at random, by a partial Fisher–Yates shuffle of it in place. */
export function distinctPicks(picks: number[], k: number, random: Random): number[] {
  for (let i = 0; i < k; i += 1) {
    const j = i + Math.floor(random.next() * (picks.length - i));
    const t = picks[i] as number;
    picks[i] = picks[j] as number;
    picks[j] = t;
  }
  return picks.slice(0, k);
}

/**
 * batchRequests — each agent of `batch`'s next acquire, its clock reading
 * the virtual time it will be handed over at: the i-th, VIRTUAL_US_PER_CALL
 * × (i + 1) after `nowUs`.
 */
export function batchRequests(agents: SimulatedAgents, batch: readonly number[], nowUs: number): Uint8Array[] {
  return batch.map((index, i) => agents.request(index, Math.floor((nowUs + (i + 1) * VIRTUAL_US_PER_CALL) / 1000)));
}

/**
 * BatchReplies — what each reply of a batch said, noted as it comes, so
 * that no reply object outlives its request. A real adapter encodes and
 * publishes each reply at once. The probes used to keep each batch's 500
 * replies until the batch ended: while the young generation is still small
 * (as the leases are opened), most of them were alive at each scavenge, and
 * in some processes V8 then decided to allocate every later reply directly in
 * the old generation (allocation-site pretenuring): those collected about
 * 0.6 µs a renewal at 100k leases instead of 0.15, and renewed a third
 * slower. Fewer processes did once no reply was kept; none, with
 * pretenuring off as the coordinator's commands run (heap-flags.ts).
 */
export class BatchReplies {
  private readonly seqs = new Float64Array(BATCH_SIZE);
  private readonly held = new Float64Array(BATCH_SIZE);
  private readonly leaseIds: (string | null)[] = new Array<string | null>(BATCH_SIZE).fill(null);
  /** Replies that are not grants, kept whole for the error that names them (none in a run that goes well). */
  private readonly others: (Reply | undefined)[] = new Array<Reply | undefined>(BATCH_SIZE).fill(undefined);

  /** note — the reply to the batch's `i`-th request (in place of anything noted there before). */
  note(i: number, reply: Reply): void {
    if (reply.kind === 'grant') {
      this.seqs[i] = reply.seq;
      this.held[i] = reply.tokensHeld;
      this.leaseIds[i] = reply.leaseId;
      this.others[i] = undefined;
    } else {
      this.leaseIds[i] = null;
      this.others[i] = reply;
    }
  }

  /** settle — hands each agent of `batch` its reply, and forgets them; throws for a request not answered by a grant of it. */
  settle(agents: SimulatedAgents, batch: readonly number[], what: string): void {
    for (const [i, index] of batch.entries()) {
      const leaseId = this.leaseIds[i];
      const other = this.others[i];
      this.leaseIds[i] = null;
      this.others[i] = undefined;
      if (leaseId === null || leaseId === undefined) agents.settle(index, other, what);
      else agents.settleGrant(index, this.seqs[i] as number, leaseId, this.held[i] as number, what);
    }
  }
}
