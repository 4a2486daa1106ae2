/**
 * HttpLimit: the middleware's engine, shared by the node:http/Express and
 * the Fastify adapters. It turns a request (as a RequestView) into the
 * limiters to charge and charges them through the Agent: all or nothing,
 * waiting when allowed. Statuses, bodies and fields are HttpPolicy's
 * (core/http-policy.ts).
 *
 * Waiting: a request waits up to `waitMs` (shaping) for its tokens; and
 * whatever `waitMs`, up to `graceMs` when its tokens are expected within
 * that long (a new limiter's first grant, a top-up from a pool that has
 * tokens), so a fresh agent or a burst on a full pool is not refused for
 * want of a round-trip.
 *
 * Keys: a rule's key (a header, the client address, the route pattern, or
 * a function of the framework's own request, sync or async) is hashed
 * under `keySecret` (adapters/key-hash.ts) into the pool's name; the raw
 * key is never kept.
 *
 * Requests that do not count (`skipFailedRequests`,
 * `skipSuccessfulRequests`, as express-rate-limit has them): with either
 * on, an admission keeps each pool's receipt (`Verdict.charged`), and the
 * adapter hands the response to `settleAtEnd`, which calls `ended` when it
 * finishes or closes. A request that should not count then gives its
 * tokens back to every pool it was
 * charged, each as its refund rules allow (Limiter.giveBack: a give-back
 * after a renewal, report, return or expiry is dropped and the request
 * stays counted). A response closed before it finished failed; one that
 * finished succeeded when `requestWasSuccessful` says so (default: status
 * below 400); a judge that throws leaves the request counted.
 */
import type { Agent } from './agent.js';
import type { Limiter } from './limiter.js';
import { AgentError } from '../errors.js';
import { RECEIPT_DENIED } from '../core/lease-slot.js';
import { GRACE_MS_DEFAULT, httpOptionsProblem } from '../core/http-options.js';
import type { SlotCharge } from '../core/take-all.js';
import {
  customised,
  denial,
  limitFields,
  missingKey,
  shadowLimitedField,
  SHADOW_HEADER_DEFAULT,
  unknownRoute,
  type DenialMessage,
  type HeaderFormat,
  type LimitView,
  type Refusal,
} from '../core/http-policy.js';
import { checkKeySecret, DIGEST_CHARS, digestName, keyDigest, type KeySecret } from './key-hash.js';
import type { RecordOptions } from './trace-recording.js';
import { POOL_NAME_LENGTH_MAX, type ExpectedLimits } from '@tokenlease/shared';

/** RequestView — what the middleware reads of a request, and the framework's own request (`native`). */
export interface RequestView<Req> {
  /** header — the first value of header `name` (lower case), or undefined. */
  header(name: string): string | undefined;
  /** The client's address as the framework reports it (Express's and Fastify's `ip` honour their proxy settings). */
  readonly ip: string | undefined;
  /** The route pattern when the framework knows it here (e.g. `/users/:id`); undefined before routing. */
  readonly route: string | undefined;
  /** The framework's request: Express's `req`, Fastify's `request`, node's IncomingMessage. */
  readonly native: Req;
}

/** ResponseView — what the middleware reads of a response as it ends: its status, and the framework's own response (`native`). */
export interface ResponseView<Res> {
  readonly statusCode: number;
  /** The framework's response: Express's `res`, Fastify's `reply`, node's ServerResponse. */
  readonly native: Res;
}

/** KeyFunction — `(request) => key`: a request's key, sync or async; undefined or '' for none. (Declared as a method so a function of a wider request type fits.) */
export type KeyFunction<Req> = { key(request: Req): string | undefined | Promise<string | undefined> }['key'];
/** SkipFunction — `(request) => boolean`, sync or async: whether a request goes unlimited. */
export type SkipFunction<Req> = { skip(request: Req): boolean | Promise<boolean> }['skip'];
/** CostFunction — `(request) => number`: a request's cost in tokens. */
export type CostFunction<Req> = { cost(request: Req): number }['cost'];
/** SuccessFunction — `(request, response) => boolean`, sync or async: whether a request whose response finished succeeded; given the framework's request and response. */
export type SuccessFunction<Req, Res> = {
  requestWasSuccessful(request: Req, response: Res): boolean | Promise<boolean>;
}['requestWasSuccessful'];

