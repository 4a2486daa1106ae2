/**
 * RelayDriver: the commands each event gives, at fixed instants — what is
 * sent to the root and with which timeout, what is answered downstream,
 * which upstream lease is news and which lapse is logged, and stop.
 */
import { describe, expect, it } from 'vitest';
import { encodeMessage, subjectFor, type LeaseGrant, type LeaseRequest, type Reply } from '@tokenlease/shared';
import { parseRelayConfig } from './relay-config.js';
import { RelayDriver, type RelayCommand } from './relay-driver.js';

const MS = 1000;
const START_US = 1_000_000;
const CONFIG = parseRelayConfig('relay.yaml', {
  upstreamPrefix: 'root',
  subjectPrefix: 'eu',
  pools: { api: { capacity: 100, refill: '100/s', leaseTtlMs: 1000, maxLeaseTokens: 10, minGrantTokens: 1 } },
  uplink: { holdMs: 50, replyTimeoutMs: 200 },
});

function driver(): RelayDriver<string> {
  let n = 0;
  const identityOf = (): { agentId: string; leaseSecret: string } => ({
    agentId: `relay.test.${(n += 1)}`,
    leaseSecret: 'relay-secret-0123456789abcdef',
  });
  return new RelayDriver<string>({ config: CONFIG, epoch: 7, startUs: START_US, identityOf });
}

const of = <K extends RelayCommand<string>['kind']>(out: RelayCommand<string>[], kind: K): Extract<RelayCommand<string>, { kind: K }>[] =>
  out.filter((c): c is Extract<RelayCommand<string>, { kind: K }> => c.kind === kind);
const events = (out: RelayCommand<string>[]): string[] => of(out, 'log').map((c) => `${c.log.level} ${c.log.fields.event}`);
const upstream = (out: RelayCommand<string>[]): LeaseRequest => {
  const sent = of(out, 'send-upstream')[0]?.message;
  if (sent?.op !== 'acquire') throw new Error('no acquire sent');
  return sent;
};

/** The root's grant answering `request`: all it asked, under `leaseId`, for `ttlMs`. */
function rootGrant(request: LeaseRequest, leaseId: string, ttlMs = 1000): LeaseGrant {
  return {
    v: 2,
    kind: 'grant',
    seq: request.seq,
    leaseId,
    tokensGranted: request.tokensWanted,
    tokensHeld: request.tokensLeft + request.tokensWanted,
    ttlMs,
    epoch: 1,
    maxLeaseTokens: 50,
    capacityTokens: 100,
    refillTokens: 100,
    refillPeriodMs: 1000,
    retryAfterMs: 0,
  };
}

/** An agent's first acquire of `tokens` on the relay's pool. */
function agentAcquire(tokens: number): { subject: string; payload: Uint8Array } {
  const request: LeaseRequest = {
    v: 2,
    op: 'acquire',
    agentId: 'agent-1',
    pool: 'api',
    leaseSecret: 'agent-secret-0123456789abcdef',
    seq: 1,
    leaseId: null,
    tokensLeft: 0,
    tokensWanted: tokens,
    demandPerSecond: 0,
    holdMs: 0,
  };
  return { subject: subjectFor('eu', 'acquire', 'api'), payload: encodeMessage(request) };
}

