/**
 * ReplyLog: sends the core's replies and logs what an operator needs:
 * grants at debug level (with `tUs` on the host monotonic clock, so grants
 * line up with agents' logs), refusals and pool faults at warn and error.
 *
 * Refusals are logged at a bounded rate: one line per pool and code per
 * interval, carrying how many more were refused since the last line, so a
 * flood of bad requests costs a line per interval, not a line per request.
 * At most REFUSAL_KEYS_MAX pool-and-code pairs are told apart; refusals of
 * further pools are counted under pool "*".
 *
 * Given a signer (`signGrant`), it signs every grant as it leaves, over the
 * grant and the request it answers (the delivery's `grantFor`).
 *
 * It also screens requests before they are handled (`screened`): one whose
 * reply may not go where it asks (core/reply-inbox.ts) is dropped, counted
 * and logged like a refusal (event `request-dropped`, code
 * `reply-elsewhere`), with its subject's pool and the reason, never its
 * payload.
 */
import { encodeMessage, grantSigningText, parseSubject, type GrantBinding, type Reply } from '@tokenlease/shared';
import { type BusHandler, type ReplyPort } from '@tokenlease/shared/nats';
import type { Logger } from 'pino';
import type { CoordinatorConfig } from '../core/config.js';
import type { PoolFault } from '../core/coordinator-core.js';
import type { Delivery } from '../core/pool.js';
import { replyInboxProblem } from '../core/reply-inbox.js';
import type { GrantSigner } from './grant-signer.js';
import type { ServiceObserver } from './metrics.js';

/** REFUSAL_LOG_INTERVAL_MS — at most one refusal line per pool and code in this time. */
export const REFUSAL_LOG_INTERVAL_MS = 10_000;
/** REFUSAL_KEYS_MAX — pool-and-code pairs counted apart. */
export const REFUSAL_KEYS_MAX = 1024;

interface RefusalCount {
  readonly pool: string;
  readonly code: string;
  /** The event it is logged as: `request-refused`, or `request-dropped` for a request not answered at all. */
  readonly event: string;
  windowStartMs: number;
  suppressed: number;
}

/** The event a refusal for an agent's clock is logged as (design.md, "Clocks"): louder than a plain refusal, as it asks for a fix. */
const CLOCK_DRIFT = { event: 'clock-drift' } as const;

export class ReplyLog {
  private readonly refusals = new Map<string, RefusalCount>();

  constructor(
    private readonly logger: Logger,
    private readonly subjectPrefix: string,
    private readonly nowMs: () => number,
    private readonly intervalMs = REFUSAL_LOG_INTERVAL_MS,
    /** Told of every reply sent (the metrics); settable once the service runs. */
    public observer: ServiceObserver | null = null,
    /** Signs each grant sent; null: grants go unsigned. */
    public signGrant: GrantSigner | null = null,
  ) {}

  /** send — encodes and sends each delivery; `where` is the pool, or the request subject it is read from. */
  send(deliveries: readonly Delivery<ReplyPort>[], tUs: number, where?: { pool?: string; subject?: string }): void {
    for (const { to, reply, repeat, grantFor } of deliveries) {
      if (this.observer !== null) this.observer.replied(this.poolNameOf(where), reply, repeat === true);
      if (reply.kind === 'error')
        this.refused(
          this.poolOf(where),
          reply.code,
          { fault: reply.fault, seq: reply.seq, reason: reply.message },
          reply.code === 'clock-drift' ? CLOCK_DRIFT.event : 'request-refused',
        );
      else if (reply.kind === 'grant' && this.logger.isLevelEnabled('debug')) {
        const { leaseId, seq, tokensGranted, tokensHeld, ttlMs, retryAfterMs, epoch, slotsMax } = reply;
        const pool = this.poolNameOf(where);
        const slots = slotsMax === undefined ? {} : { slotsMax };
        this.logger.debug(
          { event: 'grant', pool, leaseId, seq, tokensGranted, tokensHeld, ttlMs, retryAfterMs, epoch, ...slots, tUs },
          'grant',
        );
      }
      // A request that named no reply subject has nobody to read the answer: it is counted and logged, not encoded.
      if (to.replySubject !== null) to.respond(encodeMessage(this.signed(reply, grantFor)));
    }
  }

