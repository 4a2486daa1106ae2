/**
 * Property: a tree of one root coordinator, relays and honest agents (under
 * the relays and on the root directly) never admits more than the root's
 * B + r·T (a window pool: N in any window of W), checked over every
 * admission of the tree after every admission,
 * through message loss and delay, relay crashes (a crashed relay's state
 * is dropped and a new incarnation starts on the same prefix; its agents
 * keep what they hold until their own leases end) and relay reloads (the
 * pool's TTL, lease size and hold changed, or the pool removed and
 * configured again later). Each relay is the relay driver the service
 * runs (relay-driver.ts), its commands carried out here.
 *
 * Randomised by fast-check from a printed seed: `SEED=<n>` replays a run,
 * `RUNS=<n>` changes the number of runs.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { decodeReply, encodeMessage, subjectFor, type LeaseRequest, type LeaseReturn, type Reply, type Request } from '@tokenlease/shared';
import { EnvelopeWatch, propertySeed, seededRandom, WindowWatch, type Random } from '@tokenlease/shared/testing';
import { parseCoordinatorConfig } from './config.js';
import { CoordinatorCore } from './coordinator-core.js';
import type { Delivery } from './pool.js';
import { parseRelayConfig, type RelayConfig } from './relay-config.js';
import type { UplinkIdentity } from './relay-core.js';
import { RelayDriver, type RelayCommand } from './relay-driver.js';

const RUNS = Number(process.env['RUNS'] ?? 100);
const MS = 1000;
const POOL = 'api';
const SECRET = 'sim-agent-secret-0123456789';
const DRIFT_MARGIN = 0.1;

interface Scenario {
  readonly seed: number;
  readonly capacity: number;
  /** Refill per second, in capacities: the level fills within a second of idleness. */
  readonly refillFactor: number;
  readonly rootTtlMs: number;
  readonly relayTtlMs: number;
  readonly rootLeaseShare: number;
  readonly relays: number;
  readonly agentsPerRelay: number;
  readonly rootAgents: number;
  readonly loss: number;
  readonly crashPerMille: number;
  readonly reloadPerMille: number;
  readonly steps: number;
  /** Relays after the first lease from the first one, not from the root: a tree of two levels. */
  readonly nested: boolean;
  /** A sliding-window pool (at most `capacity` in every window of 1 s / refillFactor) rather than a bucket. */
  readonly window: boolean;
  /** The pool made from a template (`ap*`) at the root and at the relays, which forget it when idle and return its upstream lease. */
  readonly templates: boolean;
}

const scenarioArb: fc.Arbitrary<Scenario> = fc.record({
  seed: fc.integer({ min: 0, max: 2 ** 31 - 1 }),
  capacity: fc.integer({ min: 10, max: 100 }),
  refillFactor: fc.integer({ min: 1, max: 10 }),
  rootTtlMs: fc.integer({ min: 100, max: 1000 }),
  relayTtlMs: fc.integer({ min: 50, max: 1000 }),
  rootLeaseShare: fc.integer({ min: 2, max: 10 }),
  relays: fc.integer({ min: 1, max: 3 }),
  agentsPerRelay: fc.integer({ min: 1, max: 4 }),
  rootAgents: fc.integer({ min: 0, max: 2 }),
  loss: fc.constantFrom(0, 0.02, 0.1, 0.3),
  crashPerMille: fc.constantFrom(0, 1, 5),
  reloadPerMille: fc.constantFrom(0, 2, 10),
  steps: fc.integer({ min: 1000, max: 4000 }),
  nested: fc.boolean(),
  window: fc.integer({ min: 0, max: 2 }).map((n) => n === 0),
  templates: fc.integer({ min: 0, max: 2 }).map((n) => n === 0),
});

/** TEMPLATE — the template key the agents' pool POOL is made from when a scenario says `templates`. */
const TEMPLATE = 'ap*';

/** limitsOf — a scenario's pool limits as configuration fields: a window, or capacity and refill. */
function limitsOf(sc: Scenario): Record<string, unknown> {
  const perSecond = sc.capacity * sc.refillFactor;
  return sc.window
    ? { window: { limit: sc.capacity, windowMs: Math.floor(1000 / sc.refillFactor) } }
    : { capacity: sc.capacity, refill: `${perSecond}/s` };
}

