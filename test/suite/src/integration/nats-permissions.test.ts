/**
 * The shipped permission model (deploy/nats/secured.conf), loaded as it is
 * by a private nats-server with the passwords in its environment: agents
 * admit normally; an agent credential cannot read request subjects, join
 * the coordinators' queue groups, read another agent's inbox or send under
 * another identity; with bindIdentity it cannot use another identity's
 * agent ids; neither an agent nor the relay user may send an operator op
 * (status, pools, reload); the operator runs the operator CLI's status,
 * pools and reload (a real `tokenlease` process, answered because the
 * coordinator lists it in operatorIdentities) and nothing else; and even
 * the coordinator credential cannot read requests outside its queue groups
 * nor send a request. Every refusal is the server's (a permissions
 * violation), and the message it was meant to stop never arrives. One
 * thing permissions cannot stop, a request naming another identity's inbox
 * as its reply subject, the coordinator drops (bindIdentity).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Agent, type AgentEvent } from '@tokenlease/agent';
import { decodeReply, encodeMessage, subjectFor, COORDINATOR_QUEUE_GROUP, CATCH_ALL_QUEUE_GROUP } from '@tokenlease/shared';
import { acquireRequest } from '@tokenlease/shared/testing';
import { connectNats, openNatsConnection, resolveNatsOptions, NATS_ENV, type Bus } from '@tokenlease/shared/nats';
import { scratchDir, startCoordinator, StatusProbe, writeConfig } from '@tokenlease/harness/fleet';
import { logEvents } from '@tokenlease/harness/log-events';
import { operatorCliScript } from '@tokenlease/harness/paths';
import { startShippedNats, type ShippedNats, type ShippedUser as User } from '@tokenlease/harness/nats-config';
import { spawnNode, stopAll, type Child } from '@tokenlease/harness/processes';

/** The shipped file's subject prefix. */
const PREFIX = 'tokenlease';
const POOL = 'api';

/** A bus logged in as `user`, reading replies under `_INBOX_<user>` (what the file lets it read), and the errors it is told. */
async function connectAs(nats: ShippedNats, user: User, inboxPrefix = `_INBOX_${user}`): Promise<{ bus: Bus; errors: string[] }> {
  const settings = { url: nats.url, user, password: nats.password(user), inboxPrefix };
  const options = resolveNatsOptions([{ settings, names: NATS_ENV }]);
  const bus = await connectNats(options, { name: `permissions-test ${user}` });
  const errors: string[] = [];
  bus.onEvent((event) => {
    if (event.type === 'error') errors.push(event.message);
  });
  return { bus, errors };
}

