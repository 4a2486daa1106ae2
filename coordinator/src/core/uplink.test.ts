import { describe, expect, it } from 'vitest';
import { FLEET_WEIGHT_MAX, NO_CALLS, type LeaseGrant } from '@tokenlease/shared';
import { parseCoordinatorConfig } from './config.js';
import { RelayCredit } from './relay-credit.js';
import { Uplink, type DownstreamView } from './uplink.js';

const MS = 1000;
const IDLE: DownstreamView = { leasedTokens: 0, demandPerSecond: 0, waitingTurnsTokens: 0, waiting: 0, fleetWeight: 0, calls: NO_CALLS };

function makeUplink(agentClass: string | null = null): { uplink: Uplink; credit: RelayCredit } {
  const config = parseCoordinatorConfig('relay.yaml', {
    pools: { p: { capacity: 100, refill: '100/s', leaseTtlMs: 1000, maxLeaseTokens: 10, minGrantTokens: 1 } },
  });
  const pool = config.pools[0]!;
  const credit = new RelayCredit({ capacityTokens: 100, capacityUnits: 100, unitsPerToken: 1 } as RelayCredit['scale'], 'p', 100 * MS);
  const uplink = new Uplink(pool, credit, {
    agentId: 'relay.r1.abc',
    leaseSecret: 'relay-secret-0123456789abcdef',
    driftMargin: 0.1,
    refreshMs: 1000,
    holdMs: 50,
    replyTimeoutMs: 200,
    leaseTtlMsMax: 60_000,
    initialTokens: 10,
    gapMs: 20,
    agentClass,
  });
  return { uplink, credit };
}

function grant(fields: Partial<LeaseGrant>): LeaseGrant {
  return {
    v: 2,
    kind: 'grant',
    seq: 1,
    leaseId: 'L1',
    tokensGranted: 10,
    tokensHeld: 10,
    ttlMs: 3000,
    epoch: 1,
    maxLeaseTokens: 50,
    capacityTokens: 100,
    refillTokens: 100,
    refillPeriodMs: 1000,
    retryAfterMs: 0,
    ...fields,
  };
}

