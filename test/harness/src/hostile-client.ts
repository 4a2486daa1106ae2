/**
 * A hostile (or merely buggy) client in a child process. It speaks the
 * protocol over a plain bus, not as an Agent, and runs one attack until
 * SIGTERM or `durationMs`:
 *
 *   node hostile-client.js '<json HostileConfig>'
 *
 * stdout, one JSON object a line: {"type":"ready"} once connected, then
 * {"type":"done","sent":n,"replies":{<code or kind>: count}} at the end.
 *
 * Attacks:
 * - `return-as`, `report-as`, `acquire-as`: messages in the victim's name
 *   about its live lease (its id read from `status`), under a secret of the
 *   attacker's; `acquire-as` with a sequence near 2^53.
 * - `hoard`: `identities` agents, each holding a lease of `tokens` and
 *   renewing it every 50 ms without spending anything; `betweenHolds`:
 *   each round waits (reading the pool's status) until no request is held,
 *   so that no renewal lands while another agent waits.
 * - `prototype-classes`: acquires whose agent class is an Object.prototype name.
 * - `template-reports`: one-way reports for `count` new names under a template prefix.
 * - `hold-flood`: `count` acquires with distinct ids that wait (holdMs),
 *   1,000 every 50 ms; each one shed at the coordinator's intake asks again
 *   when told.
 * - `rogue-responder`: answers every request on the service subject with a
 *   grant of 2^52 tokens for 24 h, as no honest coordinator would.
 * - `rogue-smart`: answers every acquire on the service subject with a
 *   grant that looks honest: what was asked, up to the lease limit it
 *   states, under a fresh lease id, for 10 s, stating the pool limits it
 *   was given (`limits`), all consistent with one another; with `sign`,
 *   each signed for its request as a coordinator would, but by a key of
 *   its own.
 * - `operator-ops`: `count` operator requests (`pools` or `reload`) at once
 *   under `identity`, on the pool token `_` or `poolToken`, each waiting up
 *   to 5 s for its answer.
 * - `flood`: renewals of one token by 100 agent ids under `identity`,
 *   `perSecond` of them (published in batches every millisecond or so),
 *   without asking for answers. With `warmupMs`, it first sends the same
 *   for that long to a subject no coordinator reads (`<prefix>.warmup.…`),
 *   so that its own start (its JIT, on a machine it shares with the
 *   coordinator) is over before the flood begins; `{"type":"flooding"}`
 *   on stdout says when it does.
 * - `make-pools`: acquires of one token for `count` new names under a
 *   template prefix, 100 at a time (one that gets no answer in time asked
 *   again, up to five times), so that the coordinator holds that many
 *   pools.
 * - `lease-exhaustion`: under `identity`, acquires of 0 tokens for fresh
 *   agent ids (`<identity>.x<n>`), INFLIGHT at a time, as fast as they are
 *   answered, each lease it gets renewed for 0 tokens every RENEW_EVERY_MS:
 *   to fill the pool's `maxLeases` with leases that cost nothing, and keep
 *   them filled.
 * - `false-class`: `agents` greedy agents under `identity` claiming
 *   `agentClass` (a class granted to another identity), each asking for
 *   the most a lease may hold, spending it at once and asking again.
 *
 * Replies are counted by code (or kind); a lease-exhaustion attack also
 * counts each refusal of a new lease as `<code>:<fault>` (whose fault it says).
 *
 * Every request goes under the attack's `identity` when it has one (else
 * ANONYMOUS_IDENTITY), and its replies come to `_INBOX_<identity>`.
 * - `squat`: knowing the victim's agent id, holds (and renews every 50 ms)
 *   a lease of no tokens under that id, under each of the ids an agent
 *   once moved to after `forbidden` (`<victim>~1` … `<victim>~20`) and
 *   under a few guesses of the random form (`<victim>.~<random>`), for the
 *   whole run.
 *
 * The done line also says how long the requests took to be answered
 * (`latencyMs`: p50 and max over those answered or failed).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { generateKeyPairSync, randomBytes, sign } from 'node:crypto';
import {
  ANONYMOUS_IDENTITY,
  COORDINATOR_QUEUE_GROUP,
  decodeOperatorReply,
  decodeReply,
  decodeRequest,
  encodeMessage,
  grantSigningText,
  serviceSubject,
  subjectFor,
  type LeaseGrant,
  type Op,
  type Reply,
  type Request,
} from '@tokenlease/shared';
import { connectNats, NATS_ENV, resolveNatsOptions, type Bus } from '@tokenlease/shared/nats';

export type HostileAttack =
  | { readonly kind: 'return-as' | 'report-as' | 'acquire-as'; readonly victim: string }
  | { readonly kind: 'hoard'; readonly identities: number; readonly tokens: number; readonly betweenHolds?: boolean }
  | { readonly kind: 'prototype-classes' }
  | { readonly kind: 'template-reports'; readonly templatePrefix: string; readonly count: number }
  | { readonly kind: 'hold-flood'; readonly count: number; readonly holdMs: number }
  | { readonly kind: 'rogue-responder' }
  | { readonly kind: 'rogue-smart'; readonly limits: RogueLimits; readonly sign?: boolean }
  | {
      readonly kind: 'operator-ops';
      readonly op: 'pools' | 'reload';
      readonly identity: string;
      readonly count: number;
      readonly poolToken?: string;
    }
  | { readonly kind: 'make-pools'; readonly templatePrefix: string; readonly count: number }
  | { readonly kind: 'flood'; readonly identity: string; readonly perSecond: number; readonly warmupMs?: number }
  | { readonly kind: 'lease-exhaustion'; readonly identity: string }
  | { readonly kind: 'false-class'; readonly identity: string; readonly agentClass: string; readonly agents: number }
  | { readonly kind: 'squat'; readonly victim: string };

/** RogueLimits — the pool limits a smart rogue states in its grants. */
export interface RogueLimits {
  readonly capacityTokens: number;
  readonly maxLeaseTokens: number;
  readonly refillTokens: number;
  readonly refillPeriodMs: number;
}

