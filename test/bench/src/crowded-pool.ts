/**
 * Acquire latency on one pool while another pool holds 50,000 waiting
 * requests, for `npm run bench`: real NATS, a real coordinator process.
 *
 * Pool `busy` grants nothing for an hour (capacity 1, refill 1/h) and may
 * hold the scale's `crowdRequests` requests for `crowdHoldMs` each (50,000
 * for 30 s at full scale); pool `quiet` has plenty of tokens. A hostile
 * client (a child process, hostile-client.ts) sends those acquires to
 * `busy` from distinct agents without waiting for replies; the
 * coordinator's status must then say they all wait. A legitimate client
 * times `crowdRoundTrips` sequential renewals of its own
 * lease on `quiet` (its secret, the next seq, what its last grant left):
 * first with nothing waiting (the baseline), then while the flood is being
 * taken in, then with all of it held.
 *
 * The hold needs `busy`'s TTL at twice that, and a coordinator grants
 * nothing for its longest TTL after it starts (the quiet period): so the
 * coordinator is started first (`startCrowd`) and the measurement
 * (`crowdFigures`) waits out whatever of that the other benches did not.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { decodeReply, encodeMessage, subjectFor, type LeaseRequest } from '@tokenlease/shared';
import { connectBus, type Bus } from '@tokenlease/shared/nats';
import { scratchDir, startCoordinator, StatusProbe, writeConfig } from '@tokenlease/harness/fleet';
import { spawnNode, stop, type Child } from '@tokenlease/harness/processes';
import type { BenchScale } from './args.js';

/**
 * A fresh coordinator's round-trips keep getting faster for several
 * thousand requests (its JIT, its young generation growing): the scale's
 * `crowdWarmupRoundTrips` renewals go before the baseline, which timed
 * earlier would be the slower for that alone.
 */
/** Longest the flood may take to be held in full, ms. */
const FLOOD_TIMEOUT_MS = 60_000;
/** A renewal that takes longer fails the bench, ms. */
const REQUEST_TIMEOUT_MS = 30_000;
const STATUS_EVERY_MS = 100;

/** Crowd — the crowded-pool coordinator, started ahead of its measurement, and the scale it was started for. */
export interface Crowd {
  readonly natsUrl: string;
  readonly prefix: string;
  readonly coordinator: Child;
  readonly scale: BenchScale;
}

/** LatencyFigures — round-trips of one phase: how many, and their p50, p99 and max, ms. */
export interface LatencyFigures {
  readonly count: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly maxMs: number;
}

export interface CrowdFigures {
  /** Requests the hostile client left waiting on `busy`. */
  readonly requests: number;
  /** Nothing waiting on `busy`. */
  readonly baseline: LatencyFigures;
  /** From the hostile client's first send until the coordinator's status counts every request waiting. */
  readonly duringFlood: LatencyFigures;
  /** With `requests` waiting on `busy`. */
  readonly crowded: LatencyFigures;
  /** The flood: from the first send until all of it was counted waiting, ms. */
  readonly floodMs: number;
  /** Waiting on `busy` after the crowded round-trips (all of them, if none was let go). */
  readonly waitingAfter: number;
  /** The hostile client's own sending: from its first request until NATS had them all, ms. */
  readonly hostileSendMs: number;
  /** Hostile requests answered before the end (none, if all were held). */
  readonly hostileAnswered: number;
}

/** startCrowd — the coordinator with pools `busy` and `quiet` for `scale`, serving (its quiet period has begun). */
export async function startCrowd(natsUrl: string, scale: BenchScale): Promise<Crowd> {
  const prefix = `tlcrowd${process.pid}`;
  const holdMs = scale.crowdHoldMs;
  const configPath = writeConfig(scratchDir(), {
    subjectPrefix: prefix,
    pools: {
      busy: { capacity: 1, refill: '1/h', leaseTtlMs: 2 * holdMs, maxHoldMs: holdMs, maxWaiting: 2 * scale.crowdRequests },
      quiet: { capacity: 1_000_000_000, refill: '1000000000/s', leaseTtlMs: 10_000, maxLeaseTokens: 1_000_000 },
    },
  });
  const coordinator = await startCoordinator(natsUrl, configPath, { name: 'coordinator:crowd' });
  return { natsUrl, prefix, coordinator, scale };
}

/** QuietClient — the legitimate client: one agent renewing its own lease on `quiet`, one request at a time (flooded-pool.ts too). */
export class QuietClient {
  private seq = 0;
  private leaseId: string | null = null;
  private tokensHeld = 0;
  private readonly subject: string;

  constructor(
    private readonly bus: Bus,
    prefix: string,
  ) {
    this.subject = subjectFor(prefix, 'acquire', 'quiet');
  }

