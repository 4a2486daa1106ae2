/**
 * `cut-slot-holder`: a concurrency pool's slots held across a network cut.
 *
 * NATS, one coordinator (memory mode) and three slot holders
 * (harness slot-holder.ts), each in a network namespace of its own. The
 * pool allows SLOTS.limit in flight, each counted at most SLOTS.holdMs;
 * together the holders always want more. The victim holds its slots long
 * (VICTIM_HOLD_MS, under the hold bound less the agent's drift margin, so
 * it gives each back itself); the other two hold theirs briefly. Once the
 * victim holds slots, its host is cut off NATS for the fault's length
 * while its process runs on, then restored.
 *
 * The promise (design.md, "Concurrency pools"): a cut-off holder's busy
 * slots come back only when no request started under its lease can still
 * run — its expiry plus the hold bound — and by then. So:
 * - never earlier: over every hold all three logged, at no instant more
 *   than the limit in flight (checkInFlight), and the other two never hold
 *   every slot before the victim's last grant plus its TTL plus the hold
 *   bound (the coordinator's debug log gives the grant). A coordinator that
 *   reused the victim's slots at its lease's expiry, without the hold
 *   bound, would fail both when the victim's last holds still run, and the
 *   second whatever they do. Either counts as an envelope violation;
 * - within TTL + D: from the cut until the other two hold every slot at
 *   once (`slotsBackMs`), at most SLOTS_BACK_BOUND_MS;
 * - the victim starts no hold later than the cut plus one lease TTL
 *   (its lease ended by its own clock; `expiryViolations`), and holds
 *   slots again after the restore (`recoveryMs`, from the restore).
 * The fault is verified from the kernel (the nft drop read back) and from
 * the victim's own failed requests.
 */
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { LEASE_CLIENT_DEFAULTS } from '@tokenlease/shared';
import { checkInFlight } from '@tokenlease/shared/testing';
import { readSlotHolds, scratchDir, startCoordinator, startSlotHolder, writeConfig, type SlotHold } from '@tokenlease/harness/fleet';
import { grantLines } from '@tokenlease/harness/coordinator-log';
import { logEvents } from '@tokenlease/harness/log-events';
import { waitUntil } from '@tokenlease/harness/wait';
import { startHostNats } from '@tokenlease/harness/net-servers';
import type { NetHost } from '@tokenlease/harness/netns';
import { stop, stopAll, type Child } from '@tokenlease/harness/processes';
import { withLab } from './net-scenarios.js';
import { nowUs, VERIFIED_AFTER_MS, type ScenarioOptions, type ScenarioRow } from './run-scenario.js';

/** SLOTS — the pool: at most `limit` in flight, each counted at most `holdMs`; leases of TTL `ttlMs`. */
export const SLOTS = { limit: 6, holdMs: 1500, ttlMs: 1000 } as const;
/** SLOTS_BACK_BOUND_MS — the cut plus one TTL (the victim's last grant came before it) plus the hold bound, plus a second for the others' keepers to ask and be granted. */
export const SLOTS_BACK_BOUND_MS = SLOTS.ttlMs + SLOTS.holdMs + 1000;
const POOL = 'db';
/**
 * AGENT_HOLD_US — how long an agent counts a slot held at most: the hold
 * bound less its drift margin (design.md), so that a slot it counts
 * released is released on the coordinator's clock too. The check counts
 * each hold so.
 */
const AGENT_HOLD_US = Math.floor(SLOTS.holdMs * 1000 * (1 - LEASE_CLIENT_DEFAULTS.driftMargin));
/** The victim's holds: long, but given back by the victim before its agent's bound, so that the logged hold is what it counted. */
const VICTIM_HOLD_MS = Math.floor(AGENT_HOLD_US / 1000) - 100;
/** LOG_SLACK_US — a grant's logged instant comes after the coordinator's decision (it is read as the reply leaves): the tolerance of the never-earlier check. */
const LOG_SLACK_US = 10_000;
/** How long to wait after the restore for the victim to hold a slot again (its agent's backoff and NATS's reconnect). */
const RESUME_WITHIN_MS = 12_000;
const OTHER_HOLD_MS = 200;
const HOLDERS = 3;
/** Slots each holder tries to hold at once: 3 + 2 × 4 = 11 wanted, 6 to have. */
const VICTIM_LOOPS = 3;
const OTHER_LOOPS = 4;