export interface HostileConfig {
  readonly natsUrl: string;
  readonly subjectPrefix: string;
  readonly pool: string;
  readonly durationMs: number;
  readonly attack: HostileAttack;
  /** Where its replies come (default: `_INBOX_<identity>` for an attack under an identity, else the client's own). */
  readonly inboxPrefix?: string;
}

const PROTOTYPE_NAMES = ['constructor', '__proto__', 'toString', 'hasOwnProperty', 'valueOf', '__defineGetter__', 'isPrototypeOf'];
const RENEW_EVERY_MS = 50;
/** Requests a lease-exhaustion attack keeps in flight at once. */
const INFLIGHT = 32;
const SEQ_NEAR_MAX = Number.MAX_SAFE_INTEGER - 1000;
/** A squatter takes the ids `<victim>~1` … `<victim>~SQUAT_MOVES`, and this many random guesses. */
const SQUAT_MOVES = 20;
const SQUAT_GUESSES = 5;

const secret = (): string => randomBytes(16).toString('base64url');

class Attacker {
  readonly replies = new Map<string, number>();
  readonly latenciesMs: number[] = [];
  sent = 0;
  /** Tokens granted to (and so spent by) a greedy attack. */
  spentTokens = 0;
  private readonly mySecret = secret();

  constructor(
    readonly bus: Bus,
    readonly config: HostileConfig,
  ) {}

  /** The identity token its requests go under: the attack's, or ANONYMOUS_IDENTITY. */
  get identity(): string {
    return 'identity' in this.config.attack ? this.config.attack.identity : ANONYMOUS_IDENTITY;
  }

  subject(op: Op, pool = this.config.pool): string {
    return subjectFor(this.config.subjectPrefix, op, pool, this.identity);
  }

  count(key: string): void {
    this.replies.set(key, (this.replies.get(key) ?? 0) + 1);
  }

  /** ask — one request; counts its reply by code (or kind), or the failure, and how long it took. */
  async ask(op: Op, message: Request, pool = this.config.pool, timeoutMs = 2000, subject = this.subject(op, pool)): Promise<Reply | null> {
    this.sent += 1;
    const startedMs = performance.now();
    try {
      const bytes = await this.bus.request(subject, encodeMessage(message), timeoutMs);
      this.latenciesMs.push(performance.now() - startedMs);
      // Operator replies may be larger than a lease reply (a page of pools).
      const decoded = op === 'pools' || op === 'reload' ? decodeOperatorReply(bytes) : decodeReply(bytes);
      const reply = decoded.ok ? decoded.value : null;
      // A receipt that moved tokens is told apart: the one outcome an impersonated return must never have.
      const moved = reply?.kind === 'receipt' && reply.tokensReturned > 0;
      const key = reply === null ? 'undecodable' : reply.kind === 'error' ? reply.code : moved ? 'receipt-with-tokens' : reply.kind;
      this.count(key);
      return decoded.ok ? decoded.value : null;
    } catch (error) {
      this.latenciesMs.push(performance.now() - startedMs);
      const key = error instanceof Error && 'code' in error ? String((error as { code: unknown }).code) : 'failed';
      this.count(key);
      return null;
    }
  }