/** KeySource — where a rule's key comes from: a header, the client address, the route pattern, or a function of the request. */
export type KeySource<Req = unknown> = { readonly header: string } | { readonly ip: true } | { readonly route: true } | KeyFunction<Req>;

/** PoolRule — one pool charged for every request. */
export interface PoolRule<Req = unknown> {
  /** The policy name in the fields; the pool itself when there is no `key`, else the prefix of `<name>:<digest>` pools. */
  readonly name: string;
  /** Per-key pools: each key its own pool `<name>:<keyed hash of the key>` (e.g. a coordinator template `tenant:*`). */
  readonly key?: KeySource<Req>;
  /** Tokens per request (a positive integer, or a function of the request); default 1. */
  readonly cost?: number | CostFunction<Req>;
  /** The status for a request without the key: 400 (default) or 401. Never a shared pool instead. */
  readonly missingKeyStatus?: 400 | 401;
  /** True: this pool (every key's, with `key`) is in shadow mode in this service whatever the coordinator says. */
  readonly shadow?: boolean;
  /** What this pool (every key's, with `key`) is expected to allow: grants beyond it are refused (KeeperOptions.expectedLimits). */
  readonly expectedLimits?: ExpectedLimits;
}

/** HttpLimitOptions — the middleware's options; `Res` is the framework's response, for `requestWasSuccessful`. */
export interface HttpLimitOptions<Req = unknown, Res = unknown> {
  readonly agent: Agent;
  /** Pools charged together, all or nothing (e.g. a global pool and a tenant pool). At least one. */
  readonly pools: readonly PoolRule<Req>[];
  /**
   * The secret of the keyed hash that turns keys into pool names (at least
   * 16 bytes; the same on every instance, e.g. from the environment).
   * Required when a rule has a `key`.
   */
  readonly keySecret?: KeySecret;
  /** The rate-limit fields responses carry: 'draft-11' (default), 'draft-7', 'draft-6', 'x-ratelimit' or 'off'. */
  readonly headers?: HeaderFormat;
  /** True for a request that is not limited at all (a health check, an allow-listed client): not charged, no fields. Sync or async. */
  readonly skip?: SkipFunction<Req>;
  /** The status of a rate-limited answer (default 429). Other refusals (413, 500, 503, 400/401) keep theirs. */
  readonly statusCode?: number;
  /** The body of a rate-limited answer instead of the problem: a string (text/plain) or a JSON value. */
  readonly message?: DenialMessage;
  /** Shaping: how long a request may wait for its tokens, ms; default 0 (no wait beyond `graceMs`). */
  readonly waitMs?: number;
  /** How long a request waits for tokens expected within that long (see above), ms; default 100. 0: never. */
  readonly graceMs?: number;
  /** When no coordinator can grant: `fail-closed` (default, 503) or `allow` (let requests through uncharged). */
  readonly unavailable?: 'fail-closed' | 'allow';
  /**
   * A request admitted only because a pool is in shadow mode gets this
   * response header naming the pools that would have limited it and why
   * (`"api";reason=exhausted`): true for `TokenLease-Shadow-Limited`, or a
   * header name. Default: none.
   */
  readonly shadowHeader?: boolean | string;
  /**
   * True: a request that failed (`requestWasSuccessful` false, or its
   * response closed before it finished) gives its tokens back as it ends,
   * so only the others count (within the refund rules: see above).
   * Default false.
   */
  readonly skipFailedRequests?: boolean;
  /** True: a request that succeeded gives its tokens back as it ends, so only failed ones count. Default false. */
  readonly skipSuccessfulRequests?: boolean;
  /** Whether a finished request succeeded, sync or async; default: its status is below 400. */
  readonly requestWasSuccessful?: SuccessFunction<Req, Res>;
  /**
   * Record every charged request's arrival at this middleware's pools (each
   * rule's pool; every key's, `<name>:*`, for a keyed rule) to a trace file
   * for `tokenlease-sweep --trace`: the agent's recording
   * (Agent.record; adapters/trace-recording.ts) with `pools` chosen from
   * the rules. Keys appear only hashed, as in pool names. The agent must
   * not be recording already.
   */
  readonly record?: Omit<RecordOptions, 'pools'>;
}

/** EndingResponse — what the adapters watch of a node response as it ends (node's ServerResponse, Express's `res`, Fastify's `reply.raw`). */
export interface EndingResponse {
  /** once — calls `listener` the first time the response emits `event`. */
  once(event: 'finish' | 'close', listener: () => void): unknown;
  readonly writableFinished: boolean;
  readonly statusCode: number;
}

