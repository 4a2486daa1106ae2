/**
 * A three-server NATS cluster (private nats-servers joined by routes): the
 * coordinator on server 0, one agent on server 1 and one on server 2, so
 * every request crosses a route. Server 1 is SIGKILLed mid-run: its agent
 * reconnects to another server it learned from the cluster and is granted
 * again, the other agent never notices, and the envelope holds over both
 * agents' admissions. (The chaos suite does the same with every process in
 * a network namespace of its own, and cuts a server off its peers.)
 */
import { describe, expect, it } from 'vitest';
import { Agent, type AgentEvent } from '@tokenlease/agent';
import { makeRate } from '@tokenlease/shared';
import { hostMonoNowUs } from '@tokenlease/shared/clock';
import { checkEnvelope, type Admission, seedFromEnv, seededRandom } from '@tokenlease/shared/testing';
import { driveTraffic } from '@tokenlease/harness/drive';
import { scratchDir, startCoordinator, writeConfig } from '@tokenlease/harness/fleet';
import { startNatsCluster, type NatsNode } from '@tokenlease/harness/nats-cluster';
import { stop, type Child } from '@tokenlease/harness/processes';

const CAPACITY = 200;
const REFILL_PER_SECOND = 200;
const RUN_MS = 8000;

describe('a three-server NATS cluster', () => {
  it('serves agents on other servers than the coordinator’s, and one whose server dies reconnects and is granted again', async () => {
    const seed = seedFromEnv();
    console.log(`nats-cluster: SEED=${seed}`);
    const cluster = await startNatsCluster(3);
    let coordinator: Child | undefined;
    try {
      const url = (i: number): string => (cluster.nodes[i] as NatsNode).url;
      const configPath = writeConfig(scratchDir(), {
        pools: { api: { capacity: CAPACITY, refill: `${REFILL_PER_SECOND}/s`, leaseTtlMs: 1000, maxLeaseTokens: 40 } },
      });
      coordinator = await startCoordinator(url(0), configPath);
      const random = seededRandom(seed);
      const admissions: Admission[][] = [[], []];
      const events: AgentEvent[][] = [[], []];
      const agents = await Promise.all(
        [1, 2].map((node, i) =>
          Agent.connect({ natsUrl: url(node), clock: hostMonoNowUs, onEvent: (e) => events[i]?.push(e), agentId: `cluster-agent-${node}` }),
        ),
      );
      const drives = agents.map((agent, i) =>
        driveTraffic({
          limiter: agent.limiter('api'),
          traffic: { kind: 'steady', perSecond: 150 },
          random: seededRandom(random.int(0, 2 ** 31)),
          clock: hostMonoNowUs,
          durationMs: RUN_MS,
          onAdmit: (tUs, cost) => admissions[i]?.push({ tUs, cost }),
        }),
      );
      await new Promise((resolve) => setTimeout(resolve, 3000));
      const killedUs = hostMonoNowUs();
      expect(await cluster.kill(1)).toBe(true);
      await Promise.all(drives);
      await Promise.all(agents.map((a) => a.close()));

      const [onDead = [], onLive = []] = admissions;
      const before = onDead.filter((a) => a.tUs < killedUs).length;
      const after = onDead.filter((a) => a.tUs > killedUs + 2_000_000).length;
      console.log(
        `nats-cluster: the agent on the killed server admitted ${before} before the kill and ${after} from 2 s after it ` +
          `(events ${events[0]?.map((e) => e.type).join(',')}); the other ${onLive.length} (events ${events[1]?.map((e) => e.type).join(',') || 'none'})`,
      );
      expect(before).toBeGreaterThan(50);
      expect(events[0]?.some((e) => e.type === 'reconnect')).toBe(true);
      expect(after).toBeGreaterThan(50);
      expect(events[1]?.some((e) => e.type === 'disconnect')).toBe(false);
      expect(onLive.filter((a) => a.tUs > killedUs).length).toBeGreaterThan(50);
      const report = checkEnvelope([...onDead, ...onLive], CAPACITY, makeRate(REFILL_PER_SECOND, 1000));
      expect(report.ok, JSON.stringify(report)).toBe(true);
    } finally {
      // The coordinator first: left running, it would try the cluster's ports for good after the test.
      if (coordinator !== undefined) await stop(coordinator);
      await cluster.stop();
    }
  }, 60_000);
});
