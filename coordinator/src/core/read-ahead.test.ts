/**
 * Reading ahead: the decodes kept for `receive`, the leases found, and the
 * promise that it changes nothing. Two cores of the fuzzers' configuration
 * (fuzz.fixtures.ts) get the same batches of requests, one reading each
 * batch ahead as the intake loop does, the other not: honest renewals
 * (with clock readings, so agents' clocks are kept and read), retries,
 * returns and reports, another agent's lease id, a made-up one, another
 * secret, bytes that are no request, batches longer than READ_AHEAD_MAX,
 * and requests read ahead but never handled (screening dropped them). Every
 * reply, and the pools' state at the end, must be the same.
 *
 * Replay a failure with `SEED=<n> npx vitest run src/core/read-ahead.test.ts`.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { encodeMessage, type Request } from '@tokenlease/shared';
import { propertySeed } from '@tokenlease/shared/testing';
import { CoordinatorCore } from './coordinator-core.js';
import {
  acquireOf,
  CHUNK_TEMPLATE,
  FIXED_POOLS,
  fuzzConfig,
  giveBackOf,
  honestAgents,
  QUIET_MS,
  RUNS,
  secretOf,
  snapshot,
  subjectOf,
  TIME_LIMIT_MS,
  type HonestAgent,
} from './fuzz.fixtures.js';
import { LeaseTable } from './lease-table.js';
import type { Delivery } from './pool.js';
import { READ_AHEAD_MAX, ReadAhead } from './read-ahead.js';

const POOLS = [...FIXED_POOLS, `${CHUNK_TEMPLATE}a`];
const START_US = 5_000_000_000;

const renewal = (agentId: string, leaseId: string | null, pool = 'c'): Uint8Array =>
  encodeMessage({
    v: 2,
    op: 'acquire',
    agentId,
    pool,
    leaseSecret: secretOf(agentId),
    seq: 2,
    leaseId,
    tokensLeft: 0,
    tokensWanted: 5,
    demandPerSecond: 10,
    holdMs: 0,
  });

describe('ReadAhead', () => {
  it('keeps each decode for one take, in order, until the next batch; nothing past READ_AHEAD_MAX', () => {
    const ahead = new ReadAhead();
    const payloads = Array.from({ length: READ_AHEAD_MAX + 2 }, (_, i) => renewal(`agent-${i}`, null));
    ahead.read(payloads, () => undefined);
    const first = ahead.take(payloads[0] as Uint8Array);
    expect(first).toMatchObject({ ok: true, value: { agentId: 'agent-0' } });
    expect(ahead.take(payloads[0] as Uint8Array)).toBeNull();
    // One skipped (screening dropped it) is passed over.
    expect(ahead.take(payloads[2] as Uint8Array)).toMatchObject({ ok: true, value: { agentId: 'agent-2' } });
    expect(ahead.take(payloads[READ_AHEAD_MAX] as Uint8Array)).toBeNull();
    expect(ahead.take(renewal('agent-3', null))).toBeNull();
    const next = [renewal('other', null)];
    ahead.read(next, () => undefined);
    expect(ahead.take(payloads[3] as Uint8Array)).toBeNull();
    expect(ahead.take(next[0] as Uint8Array)).toMatchObject({ ok: true, value: { agentId: 'other' } });
  });

  it('keeps a failed decode as it is, for receive to refuse', () => {
    const ahead = new ReadAhead();
    const junk = new TextEncoder().encode('{"v":2,"op":');
    ahead.read([junk], () => undefined);
    expect(ahead.take(junk)).toMatchObject({ ok: false, code: 'bad-request' });
  });

  it('reads the leases in the rows the requests’ ids name, and nothing for other ids, pools or ops', () => {
    const table = new LeaseTable('c.');
    const records = Array.from({ length: 3 }, (_, i) => table.open(`agent-${i}`, secretOf(`agent-${i}`), 1, START_US, 'id'));
    const ahead = new ReadAhead();
    const leasesOf = (pool: string): LeaseTable | undefined => (pool === 'c' ? table : undefined);
    const status = encodeMessage({ v: 2, op: 'status', pool: 'c', agentId: 'agent-0' });
    ahead.read(
      [
        renewal('agent-0', records[0]?.leaseId ?? null),
        // Another agent's lease id still names a row: it is read (find decides whose it is).
        renewal('agent-1', records[2]?.leaseId ?? null),
        renewal('agent-2', 'c.zz.000000000000'),
        renewal('agent-2', null),
        renewal('agent-0', records[0]?.leaseId ?? null, 'elsewhere'),
        status,
      ],
      leasesOf,
    );
    expect(ahead.leasesRead).toBe(2);
  });
});

/** Step — one request of a batch: who sends it and how it is made. */
interface Step {
  readonly agent: number;
  readonly kind: 'renew' | 'retry' | 'return' | 'report' | 'other-lease' | 'made-up-lease' | 'other-secret' | 'junk' | 'dropped';
  readonly afterUs: number;
}