/**
 * whenEnded — calls `ended` once, as `response` ends: `finished` true on
 * 'finish', false on a 'close' before it finished (the client went away,
 * the handler destroyed it).
 */
function whenEnded(response: EndingResponse, ended: (finished: boolean) => void): void {
  let called = false;
  const end = (finished: boolean): void => {
    if (called) return;
    called = true;
    ended(finished);
  };
  response.once('finish', () => end(true));
  response.once('close', () => end(response.writableFinished));
}

/** Charged — what an admitted request was charged and each part's receipt, for `HttpLimit.ended`. */
export interface Charged {
  readonly charges: readonly SlotCharge[];
  readonly receipts: readonly number[];
}

/**
 * Verdict — admitted (with the fields to set; none for a skipped request;
 * `charged` when its tokens may be given back as it ends: hand it to
 * `HttpLimit.ended`) or refused (with the refusal, and the fields).
 */
export type Verdict =
  | { readonly admitted: true; readonly headers: ReadonlyArray<readonly [string, string]>; readonly charged?: Charged }
  | { readonly admitted: false; readonly headers: ReadonlyArray<readonly [string, string]>; readonly refusal: Refusal };

interface Charge {
  readonly limiter: Limiter;
  readonly cost: number;
  readonly policy: string;
  /** The keyed hash of the key, for `pk`; null for an unkeyed rule. */
  readonly partitionKey: Uint8Array | null;
}

function shadowHeaderName(option: boolean | string | undefined): string | null {
  if (option === undefined || option === false) return null;
  return option === true ? SHADOW_HEADER_DEFAULT : option;
}

function keyOf<Req>(source: KeySource<Req>, request: RequestView<Req>): string | undefined | Promise<string | undefined> {
  if (typeof source === 'function') return source(request.native);
  if ('header' in source) return request.header(source.header.toLowerCase());
  if ('ip' in source) return request.ip;
  return request.route;
}

function what<Req>(source: KeySource<Req>): string {
  if (typeof source === 'function') return 'key';
  if ('header' in source) return `${source.header} header`;
  return 'ip' in source ? 'client address' : 'route';
}

/** statusSuccessful — express-rate-limit's default judge: a status below 400 succeeded. */
function statusSuccessful(response: ResponseView<unknown>): boolean {
  return response.statusCode < 400;
}

/** checkRule — throws AgentError('invalid-argument') for a rule whose pools could not be named (each option alone is the schema's). */
function checkRule<Req>(rule: PoolRule<Req>): void {
  const longest = rule.name.length + (rule.key === undefined ? 0 : 1 + DIGEST_CHARS);
  if (rule.name.length === 0 || longest > POOL_NAME_LENGTH_MAX)
    throw new AgentError(
      'invalid-argument',
      `pool ${JSON.stringify(rule.name)}: a pool name it charges would be empty or longer than ${POOL_NAME_LENGTH_MAX}`,
    );
}

/** recordOptions — the middleware's `record` option as the agent's: its rules' pools, every key's for a keyed rule. */
function recordOptions<Req>(record: Omit<RecordOptions, 'pools'>, rules: readonly PoolRule<Req>[]): RecordOptions {
  return { ...record, pools: rules.map((rule) => (rule.key === undefined ? rule.name : `${rule.name}:*`)) };
}

/**
 * HttpLimit — the middleware's engine, under createHttpLimit and
 * fastifyRateLimit: it turns a request into the limiters its rules charge,
 * charges them through the agent, all or nothing, waiting when allowed,
 * and answers a Verdict; with `skipFailedRequests` or
 * `skipSuccessfulRequests`, it gives back what a request that should not
 * count was charged.
 */
export class HttpLimit<Req, Res = unknown> {
  private readonly waitMs: number;
  private readonly graceMs: number;
  private readonly failOpen: boolean;
  private readonly shadowHeader: string | null;
  private readonly format: HeaderFormat;
  private readonly keySecret: Uint8Array | null;
  private readonly statusCode: number | null;
  private readonly skipFailed: boolean;
  private readonly skipSuccessful: boolean;