  /** renew — one renewal (it spent a little of what it held and wants more); returns its round-trip, ms. */
  async renew(): Promise<number> {
    this.seq += 1;
    const req: LeaseRequest = {
      v: 2,
      op: 'acquire',
      agentId: 'bench-quiet-agent',
      pool: 'quiet',
      leaseSecret: 'bench-quiet-secret-of-128-bits',
      seq: this.seq,
      leaseId: this.leaseId,
      tokensLeft: Math.max(0, this.tokensHeld - 100),
      tokensWanted: 1000,
      demandPerSecond: 1000,
      holdMs: 0,
    };
    const payload = encodeMessage(req);
    const startMs = performance.now();
    const bytes = await this.bus.request(this.subject, payload, REQUEST_TIMEOUT_MS);
    const ms = performance.now() - startMs;
    const decoded = decodeReply(bytes);
    if (!decoded.ok || decoded.value.kind !== 'grant' || decoded.value.seq !== this.seq || decoded.value.tokensGranted === 0)
      throw new Error(`quiet pool renewal ${this.seq} was not granted: ${new TextDecoder().decode(bytes)}`);
    this.leaseId = decoded.value.leaseId;
    this.tokensHeld = decoded.value.tokensHeld;
    return ms;
  }

  /** renewals — `count` renewals one after another (or until `until` says stop); their round-trips, ms. */
  async renewals(count: number, until: () => boolean = () => false): Promise<number[]> {
    const ms: number[] = [];
    while (ms.length < count && !until()) ms.push(await this.renew());
    return ms;
  }
}

/** latency — p50, p99 and max of `samplesMs`, rounded to 0.01 ms. */
export function latency(samplesMs: readonly number[]): LatencyFigures {
  const sorted = [...samplesMs].sort((a, b) => a - b);
  const at = (q: number): number => round(sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? Number.NaN);
  return { count: sorted.length, p50Ms: at(0.5), p99Ms: at(0.99), maxMs: round(sorted[sorted.length - 1] ?? Number.NaN) };
}

function round(ms: number): number {
  return Math.round(ms * 100) / 100;
}

/** waitForQuietEnd — resolves once `quiet` grants (the coordinator's quiet period is over). */
export async function waitForQuietEnd(probe: StatusProbe, prefix: string): Promise<void> {
  for (;;) {
    const { quietMs } = await probe.status('quiet', prefix);
    if (quietMs === 0) return;
    await sleep(quietMs);
  }
}

/**
 * waitForWaiting — polls `busy`'s status until `count` requests wait there;
 * a status request queued behind the flood may time out, and is asked again.
 */
async function waitForWaiting(probe: StatusProbe, prefix: string, count: number): Promise<void> {
  const deadline = performance.now() + FLOOD_TIMEOUT_MS;
  let last = 'no status yet';
  while (performance.now() < deadline) {
    try {
      const status = await probe.status('busy', prefix);
      if (status.waiting >= count) return;
      last = `${status.waiting} waiting, ${status.leases} leases`;
    } catch (error) {
      last = error instanceof Error ? error.message : String(error);
    }
    await sleep(STATUS_EVERY_MS);
  }
  throw new Error(`pool busy did not hold ${count} requests within ${FLOOD_TIMEOUT_MS} ms (last status: ${last})`);
}

/** flood — starts the hostile client and times quiet renewals until its requests all wait; returns them and the flood's time. */
async function flood(
  crowd: Crowd,
  client: QuietClient,
  probe: StatusProbe,
): Promise<{ hostile: Child; samplesMs: number[]; floodMs: number }> {
  const script = fileURLToPath(new URL('./hostile-client.js', import.meta.url));
  const { crowdRequests, crowdHoldMs } = crowd.scale;
  const args = [crowd.natsUrl, crowd.prefix, 'busy', String(crowdRequests), String(crowdHoldMs)];
  const hostile = spawnNode('hostile-client', script, args);
  await hostile.waitForLine((line) => line.includes('"sending"'), 15_000);
  const startMs = performance.now();
  let held = false;
  const [samplesMs] = await Promise.all([
    client.renewals(Infinity, () => held),
    waitForWaiting(probe, crowd.prefix, crowdRequests).finally(() => {
      held = true;
    }),
  ]);
  return { hostile, samplesMs, floodMs: Math.round(performance.now() - startMs) };
}

/** crowdFigures — the measurement described above, on the coordinator `startCrowd` started; stops it when done. */
export async function crowdFigures(crowd: Crowd): Promise<CrowdFigures> {
  const probe = await StatusProbe.connect(crowd.natsUrl);
  const bus = await connectBus(crowd.natsUrl, { name: 'tokenlease-bench-quiet-client' });
  try {
    await waitForQuietEnd(probe, crowd.prefix);
    const client = new QuietClient(bus, crowd.prefix);
    const { crowdWarmupRoundTrips, crowdRoundTrips } = crowd.scale;
    await client.renewals(crowdWarmupRoundTrips);
    const baseline = latency(await client.renewals(crowdRoundTrips));
    const { hostile, samplesMs, floodMs } = await flood(crowd, client, probe);
    const crowded = latency(await client.renewals(crowdRoundTrips));
    const { waiting: waitingAfter } = await probe.status('busy', crowd.prefix);
    await stop(hostile);
    const lines = hostile.lines.map((line) => JSON.parse(line) as { type: string; answered?: number; ms?: number });
    return {
      requests: crowd.scale.crowdRequests,
      baseline,
      duringFlood: latency(samplesMs),
      crowded,
      floodMs,
      waitingAfter,
      hostileSendMs: lines.find((l) => l.type === 'sent')?.ms ?? Number.NaN,
      hostileAnswered: lines.find((l) => l.type === 'done')?.answered ?? Number.NaN,
    };
  } finally {
    await bus.close();
    await probe.close();
    await stop(crowd.coordinator);
  }
}