/** Where a reply goes: the node that sent the request. */
type Answer = (reply: Reply) => void;

/** A message in flight: delivered at `atUs` unless the node it goes to has gone. */
interface Message {
  readonly atUs: number;
  readonly run: () => void;
}

/** An honest agent: keeps one lease, stops at first send + TTL × (1 − margin), spends one token at a time. */
class SimAgent {
  private seq = 0;
  private lease: { leaseId: string; tokens: number; expiryUs: number } | null = null;
  private inFlight: { seq: number; firstSendUs: number; lastSendUs: number; request: Request } | null = null;
  /** How likely a step spends (some agents are slow, so a lease may still hold tokens near its end). */
  private readonly spendChance: number;

  constructor(
    readonly id: string,
    readonly prefix: string,
    private readonly rnd: Random,
    private readonly send: (agent: SimAgent, subject: string, request: Request) => void,
    private readonly admit: (nowUs: number) => void,
  ) {
    this.spendChance = rnd.next() < 0.5 ? 1 : 0.02 + rnd.next() / 4;
  }

  /** step — at `nowUs`; `busy`: whether there is work to admit (the tree goes idle in phases, so levels fill to B). */
  step(nowUs: number, busy: boolean): void {
    if (this.lease !== null && nowUs >= this.lease.expiryUs) this.lease = null;
    // Idle, it spends nothing and opens no lease, but keeps one it holds alive.
    if (!busy && this.lease === null && this.inFlight === null) return;
    // Up to 4 tokens a step, so the tree presses on the envelope.
    for (
      let n = busy && this.rnd.next() < this.spendChance ? this.rnd.int(1, 4) : 0;
      this.lease !== null && this.lease.tokens > 0 && n > 0;
      n -= 1
    ) {
      this.lease.tokens -= 1;
      this.admit(nowUs);
    }
    const f = this.inFlight;
    if (f !== null) {
      if (nowUs - f.firstSendUs > 300 * MS) this.inFlight = null;
      else if (nowUs - f.lastSendUs > 80 * MS) {
        f.lastSendUs = nowUs;
        this.send(this, subjectFor(this.prefix, f.request.op, POOL), f.request);
      }
      return;
    }
    if (this.lease !== null && this.rnd.next() < 0.01) {
      this.seq += 1;
      const { leaseId, tokens } = this.lease;
      const request: Request = {
        v: 2,
        op: 'return',
        agentId: this.id,
        pool: POOL,
        leaseSecret: SECRET,
        seq: this.seq,
        leaseId,
        tokensLeft: tokens,
      };
      this.lease = null;
      this.send(this, subjectFor(this.prefix, 'return', POOL), request);
      return;
    }
    const ending = this.lease !== null && this.lease.expiryUs - nowUs < 30 * MS;
    if (this.lease !== null && this.lease.tokens >= 3 && !ending && this.rnd.next() < 0.95) return;
    this.seq += 1;
    const request: Request = {
      v: 2,
      op: 'acquire',
      agentId: this.id,
      pool: POOL,
      leaseSecret: SECRET,
      seq: this.seq,
      leaseId: this.lease?.leaseId ?? null,
      tokensLeft: this.lease?.tokens ?? 0,
      tokensWanted: this.rnd.int(1, 30),
      demandPerSecond: this.rnd.int(0, 200),
      holdMs: this.rnd.next() < 0.5 ? 0 : 40,
    };
    this.inFlight = { seq: this.seq, firstSendUs: nowUs, lastSendUs: nowUs, request };
    this.send(this, subjectFor(this.prefix, 'acquire', POOL), request);
  }

  onReply(reply: Reply): void {
    const f = this.inFlight;
    if (f === null || !('seq' in reply) || reply.seq !== f.seq) return;
    this.inFlight = null;
    if (reply.kind === 'error') {
      if (reply.seqFloor !== undefined) this.seq = Math.max(this.seq, reply.seqFloor);
      return;
    }
    if (reply.kind !== 'grant') return;
    const expiryUs = f.firstSendUs + Math.floor(reply.ttlMs * MS * (1 - DRIFT_MARGIN));
    if (this.lease !== null && this.lease.leaseId === reply.leaseId) {
      this.lease.tokens += reply.tokensGranted;
      this.lease.expiryUs = Math.max(this.lease.expiryUs, expiryUs);
    } else this.lease = { leaseId: reply.leaseId, tokens: reply.tokensGranted, expiryUs };
    if (this.lease.tokens > reply.tokensHeld) throw new Error(`agent ${this.id} holds ${this.lease.tokens} > ${reply.tokensHeld}`);
  }
}