  /** HttpLimit — throws AgentError('invalid-argument') for bad options: each alone by the schema (core/http-options.ts), then together. */
  constructor(private readonly options: HttpLimitOptions<Req, Res>) {
    const problem = httpOptionsProblem(options);
    if (problem !== null) throw new AgentError('invalid-argument', problem);
    this.waitMs = options.waitMs ?? 0;
    this.graceMs = options.graceMs ?? GRACE_MS_DEFAULT;
    this.failOpen = options.unavailable === 'allow';
    this.shadowHeader = shadowHeaderName(options.shadowHeader);
    this.format = options.headers ?? 'draft-11';
    for (const rule of options.pools) checkRule(rule);
    const keyed = options.pools.find((rule) => rule.key !== undefined);
    if (keyed !== undefined && options.keySecret === undefined)
      throw new AgentError('invalid-argument', `pool ${keyed.name} has a key: option keySecret is needed to hash keys into pool names`);
    this.keySecret = options.keySecret === undefined ? null : checkKeySecret(options.keySecret);
    this.statusCode = options.statusCode ?? null;
    this.skipFailed = options.skipFailedRequests === true;
    this.skipSuccessful = options.skipSuccessfulRequests === true;
    // Last, once every other option is known good: it opens the trace file.
    if (options.record !== undefined) options.agent.record(recordOptions(options.record, options.pools));
  }

  /** refunds — whether some requests give their tokens back as they end (skipFailedRequests or skipSuccessfulRequests). */
  get refunds(): boolean {
    return this.skipFailed || this.skipSuccessful;
  }

  /**
   * ended — request `request`, admitted with `charged`, ended: its response
   * finished (`finished`) or closed before. When it should not count (see
   * the head), gives its tokens back to every pool it was charged. Returns
   * the tokens given back (0: it counts, or the pools dropped the
   * give-back). Never rejects.
   */
  async ended(charged: Charged, request: Req, response: ResponseView<Res>, finished: boolean): Promise<number> {
    if (!(await this.uncounted(request, response, finished))) return 0;
    return this.options.agent.giveBackAll(charged.charges, charged.receipts);
  }

  /**
   * settleAtEnd — for an admitted `verdict` that may give its tokens back:
   * watches `raw` (node's response under the framework's own, `native`)
   * end, then `ended`. Nothing for a verdict without `charged`.
   */
  settleAtEnd(verdict: Verdict, request: Req, raw: EndingResponse, native: Res): void {
    const charged = verdict.admitted ? verdict.charged : undefined;
    if (charged === undefined) return;
    whenEnded(raw, (finished) => void this.ended(charged, request, { statusCode: raw.statusCode, native }, finished));
  }

  /** uncounted — whether a request that ended so does not count under the skip options. */
  private async uncounted(request: Req, response: ResponseView<Res>, finished: boolean): Promise<boolean> {
    if (!finished) return this.skipFailed;
    const judge = this.options.requestWasSuccessful;
    let successful: boolean;
    try {
      successful = judge === undefined ? statusSuccessful(response) : (await judge(request, response.native)) === true;
    } catch {
      return false; // no verdict: the request stays counted, the safe side
    }
    return successful ? this.skipSuccessful : this.skipFailed;
  }

