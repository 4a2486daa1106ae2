/**
 * A durable coordinator gives a pool up and claims it again while a write
 * of the ownership it gave up is still out (docs/design.md, "Write lanes
 * belong to their ownership"). The real durable service
 * (startDurableService) runs against a private Redis of its own, through a
 * HoldingStore (harness/holding-store.ts), on real NATS; agents of the Agent
 * library draw from the pool all along. The timeline:
 *
 * 1. The service owns the pool (epoch 1); the store holds its next write.
 * 2. Three agents ask at once: the first grant's write is held, the other
 *    two grants wait behind it in the lane of epoch 1.
 * 3. The next renewal answers "lapsed": the service steps down and claims
 *    the pool again (epoch 2), adopting what Redis holds.
 * 4. The new ownership serves for a while; then the held write settles:
 *    `unavailable` (a CLUSTERDOWN), `fenced` (it reached Redis after the
 *    claim), or `written` (it reached Redis before the lapse, its answer
 *    came late).
 *
 * Judged on what the service sent (its observer, in order with its log
 * lines), on Redis's append-only file and on the agents' admissions: no
 * grant of epoch 1 leaves after epoch 1 stepped down unless it repeats one
 * Redis holds; every grant sent is backed by a write Redis accepted under
 * its epoch; epoch 2 is never stepped down; the envelope B + r·T holds.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Agent } from '@tokenlease/agent';
import {
  connectRedisStore,
  createLogger,
  parseCoordinatorConfig,
  startDurableService,
  type DurableServiceOptions,
} from '@tokenlease/coordinator';
import { makeRate, type Reply } from '@tokenlease/shared';
import { hostMonoNowUs } from '@tokenlease/shared/clock';
import { connectBus } from '@tokenlease/shared/nats';
import { checkEnvelope, seededRandom, type Admission } from '@tokenlease/shared/testing';
import type { GrantLine } from '@tokenlease/harness/coordinator-log';
import { driveTraffic } from '@tokenlease/harness/drive';
import { holdingStore, type HeldOutcome } from '@tokenlease/harness/holding-store';
import { provideNats } from '@tokenlease/harness/nats';
import { readAppendOnlyCommands } from '@tokenlease/harness/redis-raw';
import { startPrivateRedis, type PrivateRedis } from '@tokenlease/harness/redis';
import { storeHistory, unwrittenGrants } from '@tokenlease/harness/store-history';
import { seededRun, serverForSuite } from '../servers.js';

const POOL = 'api';
const CAPACITY = 30;
const RATE = makeRate(5, 1000);
const MAX_LEASE_TOKENS = 10;
const AGENTS = 3;
const OWNERSHIP_TTL_MS = 600;
/** How long the new ownership serves before the held write settles, and the drive goes on after it, ms. */
const SERVED_BEFORE_MS = 300;
const DRIVE_AFTER_MS = 1500;

/** Entry — what the service did, in order: a reply it sent, or a line it logged. */
type Entry = { readonly reply: Reply; readonly repeat: boolean; readonly tUs: number } | { readonly log: Record<string, unknown> };

async function until(what: string, timeoutMs: number, test: () => boolean): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!test()) {
    if (Date.now() > deadline) throw new Error(`${what}: not within ${timeoutMs} ms`);
    await sleep(5);
  }
}

