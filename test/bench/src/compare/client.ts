/**
 * One client process of the comparison's fleet:
 *
 *   node client.js '<json ClientConfig>'
 *
 * It makes its decider (connected), prints {"type":"ready"}, waits until
 * `startAtUs`, offers Poisson arrivals of cost 1 at `perSecond` for
 * `durationMs` (or, given `inFlight`, decides in a closed loop as fast as
 * the decider allows: driveClosedLoop), waits for the decisions still in
 * flight (up to DRAIN_MS), prints {"type":"done", ...} and then idles
 * until SIGTERM, so that the parent reads its CPU time in /proc while it
 * still exists.
 *
 * Each decision is timed alone, from the clock read before it to the one
 * after it (both counted in it); a decision that needs a round-trip is
 * timed to its reply, and its admission is logged at the reply, when the
 * caller would act on it. A decision from the fast path is logged at the
 * clock reading it was decided at. Arrivals past MAX_IN_FLIGHT decisions
 * waiting are shed (counted, not decided).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { closeSync, openSync, writeSync } from 'node:fs';
import { Arrivals } from '@tokenlease/harness/traffic';
import { hostMonoNowUs } from '@tokenlease/shared/clock';
import { seededRandom } from '@tokenlease/shared/testing';
import { makeDecider, type ClientConfig, type Decider } from './decider.js';
import { LatencyHistogram } from './latency.js';

const MAX_IN_FLIGHT = 4096;
const DRAIN_MS = 5000;
const FLUSH_EVERY_MS = 20;
/** The longest a closed loop decides before it gives the event loop a turn, µs. */
const YIELD_US = 1000;

/** ClientDone — what a client prints when its traffic is over. */
export interface ClientDone {
  readonly type: 'done';
  readonly name: string;
  readonly decisions: number;
  readonly admittedTokens: number;
  readonly shed: number;
  readonly errors: number;
  readonly roundTrips: number;
  /** LatencyHistogram.sparse() of every decision. */
  readonly latency: Array<[number, number]>;
}

/** Tally — what a client counts as it decides. */
class Tally {
  readonly histogram = new LatencyHistogram();
  decisions = 0;
  admittedTokens = 0;
  inFlight = 0;
  shed = 0;
  errors = 0;

  constructor(private readonly onAdmit: (tUs: number, cost: number) => void) {}

  settle(admitted: boolean, tUs: number, cost: number, ns: number): void {
    this.histogram.record(ns);
    this.decisions += 1;
    if (!admitted) return;
    this.admittedTokens += cost;
    this.onAdmit(tUs, cost);
  }

  /** done — waits for the decisions still in flight (up to DRAIN_MS), then the line to print. */
  async done(decider: Decider, name: string): Promise<ClientDone> {
    for (const deadline = Date.now() + DRAIN_MS; this.inFlight > 0 && Date.now() < deadline;) await sleep(5);
    return {
      type: 'done',
      name,
      decisions: this.decisions,
      admittedTokens: this.admittedTokens,
      shed: this.shed,
      errors: this.errors + this.inFlight,
      roundTrips: decider.roundTrips(),
      latency: this.histogram.sparse(),
    };
  }
}

/**
 * driveClosedLoop — decisions of cost 1, each started as soon as the last
 * is answered, for `durationMs`: one answered at once (the fast path) is
 * followed by the next; one that needs a round-trip stays in flight while
 * the next starts, until `inFlightMax` are waiting, and then the client
 * waits for one of them. The event loop gets a turn at least every
 * YIELD_US, so an agent's lease keeper renews and replies are read. Every
 * decision is timed and logged as in the open loop.
 */
async function driveClosedLoop(decider: Decider, config: ClientConfig, tally: Tally, inFlightMax: number): Promise<ClientDone> {
  let wake: (() => void) | null = null;
  const answered = (): void => {
    tally.inFlight -= 1;
    const w = wake;
    wake = null;
    w?.();
  };
  const endUs = config.startAtUs + config.durationMs * 1000;
  for (let nowUs = hostMonoNowUs(); nowUs < endUs; nowUs = hostMonoNowUs()) {
    for (let tUs = nowUs; tUs < nowUs + YIELD_US && tally.inFlight < inFlightMax;) {
      const t0 = process.hrtime.bigint();
      tUs = Number(t0 / 1000n);
      const verdict = decider.decide(1, tUs);
      if (typeof verdict === 'boolean') {
        tally.settle(verdict, tUs, 1, Number(process.hrtime.bigint() - t0));
        continue;
      }
      tally.inFlight += 1;
      verdict.then(
        (admitted) => {
          const t1 = process.hrtime.bigint();
          tally.settle(admitted, Number(t1 / 1000n), 1, Number(t1 - t0));
          answered();
        },
        () => {
          tally.errors += 1;
          answered();
        },
      );
    }
    if (tally.inFlight >= inFlightMax) await new Promise<void>((resolve) => (wake = resolve));
    else await new Promise((resolve) => setImmediate(resolve));
  }
  return tally.done(decider, config.name);
}

async function drive(decider: Decider, config: ClientConfig, tally: Tally): Promise<ClientDone> {
  const endUs = config.startAtUs + config.durationMs * 1000;
  const arrivals = new Arrivals({ kind: 'steady', perSecond: config.perSecond }, seededRandom(config.seed), config.startAtUs);
  for (let nowUs = hostMonoNowUs(); nowUs < endUs; nowUs = hostMonoNowUs()) {
    for (const cost of arrivals.due(nowUs)) {
      if (tally.inFlight >= MAX_IN_FLIGHT) {
        tally.shed += 1;
        continue;
      }
      const t0 = process.hrtime.bigint();
      const verdict = decider.decide(cost, Number(t0 / 1000n));
      if (typeof verdict === 'boolean') {
        tally.settle(verdict, Number(t0 / 1000n), cost, Number(process.hrtime.bigint() - t0));
        continue;
      }
      tally.inFlight += 1;
      verdict.then(
        (admitted) => {
          const t1 = process.hrtime.bigint();
          tally.inFlight -= 1;
          tally.settle(admitted, Number(t1 / 1000n), cost, Number(t1 - t0));
        },
        () => {
          tally.inFlight -= 1;
          tally.errors += 1;
        },
      );
    }
    await sleep(1);
  }
  return tally.done(decider, config.name);
}

async function main(): Promise<void> {
  const config = JSON.parse(process.argv[2] ?? '{}') as ClientConfig;
  const decider = await makeDecider(config);
  const fd = openSync(config.logPath, 'a');
  let pending = '';
  const flush = (): void => {
    if (pending !== '') writeSync(fd, pending);
    pending = '';
  };
  const stopped = new Promise<void>((resolve) => process.once('SIGTERM', () => resolve()));
  process.stdout.write(`${JSON.stringify({ type: 'ready', name: config.name, pid: process.pid })}\n`);
  await sleep(Math.max(0, (config.startAtUs - hostMonoNowUs()) / 1000));
  const flushTimer = setInterval(flush, FLUSH_EVERY_MS);
  const tally = new Tally((tUs, cost) => {
    pending += `${tUs} ${cost} -\n`;
  });
  const done =
    config.inFlight === undefined ? await drive(decider, config, tally) : await driveClosedLoop(decider, config, tally, config.inFlight);
  clearInterval(flushTimer);
  flush();
  closeSync(fd);
  process.stdout.write(`${JSON.stringify(done)}\n`);
  await stopped;
  await decider.close();
  process.exit(0);
}

main().catch((error: unknown) => {
  process.stderr.write(`compare client: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exit(1);
});
