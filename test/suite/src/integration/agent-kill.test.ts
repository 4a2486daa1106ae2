/**
 * An agent process holding a lease is killed with SIGKILL. It can strand at
 * most its lease, and only until the lease expires: the coordinator reclaims
 * it within one TTL (plus the coordinator's tick slack), and the pool's full
 * capacity is back once refill has covered what was spent and stranded.
 * An agent killed in its first second, before the coordinator has verified
 * its clock's rate, strands its lease for up to two TTLs (design.md,
 * "Clocks": leases are counted that long until then).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { join } from 'node:path';
import { scratchDir, startAgentProcess, startCoordinator, StatusProbe, writeConfig } from '@tokenlease/harness/fleet';
import { provideNats, type NatsHandle } from '@tokenlease/harness/nats';
import { stopAll, type Child } from '@tokenlease/harness/processes';
import { seedFromEnv } from '@tokenlease/shared/testing';

const CAPACITY = 100;
const REFILL_PER_SECOND = 200;
const TTL_MS = 1000;
const MAX_LEASE = 20;
/** Coordinator tick slack (its longest sleep is 250 ms) plus status polling. */
const SLACK_MS = 350;
/** By then an agent renewing often has had its clock verified (over at least 1 s of its requests), and the two-TTL count of its leases granted before has run out. */
const CLOCK_VERIFIED_AFTER_MS = 3500;

async function until<T>(probe: () => Promise<T>, done: (value: T) => boolean, timeoutMs: number): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (done(value)) return value;
    if (Date.now() > deadline) throw new Error(`condition not reached within ${timeoutMs} ms; last: ${JSON.stringify(value)}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

describe('an agent killed with SIGKILL', () => {
  let nats: NatsHandle;
  let probe: StatusProbe;
  beforeAll(async () => {
    nats = await provideNats();
    probe = await StatusProbe.connect(nats.url);
  });
  afterAll(async () => {
    await stopAll();
    await probe.close();
    await nats.stop();
  });

  /** withVictim — a coordinator on prefix `tlkill<tag><seed>`, full, and an agent process `name` holding a lease of it at 1000/s. */
  async function withVictim(tag: string, name: string): Promise<{ status: () => ReturnType<StatusProbe['status']>; victim: Child }> {
    const seed = seedFromEnv();
    const dir = scratchDir();
    const prefix = `tlkill${tag}${seed}`;
    const status = (): ReturnType<StatusProbe['status']> => probe.status('api', prefix);
    const configPath = writeConfig(dir, {
      subjectPrefix: prefix,
      pools: { api: { capacity: CAPACITY, refill: `${REFILL_PER_SECOND}/s`, leaseTtlMs: TTL_MS, maxLeaseTokens: MAX_LEASE } },
    });
    await startCoordinator(nats.url, configPath);
    await until(status, (s) => s.quietMs === 0 && s.levelTokens === CAPACITY, 5000);
    const victim = await startAgentProcess({
      natsUrl: nats.url,
      subjectPrefix: prefix,
      pool: 'api',
      name,
      seed,
      durationMs: 30_000,
      logPath: join(dir, `${name}.log`),
      traffic: { kind: 'steady', perSecond: 1000 },
    });
    await until(status, (s) => s.leases === 1 && s.leasedTokens > 0, 5000);
    return { status, victim };
  }

  it('strands at most its lease, and the pool is whole again within TTL + refill time', async () => {
    const { status, victim } = await withVictim('', 'victim');
    // Past its first seconds, so the coordinator has verified its clock: its lease is counted one TTL from its last grant.
    await new Promise((resolve) => setTimeout(resolve, CLOCK_VERIFIED_AFTER_MS));
    const before = await until(status, (s) => s.leases === 1 && s.leasedTokens > 0, 5000);
    victim.proc.kill('SIGKILL');
    const killedAt = performance.now();
    const exit = await victim.exited;
    expect(exit.signal).toBe('SIGKILL');

    const afterKill = await status();
    console.log('agent-kill: before', JSON.stringify(before), 'after', JSON.stringify(afterKill));
    expect(afterKill.leasedTokens).toBeLessThanOrEqual(MAX_LEASE);
    expect(afterKill.levelTokens + afterKill.leasedTokens).toBeLessThanOrEqual(CAPACITY);

    await until(status, (s) => s.leases === 0, TTL_MS + SLACK_MS + 1000);
    const reclaimMs = performance.now() - killedAt;
    await until(status, (s) => s.levelTokens === CAPACITY, 5000);
    const wholeMs = performance.now() - killedAt;
    const refillMs = (CAPACITY * 1000) / REFILL_PER_SECOND;
    console.log(
      `agent-kill: lease reclaimed ${reclaimMs.toFixed(0)} ms after the kill (TTL ${TTL_MS} ms); pool whole after ${wholeMs.toFixed(0)} ms (bound ${TTL_MS + refillMs + SLACK_MS} ms)`,
    );
    expect(reclaimMs).toBeLessThanOrEqual(TTL_MS + SLACK_MS);
    expect(wholeMs).toBeLessThanOrEqual(TTL_MS + refillMs + SLACK_MS);
  });

  it('killed in its first second, strands its lease for at most two TTLs (its clock not verified yet)', async () => {
    const { status, victim } = await withVictim('new', 'newcomer');
    victim.proc.kill('SIGKILL');
    const killedAt = performance.now();
    expect((await victim.exited).signal).toBe('SIGKILL');
    expect((await status()).leasedTokens).toBeLessThanOrEqual(MAX_LEASE);
    await until(status, (s) => s.leases === 0, 2 * TTL_MS + SLACK_MS + 1000);
    const reclaimMs = performance.now() - killedAt;
    console.log(`agent-kill: a newcomer's lease reclaimed ${reclaimMs.toFixed(0)} ms after the kill (two TTLs: ${2 * TTL_MS} ms)`);
    expect(reclaimMs).toBeLessThanOrEqual(2 * TTL_MS + SLACK_MS);
  });
});