  /** victimLease — the victim's lease id as `status` shows it, or null. */
  async victimLease(victim: string): Promise<string | null> {
    const reply = await this.ask('status', { v: 2, op: 'status', pool: this.config.pool, agentId: victim });
    return reply?.kind === 'status' ? (reply.agentLease?.leaseId ?? null) : null;
  }

  acquire(agentId: string, seq: number, fields: Partial<Extract<Request, { op: 'acquire' }>> = {}): Extract<Request, { op: 'acquire' }> {
    return {
      v: 2,
      op: 'acquire',
      agentId,
      pool: this.config.pool,
      leaseSecret: this.mySecret,
      seq,
      leaseId: null,
      tokensLeft: 0,
      tokensWanted: 20,
      demandPerSecond: 1000,
      holdMs: 0,
      ...fields,
    };
  }

  async impersonate(kind: 'return-as' | 'report-as' | 'acquire-as', victim: string, until: () => boolean): Promise<void> {
    let seq = 1;
    while (!until()) {
      const leaseId = (await this.victimLease(victim)) ?? 'unknown';
      seq += 1;
      const base = { v: 2 as const, agentId: victim, pool: this.config.pool, leaseSecret: this.mySecret, leaseId };
      if (kind === 'return-as') await this.ask('return', { ...base, op: 'return', seq, tokensLeft: 20 });
      else if (kind === 'report-as') {
        this.sent += 1;
        this.bus.publish(this.subject('report'), encodeMessage({ ...base, op: 'report', seq, tokensLeft: 0 }));
      } else await this.ask('acquire', this.acquire(victim, SEQ_NEAR_MAX + (seq % 1000), { leaseId, tokensLeft: 0, tokensWanted: 0 }));
      await sleep(5);
    }
  }

  /** waitUntilNoneHeld — reads the pool's status until it holds no request (or the run ends). */
  async waitUntilNoneHeld(until: () => boolean): Promise<void> {
    while (!until()) {
      const reply = await this.ask('status', { v: 2, op: 'status', pool: this.config.pool });
      if (reply?.kind === 'status' && reply.waiting === 0) return;
      await sleep(1);
    }
  }

  /** squat — `victim`'s id, its once-predictable successors and a few random guesses, each held by a lease of no tokens. */
  async squat(victim: string, until: () => boolean): Promise<void> {
    const moves = Array.from({ length: SQUAT_MOVES }, (_, i) => `${victim}~${i + 1}`);
    const guesses = Array.from({ length: SQUAT_GUESSES }, () => `${victim}.~${randomBytes(12).toString('base64url')}`);
    return this.holdIds([victim, ...moves, ...guesses], 0, until);
  }

  async hoard(identities: number, tokens: number, betweenHolds: boolean, until: () => boolean): Promise<void> {
    const ids = Array.from({ length: identities }, (_, i) => `hoarder-${i}-${process.pid}`);
    return this.holdIds(ids, tokens, until, betweenHolds);
  }

