/**
 * Malformed, oversized, out-of-range and misaddressed requests over real
 * NATS get typed error replies, change nothing, and leave the coordinator
 * serving.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { encodeMessage, MESSAGE_BYTES_MAX, type Reply } from '@tokenlease/shared';
import { acquireRequest, seedFromEnv } from '@tokenlease/shared/testing';
import { scratchDir, startCoordinator, StatusProbe, writeConfig } from '@tokenlease/harness/fleet';
import { logEvents } from '@tokenlease/harness/log-events';
import { provideNats, type NatsHandle } from '@tokenlease/harness/nats';
import { stopAll, type Child } from '@tokenlease/harness/processes';

const text = (s: string): Uint8Array => new TextEncoder().encode(s);

describe('bad input over real NATS', () => {
  let nats: NatsHandle;
  let probe: StatusProbe;
  let coordinator: Child;
  const prefix = `tlbad${seedFromEnv()}`;
  beforeAll(async () => {
    nats = await provideNats();
    probe = await StatusProbe.connect(nats.url);
    const configPath = writeConfig(scratchDir(), {
      subjectPrefix: prefix,
      quietPeriodMs: 100,
      pools: {
        api: { capacity: 50, refill: '1000/s', leaseTtlMs: 10, maxLeaseTokens: 10, maxHoldMs: 0 },
        held: {
          capacity: 20,
          refill: '20/s',
          leaseTtlMs: 100,
          maxLeaseTokens: 10,
          minGrantTokens: 10,
          maxHoldMs: 50,
          classWeights: { gold: 2 },
        },
        trickle: { capacity: 50, refill: '100/s', leaseTtlMs: 100, maxLeaseTokens: 10, leaseMode: 'rate', classWeights: { gold: 2 } },
      },
    });
    coordinator = await startCoordinator(nats.url, configPath);
  });
  afterAll(async () => {
    await stopAll();
    await probe.close();
    await nats.stop();
  });

  const acquire = (fields: Record<string, unknown>): Uint8Array => text(JSON.stringify({ ...acquireRequest(), ...fields }));

  const cases: Array<[string, string, Uint8Array, string]> = [
    ['not JSON', 'acquire.api', text('{nope'), 'bad-request'],
    ['oversized', 'acquire.api', new Uint8Array(MESSAGE_BYTES_MAX + 1).fill(32), 'bad-request'],
    ['wrong version', 'acquire.api', text(JSON.stringify({ v: 9, op: 'acquire', seq: 3 })), 'unsupported-version'],
    [
      'the old protocol v1',
      'v1-acquire',
      text(JSON.stringify({ v: 1, op: 'acquire', agentId: 'a', pool: 'api', seq: 1 })),
      'unsupported-version',
    ],
    ['negative tokens', 'acquire.api', acquire({ tokensWanted: -5 }), 'bad-request'],
    ['fractional seq', 'acquire.api', acquire({ seq: 1.5 }), 'bad-request'],
    ['pool mismatch', 'acquire.api', acquire({ pool: 'other' }), 'bad-request'],
    ['op mismatch', 'return.api', acquire({}), 'bad-request'],
    ['unknown pool', 'acquire.nosuch', acquire({ pool: 'nosuch' }), 'unknown-pool'],
  ];

  it.each(cases)('%s → %s… refused with a typed error and no change', async (_name, subject, payload, code) => {
    const before = await probe.status('api', prefix);
    const reply = await probe.raw(subject === 'v1-acquire' ? `${prefix}.v1.acquire.api` : `${prefix}.v2.${subject}.anon`, payload);
    expect(reply.ok).toBe(true);
    if (!reply.ok) return;
    expect(reply.value.kind).toBe('error');
    if (reply.value.kind !== 'error') return;
    expect(reply.value.code).toBe(code);
    expect(reply.value.fault).toBe('peer');
    const after = await probe.status('api', prefix);
    expect(after.leases).toBe(before.leases);
    expect(after.leasedTokens).toBe(before.leasedTokens);
  });

  it.each(['constructor', '__proto__', 'toString', 'hasOwnProperty'])(
    'an agent class named %s is an unknown class: no internal error, and the coordinator lives on',
    async (agentClass) => {
      const request = (pool: string, agentId: string, fields: Record<string, unknown>): Promise<unknown> =>
        probe.raw(
          `${prefix}.v2.acquire.${pool}.anon`,
          text(JSON.stringify({ ...acquireRequest({ agentId, pool, tokensWanted: 10, demandPerSecond: 50, holdMs: 50 }), ...fields })),
        );
      const id = `${agentClass}-${Date.now()}`;
      // On the chunk pool an honest request waits ahead and tokens come back while the hostile one waits.
      const replies = (await Promise.all([
        request('held', `honest-${id}`, {}),
        request('held', `hostile-${id}`, { agentClass }),
        request('trickle', `hostile-${id}`, { agentClass }),
      ])) as Array<{ ok: boolean; value?: Reply }>;
      for (const reply of replies) {
        expect(reply.ok).toBe(true);
        expect(reply.value?.kind === 'error' ? reply.value.code : reply.value?.kind).not.toBe('internal');
      }
      // Several ticks of both pools later the process is alive and both pools still grant.
      await new Promise((resolve) => setTimeout(resolve, 600));
      expect(coordinator.proc.exitCode).toBeNull();
      for (const pool of ['held', 'trickle']) {
        const status = await probe.status(pool, prefix);
        expect(status.levelTokens + status.leasedTokens).toBeLessThanOrEqual(status.capacityTokens);
      }
      expect([
        ...logEvents(coordinator.lines, { event: 'pool-failed' }),
        ...logEvents(coordinator.lines, { event: 'tick-failed' }),
      ]).toEqual([]);
    },
  );

  it('keeps serving valid requests afterwards, and logged the refusals by pool and code', async () => {
    const reply = await probe.raw(`${prefix}.v2.acquire.api.anon`, encodeMessage(acquireRequest({ agentId: 'good' })));
    expect(reply.ok && reply.value.kind).toBe('grant');
    expect(coordinator.proc.exitCode).toBeNull();
    const codes = new Set(refusalLines().map((r) => r.code));
    expect([...codes].sort()).toEqual(expect.arrayContaining(['bad-request', 'unknown-pool', 'unsupported-version']));
  });

  it('logs a flood of refusals as a line per pool and code, not a line per request', async () => {
    const before = refusalLines().length;
    const flood = Array.from({ length: 2000 }, (_, i) => probe.raw(`${prefix}.v2.acquire.api.anon`, acquire({ seq: i, tokensWanted: -1 })));
    const replies = await Promise.all(flood);
    expect(replies.every((r) => r.ok && r.value.kind === 'error' && r.value.code === 'bad-request')).toBe(true);
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(refusalLines().length - before).toBeLessThanOrEqual(2);
    expect(coordinator.proc.exitCode).toBeNull();
  });

  function refusalLines(): Array<{ code?: unknown; pool?: unknown }> {
    return logEvents(coordinator.lines, { event: 'request-refused' }).map((e) => e.fields);
  }
});