describe('RelayDriver', () => {
  it('starts by asking the root for each pool, waiting the hold plus the reply timeout, and logs the new uplink', () => {
    const out = driver().start(START_US);
    const [send] = of(out, 'send-upstream');
    expect(send?.message).toMatchObject({ op: 'acquire', agentId: 'relay.test.1', pool: 'api', tokensWanted: 10 });
    expect(send?.timeoutMs).toBe(250);
    expect(events(out)).toEqual(['info uplink-started']);
    // Never the secret, in any log.
    expect(JSON.stringify(of(out, 'log'))).not.toContain('relay-secret');
    expect(out.at(-1)?.kind).toBe('wake');
  });

  it('logs a new upstream lease at info, its renewal at debug, and counts each outcome', () => {
    const d = driver();
    const first = upstream(d.start(START_US));
    const granted = d.upstreamReply(first, rootGrant(first, 'L1'), START_US + 2 * MS);
    expect(of(granted, 'upstream-outcome')).toEqual([{ kind: 'upstream-outcome', pool: 'api', outcome: 'granted' }]);
    expect(events(granted)).toEqual(['info upstream-lease']);
    // The renewal is due a third of the TTL after the grant.
    const renewal = upstream(d.tick(START_US + 400 * MS));
    expect(renewal.leaseId).toBe('L1');
    expect(events(d.upstreamReply(renewal, rootGrant(renewal, 'L1'), START_US + 401 * MS))).toEqual(['debug upstream-lease']);
  });

  it('answers a downstream request from its credit and asks the root again only when due', () => {
    const d = driver();
    const first = upstream(d.start(START_US));
    d.upstreamReply(first, rootGrant(first, 'L1'), START_US + 2 * MS);
    const { subject, payload } = agentAcquire(4);
    const out = d.request(subject, payload, 'agent-inbox', START_US + 3 * MS);
    const [reply] = of(out, 'reply');
    expect(reply?.where).toEqual({ subject });
    expect(reply?.deliveries[0]).toMatchObject({ to: 'agent-inbox', reply: { kind: 'grant', tokensGranted: 4 } });
    expect(of(out, 'send-upstream')).toEqual([]);
  });

  it('logs an upstream lease that ends unrenewed once, and refuses downstream requests from then on', () => {
    const d = driver();
    const first = upstream(d.start(START_US));
    d.upstreamReply(first, rootGrant(first, 'L1'), START_US + 2 * MS);
    // The relay's own end: first send + 1000 ms × (1 − 0.1). The renewals go unanswered.
    const endUs = START_US + 900 * MS;
    expect(events(d.tick(endUs - 1))).not.toContain('warn upstream-lost');
    expect(events(d.tick(endUs))).toContain('warn upstream-lost');
    expect(events(d.tick(endUs + 100 * MS))).not.toContain('warn upstream-lost');
    const { subject, payload } = agentAcquire(4);
    const [reply] = of(d.request(subject, payload, 'agent-inbox', endUs + 101 * MS), 'reply');
    expect(reply?.deliveries[0]?.reply).toMatchObject({ kind: 'error', code: 'unavailable' });
  });

  it("takes the root's reply as bytes off the bus: one that decodes as upstreamReply does; others give nothing, uncounted", () => {
    const d = driver();
    const first = upstream(d.start(START_US));
    const answered = d.upstreamAnswer(first, encodeMessage(rootGrant(first, 'L1')), START_US + 2 * MS);
    expect(of(answered, 'upstream-outcome')).toEqual([{ kind: 'upstream-outcome', pool: 'api', outcome: 'granted' }]);
    expect(events(answered)).toEqual(['info upstream-lease']);
    const renewal = upstream(d.tick(START_US + 400 * MS));
    for (const bytes of [new Uint8Array(), new TextEncoder().encode('{"v":2,"kind":"grant"'), new TextEncoder().encode('{"v":9}')]) {
      expect(d.upstreamAnswer(renewal, bytes, START_US + 401 * MS)).toEqual([]);
    }
    // Nothing was taken from the dropped ones: the lease the first grant made is still the pool's.
    expect(events(d.upstreamAnswer(renewal, encodeMessage(rootGrant(renewal, 'L1')), START_US + 402 * MS))).toEqual([
      'debug upstream-lease',
    ]);
  });

  it('counts an unanswered acquire, not an unanswered return, and logs both at debug', () => {
    const d = driver();
    const first = upstream(d.start(START_US));
    const out = d.upstreamFailed(first, new Error('timeout'));
    expect(of(out, 'upstream-outcome')).toEqual([{ kind: 'upstream-outcome', pool: 'api', outcome: 'unanswered' }]);
    const ret = { v: 2, op: 'return', agentId: 'a', pool: 'api', leaseSecret: 's', seq: 9, leaseId: 'L1', tokensLeft: 0 } as const;
    const returned = d.upstreamFailed(ret, new Error('timeout'));
    expect(of(returned, 'upstream-outcome')).toEqual([]);
    expect(events(returned)).toEqual(['debug upstream-unanswered']);
  });

  it('logs a refusal by the root and an implausible grant at warn, and changes nothing with either', () => {
    const d = driver();
    const first = upstream(d.start(START_US));
    const refusal: Reply = {
      v: 2,
      kind: 'error',
      seq: first.seq,
      code: 'unavailable',
      fault: 'coordinator',
      message: 'm',
      retryAfterMs: 0,
    };
    expect(events(d.upstreamReply(first, refusal, START_US + MS))).toEqual(['warn upstream-refused']);
    const second = upstream(d.tick(START_US + 100 * MS));
    const tooLong = { ...rootGrant(second, 'L1'), ttlMs: 3_600_001 };
    const out = d.upstreamReply(second, tooLong, START_US + 101 * MS);
    expect(of(out, 'upstream-outcome')[0]?.outcome).toBe('refused');
    expect(of(out, 'log')[0]?.log.fields).toMatchObject({ event: 'upstream-refused', problem: expect.stringContaining('leaseTtlMsMax') });
    expect(d.relay.upstreamLeases()).toEqual([{ pool: 'api', countedTokens: 0, endUs: -Infinity, fleetWeight: 1 }]);
  });

  it('at stop answers held requests, returns an idle upstream lease with the reply timeout, and then ignores everything', () => {
    const d = driver();
    const first = upstream(d.start(START_US));
    d.upstreamReply(first, rootGrant(first, 'L1'), START_US + 2 * MS);
    const out = d.stop(START_US + 3 * MS);
    const [ret] = of(out, 'send-upstream');
    expect(ret?.message).toMatchObject({ op: 'return', leaseId: 'L1', tokensLeft: 10 });
    expect(ret?.timeoutMs).toBe(200);
    expect(d.serving).toBe(false);
    expect(d.tick(START_US + 4 * MS)).toEqual([]);
    expect(d.upstreamReply(first, rootGrant(first, 'L1'), START_US + 5 * MS)).toEqual([]);
    expect(d.stop(START_US + 6 * MS)).toEqual([]);
  });
});