class Tree {
  nowUs = 0;
  private readonly rnd: Random;
  private readonly watch: EnvelopeWatch;
  /** Window pools: at most N in every window of W, over every admission of the tree. */
  private readonly windows: WindowWatch | null;
  private readonly root: CoordinatorCore<Answer>;
  private readonly relays: RelayDriver<Answer>[] = [];
  private readonly incarnations: number[] = [];
  private readonly agents: SimAgent[] = [];
  private messages: Message[] = [];
  /** Whether the agents have work: phases of a few hundred ms, idle ones letting every level fill. */
  private busy = true;
  private phaseEndUs = 0;
  admitted = 0;
  /** The closest any window came to the envelope, tokens (≤ 0 while it holds). */
  closest = -Infinity;
  /** Admissions of agents under a relay. */
  relayed = 0;
  crashes = 0;
  reloads = 0;
  /** Window pools: the fullest window seen, as a fraction of N. */
  fullestWindow = 0;
  /** Upstream leases the relays returned (pools forgotten). */
  upstreamReturns = 0;

  constructor(private readonly sc: Scenario) {
    this.rnd = seededRandom(sc.seed);
    const pool = limitsOf(sc);
    const rootPool = {
      ...pool,
      leaseTtlMs: sc.rootTtlMs,
      maxLeaseTokens: Math.max(1, Math.floor(sc.capacity / sc.rootLeaseShare)),
      minGrantTokens: 1,
      maxHoldMs: Math.floor(sc.rootTtlMs / 4),
    };
    const rootConfig = parseCoordinatorConfig(
      'root.yaml',
      sc.templates
        ? { subjectPrefix: 'root', templates: { [TEMPLATE]: rootPool } }
        : { subjectPrefix: 'root', pools: { [POOL]: rootPool } },
    );
    this.root = new CoordinatorCore(rootConfig, 1, 0);
    const refill = (rootConfig.pools[0] ?? rootConfig.templates[0]!.pool).refill;
    this.watch = new EnvelopeWatch(sc.capacity, refill);
    this.windows = sc.window ? new WindowWatch(sc.capacity, refill.periodMs * MS) : null;
    for (let i = 0; i < sc.relays; i += 1) {
      this.incarnations.push(0);
      this.relays.push(this.makeRelay(i));
      for (let j = 0; j < sc.agentsPerRelay; j += 1) this.addAgent(`a${i}.${j}`, `relay${i}`);
    }
    for (let j = 0; j < sc.rootAgents; j += 1) this.addAgent(`root.${j}`, 'root');
  }

  /** relayConfig — relay `i`'s configuration: its pool with `ttlMs` and `maxLeaseTokens`, or none (`pool` null). */
  private relayConfig(i: number, pool: { readonly ttlMs: number; readonly maxLeaseTokens: number } | null): RelayConfig {
    const sc = this.sc;
    const fields =
      pool === null
        ? null
        : {
            ...limitsOf(sc),
            leaseTtlMs: pool.ttlMs,
            maxLeaseTokens: pool.maxLeaseTokens,
            minGrantTokens: 1,
            maxHoldMs: Math.min(30, Math.floor(pool.ttlMs / 4)),
          };
    // A relay serves one pool at least: without the agents' pool it serves one the root does not have.
    const unused = { unused: { capacity: 10, refill: '10/s' } };
    // A template pool is forgotten after one to two TTLs idle, and made again at the next request.
    const served =
      fields === null
        ? { pools: unused }
        : sc.templates
          ? { pools: unused, templates: { [TEMPLATE]: { ...fields, idleEvictMs: this.rnd.int(fields.leaseTtlMs, 2 * fields.leaseTtlMs) } } }
          : { pools: { [POOL]: fields } };
    return parseRelayConfig('relay.yaml', {
      upstreamPrefix: this.upstreamOf(i),
      subjectPrefix: `relay${i}`,
      ...served,
      uplink: { driftMargin: DRIFT_MARGIN, holdMs: 20, replyTimeoutMs: 60, refreshMs: 200 },
    });
  }

