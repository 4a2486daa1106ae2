/**
 * Simulated agents for the coordinator benchmarks: each with its own agent
 * id and lease secret, a demand, and what its last grant said (lease id,
 * tokens held), so that its next acquire is a well-formed renewal of its
 * own lease. lease-scaling.ts hands their requests to the core in process;
 * compare/capacity.ts sends them over NATS to a coordinator process.
 */
import { encodeMessage, type LeaseRequest, type Reply } from '@tokenlease/shared';
import type { Random } from '@tokenlease/shared/testing';

/** An agent's view of its lease: what its next renewal says. */
interface AgentLease {
  readonly agentId: string;
  readonly secret: string;
  readonly demandPerSecond: number;
  seq: number;
  leaseId: string | null;
  tokensHeld: number;
}

/** SimulatedAgents — `n` agents of one pool, demands drawn from [1, demandMax] per second. */
export class SimulatedAgents {
  private readonly agents: AgentLease[] = [];

  constructor(
    n: number,
    random: Random,
    private readonly pool: string,
    demandMax: number,
  ) {
    for (let i = 0; i < n; i += 1) {
      const agentId = `agent-${i}`;
      const secret = `s${i.toString(36).padStart(23, '0')}`;
      this.agents.push({ agentId, secret, demandPerSecond: random.int(1, demandMax), seq: 0, leaseId: null, tokensHeld: 0 });
    }
  }

  /** opened — agents holding a lease. */
  get opened(): number {
    return this.agents.filter((a) => a.leaseId !== null).length;
  }

  /**
   * request — agent `index`'s next acquire, encoded: it spent a tenth of
   * what it held and wants a little more. `clockMs` is its clock's reading,
   * ms, which a real agent sends with every acquire (so the pool's clock
   * check runs on each, as it does by default).
   */
  request(index: number, clockMs: number): Uint8Array {
    const a = this.agent(index);
    a.seq += 1;
    const req: LeaseRequest = {
      v: 2,
      op: 'acquire',
      agentId: a.agentId,
      pool: this.pool,
      leaseSecret: a.secret,
      seq: a.seq,
      leaseId: a.leaseId,
      tokensLeft: a.tokensHeld - Math.floor(a.tokensHeld / 10),
      tokensWanted: 100,
      demandPerSecond: a.demandPerSecond,
      holdMs: 0,
      clockMs,
    };
    return encodeMessage(req);
  }

  /** settle — records the reply to agent `index`'s last request; throws unless it is a grant of that request (`what` names the run). */
  settle(index: number, reply: Reply | undefined, what: string): void {
    if (reply === undefined || reply.kind !== 'grant') {
      const a = this.agent(index);
      throw new Error(`${what}: ${a.agentId} seq ${a.seq} got ${JSON.stringify(reply)}`);
    }
    this.settleGrant(index, reply.seq, reply.leaseId, reply.tokensHeld, what);
  }

  /** settleGrant — records a grant to agent `index` of `seq`, of lease `leaseId`, `tokensHeld` after it; throws unless `seq` is its last request's. */
  settleGrant(index: number, seq: number, leaseId: string, tokensHeld: number, what: string): void {
    const a = this.agent(index);
    if (seq !== a.seq) throw new Error(`${what}: ${a.agentId} seq ${a.seq} got a grant of seq ${seq}`);
    a.leaseId = leaseId;
    a.tokensHeld = tokensHeld;
  }

  private agent(index: number): AgentLease {
    const a = this.agents[index];
    if (a === undefined) throw new Error(`no simulated agent ${index}`);
    return a;
  }
}
