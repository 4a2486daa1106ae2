/**
 * A coordinator stand-in on a Bus, for tests of the Agent without NATS:
 * `answer` decides each request's reply (a grant, a receipt) or throws to
 * reject it as the bus would (no responders, a timeout); reports are
 * dropped, nothing is served or gathered.
 */
import { decodeRequest, encodeMessage, type LeaseGrant, type Reply, type Request } from '@tokenlease/shared';
import type { Bus } from '@tokenlease/shared/nats';

/** standInBus — a Bus whose requests `answer` answers; `answer` gets the subject and the decoded request. */
export function standInBus(answer: (subject: string, request: Request) => Reply): Bus {
  return {
    request(subject, payload) {
      const decoded = decodeRequest(payload);
      if (!decoded.ok) return Promise.reject(new Error('a request the stand-in cannot read'));
      try {
        return Promise.resolve(encodeMessage(answer(subject, decoded.value)));
      } catch (error) {
        return Promise.reject(error instanceof Error ? error : new Error(String(error)));
      }
    },
    gather: () => Promise.resolve([]),
    publish: () => true,
    serve: () => ({ stop: () => Promise.resolve() }),
    onEvent: () => undefined,
    flush: () => Promise.resolve(),
    drain: () => Promise.resolve(),
    close: () => Promise.resolve(),
  };
}

/** grantOf — a grant of `tokensGranted` under lease `leaseId` of a pool of capacity 100 refilled at 10/s, for `seq`. */
export function grantOf(
  seq: number,
  leaseId: string,
  tokensGranted: number,
  tokensHeld: number,
  extra: Partial<LeaseGrant> = {},
): LeaseGrant {
  return {
    v: 2,
    kind: 'grant',
    seq,
    leaseId,
    tokensGranted,
    tokensHeld,
    ttlMs: 60_000,
    epoch: 1,
    maxLeaseTokens: 10,
    capacityTokens: 100,
    refillTokens: 10,
    refillPeriodMs: 1000,
    retryAfterMs: 0,
    ...extra,
  };
}
