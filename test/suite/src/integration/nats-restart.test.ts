/**
 * NATS restarts under load (a private server we started, killed with
 * SIGKILL and started again on the same port). The agent keeps admitting
 * from the lease in hand during the outage, both sides reconnect by
 * themselves, grants resume, and the envelope holds over the whole run.
 */
import { describe, expect, it } from 'vitest';
import { Agent, type AgentEvent } from '@tokenlease/agent';
import { makeRate } from '@tokenlease/shared';
import { hostMonoNowUs } from '@tokenlease/shared/clock';
import { checkEnvelope, type Admission, seedFromEnv, seededRandom } from '@tokenlease/shared/testing';
import { driveTraffic } from '@tokenlease/harness/drive';
import { scratchDir, startCoordinator, writeConfig } from '@tokenlease/harness/fleet';
import { startPrivateNats } from '@tokenlease/harness/nats';
import { serverForSuite } from '../servers.js';

describe('a NATS restart under load', () => {
  const nats = serverForSuite(startPrivateNats);

  it('keeps leases in hand working, reconnects, and resumes granting', async () => {
    const seed = seedFromEnv();
    console.log(`nats-restart: SEED=${seed}`);
    const configPath = writeConfig(scratchDir(), {
      pools: { api: { capacity: 400, refill: '200/s', leaseTtlMs: 2000, maxLeaseTokens: 100 } },
    });
    await startCoordinator(nats().url, configPath);
    const events: AgentEvent[] = [];
    const agent = await Agent.connect({
      natsUrl: nats().url,
      clock: hostMonoNowUs,
      onEvent: (e) => events.push(e),
      keeper: { refreshMs: 1500 },
    });
    const admissions: Admission[] = [];
    const drive = driveTraffic({
      limiter: agent.limiter('api'),
      traffic: { kind: 'steady', perSecond: 60 },
      random: seededRandom(seed),
      clock: hostMonoNowUs,
      durationMs: 9000,
      onAdmit: (tUs, cost) => admissions.push({ tUs, cost }),
    });

    await new Promise((resolve) => setTimeout(resolve, 3000));
    // Kill NATS while the lease in hand holds enough to show it keeps working (it runs low just before each top-up).
    const limiter = agent.limiter('api');
    for (const deadline = Date.now() + 4000; limiter.stats().balanceTokens < 50 && Date.now() < deadline;)
      await new Promise((resolve) => setTimeout(resolve, 5));
    expect(limiter.stats().balanceTokens).toBeGreaterThanOrEqual(50);
    await nats().kill();
    const killedUs = hostMonoNowUs();
    await new Promise((resolve) => setTimeout(resolve, 1000));
    await nats().start();
    const restartedUs = hostMonoNowUs();
    await drive;
    await agent.close();

    const during = admissions.filter((a) => a.tUs > killedUs && a.tUs < restartedUs).length;
    const after = admissions.filter((a) => a.tUs > restartedUs + 1_000_000).length;
    console.log(
      `nats-restart: ${admissions.length} admissions, ${during} during the 1 s outage, ${after} from 1 s after the restart; events: ${events.map((e) => e.type).join(',')}`,
    );
    expect(events.some((e) => e.type === 'disconnect')).toBe(true);
    expect(events.some((e) => e.type === 'reconnect')).toBe(true);
    expect(during).toBeGreaterThan(10);
    expect(after).toBeGreaterThan(50);
    const report = checkEnvelope(admissions, 400, makeRate(200, 1000));
    expect(report.ok, JSON.stringify(report)).toBe(true);
  });
});
