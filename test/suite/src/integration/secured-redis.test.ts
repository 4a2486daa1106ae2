/**
 * The durable coordinator on a secured Redis (real redis-servers run on
 * configuration files) and a secured NATS (deploy/nats/secured.conf as
 * shipped): a password (`requirepass`, in the URL), an ACL user whose
 * password comes from the environment, and rediss:// with a client
 * certificate. It serves and agents are granted; a wrong password or a
 * missing certificate is one line and status 1; and no password appears in
 * anything it prints: not the durability warning (which used to log the
 * URL whole), not the warning about too few replicas for --redis-replicas,
 * not the errors it logs when Redis starts refusing it.
 */
import { execFileSync } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Agent } from '@tokenlease/agent';
import { NATS_ENV } from '@tokenlease/shared/nats';
import { findExecutable } from '@tokenlease/harness/binaries';
import { scratchDir, startCoordinator, writeConfig } from '@tokenlease/harness/fleet';
import { waitForEvent } from '@tokenlease/harness/log-events';
import { startShippedNats, type ShippedNats } from '@tokenlease/harness/nats-config';
import { coordinatorCliScript } from '@tokenlease/harness/paths';
import { makePki, type Pki } from '@tokenlease/harness/pki';
import { spawnNode, stop, stopAll, type Child } from '@tokenlease/harness/processes';
import { startConfiguredRedis, type ConfiguredRedis } from '@tokenlease/harness/redis-config';

const POOL = 'api';
/** The key prefix the ACL user may touch. */
const KEYS = 'tlsecure';
const PASSWORD = 'default-pw#1';
const ACL_USER = 'tlredis';
const ACL_PASSWORD = 'acl-pw#2';
/** What the ACL user may run: the store's scripts and the commands inside them, on its own keys. */
const ACL_RULES = `~${KEYS}:* resetchannels -@all +@read +@write +@scripting +@connection +info +time +config|get`;
/** Every NATS_* and REDIS_* variable set empty: nothing of the parent's leaks in. */
const CLEAN_ENV: NodeJS.ProcessEnv = Object.fromEntries(
  [...Object.values(NATS_ENV), 'REDIS_URL', 'REDIS_USER', 'REDIS_PASSWORD', 'REDIS_CA', 'REDIS_CERT', 'REDIS_KEY'].map((name) => [
    name,
    '',
  ]),
);