  private makeRelay(i: number): RelayDriver<Answer> {
    const sc = this.sc;
    const config = this.relayConfig(i, { ttlMs: sc.relayTtlMs, maxLeaseTokens: Math.max(1, Math.floor(sc.capacity / 10)) });
    const incarnation = this.incarnations[i]!;
    const identityOf = (): UplinkIdentity => ({
      agentId: `relay.${i}.${incarnation}.${this.rnd.int(0, 1e9)}`,
      leaseSecret: 'relay-secret-0123456789abcdef',
    });
    return new RelayDriver<Answer>({ config, epoch: 100 + i * 1000 + incarnation, startUs: this.nowUs, identityOf });
  }

  /** upstreamOf — the prefix relay `i` leases from: the root, or (nested) the first relay. */
  private upstreamOf(i: number): string {
    return this.sc.nested && i > 0 ? 'relay0' : 'root';
  }

  /** nestedCount — relays leasing from another relay. */
  get nestedCount(): number {
    return this.sc.nested ? Math.max(0, this.relays.length - 1) : 0;
  }

  private addAgent(id: string, prefix: string): void {
    const agent = new SimAgent(
      id,
      prefix,
      this.rnd,
      (a, subject, request) => this.sendDown(a, subject, request),
      (nowUs) => {
        this.admitted += 1;
        if (prefix !== 'root') this.relayed += 1;
        this.closest = Math.max(this.closest, this.watch.admit(nowUs, 1));
        if (this.watch.violations > 0) throw new Error(`envelope broken at ${nowUs} µs: ${JSON.stringify(this.watch.worstWindow)}`);
        if (this.windows !== null) {
          this.windows.admit(nowUs, 1);
          if (this.windows.violations > 0) throw new Error(`window over N at ${nowUs} µs: ${JSON.stringify(this.windows.fullest)}`);
          if (this.windows.fullest !== null)
            this.fullestWindow = Math.max(this.fullestWindow, this.windows.fullest.admittedTokens / this.sc.capacity);
        }
      },
    );
    this.agents.push(agent);
  }

  /** post — `run` happens after a random delay, unless lost. */
  private post(run: () => void): void {
    if (this.rnd.next() < this.sc.loss) return;
    this.messages.push({ atUs: this.nowUs + this.rnd.int(0, 8 * MS), run });
  }

  private deliverAll(out: Delivery<Answer>[]): void {
    for (const d of out) {
      const reply = decodeReply(encodeMessage(d.reply));
      if (!reply.ok) throw new Error(reply.message);
      this.post(() => d.to(reply.value));
    }
  }

  private sendDown(agent: SimAgent, subject: string, request: Request): void {
    const payload = encodeMessage(request);
    const answer: Answer = (reply) => agent.onReply(reply);
    this.post(() => {
      if (agent.prefix === 'root') this.deliverAll(this.root.receive(subject, payload, answer, this.nowUs));
      else {
        const i = Number(agent.prefix.slice(5));
        this.carry(i, this.relays[i]!.request(subject, payload, answer, this.nowUs));
      }
    });
  }

  /** carry — relay `i`'s commands carried out: replies delivered, upstream requests sent, a fault thrown; it ticks every step, so wakes wait. */
  private carry(i: number, commands: readonly RelayCommand<Answer>[]): void {
    const relay = this.relays[i]!;
    for (const c of commands) {
      if (c.kind === 'reply') this.deliverAll(c.deliveries);
      else if (c.kind === 'send-upstream') {
        if (c.message.op === 'return') this.upstreamReturns += 1;
        this.sendUp(i, relay, c.message);
      } else if (c.kind === 'faults') throw c.faults[0]!.error;
    }
  }

  private sendUp(i: number, relay: RelayDriver<Answer>, request: LeaseRequest | LeaseReturn): void {
    const payload = encodeMessage(request);
    const answer: Answer = (reply) => {
      if (this.relays[i] !== relay) return; // crashed since
      this.carry(i, relay.upstreamReply(request, reply, this.nowUs));
    };
    const upstream = this.upstreamOf(i);
    this.post(() => {
      const subject = subjectFor(upstream, request.op, request.pool);
      if (upstream === 'root') this.deliverAll(this.root.receive(subject, payload, answer, this.nowUs));
      else {
        this.carry(0, this.relays[0]!.request(subject, payload, answer, this.nowUs));
      }
    });
  }

