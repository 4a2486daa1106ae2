/**
 * The operator CLI (`tokenlease`) against live coordinators: its text and
 * its --json output (which must parse), a refreshing watch, a reload
 * gathered from every coordinator, pools gathered from two durable
 * coordinators that each answer for what they own, and its exit statuses:
 * 0 done, 1 NATS unreachable or nobody answered, 2 usage, 3 refused,
 * 4 a reload refused.
 */
import { writeFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { scratchDir, startAgentProcess, startCoordinator, StatusProbe, writeConfig } from '@tokenlease/harness/fleet';
import { waitForEvent } from '@tokenlease/harness/log-events';
import { provideNats } from '@tokenlease/harness/nats';
import { operatorCliScript } from '@tokenlease/harness/paths';
import { freePort } from '@tokenlease/harness/ports';
import { spawnNode, stop } from '@tokenlease/harness/processes';
import { provideRedis } from '@tokenlease/harness/redis';
import { waitUntil } from '@tokenlease/harness/wait';
import { serverForSuite } from '../servers.js';

interface Run {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

async function tokenlease(args: readonly string[]): Promise<Run> {
  const child = spawnNode('tokenlease', operatorCliScript(), args);
  const { code } = await child.exited;
  return { code, stdout: child.lines.join('\n'), stderr: child.stderr() };
}

const POOL_FIELDS = { capacity: 100, refill: '100/s', leaseTtlMs: 1000, maxLeaseTokens: 20 };

describe('the operator CLI against live coordinators', () => {
  const nats = serverForSuite(provideNats);
  const redis = serverForSuite(provideRedis);

  it('shows pools, status, an agent lease and a watch, as text and JSON, and reloads', async () => {
    const prefix = `tlcli${process.pid}`;
    const dir = scratchDir();
    const doc = { subjectPrefix: prefix, pools: { api: POOL_FIELDS, spare: POOL_FIELDS }, templates: { 'tenant:*': POOL_FIELDS } };
    const configPath = writeConfig(dir, doc);
    const coordinator = await startCoordinator(nats().url, configPath);
    const common = ['--nats', nats().url, '--prefix', prefix];
    const agent = await startAgentProcess({
      natsUrl: nats().url,
      subjectPrefix: prefix,
      pool: 'api',
      name: 'cli-agent',
      seed: 1,
      // Longer than the commands below take on a busy machine (stopped at the end): with 6 s its lease was once
      // returned, its run over, before `status --agent` asked for it.
      durationMs: 60_000,
      traffic: { kind: 'steady', perSecond: 50 },
    });
    const agentId = String((await waitForEvent(agent, { type: 'ready' }, 1000))['agentId']);
    // Past the quiet period: the agent holds a lease.
    const probe = await StatusProbe.connect(nats().url);
    await waitUntil('a lease of the agent', 10_000, async () => (await probe.status('api', prefix, agentId)).agentLease != null);
    await probe.close();

    const pools = await tokenlease(['pools', '--json', ...common]);
    expect(pools.code, pools.stderr).toBe(0);
    const listed = JSON.parse(pools.stdout) as { coordinators: string[]; pools: { pool: string; kind: string; coordinator: string }[] };
    expect(listed.pools.map((p) => [p.pool, p.kind])).toEqual([
      ['api', 'configured'],
      ['spare', 'configured'],
    ]);
    expect(listed.coordinators).toHaveLength(1);

    const text = await tokenlease(['pools', ...common]);
    expect(text.code).toBe(0);
    expect(text.stdout).toMatch(/^POOL +KIND +COORDINATOR/);

    const status = await tokenlease(['status', 'api', '--agent', agentId, '--json', ...common]);
    expect(status.code, status.stderr).toBe(0);
    const parsed = JSON.parse(status.stdout) as {
      pool: string;
      capacityTokens: number;
      agentLease: { leaseId: string; tokensHeld: number } | null;
    };
    expect(parsed).toMatchObject({ pool: 'api', capacityTokens: 100 });
    expect(parsed.agentLease?.leaseId).toMatch(/./);
    expect(status.stdout).not.toMatch(/secret/i);

    const all = await tokenlease(['status', ...common]);
    expect(all.code).toBe(0);
    expect(all.stdout).toContain('spare');

    const watched = await tokenlease(['watch', 'api', '--json', '--count', '3', '--interval-ms', '100', ...common]);
    expect(watched.code).toBe(0);
    const frames = watched.stdout.split('\n').map((line) => JSON.parse(line) as { pool: string; levelTokens: number });
    expect(frames).toHaveLength(3);
    expect(frames.every((f) => f.pool === 'api')).toBe(true);
    const frame = await tokenlease(['watch', 'api', '--count', '1', ...common]);
    expect(frame.code).toBe(0);
    expect(frame.stdout).toContain('capacity 100');

    // Reload through the CLI: spare removed, extra added, api changed.
    writeFileSync(configPath, JSON.stringify({ ...doc, pools: { api: { ...POOL_FIELDS, capacity: 60 }, extra: POOL_FIELDS } }));
    const reload = await tokenlease(['reload', '--json', ...common]);
    expect(reload.code, reload.stderr).toBe(0);
    expect(JSON.parse(reload.stdout)).toMatchObject({
      coordinators: [{ outcome: 'applied', added: ['extra'], removed: ['spare'], changed: ['api'] }],
    });
    const after = JSON.parse((await tokenlease(['pools', '--json', ...common])).stdout) as typeof listed;
    // spare held no lease and was full: removed, it is forgotten at once (a pool with leases lapses first: see the core's tests).
    expect(after.pools.map((p) => [p.pool, p.kind])).toEqual([
      ['api', 'configured'],
      ['extra', 'configured'],
    ]);
    expect((await tokenlease(['status', 'spare', ...common])).code).toBe(3);
    expect(JSON.parse((await tokenlease(['status', 'api', '--json', ...common])).stdout)).toMatchObject({ capacityTokens: 60 });

    // A file that does not validate: status 4, and the coordinator says why.
    writeFileSync(configPath, '{ "pools": { "api": { "capacity": 0, "refill": "1/s" } } }');
    const refused = await tokenlease(['reload', ...common]);
    expect(refused.code).toBe(4);
    expect(refused.stdout).toMatch(/refused.*capacity/);
    await waitForEvent(coordinator, { event: 'reload-refused' }, 2000);

    const unknown = await tokenlease(['status', 'nope', ...common]);
    expect(unknown.code).toBe(3);
    expect(unknown.stderr).toMatch(/unknown-pool/);
    await stop(agent);
    await stop(coordinator);
  });

  it('gathers pools from two durable coordinators, each answering for what it owns', async () => {
    const prefix = `tlclidurable${process.pid}`;
    const dir = scratchDir();
    const pools = Object.fromEntries(['a', 'b', 'c', 'd', 'e', 'f'].map((name) => [name, POOL_FIELDS]));
    const configPath = writeConfig(dir, { subjectPrefix: prefix, pools });
    const options = { redisUrl: redis().url, ownershipTtlMs: 600, redisPrefix: `${prefix}-${Date.now()}` };
    const one = await startCoordinator(nats().url, configPath, { ...options, member: 'cli-one' });
    const two = await startCoordinator(nats().url, configPath, { ...options, member: 'cli-two' });
    // Both members seen and every pool owned by its preferred member: wait until six pools are listed once each.
    let listed: { coordinators: string[]; pools: { pool: string; coordinator: string }[] } = { coordinators: [], pools: [] };
    for (let i = 0; i < 50; i += 1) {
      const run = await tokenlease(['pools', '--json', '--nats', nats().url, '--prefix', prefix, '--window-ms', '300']);
      if (run.code === 0) listed = JSON.parse(run.stdout) as typeof listed;
      if (listed.pools.length === 6 && listed.coordinators.length === 2) break;
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    expect(listed.pools.map((p) => p.pool)).toEqual(['a', 'b', 'c', 'd', 'e', 'f']);
    expect(listed.coordinators).toEqual(['cli-one', 'cli-two']);
    // One reload reaches both; each applies the file, and pool a serves its new capacity wherever it is owned.
    writeFileSync(configPath, JSON.stringify({ subjectPrefix: prefix, pools: { ...pools, a: { ...POOL_FIELDS, capacity: 70 } } }));
    const reload = await tokenlease(['reload', '--json', '--nats', nats().url, '--prefix', prefix]);
    expect(reload.code, reload.stderr).toBe(0);
    const outcomes = (JSON.parse(reload.stdout) as { coordinators: { coordinator: string; outcome: string; changed: string[] }[] })
      .coordinators;
    expect(outcomes.map((o) => [o.coordinator, o.outcome, o.changed]).sort()).toEqual([
      ['cli-one', 'applied', ['a']],
      ['cli-two', 'applied', ['a']],
    ]);
    const a = JSON.parse((await tokenlease(['status', 'a', '--json', '--nats', nats().url, '--prefix', prefix])).stdout) as {
      capacityTokens: number;
    };
    expect(a.capacityTokens).toBe(70);
    await Promise.all([stop(one), stop(two)]);
  });

  it('fails with a clear line and status 1 when NATS is unreachable, 1 when nobody answers, 2 on a usage error', async () => {
    const port = await freePort();
    const down = await tokenlease(['pools', '--json', '--nats', `nats://user:pass@127.0.0.1:${port}`]);
    expect(down.code).toBe(1);
    expect(down.stderr).toMatch(new RegExp(`^tokenlease: cannot connect to NATS at nats://127\\.0\\.0\\.1:${port}\\b[^\\n]*refused\\n$`));
    expect(down.stderr).not.toMatch(/:pass\b|pass@/);
    expect(down.stdout).toBe('');
    const nobody = await tokenlease(['status', 'api', '--nats', nats().url, '--prefix', `tlnobody${process.pid}`, '--timeout-ms', '300']);
    expect(nobody.code).toBe(1);
    expect(nobody.stderr).toMatch(/no coordinator answered/);
    for (const args of [
      [],
      ['frob'],
      ['watch'],
      ['status', 'a.b'],
      ['pools', '--bogus'],
      ['status', '--agent', 'x'],
      ['watch', 'api', '--count', '0'],
    ]) {
      const usage = await tokenlease(args);
      expect(usage.code, args.join(' ')).toBe(2);
      expect(usage.stderr).toMatch(/usage: tokenlease/);
    }
    expect((await tokenlease(['--help'])).code).toBe(0);
  });
});