describe('the durable coordinator on a secured Redis', () => {
  const dir = scratchDir();
  let nats: ShippedNats;
  let redis: ConfiguredRedis;
  let tlsRedis: ConfiguredRedis;
  let pki: Pki;
  let configPath: string;

  beforeAll(async () => {
    pki = makePki(dir);
    nats = await startShippedNats(dir);
    // appendonly no: the coordinator must warn, and its warning names the URL.
    redis = await startConfiguredRedis(
      dir,
      'redis-auth',
      `appendonly no\nrequirepass "${PASSWORD}"\nuser ${ACL_USER} on >${ACL_PASSWORD} ${ACL_RULES}\n`,
    );
    tlsRedis = await startConfiguredRedis(
      dir,
      'redis-tls',
      `appendonly yes\nappendfsync always\ntls-cert-file ${pki.serverCertFile}\ntls-key-file ${pki.serverKeyFile}\ntls-ca-cert-file ${pki.caFile}\ntls-auth-clients yes\n`,
      true,
    );
    configPath = writeConfig(dir, {
      subjectPrefix: 'tokenlease',
      bindIdentity: true,
      pools: { [POOL]: { capacity: 50, refill: '50/s', leaseTtlMs: 1000 } },
    });
  }, 60_000);

  afterAll(async () => {
    await stopAll();
    await Promise.all([nats.stop(), redis.stop(), tlsRedis.stop()]);
  });

  /** The coordinator in durable mode, logged in to NATS as the shipped file's coordinator. */
  function coordinator(redisUrl: string, args: readonly string[], env: NodeJS.ProcessEnv = {}): Promise<Child> {
    return startCoordinator(nats.url, configPath, {
      redisUrl,
      member: `m${Date.now() % 100_000}`,
      redisPrefix: KEYS,
      args,
      env: { ...CLEAN_ENV, NATS_URL: nats.url, NATS_USER: 'coordinator', NATS_PASSWORD: nats.password('coordinator'), ...env },
    });
  }

  async function granted(): Promise<boolean> {
    const agent = await Agent.connect({
      natsUrl: nats.url,
      identity: 'checkout',
      nats: { user: 'checkout', password: nats.password('checkout') },
      env: {},
    });
    try {
      return await agent.limiter(POOL).take(1, { timeoutMs: 8000 });
    } finally {
      await agent.close({ timeoutMs: 500 });
    }
  }

  function printed(child: Child): string {
    return `${child.lines.join('\n')}\n${child.stderr()}`;
  }

  async function runCli(args: readonly string[], env: NodeJS.ProcessEnv = {}): Promise<{ code: number | null; out: string }> {
    const child = spawnNode('cli', coordinatorCliScript(), ['--config', configPath, ...args], {
      ...CLEAN_ENV,
      NATS_URL: nats.url,
      NATS_USER: 'coordinator',
      NATS_PASSWORD: nats.password('coordinator'),
      ...env,
    });
    const { code } = await child.exited;
    return { code, out: printed(child).trim() };
  }

  it('serves on a password inside the URL, and its durability warning shows the URL redacted', async () => {
    const child = await coordinator(`redis://:${encodeURIComponent(PASSWORD)}@127.0.0.1:${redis.port}`, []);
    const warning = await waitForEvent(child, { event: 'durability-warning' }, 5000);
    expect(warning['redis']).toBe(`redis://:***@127.0.0.1:${redis.port}`);
    expect(await granted()).toBe(true);
    await stop(child);
    expect(printed(child)).not.toContain(encodeURIComponent(PASSWORD));
    expect(printed(child)).not.toContain(PASSWORD);
  });

  it('warns once at start, naming the primary and not the password, when it has fewer replicas than --redis-replicas asks', async () => {
    const child = await coordinator(`redis://:${encodeURIComponent(PASSWORD)}@127.0.0.1:${redis.port}`, ['--redis-replicas', '1']);
    const warning = await waitForEvent(child, { event: 'replica-warning' }, 5000);
    expect(warning['redis']).toBe(`redis://:***@127.0.0.1:${redis.port}`);
    expect(warning['replicas']).toBe(1);
    expect(String(warning['msg'])).toContain(
      `127.0.0.1:${redis.port} has 0 online: every write to this primary will be refused as unavailable`,
    );
    await stop(child);
    expect(child.lines.filter((line) => line.includes('"replica-warning"'))).toHaveLength(1);
    expect(printed(child)).not.toContain(encodeURIComponent(PASSWORD));
    expect(printed(child)).not.toContain(PASSWORD);
  });

  it('serves as an ACL user whose password comes from the environment, over the URL one; logs no secret when Redis starts refusing it', async () => {
    // The login given apart wins over the one inside the URL.
    const child = await coordinator(`redis://nobody:not-it@127.0.0.1:${redis.port}`, ['--redis-user', ACL_USER], {
      REDIS_PASSWORD: ACL_PASSWORD,
    });
    expect(await granted()).toBe(true);
    // Change the user's password and drop its connections: every reconnect now fails its AUTH.
    const cli = findExecutable('redis-cli');
    if (cli === null) throw new Error('this test needs redis-cli (Debian: apt-get install redis-tools)');
    const admin = ['-h', '127.0.0.1', '-p', String(redis.port), '--no-auth-warning', '-a', PASSWORD];
    execFileSync(cli, [...admin, 'ACL', 'SETUSER', ACL_USER, 'resetpass', '>another-pw']);
    execFileSync(cli, [...admin, 'CLIENT', 'KILL', 'USER', ACL_USER]);
    await waitForEvent(child, { event: 'heartbeat-failed' }, 10_000);
    await stop(child);
    expect(printed(child)).not.toContain(ACL_PASSWORD);
    execFileSync(cli, [...admin, 'ACL', 'SETUSER', ACL_USER, 'resetpass', `>${ACL_PASSWORD}`]);
  });

  it('refuses a wrong password with one line and status 1, showing neither password', async () => {
    for (const [args, env] of [
      [['--redis', `redis://:wrong-pw%23x@127.0.0.1:${redis.port}`], {}],
      [['--redis', `redis://127.0.0.1:${redis.port}`], { REDIS_USER: ACL_USER, REDIS_PASSWORD: 'wrong-pw#x' }],
    ] as const) {
      const { code, out } = await runCli(args, env);
      expect(code, out).toBe(1);
      expect(out.split('\n'), out).toHaveLength(1);
      expect(out).toMatch(
        new RegExp(
          `^tokenlease-coordinator: cannot connect to Redis at redis://(:\\*\\*\\*@)?127\\.0\\.0\\.1:${redis.port}: authentication failed \\(WRONGPASS`,
        ),
      );
      for (const secret of ['wrong-pw', PASSWORD, ACL_PASSWORD]) expect(out).not.toContain(secret);
    }
  });

  it('serves on rediss:// with a client certificate, and refuses to start without one', async () => {
    const url = `rediss://127.0.0.1:${tlsRedis.port}`;
    const child = await coordinator(url, ['--redis-ca', pki.caFile, '--redis-cert', pki.clientCertFile, '--redis-key', pki.clientKeyFile]);
    expect(await granted()).toBe(true);
    await stop(child);
    const { code, out } = await runCli(['--redis', url], { REDIS_CA: pki.caFile });
    expect(code, out).toBe(1);
    expect(out.split('\n'), out).toHaveLength(1);
    expect(out).toMatch(new RegExp(`^tokenlease-coordinator: cannot connect to Redis at rediss://127\\.0\\.0\\.1:${tlsRedis.port}: `));
    const plain = await runCli(['--redis', `redis://127.0.0.1:${tlsRedis.port}`, '--redis-ca', pki.caFile]);
    expect(plain.code, plain.out).toBe(2);
    expect(plain.out).toMatch(/--redis-ca is given but --redis is not a rediss:\/\/ URL/);
  });
});
