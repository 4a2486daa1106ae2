/**
 * The tools run unchanged on a secured NATS, told only through the
 * environment: `npm start` (the demo: its coordinator, agent processes and
 * status probe) with NATS_URL, NATS_USER and NATS_PASSWORD set against a
 * server that requires a user and password, and the chaos fleet likewise,
 * an agent SIGKILLed on it as in a chaos scenario. The password appears in
 * nothing they print.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NATS_ENV } from '@tokenlease/shared/nats';
import { ChaosFleet, CHAOS_POOL } from '@tokenlease/chaos';
import { scratchDir } from '@tokenlease/harness/fleet';
import { startConfiguredNats, type ConfiguredNats } from '@tokenlease/harness/nats-config';
import { toolScript } from '@tokenlease/harness/paths';
import { spawnNode, stop, stopAll } from '@tokenlease/harness/processes';

const USER = 'fleet';
const PASSWORD = `pw-${randomBytes(8).toString('hex')}`;

describe('the demo and the chaos fleet on a user/password NATS, from the environment alone', () => {
  const dir = scratchDir();
  let nats: ConfiguredNats;
  const saved = new Map<string, string | undefined>();

  beforeAll(async () => {
    nats = await startConfiguredNats(dir, 'user-password', {
      text: `authorization { users = [ { user: ${USER}, password: "${PASSWORD}" } ] }\n`,
    });
  });

  afterAll(async () => {
    for (const [name, value] of saved) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
    await stopAll();
    await nats.stop();
  });

  it('npm start runs its fleet and checks the envelope, printing no password', async () => {
    const env = {
      ...Object.fromEntries(Object.values(NATS_ENV).map((name) => [name, ''])),
      NATS_URL: nats.url,
      NATS_USER: USER,
      NATS_PASSWORD: PASSWORD,
    };
    const demo = spawnNode('demo', toolScript('demo'), ['--duration', '4', '--seed', '7'], env);
    const timer = setTimeout(() => void stop(demo, 1000), 40_000);
    const { code } = await demo.exited;
    clearTimeout(timer);
    const out = `${demo.lines.join('\n')}\n${demo.stderr()}`;
    expect(code, out.slice(-3000)).toBe(0);
    expect(out).toContain(`NATS: ${nats.url} (env)`);
    expect(out).toMatch(/envelope check over every window of \d+ admissions .*: held/);
    expect(out).not.toContain(PASSWORD);
  }, 60_000);

  it('the chaos fleet serves, probes and loses an agent on it', async () => {
    // As `NATS_USER=… NATS_PASSWORD=… npm run chaos` would set them: the probe reads them here, the processes inherit them.
    for (const [name, value] of [
      [NATS_ENV.user, USER],
      [NATS_ENV.password, PASSWORD],
    ] as const) {
      saved.set(name, process.env[name]);
      process.env[name] = value;
    }
    const fleet = await ChaosFleet.start(nats.url, CHAOS_POOL, dir, `tlsecenv${process.pid}`);
    try {
      const steady = { kind: 'steady', perSecond: 150 } as const;
      const victim = await fleet.addAgent('victim', steady, 4000, 1);
      await fleet.addAgent('survivor', steady, 4000, 2);
      await new Promise((resolve) => setTimeout(resolve, 2000));
      expect(await fleet.killAgent(victim)).toBe(true);
      await Promise.all(fleet.agents.map((agent) => agent.child.exited));
      expect(fleet.admissions().length).toBeGreaterThan(0);
      expect((await fleet.status()).kind).toBe('status');
      for (const child of [...fleet.coordinators, ...fleet.agents.map((agent) => agent.child)]) {
        expect(`${child.lines.join('\n')}\n${child.stderr()}`).not.toContain(PASSWORD);
      }
    } finally {
      await fleet.close();
    }
  }, 60_000);
});