const stepArb: fc.Arbitrary<Step> = fc.record({
  agent: fc.nat({ max: 8 }),
  kind: fc.constantFrom(
    'renew',
    'renew',
    'renew',
    'retry',
    'return',
    'report',
    'other-lease',
    'made-up-lease',
    'other-secret',
    'junk',
    'dropped',
  ),
  afterUs: fc.integer({ min: 0, max: 40_000 }),
});
const batchesArb = fc.array(fc.array(stepArb, { minLength: 1, maxLength: READ_AHEAD_MAX + 8 }), { minLength: 1, maxLength: 12 });

/** Twins — two cores fed alike, one reading each batch ahead. */
class Twins {
  private readonly ahead = new CoordinatorCore<number>(fuzzConfig(false, 0), 3, START_US);
  private readonly plain = new CoordinatorCore<number>(fuzzConfig(false, 0), 3, START_US);
  private readonly agents: HonestAgent[] = honestAgents(POOLS, 3, [undefined, 'gold']);
  /** The agent of each request sent, by its reply target. */
  private readonly senders: HonestAgent[] = [];
  private nowUs = START_US + (QUIET_MS + 1) * 1000;
  handled = 0;
  /** Grants of a lease its agent named (renewals), which read ahead found in its row. */
  renewed = 0;

  run(batches: readonly (readonly Step[])[]): void {
    for (const batch of batches) {
      const sent = batch.map((step) => this.request(step));
      this.ahead.readAhead(sent.map((s) => s.payload));
      for (const [i, s] of sent.entries()) {
        this.nowUs += batch[i]?.afterUs ?? 0;
        if (s.dropped) continue;
        const to = this.senders.length;
        this.senders.push(s.agent);
        this.same(this.ahead.receive(s.subject, s.payload, to, this.nowUs), this.plain.receive(s.subject, s.payload, to, this.nowUs));
        this.handled += 1;
      }
      this.nowUs += 1_000;
      this.same(this.ahead.tick(this.nowUs), this.plain.tick(this.nowUs));
    }
    expect(snapshot(this.ahead, POOLS, this.nowUs)).toBe(snapshot(this.plain, POOLS, this.nowUs));
  }

  /** same — the two cores' deliveries must be equal; grants teach their agents the lease id. */
  private same(ahead: Delivery<number>[], plain: Delivery<number>[]): void {
    expect(JSON.stringify(ahead)).toBe(JSON.stringify(plain));
    for (const d of plain) {
      const agent = this.senders[d.to];
      if (agent !== undefined && d.reply.kind === 'grant') {
        if (agent.leaseId === d.reply.leaseId) this.renewed += 1;
        agent.leaseId = d.reply.leaseId;
      }
      if (agent !== undefined && d.reply.kind === 'error' && d.reply.seqFloor !== undefined) agent.seq = d.reply.seqFloor;
    }
  }

  private request(step: Step): { agent: HonestAgent; subject: string; payload: Uint8Array; dropped: boolean } {
    const agent = this.agents[step.agent % this.agents.length] as HonestAgent;
    const other = this.agents[(step.agent + 1) % this.agents.length] as HonestAgent;
    const clockMs = Math.floor(this.nowUs / 1000) + 7 * step.agent;
    let req: Request;
    switch (step.kind) {
      case 'retry':
        agent.seq -= 1;
        req = { ...acquireOf(agent, 0, 5, 0), clockMs };
        break;
      case 'return':
      case 'report':
        req = agent.leaseId === null ? { ...acquireOf(agent, 0, 5, 0), clockMs } : giveBackOf(agent, step.kind, 0);
        if (step.kind === 'return' && agent.leaseId !== null) agent.leaseId = null;
        break;
      case 'other-lease':
        req = { ...acquireOf(agent, 0, 5, 0), leaseId: other.leaseId, clockMs };
        break;
      case 'made-up-lease':
        req = { ...acquireOf(agent, 0, 5, 0), leaseId: `${agent.pool}.3.00000000z${step.agent}`, clockMs };
        break;
      case 'other-secret':
        req = { ...acquireOf(agent, 0, 5, 0), leaseSecret: other.secret, clockMs };
        break;
      default:
        req = { ...acquireOf(agent, 2, 10, step.agent % 3 === 0 ? 50 : 0), clockMs };
    }
    const subject = subjectOf(req, agent.identity);
    if (step.kind === 'junk')
      return { agent, subject, payload: new TextEncoder().encode(`{"v":2,"op":"acquire","seq":${agent.seq}`), dropped: false };
    return { agent, subject, payload: encodeMessage(req), dropped: step.kind === 'dropped' };
  }
}

describe('CoordinatorCore.readAhead', () => {
  it('changes no reply and no state: batches read ahead are answered as batches that were not', { timeout: 2 * TIME_LIMIT_MS }, () => {
    const seed = propertySeed('src/core/read-ahead.test.ts');
    let [handled, renewed] = [0, 0];
    fc.assert(
      fc.property(batchesArb, (batches) => {
        const twins = new Twins();
        twins.run(batches);
        handled += twins.handled;
        renewed += twins.renewed;
      }),
      { seed, numRuns: RUNS, interruptAfterTimeLimit: TIME_LIMIT_MS },
    );
    console.log(`read-ahead: ${handled} requests handled, ${renewed} renewals granted`);
    expect(renewed).toBeGreaterThan(RUNS);
  });
});
