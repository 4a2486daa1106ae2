/**
 * Chaos on a tree (docs/design.md, "Relays"): a root coordinator, two relay
 * processes serving the pool on prefixes of their own, two agents under
 * each and two on the root itself, under load (the doomed relay's agents
 * lightly, so that they hold tokens when it dies); one relay SIGKILLed
 * while it holds a lease from the root.
 *
 * Checked, beside the envelope of the root's pool over the merged
 * admissions of the whole tree and every admission within its lease's life
 * (the relays' grants are logged as the coordinator's are): the relay
 * really died (its exit signal), it held a lease from the root at the kill
 * (the root's status naming its upstream agent id), what its agents
 * admitted after the kill is at most what it held (the bound of its last
 * `upstream-lease` line, the root's view reported beside it), and the
 * root's credit for that lease lapsed (`reclaimMs`, bound one root TTL plus
 * the usual slack). The note gives what the surviving relay's agents and
 * the root's own agents admitted per second before the kill and after the
 * lapse, and when the dead relay's agents last admitted.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { logEvents } from '@tokenlease/harness/log-events';
import type { ChaosFleet, ChaosPool, AgentHandle } from './chaos-fleet.js';
import {
  nowUs,
  runScenario,
  STEADY,
  untilLease,
  untilNoLease,
  withPrivateNats,
  type ScenarioOptions,
  type ScenarioRow,
} from './run-scenario.js';

/**
 * RELAY_ROOT_POOL — the root's pool: leases up to 100 tokens, so a relay's
 * chunk can cover its agents; relays ask under a relay class, weighed as
 * the agents behind them.
 */
export const RELAY_ROOT_POOL: ChaosPool = {
  capacity: 200,
  refillPerSecond: 400,
  leaseTtlMs: 1000,
  maxLeaseTokens: 100,
  relayClasses: { relay: 100 },
};
/** The relays' pool: the root's capacity and refill (checked on every root grant), shorter leases of at most 20. */
const RELAY_POOL: ChaosPool = { capacity: 200, refillPerSecond: 400, leaseTtlMs: 600, maxLeaseTokens: 20 };
const UPLINK = { refreshMs: 250, holdMs: 200, replyTimeoutMs: 250, agentClass: 'relay' };
const RELAYS = 2;
const AGENTS_PER_RELAY = 2;
const ROOT_AGENTS = 2;
const US_PER_S = 1_000_000;
/** The killed relay's agents ask for less than their share, so that their leases hold tokens at the kill. */
const LIGHT = { kind: 'steady', perSecond: 60 } as const;

/** perSecond — tokens the agents of `ids` admitted per second over [fromUs, toUs). */
function perSecond(fleet: ChaosFleet, ids: ReadonlySet<string>, fromUs: number, toUs: number): number {
  const tokens = fleet
    .admissions()
    .filter((a) => ids.has(a.agent) && a.tUs >= fromUs && a.tUs < toUs)
    .reduce((sum, a) => sum + a.cost, 0);
  return toUs > fromUs ? Math.round((tokens * US_PER_S) / (toUs - fromUs)) : 0;
}

/** 6. SIGKILL a relay mid-lease: its agents strand at most what it held, the root's credit lapses, the rest goes on. */
export async function killRelay(options: ScenarioOptions): Promise<ScenarioRow> {
  return withPrivateNats(async (nats) => {
    // Long enough that the root's agents still run in the second after the lapse, however slowly a busy machine starts the relays' agents.
    const runMs = options.short ? 9000 : 10_000;
    return await runScenario(
      'kill-relay',
      nats.url,
      options,
      ROOT_AGENTS,
      runMs,
      async (fleet, random) => {
        const rootIds = new Set(fleet.agents.map((a) => a.agentId));
        const under: AgentHandle[][] = [];
        for (const [i, relay] of fleet.relays.entries()) {
          const agents: AgentHandle[] = [];
          for (let j = 0; j < AGENTS_PER_RELAY; j += 1)
            agents.push(await fleet.addAgent(`relay${i}agent${j}`, i === 0 ? LIGHT : STEADY, runMs, random.int(0, 2 ** 31), relay.prefix));
          under.push(agents);
        }
        await sleep(options.short ? 1500 : 3000);
        const victim = fleet.relays[0];
        if (victim === undefined) throw new Error('kill-relay: no relay started');
        const victimIds = new Set((under[0] ?? []).map((a) => a.agentId));
        const survivorIds = new Set((under[1] ?? []).map((a) => a.agentId));
        const uplinkField = logEvents(victim.child.lines, { event: 'uplink-started' }).at(-1)?.fields['agentId'];
        const uplinkId = typeof uplinkField === 'string' ? uplinkField : '';
        const midLease = await untilLease(fleet, uplinkId, 2000);
        const killedAt = performance.now();
        const killedUs = nowUs();
        victim.child.proc.kill('SIGKILL');
        const dead = (await victim.child.exited).signal === 'SIGKILL';
        const rootView = (await fleet.status(uplinkId)).agentLease?.tokensHeld ?? null;
        const lapsedMs = await untilNoLease(fleet, uplinkId, killedAt, RELAY_ROOT_POOL.leaseTtlMs + 3000);
        const lapsedUs = killedUs + Math.round((lapsedMs ?? 0) * 1000);
        // Complete logs: the dead relay's agents run to their end (and must exit 0, failing closed).
        const exits = await Promise.all((under[0] ?? []).map((a) => a.child.exited));
        const held = logEvents(victim.child.lines, { event: 'upstream-lease' }).map((e) => Number(e.fields['tokensHeld']));
        const heldTokens = held.at(-1) ?? 0;
        const victimAdmissions = fleet.admissions().filter((a) => victimIds.has(a.agent));
        const after = victimAdmissions.filter((a) => a.tUs > killedUs);
        const stranded = after.reduce((sum, a) => sum + a.cost, 0);
        const lastMs = after.length === 0 ? 0 : Math.round(((after.at(-1)?.tUs ?? killedUs) - killedUs) / 1000);
        const before = killedUs - US_PER_S;
        const rates = (ids: ReadonlySet<string>): string =>
          `${perSecond(fleet, ids, before, killedUs)} → ${perSecond(fleet, ids, lapsedUs, Math.min(lapsedUs + US_PER_S, nowUs()))}`;
        return {
          faultVerified:
            dead && midLease && heldTokens > 0 && victimAdmissions.some((a) => a.tUs <= killedUs) && exits.every((e) => e.code === 0),
          reclaimMs: lapsedMs,
          recoveryFromUs: [killedUs],
          stranded: { tokens: stranded, heldTokens },
          note:
            `relay 0 of ${RELAYS} SIGKILLed holding ${heldTokens} tokens from the root (root's view ${rootView ?? 'none'}); ` +
            `its ${AGENTS_PER_RELAY} agents admitted ${stranded} after the kill, the last ${lastMs} ms after (relay TTL ${RELAY_POOL.leaseTtlMs} ms), then failed closed; ` +
            `the root's lease lapsed ${lapsedMs === null ? 'never' : Math.round(lapsedMs)} ms after (TTL ${RELAY_ROOT_POOL.leaseTtlMs} ms); ` +
            `tokens/s in the second before the kill → the second after the lapse: surviving relay's agents ${rates(survivorIds)}, root's agents ${rates(rootIds)}`,
        };
      },
      {
        pool: RELAY_ROOT_POOL,
        beforeAgents: async (fleet) => {
          for (let i = 0; i < RELAYS; i += 1) await fleet.startRelay(RELAY_POOL, UPLINK);
        },
      },
    );
  });
}
