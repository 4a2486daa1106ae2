import { describe, expect, it } from 'vitest';
import { parseRelayConfig } from './relay-config.js';

const POOL = { capacity: 100, refill: '100/s', leaseTtlMs: 1000, maxLeaseTokens: 10 };
const GOOD = { upstreamPrefix: 'root', subjectPrefix: 'eu', pools: { api: POOL } };

describe('parseRelayConfig', () => {
  it('reads the relayed pools, the prefixes and the uplink defaults', () => {
    const config = parseRelayConfig('relay.yaml', GOOD);
    expect(config.upstreamPrefix).toBe('root');
    expect(config.downstream.subjectPrefix).toBe('eu');
    expect(config.downstream.pools.map((p) => p.name)).toEqual(['api']);
    expect(config.uplink).toEqual({
      driftMargin: 0.1,
      refreshMs: 1000,
      holdMs: 200,
      replyTimeoutMs: 500,
      gapMs: 20,
      agentClass: null,
      identity: null,
    });
    expect(parseRelayConfig('relay.yaml', { ...GOOD, uplink: { agentClass: 'relay-eu' } }).uplink.agentClass).toBe('relay-eu');
    expect(parseRelayConfig('relay.yaml', { ...GOOD, uplink: { identity: 'edge-eu' } }).uplink.identity).toBe('edge-eu');
    expect(parseRelayConfig('relay.yaml', { ...GOOD, templates: { 't:*': POOL } }).downstream.templates[0]?.prefix).toBe('t:');
    const windowed = parseRelayConfig('relay.yaml', { ...GOOD, pools: { api: { window: '100/min' } } }).downstream.pools[0];
    expect(windowed?.window).toEqual({ limit: 100, windowMs: 60_000 });
  });

  it.each([
    ['no upstreamPrefix', { ...GOOD, upstreamPrefix: undefined }, /upstreamPrefix/],
    ['a wildcard upstreamPrefix', { ...GOOD, upstreamPrefix: 'a.*' }, /upstreamPrefix/],
    ['no subjectPrefix', { ...GOOD, subjectPrefix: undefined }, /subjectPrefix/],
    ['the same prefix up and down', { ...GOOD, subjectPrefix: 'root' }, /must differ/],
    ['a rate pool', { ...GOOD, pools: { api: { ...POOL, leaseMode: 'rate' } } }, /chunk-mode bucket/],
    ['an allowance', { ...GOOD, pools: { api: { ...POOL, allowance: 5 } } }, /chunk-mode bucket/],
    [
      'a concurrency pool',
      { ...GOOD, pools: { db: { concurrency: { limit: 5, maxHoldMs: 1000 }, leaseTtlMs: 1000 } } },
      /pools\.db" is a concurrency pool: a relay does not serve slots/,
    ],
    ['a template of rate leases', { ...GOOD, templates: { 't:*': { ...POOL, leaseMode: 'rate' } } }, /templates\.t:\*.*chunk-mode bucket/],
    ['an unknown uplink field', { ...GOOD, uplink: { constructor: 1 } }, /not an uplink field/],
    ['a drift margin of 0.5', { ...GOOD, uplink: { driftMargin: 0.5 } }, /driftMargin/],
    ['a fractional hold', { ...GOOD, uplink: { holdMs: 1.5 } }, /holdMs/],
    [
      "a reply timeout of 0, by the lease client's rule",
      { ...GOOD, uplink: { replyTimeoutMs: 0 } },
      /uplink\.replyTimeoutMs" must be an integer in \[1, 60000\], got 0/,
    ],
    ['a negative drift margin', { ...GOOD, uplink: { driftMargin: -0.1 } }, /uplink\.driftMargin" must be in \[0, 0\.5\)/],
    ['a gap of 0', { ...GOOD, uplink: { gapMs: 0 } }, /uplink\.gapMs/],
    ['an uplink that is a list', { ...GOOD, uplink: [] }, /uplink/],
    ['an agent class with a space', { ...GOOD, uplink: { agentClass: 'relay eu' } }, /agentClass/],
    ['an agent class that is a number', { ...GOOD, uplink: { agentClass: 7 } }, /agentClass/],
    ['an identity with a dot', { ...GOOD, uplink: { identity: 'edge.eu' } }, /uplink\.identity/],
    ['an identity of 49 characters', { ...GOOD, uplink: { identity: 'e'.repeat(49) } }, /uplink\.identity/],
    ['an identity that is a number', { ...GOOD, uplink: { identity: 7 } }, /uplink\.identity/],
    ['a document that is a list', [], /mapping/],
  ])('refuses %s', (_name, doc, message) => {
    expect(() => parseRelayConfig('relay.yaml', doc)).toThrow(message);
  });
});