  /**
   * holdIds — a lease of `tokens` under each of `ids`, renewed every
   * RENEW_EVERY_MS without spending anything; `betweenHolds`: each round
   * only once the pool holds no request.
   */
  private async holdIds(ids: readonly string[], tokens: number, until: () => boolean, betweenHolds = false): Promise<void> {
    const held = new Map<string, { leaseId: string | null; tokens: number; seq: number }>(
      ids.map((id) => [id, { leaseId: null, tokens: 0, seq: 0 }]),
    );
    while (!until()) {
      if (betweenHolds) await this.waitUntilNoneHeld(until);
      await Promise.all(
        ids.map(async (id) => {
          const h = held.get(id) as { leaseId: string | null; tokens: number; seq: number };
          h.seq += 1;
          const want = Math.max(0, tokens - h.tokens);
          const reply = await this.ask(
            'acquire',
            // It waits for what it wants (as an honest agent would), so that it fills the pool when alone.
            this.acquire(id, h.seq, { leaseId: h.leaseId, tokensLeft: h.tokens, tokensWanted: want, holdMs: want > 0 ? 200 : 0 }),
          );
          if (reply?.kind !== 'grant') return;
          // Never spends: it keeps what it was told it holds.
          h.tokens = reply.leaseId === h.leaseId ? h.tokens + reply.tokensGranted : reply.tokensGranted;
          h.leaseId = reply.leaseId;
        }),
      );
      await sleep(RENEW_EVERY_MS);
    }
  }
}

/** flood — `perSecond` renewals of one token by 100 agent ids on `subject`, published without asking for answers, until `until`. */
async function flood(a: Attacker, subject: string, perSecond: number, until: () => boolean): Promise<void> {
  const seqs = new Array<number>(100).fill(0);
  const startedMs = performance.now();
  const sentBefore = a.sent;
  while (!until()) {
    // Catch up to perSecond × elapsed, then let the connection write.
    const due = sentBefore + Math.floor(((performance.now() - startedMs) * perSecond) / 1000);
    for (; a.sent < due;) {
      const k = a.sent % 100;
      seqs[k] = (seqs[k] ?? 0) + 1;
      a.sent += 1;
      a.bus.publish(subject, encodeMessage(a.acquire(`flood-${k}-${process.pid}`, seqs[k] ?? 1, { tokensWanted: 1, holdMs: 0 })));
    }
    await sleep(1);
  }
  await a.bus.flush();
}

/**
 * exhaustLeases — opens 0-token leases under fresh ids of the attacker's
 * identity, INFLIGHT at a time, and keeps every lease it got alive by
 * renewing it (for 0 tokens) every RENEW_EVERY_MS, until `until`.
 */
async function exhaustLeases(a: Attacker, until: () => boolean): Promise<void> {
  const held = new Map<string, { leaseId: string; seq: number }>();
  const fields = { tokensWanted: 0, demandPerSecond: 0 };
  let next = 0;
  const opener = async (): Promise<void> => {
    while (!until()) {
      next += 1;
      const agentId = `${a.identity}.x${next}-${process.pid}`;
      const reply = await a.ask('acquire', a.acquire(agentId, 1, fields));
      if (reply?.kind === 'grant') held.set(agentId, { leaseId: reply.leaseId, seq: 1 });
      else if (reply?.kind === 'error') {
        a.count(`${reply.code}:${reply.fault}`);
        await sleep(1);
      }
    }
  };
  const renewer = async (): Promise<void> => {
    while (!until()) {
      await Promise.all(
        [...held].map(async ([agentId, lease]) => {
          lease.seq += 1;
          const reply = await a.ask('acquire', a.acquire(agentId, lease.seq, { ...fields, leaseId: lease.leaseId }));
          if (reply?.kind === 'grant') lease.leaseId = reply.leaseId;
          else held.delete(agentId);
        }),
      );
      await sleep(RENEW_EVERY_MS);
    }
  };
  await Promise.all([renewer(), ...Array.from({ length: INFLIGHT }, opener)]);
}

/** claimClass — one greedy agent claiming `agentClass`: asks for a full lease (held), spends it at once, asks again. */
async function claimClass(a: Attacker, agentId: string, agentClass: string, until: () => boolean): Promise<void> {
  let leaseId: string | null = null;
  for (let seq = 1; !until(); seq += 1) {
    const wanted = { leaseId, tokensLeft: 0, tokensWanted: 1_000_000, holdMs: 250, agentClass };
    const reply = await a.ask('acquire', a.acquire(agentId, seq, wanted));
    if (reply?.kind === 'grant') {
      leaseId = reply.leaseId;
      a.spentTokens += reply.tokensGranted;
      if (reply.tokensGranted === 0) await sleep(Math.max(1, reply.retryAfterMs));
    } else await sleep(reply?.kind === 'error' ? Math.max(1, reply.retryAfterMs) : 10);
  }
}