  /** reload — relay `i` takes a new configuration: its pool's TTL, lease size and hold changed, or the pool removed (or back). */
  private reload(i: number, driver: RelayDriver<Answer>): void {
    const relay = driver.relay;
    const configured = relay.config.downstream.pools.some((p) => p.name === POOL) || relay.config.downstream.templates.length > 0;
    const pool =
      configured && this.rnd.next() < 0.3 ? null : { ttlMs: this.rnd.int(50, 1000), maxLeaseTokens: this.rnd.int(1, this.sc.capacity) };
    const config = this.relayConfig(i, pool);
    expect(relay.reconfigureProblem(config)).toBeNull();
    this.reloads += 1;
    this.carry(i, driver.reconfigure(config, this.nowUs).commands);
  }

  step(): void {
    this.nowUs += this.rnd.int(0, 3 * MS);
    const due = this.messages.filter((m) => m.atUs <= this.nowUs).sort((a, b) => a.atUs - b.atUs);
    this.messages = this.messages.filter((m) => m.atUs > this.nowUs);
    for (const m of due) m.run();
    this.deliverAll(this.root.tick(this.nowUs));
    this.relays.forEach((relay, i) => {
      if (this.rnd.next() * 1000 < this.sc.crashPerMille) {
        this.crashes += 1;
        this.incarnations[i]! += 1;
        this.relays[i] = this.makeRelay(i);
        return;
      }
      if (this.rnd.next() * 1000 < this.sc.reloadPerMille) this.reload(i, relay);
      this.carry(i, relay.tick(this.nowUs));
    });
    if (this.nowUs >= this.phaseEndUs) {
      this.busy = this.rnd.next() < 0.6;
      this.phaseEndUs = this.nowUs + this.rnd.int(20, 600) * MS;
    }
    for (const agent of this.agents) agent.step(this.nowUs, this.busy);
    expect(this.root.takeFaults()).toEqual([]);
  }
}

describe('a tree of relays under a root coordinator', () => {
  it(
    'never admits more than the root’s B + r·T over every admission of the tree, one level of relays or two, through crashes and reloads',
    { timeout: Math.max(120_000, RUNS * 2000) },
    () => {
      const seed = propertySeed('src/core/relay-property.test.ts');
      let admitted = 0;
      let crashes = 0;
      let reloads = 0;
      let relayed = 0;
      let closest = -Infinity;
      let nestedRuns = 0;
      let windowRuns = 0;
      let templateRuns = 0;
      let upstreamReturns = 0;
      let fullest = 0;
      fc.assert(
        fc.property(scenarioArb, (sc) => {
          const tree = new Tree(sc);
          for (let s = 0; s < sc.steps; s += 1) tree.step();
          admitted += tree.admitted;
          crashes += tree.crashes;
          reloads += tree.reloads;
          relayed += tree.relayed;
          closest = Math.max(closest, tree.closest);
          if (tree.nestedCount > 0) nestedRuns += 1;
          if (sc.window) windowRuns += 1;
          if (sc.templates) templateRuns += 1;
          upstreamReturns += tree.upstreamReturns;
          fullest = Math.max(fullest, tree.fullestWindow);
        }),
        { seed, numRuns: RUNS },
      );
      console.log(
        `relay-property: ${RUNS} runs (${nestedRuns} with relays under a relay), ${admitted} admissions (${relayed} under relays), ${crashes} relay crashes, ${reloads} relay reloads; closest window ${closest} tokens from the envelope; ${windowRuns} runs of window pools, fullest window ${fullest.toFixed(2)} of N; ${templateRuns} runs of template pools, ${upstreamReturns} upstream leases returned`,
      );
      expect(relayed).toBeGreaterThan(0);
      expect(nestedRuns).toBeGreaterThan(0);
      expect(reloads).toBeGreaterThan(0);
      expect(windowRuns).toBeGreaterThan(0);
      expect(upstreamReturns).toBeGreaterThan(0);
    },
  );
});