  /** check — charges the request's pools; never rejects (a limiter error becomes a refusal). */
  async check(request: RequestView<Req>): Promise<Verdict> {
    if (this.options.skip !== undefined && (await this.options.skip(request.native)) === true) return { admitted: true, headers: [] };
    const charges: Charge[] = [];
    for (const rule of this.options.pools) {
      let pool = rule.name;
      let partitionKey: Uint8Array | null = null;
      if (rule.key !== undefined) {
        if (typeof rule.key !== 'function' && 'route' in rule.key && request.route === undefined)
          return { admitted: false, headers: [], refusal: unknownRoute(rule.name) };
        const key = await keyOf(rule.key, request);
        if (typeof key !== 'string' || key === '')
          return { admitted: false, headers: [], refusal: missingKey(rule.name, rule.missingKeyStatus ?? 400, what(rule.key)) };
        partitionKey = keyDigest(this.keySecret as Uint8Array, rule.name, key);
        pool = digestName(rule.name, partitionKey);
      }
      const cost = typeof rule.cost === 'function' ? rule.cost(request.native) : (rule.cost ?? 1);
      const limiter = this.options.agent.limiter(pool, {
        ...(rule.shadow === undefined ? {} : { shadow: rule.shadow }),
        ...(rule.expectedLimits === undefined ? {} : { expectedLimits: rule.expectedLimits }),
      });
      charges.push({ limiter, cost, policy: rule.name, partitionKey });
    }
    const agent = this.options.agent;
    const shadowBefore = this.shadowHeader === null ? null : charges.map((c) => c.limiter.slot.shadowDeniedCount);
    const receipts = this.refunds ? charges.map(() => RECEIPT_DENIED) : undefined;
    // The request's arrival is recorded here, once (when recording); the waits and tries after it are not.
    let denied = agent.tryTakeAll(charges, receipts) ? -1 : agent.lastDeniedIndex;
    if (denied !== -1) denied = await this.waitFor(charges, denied, receipts);
    if (denied === -1) {
      const headers = this.withShadow(this.fields(charges), charges, shadowBefore);
      return receipts === undefined ? { admitted: true, headers } : { admitted: true, headers, charged: { charges, receipts } };
    }
    const charge = charges[denied] as Charge;
    const limiter = charge.limiter;
    const reason = limiter.lastDenial;
    const unavailable = limiter.unavailable && reason !== 'unknown-pool' && reason !== 'never-fits';
    if (unavailable && this.failOpen) return { admitted: true, headers: this.fields(charges) };
    const retryMs = reason === 'never-fits' || reason === 'unknown-pool' ? null : limiter.retryAfterMsFor(charge.cost);
    const refusal = customised(
      denial(charge.policy, limiter.pool, reason, retryMs, unavailable),
      this.statusCode,
      this.options.message ?? null,
    );
    return { admitted: false, headers: this.fields(charges), refusal };
  }

  /** fields — the rate-limit fields for `charges`, as they stand now, in the configured format. */
  private fields(charges: readonly Charge[]): Array<readonly [string, string]> {
    if (this.format === 'off') return [];
    const views: LimitView[] = charges.map((c) => ({
      policy: c.policy,
      limits: c.limiter.limits,
      remainingTokens: c.limiter.availableTokens,
      moreAfterMs: c.limiter.retryAfterMsFor(c.limiter.availableTokens + 1),
      partitionKey: c.partitionKey,
    }));
    return limitFields(this.format, views, Date.now());
  }

  /** withShadow — `headers` and, when the option is on, the shadow header for the parts that counted a would-be denial since `before`. */
  private withShadow(
    headers: Array<readonly [string, string]>,
    charges: readonly Charge[],
    before: readonly number[] | null,
  ): Array<readonly [string, string]> {
    if (this.shadowHeader === null || before === null) return headers;
    const limited = charges
      .filter((c, i) => c.limiter.slot.shadowDeniedCount > (before[i] ?? 0))
      .map((c) => ({ policy: c.policy, reason: c.limiter.lastDenial }));
    const value = shadowLimitedField(limited);
    if (value !== null) headers.push([this.shadowHeader, value]);
    return headers;
  }

  /**
   * waitFor — after a denial by part `denied`: waits when allowed (see
   * above); -1 once admitted (each part's receipt in `receipts`, when
   * given), else the index denied last.
   */
  private async waitFor(charges: readonly Charge[], denied: number, receipts: number[] | undefined): Promise<number> {
    const agent = this.options.agent;
    const charge = charges[denied] as Charge;
    const reason = charge.limiter.lastDenial;
    if (reason === 'never-fits' || reason === 'unknown-pool') return denied;
    const expectedMs = charge.limiter.retryAfterMsFor(charge.cost);
    const graceMs = !charge.limiter.heard || expectedMs <= this.graceMs ? this.graceMs : 0;
    const budgetMs = Math.max(this.waitMs, graceMs);
    if (budgetMs === 0) return denied;
    try {
      if (charges.length > 1) {
        if (await agent.retakeAll(charges, receipts === undefined ? { timeoutMs: budgetMs } : { timeoutMs: budgetMs, receipts })) return -1;
      } else {
        const receipt = await charge.limiter.retakeReceipt(charge.cost, { timeoutMs: budgetMs });
        if (receipts !== undefined) receipts[0] = receipt;
        if (receipt !== RECEIPT_DENIED) return -1;
      }
    } catch (error) {
      // never-fits or unknown-pool, learnt while waiting: the try below records it on the slot.
      if (!(error instanceof AgentError)) throw error;
    }
    return agent.retryTakeAll(charges, receipts) ? -1 : agent.lastDeniedIndex;
  }
}