function rogueGrant(seq: number): LeaseGrant {
  return {
    v: 2,
    kind: 'grant',
    seq,
    leaseId: 'rogue-1',
    tokensGranted: 2 ** 52,
    tokensHeld: 2 ** 52,
    ttlMs: 86_400_000,
    epoch: 1,
    maxLeaseTokens: 2 ** 52,
    capacityTokens: 2 ** 52,
    refillTokens: 2 ** 52,
    refillPeriodMs: 1,
    retryAfterMs: 0,
  };
}

/** smartGrant — a plausible-looking grant for `request` under the stated `limits`: what it asked, up to the lease limit, a fresh lease. */
function smartGrant(request: Extract<Request, { op: 'acquire' }>, limits: RogueLimits, leaseNo: number): LeaseGrant {
  const tokensGranted = Math.min(request.tokensWanted, limits.maxLeaseTokens);
  return {
    v: 2,
    kind: 'grant',
    seq: request.seq,
    leaseId: `rogue-${leaseNo}`,
    tokensGranted,
    tokensHeld: tokensGranted,
    ttlMs: 10_000,
    epoch: 1,
    ...limits,
    retryAfterMs: 0,
  };
}

/** serveAsRogue — answers requests on the service subject with `answer(request)` (null: no answer) until `until`. */
async function serveAsRogue(a: Attacker, until: () => boolean, answer: (payload: Uint8Array) => LeaseGrant | null): Promise<void> {
  const sub = a.bus.serve(serviceSubject(a.config.subjectPrefix), COORDINATOR_QUEUE_GROUP, (_subject, payload, port) => {
    const grant = answer(payload);
    if (grant === null) return;
    a.sent += 1;
    port.respond(encodeMessage(grant));
  });
  await a.bus.flush();
  while (!until()) await sleep(20);
  await sub.stop();
}

