/**
 * Readiness: what `/readyz` answers (adapters/operations.ts gathers the
 * checks; this says what they mean).
 *
 * Rules:
 * - Ready when NATS is up and flushing, the store answered the last
 *   heartbeat (durable mode; `store` is null in memory mode and a relay,
 *   which pass it), and the service serves or stands by.
 * - 200 when ready, else 503; the body is `ready` and each check, so that
 *   a probe's log says which one failed.
 */

/**
 * ReadinessChecks — `nats`: the link up (nats-link.ts) and a flush
 * confirmed within READY_FLUSH_MS (none is asked while the link is down);
 * `store`: null without a store; `serving`: the service's own say.
 */
export interface ReadinessChecks {
  readonly nats: boolean;
  readonly store: boolean | null;
  readonly serving: boolean;
}

/** Readiness — the status and JSON body `/readyz` answers. */
export interface Readiness {
  readonly status: 200 | 503;
  readonly body: { readonly ready: boolean } & ReadinessChecks;
}

/** readiness — see the module comment. */
export function readiness(checks: ReadinessChecks): Readiness {
  const ready = checks.nats && checks.store !== false && checks.serving;
  return { status: ready ? 200 : 503, body: { ready, ...checks } };
}
