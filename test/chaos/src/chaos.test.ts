/**
 * Short versions of chaos scenarios on real processes (the full suite is
 * `npm run chaos`): agents killed with SIGKILL mid-lease, an agent paused
 * with SIGSTOP past its lease's expiry, a NATS restart, and the owning
 * coordinator killed in Redis mode with a standby, and the Redis Cluster
 * primary of the pool's slot killed under load, with replica confirmation
 * and without it (there the lost grants must show as windows over the
 * envelope), a relay SIGKILLed mid-lease under a root, and an agent whose
 * clock runs at half speed under libfaketime; on a three-server NATS
 * cluster in network namespaces, the owner's server killed, and cut off
 * its peers while its clients stay on it; a holder of a concurrency pool's
 * slots cut off NATS (slot-scenario.ts). Each fails if
 * its fault was not really injected. The network faults (net-scenarios.ts)
 * run in network namespaces: where those are not permitted they fail with
 * the reason, or are skipped with it printed when
 * TOKENLEASE_NETNS_UNAVAILABLE=skip says so.
 */
import { describe, expect, it } from 'vitest';
import { netnsSkipped, netnsUnavailable } from '@tokenlease/harness/netns';
import { seedFromEnv } from '@tokenlease/shared/testing';
import {
  cutAgentNats,
  cutCoordinatorNats,
  cutCoordinatorRedis,
  flapAgentNats,
  flapCoordinatorRedis,
  oneWayAgentNats,
  oneWayCoordinatorNats,
} from './net-scenarios.js';
import { slowAgentClock } from './clock-scenario.js';
import { isolateNatsServer, killNatsServer } from './cluster-scenarios.js';
import { redisPrimaryFailover, redisPrimaryFailoverUnconfirmed } from './redis-scenarios.js';
import { killRelay } from './relay-scenario.js';
import { cutSlotHolder } from './slot-scenario.js';
import { failoverCoordinator, killAgents, pauseAgent, restartNats, type ScenarioRow } from './scenarios.js';
import { rowProblems } from './verdict.js';

const seed = seedFromEnv();

const netnsMissing = await netnsUnavailable();
const skipNet = netnsMissing !== null && netnsSkipped();
if (skipNet) console.error(`chaos, network faults: NOT RUN, skipped as TOKENLEASE_NETNS_UNAVAILABLE=skip asks: ${netnsMissing}`);

function verdict(row: ScenarioRow): void {
  console.log(`chaos ${row.scenario} (SEED=${seed}): ${JSON.stringify(row)}`);
  expect(rowProblems(row)).toEqual([]);
  expect(row.admitted).toBeGreaterThan(0);
}

describe('chaos, short', () => {
  it('SIGKILL of agents mid-lease: stranded leases reclaimed within one TTL, envelope kept', async () => {
    const row = await killAgents({ short: true, seed });
    verdict(row);
    expect(row.reclaimMs).not.toBeNull();
  }, 120_000);

  it('SIGSTOP past expiry, then SIGCONT: the expired lease is not spent', async () => {
    const row = await pauseAgent({ short: true, seed });
    verdict(row);
    expect(row.reclaimMs).not.toBeNull();
  }, 120_000);

  it('NATS restart: everyone reconnects and the full rate comes back', async () => {
    verdict(await restartNats({ short: true, seed }));
  }, 120_000);

  it('owner SIGKILLed in Redis mode: the standby takes over, envelope kept', async () => {
    const row = await failoverCoordinator({ short: true, seed });
    verdict(row);
    expect(row.recoveryMs).not.toBeNull();
  }, 120_000);

  it('Redis Cluster primary of the pool’s slot SIGKILLed: its replica is promoted, envelope kept', async () => {
    const row = await redisPrimaryFailover({ short: true, seed });
    verdict(row);
    expect(row.recoveryMs).not.toBeNull();
  }, 120_000);

  it('the same without replica confirmation, the standby taking over from a replica that missed grants: the check sees the over-admission', async () => {
    const row = await redisPrimaryFailoverUnconfirmed({ short: true, seed });
    verdict(row);
    expect(row.envelopeViolations).toBeGreaterThan(0);
    expect(row.worstExcessTokens).toBeGreaterThan(0);
  }, 120_000);

  it('relay SIGKILLed mid-lease: its agents strand at most what it held, the root’s credit lapses, envelope kept over the tree', async () => {
    const row = await killRelay({ short: true, seed });
    verdict(row);
    expect(row.reclaimMs).not.toBeNull();
    expect(row.strandedTokens).not.toBeNull();
  }, 120_000);

  it('an agent whose clock runs at half speed (libfaketime): checked, it spends nothing the coordinator does not count; unchecked, it does', async () => {
    const row = await slowAgentClock({ short: true, seed });
    verdict(row);
    expect(row.expiryViolations).toBe(0);
    // The unchecked run's figures: faultVerified holds only if it spent after the coordinator stopped counting.
    expect(row.note).toMatch(/unchecked: it admitted \d+, [1-9]\d* of them after the coordinator stopped counting/);
  }, 120_000);
});