/** refused — runs `act`, lets the server answer, and says whether it reported a permissions violation matching `subject`. */
async function refused(conn: { bus: Bus; errors: string[] }, subject: string, act: () => unknown): Promise<boolean> {
  const before = conn.errors.length;
  act();
  await conn.bus.flush().catch(() => {});
  const deadline = Date.now() + 2000;
  while (Date.now() < deadline) {
    if (conn.errors.slice(before).some((e) => /permissions violation/i.test(e) && e.includes(`"${subject}"`))) return true;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return false;
}

function acquire(agentId: string): Uint8Array {
  return encodeMessage(acquireRequest({ agentId, pool: POOL, leaseSecret: 'x'.repeat(22), tokensWanted: 1 }));
}

/** How often the coordinator logs a dropped request of one kind at most (coordinator/src/adapters/reply-log.ts). */
const REFUSAL_LOG_INTERVAL_MS = 10_000;

describe('the shipped NATS permission model (deploy/nats/secured.conf)', () => {
  let nats: ShippedNats;
  let coordinator: Child;
  const dir = scratchDir();
  const opened: Bus[] = [];
  const agents: Agent[] = [];

  beforeAll(async () => {
    nats = await startShippedNats(dir);
    const configPath = writeConfig(dir, {
      subjectPrefix: PREFIX,
      bindIdentity: true,
      operatorIdentities: ['operator'],
      pools: { [POOL]: { capacity: 100, refill: '100/s', leaseTtlMs: 1000, maxLeaseTokens: 10 } },
    });
    coordinator = await startCoordinator(nats.url, configPath, {
      env: { NATS_USER: 'coordinator', NATS_PASSWORD: nats.password('coordinator') },
    });
  }, 30_000);

  afterAll(async () => {
    await Promise.all(agents.map((agent) => agent.close({ timeoutMs: 500 })));
    await Promise.all(opened.map((bus) => bus.close()));
    await stopAll();
    await nats.stop();
  });

  async function as(user: User, inboxPrefix?: string): Promise<{ bus: Bus; errors: string[] }> {
    const conn = await connectAs(nats, user, inboxPrefix);
    opened.push(conn.bus);
    return conn;
  }

  async function agentAs(user: User, options: { agentId?: string; onEvent?: (event: AgentEvent) => void } = {}): Promise<Agent> {
    const agent = await Agent.connect({
      natsUrl: nats.url,
      identity: user,
      nats: { user, password: nats.password(user) },
      env: {},
      ...options,
    });
    agents.push(agent);
    return agent;
  }

  it('admits agents that send under their own identity', async () => {
    const checkout = await agentAs('checkout');
    const search = await agentAs('search');
    expect(checkout.agentId.startsWith('checkout.')).toBe(true);
    await expect(checkout.limiter(POOL).take(1, { timeoutMs: 5000 })).resolves.toBe(true);
    await expect(search.limiter(POOL).take(1, { timeoutMs: 5000 })).resolves.toBe(true);
  });

  it('refuses an agent the request subjects, the queue groups and every inbox but its own', async () => {
    const checkout = await as('checkout');
    const seen: string[] = [];
    const record = (subject: string): void => {
      seen.push(subject);
    };
    for (const [subject, queue] of [
      [`${PREFIX}.v2.>`, COORDINATOR_QUEUE_GROUP],
      [`${PREFIX}.v2.>`, CATCH_ALL_QUEUE_GROUP],
      [`${PREFIX}.v2.*.*.*`, null],
      [`${PREFIX}.>`, null],
      ['>', null],
      ['_INBOX.>', null],
      ['_INBOX_search.>', null],
    ] as const) {
      expect(await refused(checkout, subject, () => checkout.bus.serve(subject, queue, record)), `${subject} ${queue}`).toBe(true);
    }
    // Its own inbox is allowed: no violation for it.
    expect(await refused(checkout, '_INBOX_checkout.probe', () => checkout.bus.serve('_INBOX_checkout.probe', null, record))).toBe(false);
    // Requests keep flowing to the coordinator, and none reached the refused subscriptions.
    const search = await agentAs('search');
    await expect(search.limiter(POOL).take(1, { timeoutMs: 5000 })).resolves.toBe(true);
    expect(seen).toEqual([]);
  });

  it("refuses an agent another identity's subjects and another agent's inbox prefix", async () => {
    const checkout = await as('checkout');
    const subject = subjectFor(PREFIX, 'acquire', POOL, 'search');
    expect(await refused(checkout, subject, () => checkout.bus.request(subject, acquire('search.x'), 500).catch(() => {}))).toBe(true);
    // Reading replies under search's inbox prefix: the reply subscription itself is refused.
    const posing = await as('checkout', '_INBOX_search');
    const own = subjectFor(PREFIX, 'acquire', POOL, 'checkout');
    await expect(posing.bus.request(own, acquire('checkout.x'), 1000)).rejects.toThrow();
    expect(posing.errors.some((e) => /permissions violation/i.test(e) && e.includes('_INBOX_search.'))).toBe(true);
  });

  it("refuses, with bindIdentity, an agent id of another identity sent under one's own", async () => {
    const events: AgentEvent[] = [];
    const search = await agentAs('search', { agentId: 'checkout.impostor', onEvent: (event) => events.push(event) });
    await expect(search.limiter(POOL).take(1, { timeoutMs: 1500 })).resolves.toBe(false);
    expect(events.some((e) => e.type === 'error-reply' && e.code === 'forbidden')).toBe(true);
  });

  it('refuses agents and the relay user every operator op: status, pools and reload', async () => {
    const checkout = await as('checkout');
    const edge = await as('edge');
    const started = performance.now();
    for (const [conn, identity] of [
      [checkout, 'checkout'],
      [edge, 'edge'],
    ] as const) {
      for (const subject of [
        `${PREFIX}.v2.pools._.${identity}`,
        `${PREFIX}.v2.reload._.${identity}`,
        `${PREFIX}.v2.status.${POOL}.${identity}`,
        `${PREFIX}.v2.pools.${POOL}.${identity}`,
      ]) {
        expect(
          await refused(conn, subject, () => conn.bus.publish(subject, new TextEncoder().encode('{"v":2,"op":"reload","pool":"_"}'))),
          subject,
        ).toBe(true);
      }
    }
    console.log(
      `nats-permissions: 8 operator ops of an agent and the relay user refused by the server in ${(performance.now() - started).toFixed(0)} ms`,
    );
    // An agent's pools request is refused at once, not left to its timeout.
    const askedMs = performance.now();
    await expect(
      checkout.bus.request(`${PREFIX}.v2.pools._.checkout`, new TextEncoder().encode('{"v":2,"op":"pools","pool":"_"}'), 5000),
    ).rejects.toThrow();
    console.log(`nats-permissions: an agent's pools request failed after ${(performance.now() - askedMs).toFixed(0)} ms (timeout 5000 ms)`);
    await checkout.bus.flush();
    expect(logEvents(coordinator.lines, { event: 'reloaded' })).toEqual([]);
  });

  it('lets the operator run the operator CLI (status, pools, reload) as a process, and nothing else', async () => {
    const probe = await StatusProbe.connect(nats.url, {
      identity: 'operator',
      nats: { user: 'operator', password: nats.password('operator'), inboxPrefix: '_INBOX_operator' },
    });
    try {
      const status = await probe.status(POOL, PREFIX);
      expect(status.kind).toBe('status');
    } finally {
      await probe.close();
    }
    // The CLI reads its replies from _INBOX_operator by itself, given --identity operator.
    const cli = async (...args: string[]): Promise<{ code: number | null; out: string }> => {
      const child = spawnNode(`tokenlease ${args[0] ?? ''}`, operatorCliScript(), [...args, '--identity', 'operator', '--json'], {
        NATS_URL: nats.url,
        NATS_USER: 'operator',
        NATS_PASSWORD: nats.password('operator'),
        NATS_INBOX_PREFIX: '',
      });
      const { code } = await child.exited;
      return { code, out: `${child.lines.join('\n')}${child.stderr()}` };
    };
    const pools = await cli('pools');
    expect(pools.code, pools.out).toBe(0);
    expect(JSON.parse(pools.out)).toMatchObject({ pools: [{ pool: POOL }] });
    const reload = await cli('reload');
    expect(reload.code, reload.out).toBe(0);
    expect(JSON.parse(reload.out)).toMatchObject({ coordinators: [{ outcome: 'unchanged' }] });
    const status = await cli('status', POOL);
    expect(status.code, status.out).toBe(0);
    expect(coordinator.lines.filter((line) => line.includes('permissions violation'))).toEqual([]);
    const operator = await as('operator');
    const acquireSubject = subjectFor(PREFIX, 'acquire', POOL, 'operator');
    expect(await refused(operator, acquireSubject, () => operator.bus.publish(acquireSubject, acquire('operator')))).toBe(true);
    const othersStatus = subjectFor(PREFIX, 'status', POOL, 'checkout');
    expect(await refused(operator, othersStatus, () => operator.bus.publish(othersStatus, new Uint8Array()))).toBe(true);
    expect(await refused(operator, `${PREFIX}.v2.>`, () => operator.bus.serve(`${PREFIX}.v2.>`, COORDINATOR_QUEUE_GROUP, () => {}))).toBe(
      true,
    );
    expect(await refused(operator, '_INBOX_checkout.>', () => operator.bus.serve('_INBOX_checkout.>', null, () => {}))).toBe(true);
  });

  it("answers no request at another identity's inbox: it is dropped, counted and logged at a bounded rate", async () => {
    // The victim reads its own inbox, as the permissions allow (where a late reply to one of its own earlier requests may land too).
    const search = await as('search');
    const stolen: string[] = [];
    search.bus.serve('_INBOX_search.stolen.>', null, (subject) => {
      stolen.push(subject);
    });
    await search.bus.flush();
    // The attacker, on a plain nats.js connection: a request of its own, its reply subject in the victim's inbox.
    const settings = { url: nats.url, user: 'checkout', password: nats.password('checkout'), inboxPrefix: '_INBOX_checkout' };
    const nc = await openNatsConnection(resolveNatsOptions([{ settings, names: NATS_ENV }]), { name: 'permissions-test reply-elsewhere' });
    try {
      const subject = subjectFor(PREFIX, 'acquire', POOL, 'checkout');
      for (let i = 0; i < 50; i += 1) nc.publish(subject, acquire(`checkout.thief${i}`), { reply: `_INBOX_search.stolen.${i}` });
      // Its own inbox is answered: the coordinator serves it, and has handled what came before.
      const own = decodeReply((await nc.request(subject, acquire('checkout.honest'), { timeout: 5000 })).data);
      expect(own.ok && own.value.kind).toBe('grant');
    } finally {
      await nc.close();
    }
    await search.bus.flush();
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(stolen).toEqual([]);
    // At a bounded rate: at most one line per REFUSAL_LOG_INTERVAL_MS for all of them (and for the request of
    // the test above that posed with search's inbox prefix): one line, or two when a slow run spans the interval.
    const dropped = logEvents(coordinator.lines, { event: 'request-dropped', code: 'reply-elsewhere' });
    expect(dropped.length).toBeGreaterThanOrEqual(1);
    const times = dropped.map((line) => Number(line.fields['time']));
    for (let i = 1; i < times.length; i += 1) expect((times[i] ?? 0) - (times[i - 1] ?? 0)).toBeGreaterThanOrEqual(REFUSAL_LOG_INTERVAL_MS);
    expect(String(dropped[0]?.fields['reason'])).toMatch(/^reply subject "_INBOX_search\.[^"]+" is not under identity "checkout"/);
  });

  it('keeps even the coordinator credential to its queue groups and to replies', async () => {
    const coordinator = await as('coordinator');
    expect(await refused(coordinator, `${PREFIX}.v2.>`, () => coordinator.bus.serve(`${PREFIX}.v2.>`, null, () => {}))).toBe(true);
    expect(await refused(coordinator, `${PREFIX}.v2.>`, () => coordinator.bus.serve(`${PREFIX}.v2.>`, 'eavesdroppers', () => {}))).toBe(
      true,
    );
    const subject = subjectFor(PREFIX, 'acquire', POOL, 'checkout');
    expect(await refused(coordinator, subject, () => coordinator.bus.publish(subject, acquire('checkout.x')))).toBe(true);
    expect(await refused(coordinator, '_INBOX_checkout.x', () => coordinator.bus.publish('_INBOX_checkout.x', new Uint8Array()))).toBe(
      true,
    );
  });

  it('lets the coordinator subscribe to all it serves, operator requests included', () => {
    expect(coordinator.lines.filter((line) => line.includes('permissions violation'))).toEqual([]);
  });
});