describe('a durable coordinator that gives a pool up and claims it again with a write still out', () => {
  const nats = serverForSuite(provideNats);
  let redis: PrivateRedis;
  beforeAll(async () => {
    // Private: the test reads its append-only file.
    redis = await startPrivateRedis();
  });
  afterAll(async () => {
    await redis?.stop();
  });

  async function timeline(outcome: HeldOutcome, seed: number) {
    const prefix = `tlreclaim${outcome}${seed}`;
    const config = parseCoordinatorConfig('durable-reclaim', {
      subjectPrefix: prefix,
      pools: { [POOL]: { capacity: CAPACITY, refill: '5/s', leaseTtlMs: 1000, maxLeaseTokens: MAX_LEASE_TOKENS } },
    });
    const entries: Entry[] = [];
    let acquires = 0;
    const observer: NonNullable<DurableServiceOptions['observer']> = {
      replied: (_pool, reply, repeat) => entries.push({ reply, repeat, tUs: hostMonoNowUs() }),
      handled: (op) => (acquires += op === 'acquire' ? 1 : 0),
      wrote: () => undefined,
      dropped: () => undefined,
    };
    const logger = createLogger('debug', { write: (line: string) => entries.push({ log: JSON.parse(line) as Record<string, unknown> }) });
    const bus = await connectBus(nats().url, { name: `durable-reclaim-${outcome}` });
    const store = holdingStore(await connectRedisStore(redis.url, { keyPrefix: prefix }));
    const service = startDurableService({ config, bus, store, logger, member: 'm1', ownershipTtlMs: OWNERSHIP_TTL_MS, observer });
    const agents: Agent[] = [];
    try {
      await until('epoch 1 owns the pool', 5000, () => service.owned().get(POOL) === 1);
      const caught = store.holdNextWrite(POOL, outcome === 'written');

      const random = seededRandom(seed);
      for (let i = 0; i < AGENTS; i++)
        agents.push(
          await Agent.connect({
            natsUrl: nats().url,
            subjectPrefix: prefix,
            clock: hostMonoNowUs,
            agentId: `reclaim-${outcome}-${i}`,
            // Each asks for a full lease from the start; a reply held back for a second still finds its request waiting.
            keeper: { initialTokens: MAX_LEASE_TOKENS, replyTimeoutMs: 3000 },
          }),
        );
      const admissions: Admission[] = [];
      let stopped = false;
      const drives = agents.map((agent) =>
        driveTraffic({
          limiter: agent.limiter(POOL),
          traffic: { kind: 'steady', perSecond: 40 },
          random: seededRandom(random.int(0, 2 ** 31)),
          clock: hostMonoNowUs,
          durationMs: 20_000,
          stopped: () => stopped,
          onAdmit: (tUs, cost, source) => (source === 'lease' ? admissions.push({ tUs, cost }) : undefined),
        }),
      );

      const write = await caught;
      expect(write.epoch).toBe(1);
      // Every agent's first request is answered, its reply waiting behind the held write.
      await until('every agent asked', 3000, () => acquires >= AGENTS);
      await store.lapseNextRenewal(POOL);
      await until('epoch 2 owns the pool', 3000, () => service.owned().get(POOL) === 2);
      await sleep(SERVED_BEFORE_MS);
      const redisSaid = await write.settle(outcome);
      await sleep(DRIVE_AFTER_MS);
      stopped = true;
      await Promise.all(drives);
      const ownedAtEnd = service.owned().get(POOL);
      return { prefix, entries, admissions, redisSaid, ownedAtEnd };
    } finally {
      await Promise.all(agents.map((agent) => agent.close()));
      await service.stop();
      await bus.drain();
      await store.close();
    }
  }

  it.each(['unavailable', 'fenced', 'written'] as const)(
    'sends no grant of the ended epoch, steps the new one down never, and keeps the envelope: the held write %s',
    async (outcome) => {
      const { seed } = seededRun(`durable-reclaim (${outcome})`, import.meta.url);
      const run = await timeline(outcome, seed);
      expect(run.redisSaid).toBe({ unavailable: null, fenced: false, written: true }[outcome]);

      const stepDowns = run.entries.flatMap((e, index) =>
        'log' in e && e.log['event'] === 'stepped-down' ? [{ index, epoch: e.log['epoch'], reason: e.log['reason'] }] : [],
      );
      const steppedDown = stepDowns.map(({ epoch, reason }) => ({ epoch, reason }));
      const ended = stepDowns.find((l) => l.epoch === 1)?.index ?? Infinity;
      const sent = run.entries.flatMap((e, index) => ('reply' in e && e.reply.kind === 'grant' ? [{ index, ...e, grant: e.reply }] : []));
      const endedEpochGrants = sent.filter((s) => s.index > ended && s.grant.epoch === 1 && !s.repeat);
      const grants: GrantLine[] = sent.map((s) => ({ ...s.grant, index: s.index, tUs: s.tUs }));
      const history = storeHistory(await readAppendOnlyCommands(redis.url), run.prefix, POOL);
      const unwritten = unwrittenGrants(grants, history);
      const report = checkEnvelope(run.admissions, CAPACITY, RATE);
      console.log(
        `durable-reclaim (${outcome}): ${sent.length} grants sent, ${sent.filter((s) => s.index > ended).length} after epoch 1 ended ` +
          `(${endedEpochGrants.length} fresh of epoch 1); ${unwritten.length} unwritten; step-downs ${JSON.stringify(steppedDown)}; ` +
          `${report.admittedTokens} tokens admitted, worst window ${report.worstExcessTokens.toFixed(2)} tokens over B + r·T`,
      );

      expect(steppedDown).toEqual([{ epoch: 1, reason: 'ownership lapsed' }]);
      expect(run.ownedAtEnd).toBe(2);
      expect(
        endedEpochGrants.map((s) => s.grant),
        'grants of epoch 1 sent after it ended',
      ).toEqual([]);
      expect(unwritten, 'grants sent that Redis never accepted under their epoch').toEqual([]);
      expect(report.violations, `worst window ${JSON.stringify(report.worstWindow)}`).toBe(0);
      // The new ownership did serve: more than half the pool's burst went out over the run.
      expect(report.admittedTokens).toBeGreaterThan(CAPACITY / 2);
      // Epoch 2 adopted what Redis held: the held write's lease only when it reached Redis before the lapse.
      expect(history.claims.find((c) => c.epoch === 2)?.leases).toBe(outcome === 'written' ? 1 : 0);
    },
    30_000,
  );
});