async function run(a: Attacker, until: () => boolean): Promise<void> {
  const { attack, pool } = a.config;
  switch (attack.kind) {
    case 'return-as':
    case 'report-as':
    case 'acquire-as':
      return a.impersonate(attack.kind, attack.victim, until);
    case 'hoard':
      return a.hoard(attack.identities, attack.tokens, attack.betweenHolds ?? false, until);
    case 'squat':
      return a.squat(attack.victim, until);
    case 'prototype-classes':
      for (let round = 0; !until(); round += 1) {
        await Promise.all(
          PROTOTYPE_NAMES.map((agentClass, i) => a.ask('acquire', a.acquire(`${agentClass}-${round}-${i}`, 1, { agentClass, holdMs: 50 }))),
        );
      }
      return;
    case 'template-reports':
      for (let i = 0; i < attack.count && !until(); i += 1) {
        const name = `${attack.templatePrefix}${i}`;
        const message = {
          v: 2,
          op: 'report',
          agentId: `r${i}`,
          pool: name,
          leaseSecret: secret(),
          seq: 1,
          leaseId: 'x',
          tokensLeft: 0,
        } as const;
        a.sent += 1;
        a.bus.publish(a.subject('report', name), encodeMessage(message));
        if (i % 1000 === 999) await a.bus.flush();
      }
      await a.bus.flush();
      return;
    case 'hold-flood': {
      const pending: Promise<unknown>[] = [];
      // Each asks again when its request was shed at the coordinator's intake, until it is held (or answered).
      const held = async (i: number): Promise<void> => {
        const message = a.acquire(`flood-${i}-${process.pid}`, 1, { holdMs: attack.holdMs, tokensWanted: 1_000_000 });
        for (;;) {
          const reply = await a.ask('acquire', message, pool, 120_000);
          if (reply?.kind !== 'error' || reply.code !== 'unavailable' || until()) return;
          await sleep(reply.retryAfterMs);
        }
      };
      // 1,000 at a time, 20,000 a second: a burst the coordinator's intake takes in without shedding most of it.
      for (let i = 0; i < attack.count && !until(); i += 1) {
        pending.push(held(i));
        if (i % 1000 === 999) await sleep(50);
      }
      await a.bus.flush();
      while (!until()) await sleep(20);
      return;
    }
    case 'operator-ops': {
      const { op, identity, count, poolToken = '_' } = attack;
      const subject = `${a.config.subjectPrefix}.v2.${op}.${poolToken}.${identity}`;
      const message: Request = op === 'pools' ? { v: 2, op, pool: '_', limit: 1000 } : { v: 2, op, pool: '_' };
      await Promise.all(Array.from({ length: count }, () => a.ask(op, message, pool, 5000, subject)));
      return;
    }
    case 'flood': {
      const warmupMs = attack.warmupMs ?? 0;
      if (warmupMs > 0) {
        const nowhere = subjectFor(`${a.config.subjectPrefix}.warmup`, 'acquire', pool, attack.identity);
        const warmupEndMs = performance.now() + warmupMs;
        await flood(a, nowhere, attack.perSecond, () => until() || performance.now() >= warmupEndMs);
        a.sent = 0;
      }
      process.stdout.write(`${JSON.stringify({ type: 'flooding' })}\n`);
      await flood(a, subjectFor(a.config.subjectPrefix, 'acquire', pool, attack.identity), attack.perSecond, until);
      return;
    }
    case 'lease-exhaustion':
      return exhaustLeases(a, until);
    case 'false-class':
      await Promise.all(
        Array.from({ length: attack.agents }, (_, i) =>
          claimClass(a, `${attack.identity}.fc${i}-${process.pid}`, attack.agentClass, until),
        ),
      );
      return;
    case 'make-pools':
      for (let i = 0; i < attack.count && !until(); i += 100) {
        const names = Array.from({ length: Math.min(100, attack.count - i) }, (_, j) => `${attack.templatePrefix}${i + j}`);
        // A request that got no answer in time is asked again (the same seq: answered once): every pool gets made.
        const make = async (name: string): Promise<void> => {
          for (let attempt = 0; attempt < 5; attempt += 1) {
            if ((await a.ask('acquire', a.acquire(`maker-${process.pid}`, 1, { pool: name, tokensWanted: 1 }), name)) !== null) return;
          }
        };
        await Promise.all(names.map(make));
      }
      return;
    case 'rogue-responder':
      return serveAsRogue(a, until, (payload) => rogueGrant((JSON.parse(new TextDecoder().decode(payload)) as { seq?: number }).seq ?? 0));
    case 'rogue-smart': {
      let leases = 0;
      const { privateKey } = generateKeyPairSync('ed25519');
      return serveAsRogue(a, until, (payload) => {
        const decoded = decodeRequest(payload);
        if (!decoded.ok || decoded.value.op !== 'acquire') return null;
        leases += 1;
        const request = decoded.value;
        const grant = smartGrant(request, attack.limits, leases);
        if (attack.sign !== true) return grant;
        const text = grantSigningText(grant, { agentId: request.agentId, pool: request.pool });
        return { ...grant, sig: sign(null, Buffer.from(text), privateKey).toString('base64url') };
      });
    }
  }
}

async function main(): Promise<void> {
  const config = JSON.parse(process.argv[2] ?? '{}') as HostileConfig;
  // Under an identity it reads its replies where that identity's would come, as an agent does.
  const identity = 'identity' in config.attack ? config.attack.identity : null;
  const inboxPrefix = config.inboxPrefix ?? (identity === null ? undefined : `_INBOX_${identity}`);
  const options = resolveNatsOptions([{ settings: { url: config.natsUrl }, names: { ...NATS_ENV, url: 'the NATS URL' } }], {
    ...(inboxPrefix === undefined ? {} : { inboxPrefix }),
  });
  const bus = await connectNats(options, { name: `tokenlease-hostile ${config.attack.kind}` });
  let stopping = false;
  process.once('SIGTERM', () => {
    stopping = true;
  });
  const endAtMs = Date.now() + config.durationMs;
  const until = (): boolean => stopping || Date.now() >= endAtMs;
  const attacker = new Attacker(bus, config);
  process.stdout.write(`${JSON.stringify({ type: 'ready' })}\n`);
  await run(attacker, until);
  const sorted = [...attacker.latenciesMs].sort((x, y) => x - y);
  const at = (q: number): number => Math.round(sorted[Math.floor(q * (sorted.length - 1))] ?? 0);
  const latencyMs = { p50: at(0.5), max: at(1) };
  process.stdout.write(
    `${JSON.stringify({ type: 'done', sent: attacker.sent, replies: Object.fromEntries(attacker.replies), latencyMs, spentTokens: attacker.spentTokens })}\n`,
  );
  await bus.close();
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    process.stderr.write(`hostile-client: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    process.exit(1);
  },
);
