/**
 * Renewal latency on one pool while one client floods another, for `npm
 * run bench`: real NATS, a real coordinator process, the harness's hostile
 * client (its `flood` attack).
 *
 * Pool `busy` is the hostile-clients suite's (capacity 100, refill 100/s,
 * leases of at most 20, TTL 500 ms); pool `quiet` has plenty of tokens. The
 * flooder sends `floodPerSecond` renewals a second to `busy` under one
 * identity, from 100 agent ids, without asking for answers, after a warm-up
 * sent where no coordinator reads (on a shared machine its own start would
 * otherwise take the coordinator's CPU). A legitimate client times
 * sequential renewals of its own lease on `quiet`: with nothing flooding
 * (the baseline, after warm-up renewals), in the flood's first
 * FLOOD_ONSET_MS (a coordinator meeting a flood for the first time: its
 * JIT has not yet seen that much of anything), and for `floodSustainMs`
 * after. The flooder's own figure (requests/s it sent) is reported beside
 * them: a flood it must have been.
 */
import { connectBus } from '@tokenlease/shared/nats';
import { hostileOutcome, scratchDir, startCoordinator, startHostileClient, StatusProbe, writeConfig } from '@tokenlease/harness/fleet';
import { waitForEvent } from '@tokenlease/harness/log-events';
import { stop } from '@tokenlease/harness/processes';
import type { BenchScale } from './args.js';
import { latency, QuietClient, waitForQuietEnd, type LatencyFigures } from './crowded-pool.js';

/** The flood's first part, timed apart, ms. */
export const FLOOD_ONSET_MS = 1500;
/** The flooder's warm-up, sent where nobody reads, ms. */
const FLOOD_WARMUP_MS = 1500;

export interface FloodFigures {
  /** Requests a second the flooder sent to `busy`, over the flood. */
  readonly floodPerSecond: number;
  readonly baseline: LatencyFigures;
  /** The flood's first FLOOD_ONSET_MS. */
  readonly onset: LatencyFigures;
  /** The `floodSustainMs` after it. */
  readonly sustained: LatencyFigures;
}

/** floodFigures — the measurement described above, on a coordinator of its own, stopped when done. */
export async function floodFigures(natsUrl: string, scale: BenchScale): Promise<FloodFigures> {
  const prefix = `tlflood${process.pid}`;
  const configPath = writeConfig(scratchDir(), {
    subjectPrefix: prefix,
    quietPeriodMs: 2000,
    pools: {
      busy: { capacity: 100, refill: '100/s', leaseTtlMs: 500, maxLeaseTokens: 20, maxHoldMs: 100 },
      quiet: { capacity: 1_000_000_000, refill: '1000000000/s', leaseTtlMs: 2000, maxLeaseTokens: 1_000_000 },
    },
  });
  const coordinator = await startCoordinator(natsUrl, configPath, { name: 'coordinator:flood' });
  const probe = await StatusProbe.connect(natsUrl);
  const bus = await connectBus(natsUrl, { name: 'tokenlease-bench-flood-quiet-client' });
  try {
    await waitForQuietEnd(probe, prefix);
    const client = new QuietClient(bus, prefix);
    await client.renewals(scale.crowdWarmupRoundTrips);
    const baseline = latency(await client.renewals(scale.crowdRoundTrips));
    const flood = await startHostileClient({
      natsUrl,
      subjectPrefix: prefix,
      pool: 'busy',
      durationMs: FLOOD_WARMUP_MS + FLOOD_ONSET_MS + scale.floodSustainMs + 60_000,
      attack: { kind: 'flood', identity: 'flooder', perSecond: scale.floodPerSecond, warmupMs: FLOOD_WARMUP_MS },
    });
    await waitForEvent(flood, { type: 'flooding' }, FLOOD_WARMUP_MS + 15_000);
    const startMs = performance.now();
    const onset = latency(await client.renewals(Infinity, () => performance.now() - startMs >= FLOOD_ONSET_MS));
    const sustained = latency(await client.renewals(Infinity, () => performance.now() - startMs >= FLOOD_ONSET_MS + scale.floodSustainMs));
    const floodMs = performance.now() - startMs;
    if (flood.proc.exitCode !== null) throw new Error(`the flooder stopped before the measurement ended: ${flood.stderr().slice(-2000)}`);
    await stop(flood);
    const floodPerSecond = Math.round(hostileOutcome(flood).sent / (floodMs / 1000));
    return { floodPerSecond, baseline, onset, sustained };
  } finally {
    await bus.close();
    await probe.close();
    await stop(coordinator);
  }
}