  /** signed — `reply`, a grant signed for `grantFor` when there is a signer (and only then a `sig`). */
  private signed(reply: Reply, grantFor: GrantBinding | undefined): Reply {
    if (reply.kind !== 'grant' || this.signGrant === null || grantFor === undefined) return reply;
    const { sig: _unsigned, ...grant } = reply;
    return { ...grant, sig: this.signGrant(grantSigningText(grant, grantFor)) };
  }

  /**
   * screened — `handler` for the requests whose reply may go where they ask
   * under the configuration `config()` gives now; the others are dropped
   * (not handled, not answered), counted and logged at a bounded rate.
   */
  screened(config: () => CoordinatorConfig, handler: BusHandler): BusHandler {
    return (subject, payload, port) => {
      const problem = replyInboxProblem(config(), subject, port.replySubject);
      if (problem === null) {
        handler(subject, payload, port);
        return;
      }
      this.observer?.dropped('reply-elsewhere');
      this.refused(this.poolOf({ subject }), 'reply-elsewhere', { reason: problem }, 'request-dropped');
    };
  }

  /** faults — one error line per contained pool fault (the pool restarted or was dropped). */
  faults(faults: readonly PoolFault[]): void {
    for (const { pool, error } of faults)
      this.logger.error({ event: 'pool-failed', err: error, pool }, 'pool failed: its requests were refused and it restarts');
  }

  /** flush — logs the counts of refusals held back whose interval is over (call now and then). */
  flush(): void {
    const now = this.nowMs();
    for (const [key, count] of this.refusals) {
      if (now - count.windowStartMs < this.intervalMs) continue;
      if (count.suppressed > 0)
        this.logger.warn({ event: count.event, pool: count.pool, code: count.code, refused: count.suppressed }, 'requests refused');
      this.refusals.delete(key);
    }
  }

  private refused(pool: string, code: string, detail: object, event = 'request-refused'): void {
    let key = `${pool}\u0000${code}`;
    if (!this.refusals.has(key) && this.refusals.size >= REFUSAL_KEYS_MAX) {
      pool = '*';
      key = `*\u0000${code}`;
    }
    const now = this.nowMs();
    const count = this.refusals.get(key);
    if (count !== undefined && now - count.windowStartMs < this.intervalMs) {
      count.suppressed += 1;
      return;
    }
    this.logger.warn(
      { event, pool, code, ...detail, refusedBefore: count?.suppressed ?? 0 },
      event === 'request-dropped'
        ? 'request dropped'
        : event === 'clock-drift'
          ? "request refused: the agent's clock drifts"
          : 'request refused',
    );
    this.refusals.set(key, { pool, code, windowStartMs: now, suppressed: 0, event });
  }

  private poolNameOf(where: { pool?: string; subject?: string } | undefined): string | null {
    if (where?.pool !== undefined) return where.pool;
    return where?.subject === undefined ? null : (parseSubject(this.subjectPrefix, where.subject)?.pool ?? null);
  }

  private poolOf(where: { pool?: string; subject?: string } | undefined): string {
    if (where?.pool !== undefined) return where.pool;
    if (where?.subject === undefined) return '-';
    return parseSubject(this.subjectPrefix, where.subject)?.pool ?? '(bad subject)';
  }
}

/** INTERNAL_ERROR — what a request gets when handling it broke an invariant. */
export const INTERNAL_ERROR = encodeMessage({
  v: 2,
  kind: 'error',
  seq: null,
  code: 'internal',
  fault: 'coordinator',
  message: 'internal error; see the coordinator log',
  retryAfterMs: 1000,
});