describe.skipIf(skipNet)('chaos by network faults, short', () => {
  it('owner cut from Redis, NATS kept: it grants nothing once its writes cannot land, the other takes over, envelope kept', async () => {
    const row = await cutCoordinatorRedis({ short: true, seed });
    verdict(row);
    expect(row.strayGrants).toBe(0);
    expect(row.takeoverMs).not.toBeNull();
  }, 120_000);

  it('owner cut from NATS, Redis kept: it steps out and hands its pools over, the other takes over, envelope kept, it takes part again after', async () => {
    const row = await cutCoordinatorNats({ short: true, seed });
    verdict(row);
    expect(row.strayGrants).toBe(0);
    expect(row.takeoverMs).not.toBeNull();
  }, 120_000);

  it('owner whose packets to NATS are lost while requests reach it: it steps out all the same, the other takes over, envelope kept', async () => {
    const row = await oneWayCoordinatorNats({ short: true, seed });
    verdict(row);
    expect(row.strayGrants).toBe(0);
    expect(row.takeoverMs).not.toBeNull();
  }, 120_000);

  it('owner whose link to Redis flaps: ownership moves and may come back, never two owners granting at once, envelope kept', async () => {
    const row = await flapCoordinatorRedis({ short: true, seed });
    verdict(row);
    expect(row.strayGrants).toBe(0);
  }, 120_000);

  it('an agent cut from NATS while it runs on: it stops at its lease’s expiry, the lease is reclaimed, it spends again after', async () => {
    const row = await cutAgentNats({ short: true, seed });
    verdict(row);
    expect(row.reclaimMs).not.toBeNull();
  }, 120_000);

  it('an agent whose replies are lost while its requests arrive: granted into the void, it spends nothing past the drop + TTL', async () => {
    const row = await oneWayAgentNats({ short: true, seed });
    verdict(row);
    expect(row.expiryViolations).toBe(0);
  }, 120_000);

  it('an agent whose link to NATS flaps: every admission within its lease, envelope kept, spending after', async () => {
    const row = await flapAgentNats({ short: true, seed });
    verdict(row);
  }, 120_000);

  it('a three-server NATS cluster loses the owner’s server: its clients reconnect to the others, grants go on, envelope kept', async () => {
    const row = await killNatsServer({ short: true, seed });
    verdict(row);
    expect(row.recoveryMs).not.toBeNull();
  }, 120_000);

  it('the owner’s server cut off its peers while its clients stay on it: the others’ requests fail, envelope kept, the rate back after', async () => {
    const row = await isolateNatsServer({ short: true, seed });
    verdict(row);
    expect(row.expiryViolations).toBe(0);
  }, 120_000);

  it('a holder of concurrency slots cut from NATS: its slots come back within TTL + hold bound, never while its holds may run; never more than the limit in flight', async () => {
    const row = await cutSlotHolder({ short: true, seed });
    verdict(row);
    expect(row.slotsBackMs).not.toBeNull();
    expect(row.worstWindowRatio).toBeLessThanOrEqual(1);
  }, 120_000);
});
