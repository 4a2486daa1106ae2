/** Readiness: 200 only when NATS, the store (when there is one) and the service all say so; the body names each check. */
import { describe, expect, it } from 'vitest';
import { readiness, type ReadinessChecks } from './readiness.js';

describe('readiness', () => {
  const cases: [what: string, checks: ReadinessChecks, status: 200 | 503][] = [
    ['memory mode, all well', { nats: true, store: null, serving: true }, 200],
    ['durable mode, all well', { nats: true, store: true, serving: true }, 200],
    ['NATS down or not flushing', { nats: false, store: null, serving: true }, 503],
    ['the store not answering', { nats: true, store: false, serving: true }, 503],
    ['the service not serving (stopping, or no heartbeat reached the store)', { nats: true, store: true, serving: false }, 503],
    ['everything down', { nats: false, store: false, serving: false }, 503],
  ];
  it.each(cases)('%s', (_what, checks, status) => {
    expect(readiness(checks)).toEqual({ status, body: { ready: status === 200, ...checks } });
  });

  it('puts `ready` first, then the checks as given', () => {
    expect(Object.keys(readiness({ nats: true, store: null, serving: true }).body)).toEqual(['ready', 'nats', 'store', 'serving']);
  });
});