describe('Uplink', () => {
  it('asks for its initial tokens at once, then applies the grant with the end an agent would count', () => {
    const { uplink, credit } = makeUplink();
    const req = uplink.poll(0, IDLE);
    // Nothing in its level: it is short, and asks to be held for its turn, as an agent does.
    expect(req).toMatchObject({ op: 'acquire', seq: 1, leaseId: null, tokensLeft: 0, tokensWanted: 10, holdMs: 50 });
    expect(uplink.onReply(grant({}), 5 * MS, 0)).toMatchObject({ kind: 'granted', tokensGranted: 10 });
    expect(credit.levelTokens).toBe(10);
    expect(credit.leaseEndUs).toBe(2700 * MS);
  });

  it('asks under its configured class with the weight of the fleet behind it, at least 1', () => {
    expect(makeUplink('relay-eu').uplink.poll(0, IDLE)).toMatchObject({ agentClass: 'relay-eu', fleetWeight: 1 });
    expect(makeUplink('relay-eu').uplink.poll(0, { ...IDLE, fleetWeight: 37 })).toMatchObject({ fleetWeight: 37 });
    expect(makeUplink('relay-eu').uplink.poll(0, { ...IDLE, fleetWeight: 1e9 })).toMatchObject({ fleetWeight: FLEET_WEIGHT_MAX });
    const plain = makeUplink().uplink.poll(0, { ...IDLE, fleetWeight: 37 });
    expect(plain).not.toHaveProperty('agentClass');
    expect(plain).not.toHaveProperty('fleetWeight');
  });

  it("tells the root the downstream agents' calls since its last granted acquire, again after an error", () => {
    const { uplink } = makeUplink();
    const reported = { admitted: 40, denied: 7, shadowDenied: 0 };
    const first = uplink.poll(0, { ...IDLE, calls: reported });
    expect(first?.calls).toEqual(reported);
    const unavailable = { v: 2, kind: 'error', seq: 1, code: 'unavailable', fault: 'coordinator', message: 'x', retryAfterMs: 0 } as const;
    uplink.onReply(unavailable, 1 * MS, 0);
    const more = { admitted: 45, denied: 9, shadowDenied: 1 };
    const second = uplink.poll(100 * MS, { ...IDLE, calls: more });
    expect(second?.calls).toEqual(more);
    expect(uplink.onReply(grant({ seq: second?.seq ?? 0 }), 101 * MS, 0)).toMatchObject({ kind: 'granted' });
    const third = uplink.poll(2_000 * MS, { ...IDLE, calls: { admitted: 50, denied: 9, shadowDenied: 1 } });
    expect(third?.calls).toEqual({ admitted: 5, denied: 0, shadowDenied: 0 });
  });

  it('does not ask again every gap while its agents hold all the root lets one lease hold', () => {
    const { uplink, credit } = makeUplink();
    uplink.poll(0, IDLE);
    uplink.onReply(grant({ tokensGranted: 10, tokensHeld: 10, maxLeaseTokens: 10 }), 5 * MS, 0);
    credit.take(10);
    const busy: DownstreamView = { ...IDLE, leasedTokens: 10, demandPerSecond: 500, fleetWeight: 3 };
    // Level empty, demand high, but the lease is at the root's limit: nothing to gain before the renewal (TTL/3).
    expect(uplink.poll(100 * MS, busy)).toBeNull();
    expect(uplink.nextDueUs()).toBe(1005 * MS);
    // Once its agents give some back, there is room again, and it asks as soon as the gap allows.
    const eased: DownstreamView = { ...busy, leasedTokens: 4 };
    expect(uplink.poll(200 * MS, eased)).toMatchObject({ op: 'acquire', tokensLeft: 4, tokensWanted: 6 });
  });

  it('after a grant short of its ask asks again when the root says tokens accrue, not a gap later', () => {
    const { uplink, credit } = makeUplink();
    uplink.poll(0, IDLE);
    uplink.onReply(grant({ tokensGranted: 1, tokensHeld: 1, retryAfterMs: 3 }), 5 * MS, 0);
    credit.take(1);
    const busy: DownstreamView = { ...IDLE, leasedTokens: 1, demandPerSecond: 500 };
    expect(uplink.poll(7 * MS, busy)).toBeNull();
    expect(uplink.poll(8 * MS, busy)).toMatchObject({ seq: 2, tokensLeft: 1, holdMs: 50 });
  });

  it('after a full grant waits its gap; a renewal while its level is not low asks without a hold', () => {
    const { uplink } = makeUplink();
    uplink.poll(0, IDLE);
    uplink.onReply(grant({ tokensGranted: 10, tokensHeld: 10 }), 5 * MS, 0);
    // A level of 10 for a target of 15: below target, not below a quarter of it.
    const some: DownstreamView = { ...IDLE, demandPerSecond: 15 };
    expect(uplink.poll(24 * MS, { ...some, waiting: 1 })).toBeNull();
    expect(uplink.poll(25 * MS, { ...some, waiting: 1 })).toMatchObject({ seq: 2, holdMs: 50 });
    const second = makeUplink().uplink;
    second.poll(0, IDLE);
    second.onReply(grant({ tokensGranted: 10, tokensHeld: 10 }), 5 * MS, 0);
    expect(second.poll(500 * MS, some)).toBeNull();
    expect(second.poll(1005 * MS, some)).toMatchObject({ seq: 2, tokensWanted: 5, holdMs: 0 });
  });

  it('reports level + Σ downstream bounds as tokensLeft, and asks for what demand over refreshMs needs', () => {
    const { uplink } = makeUplink();
    uplink.poll(0, IDLE);
    uplink.onReply(grant({ tokensGranted: 10, tokensHeld: 10 }), MS, 0);
    const req = uplink.poll(1001 * MS, { ...IDLE, demandPerSecond: 40, waitingTurnsTokens: 5, waiting: 1 });
    expect(req).toMatchObject({ seq: 2, leaseId: 'L1', tokensLeft: 10, tokensWanted: 35, demandPerSecond: 40, holdMs: 50 });
  });

  it('retries with the same seq and first send, and keeps the end counted from the first send', () => {
    const { uplink, credit } = makeUplink();
    const first = uplink.poll(0, IDLE);
    expect(uplink.poll(100 * MS, IDLE)).toBeNull();
    const retry = uplink.poll(250 * MS, IDLE);
    expect(retry).toBe(first);
    uplink.onReply(grant({}), 260 * MS, 0);
    expect(credit.leaseEndUs).toBe(2700 * MS);
  });

  it('ignores replies to other seqs, and refuses implausible or mismatched grants without changing the credit', () => {
    const { uplink, credit } = makeUplink();
    uplink.poll(0, IDLE);
    expect(uplink.onReply(grant({ seq: 7 }), MS, 0)).toEqual({ kind: 'ignored' });
    const other = makeUplink().uplink.poll(0, IDLE)!;
    expect(uplink.onReply(grant({}), MS, 0, other)).toEqual({ kind: 'ignored' });
    expect(uplink.onReply(grant({ tokensGranted: 11, tokensHeld: 11 }), MS, 0)).toMatchObject({ kind: 'refused' });
    uplink.poll(300 * MS, IDLE);
    expect(uplink.onReply(grant({ seq: 2, capacityTokens: 200 }), 301 * MS, 0)).toMatchObject({ kind: 'refused' });
    uplink.poll(600 * MS, IDLE);
    expect(uplink.onReply(grant({ seq: 3, ttlMs: 120_000 }), 601 * MS, 0)).toMatchObject({ kind: 'refused' });
    uplink.poll(900 * MS, IDLE);
    expect(uplink.onReply(grant({ seq: 4, shadow: true }), 901 * MS, 0)).toMatchObject({ kind: 'refused' });
    expect(credit.levelTokens).toBe(0);
    expect(credit.leaseEndUs).toBe(-Infinity);
  });

  it('backs off after an error for its retryAfterMs, and moves past a stale sequence floor', () => {
    const { uplink } = makeUplink();
    uplink.poll(0, IDLE);
    const error = {
      v: 2,
      kind: 'error',
      seq: 1,
      code: 'stale-sequence',
      fault: 'peer',
      message: 'old',
      retryAfterMs: 300,
      seqFloor: 9,
    } as const;
    expect(uplink.onReply(error, MS, 0)).toMatchObject({ kind: 'error', code: 'stale-sequence' });
    expect(uplink.poll(200 * MS, IDLE)).toBeNull();
    expect(uplink.poll(301 * MS, IDLE)).toMatchObject({ seq: 10 });
  });

  it('returns the lease at shutdown only when no downstream lease draws on it', () => {
    const { uplink, credit } = makeUplink();
    uplink.poll(0, IDLE);
    uplink.onReply(grant({}), MS, 0);
    expect(uplink.returnRequest(3)).toBeNull();
    expect(uplink.returnRequest(0)).toMatchObject({ op: 'return', leaseId: 'L1', tokensLeft: 10, seq: 2 });
    expect(credit.levelTokens).toBe(0);
  });
});