/** inFlightAt — how many of `holds` are in flight at `tUs` (half-open intervals). */
function inFlightAt(holds: readonly SlotHold[], tUs: number): number {
  let n = 0;
  for (const h of holds) if (h.startUs <= tUs && tUs < h.endUs) n += 1;
  return n;
}

/** allHeldFrom — the first instant at or after `fromUs` at which `holds` hold `limit` slots at once, or null. */
function allHeldFrom(holds: readonly SlotHold[], fromUs: number, limit: number): number | null {
  // The count only rises at a start: the candidates are `fromUs` and every later start.
  const instants = [fromUs, ...holds.map((h) => h.startUs).filter((t) => t > fromUs)].sort((a, b) => a - b);
  for (const t of instants) if (inFlightAt(holds, t) >= limit) return t;
  return null;
}

const msSince = (fromUs: number, us: number | null): number | null => (us === null ? null : Math.round((us - fromUs) / 1000));

/** cutSlotHolder — the scenario (module comment). */
export function cutSlotHolder(options: ScenarioOptions): Promise<ScenarioRow> {
  const cutMs = options.short ? 4000 : 6000;
  return withLab('cut-slot-holder', async (lab) => {
    const nats = await startHostNats(lab, await lab.addHost('nats'));
    const children: Child[] = [];
    try {
      const dir = scratchDir();
      const prefix = `tlchaosslots${options.seed}`;
      const configPath = writeConfig(dir, {
        subjectPrefix: prefix,
        pools: {
          [POOL]: { concurrency: { limit: SLOTS.limit, maxHoldMs: SLOTS.holdMs }, leaseTtlMs: SLOTS.ttlMs, maxLeaseTokens: SLOTS.limit },
        },
      });
      // Debug logs: every grant, so that the victim's last one (when its lease ended) is known.
      const coordinator = await startCoordinator(nats.url, configPath, { via: lab.via(await lab.addHost('c0')), logLevel: 'debug' });
      children.push(coordinator);
      const hosts: NetHost[] = [];
      const logs: string[] = [];
      for (let i = 0; i < HOLDERS; i += 1) {
        const host = await lab.addHost(`h${i}`);
        const logPath = join(dir, `holds-${i}.log`);
        hosts.push(host);
        logs.push(logPath);
        const victim = i === 0;
        const config = {
          natsUrl: nats.url,
          subjectPrefix: prefix,
          pool: POOL,
          name: victim ? 'victim' : `other${i}`,
          loops: victim ? VICTIM_LOOPS : OTHER_LOOPS,
          holdMs: victim ? VICTIM_HOLD_MS : OTHER_HOLD_MS,
          logPath,
        };
        children.push(await startSlotHolder(config, lab.via(host)));
      }
      const [victimHost] = hosts as [NetHost];
      const victim = children[1] as Child;
      await sleep(VERIFIED_AFTER_MS);
      // The cut must find the victim holding slots: bounded, it fails the fault's verification otherwise.
      const holding = (): number => Number(logEvents(victim.lines, { type: 'held' }).at(-1)?.fields['holding'] ?? 0);
      await waitUntil('the victim holding slots', 10_000, () => holding() > 0).catch(() => undefined);
      const failedBefore = logEvents(victim.lines, { type: 'event', event: 'request-failed' }).length;
      const issuedUs = nowUs();
      await lab.cut(victimHost, nats.host);
      const cutUs = nowUs();
      const seen = (await lab.blockedFrom(nats.host)).includes(victimHost.name);
      await sleep(Math.max(0, cutMs - (nowUs() - cutUs) / 1000));
      const failed = logEvents(victim.lines, { type: 'event', event: 'request-failed' }).length - failedBefore;
      const restoreUs = nowUs();
      await lab.restore(victimHost, nats.host);
      // Bounded: until the victim has held a slot taken after the restore (logged when given back), then a second more.
      const resumeBy = performance.now() + RESUME_WITHIN_MS;
      while (performance.now() < resumeBy && !readSlotHolds(logs[0] as string).some((h) => h.startUs >= restoreUs)) await sleep(100);
      await sleep(1000);
      for (const child of children.slice(1)) await stop(child);

      const [victimHolds, ...othersHolds] = logs.map(readSlotHolds) as [SlotHold[], ...SlotHold[][]];
      const others = othersHolds.flat();
      const all = [...victimHolds, ...others];
      const report = checkInFlight(all, SLOTS.limit, AGENT_HOLD_US);
      const heldAtCut = inFlightAt(victimHolds, cutUs);
      const late = victimHolds.filter((h) => h.startUs >= cutUs + SLOTS.ttlMs * 1000 && h.startUs < restoreUs);
      const lastEndInCut = victimHolds
        .filter((h) => h.startUs < restoreUs && h.endUs > cutUs)
        .reduce((t, h) => Math.max(t, h.endUs), cutUs);
      const backUs = allHeldFrom(others, cutUs, SLOTS.limit);
      const resumedUs = victimHolds.find((h) => h.startUs >= restoreUs)?.startUs ?? null;
      const slotsBackMs = msSince(cutUs, backUs);
      // Never earlier: the victim's lease ended one TTL after its last grant, and its busy slots are free a hold bound later.
      const victimLeases = new Set(victimHolds.filter((h) => h.startUs < restoreUs).map((h) => h.leaseId));
      const lastGrant = grantLines(coordinator)
        .filter((g) => victimLeases.has(g.leaseId) && g.tUs < restoreUs)
        .at(-1);
      const freeFromUs = lastGrant === undefined ? null : lastGrant.tUs + (lastGrant.ttlMs + SLOTS.holdMs) * 1000;
      const early = freeFromUs !== null && backUs !== null && backUs < freeFromUs - LOG_SLACK_US;
      return {
        scenario: 'cut-slot-holder',
        faultVerified: seen && heldAtCut > 0 && failed > 0 && resumedUs !== null,
        admitted: report.holds,
        envelopeViolations: (report.ok ? 0 : 1) + (early ? 1 : 0),
        worstWindowRatio: Math.round((report.peak / SLOTS.limit) * 1000) / 1000,
        worstExcessTokens: Math.max(0, report.peak - SLOTS.limit, early ? 1 : 0),
        expiryViolations: late.length,
        reclaimMs: null,
        takeoverMs: null,
        recoveryMs: msSince(restoreUs, resumedUs),
        strandedTokens: null,
        heldTokens: null,
        strayGrants: null,
        slotsBackMs,
        notRun: null,
        note:
          `victim cut from NATS for ${cutMs} ms (in force ${msSince(issuedUs, cutUs)} ms after the command), holding ${heldAtCut} of ${SLOTS.limit} slots; ` +
          `${failed} failed requests; its last hold begun before the restore ended ${msSince(cutUs, lastEndInCut)} ms after the cut` +
          (late.length > 0 ? `, ${late.length} begun later than the cut + TTL` : '') +
          `; the other two held all ${SLOTS.limit} ${slotsBackMs ?? 'never'} ms after the cut (bound ${SLOTS_BACK_BOUND_MS} ms), ` +
          (freeFromUs === null
            ? 'no grant to the victim logged; '
            : `${msSince(freeFromUs, backUs) ?? '-'} ms after its last grant + TTL + hold bound${early ? ' (EARLY)' : ''}; `) +
          `at most ${report.peak} in flight (first ${msSince(cutUs, report.peakAtUs)} ms after the cut) over ${report.holds} holds (${Math.round(report.heldUs / 1000)} slot-ms); ` +
          `the victim held a slot again ${msSince(restoreUs, resumedUs) ?? 'never'} ms after the restore` +
          (seen ? '' : '; the nft drop was not found in the kernel'),
      };
    } finally {
      for (const child of children) await stop(child);
      await nats.stop();
      await stopAll();
    }
  });
}
