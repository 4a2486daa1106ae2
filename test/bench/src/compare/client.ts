/**
 * One client process of the comparison's fleet:
 *
 *   node client.js '<json ClientConfig>'
 *
 * It makes its decider (connected), prints {"type":"ready"}, waits until
 * `startAtUs`, offers Poisson arrivals of cost 1 at `perSecond` for
 * `durationMs`, waits for the decisions still in flight (up to DRAIN_MS),
 * prints {"type":"done", ...} and then idles until SIGTERM, so that the
 * parent reads its CPU time in /proc while it still exists.
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

async function drive(decider: Decider, config: ClientConfig, onAdmit: (tUs: number, cost: number) => void): Promise<ClientDone> {
  const histogram = new LatencyHistogram();
  let decisions = 0;
  let admittedTokens = 0;
  let inFlight = 0;
  let shed = 0;
  let errors = 0;
  const settle = (admitted: boolean, tUs: number, cost: number, ns: number): void => {
    histogram.record(ns);
    decisions += 1;
    if (!admitted) return;
    admittedTokens += cost;
    onAdmit(tUs, cost);
  };
  const endUs = config.startAtUs + config.durationMs * 1000;
  const arrivals = new Arrivals({ kind: 'steady', perSecond: config.perSecond }, seededRandom(config.seed), config.startAtUs);
  for (let nowUs = hostMonoNowUs(); nowUs < endUs; nowUs = hostMonoNowUs()) {
    for (const cost of arrivals.due(nowUs)) {
      if (inFlight >= MAX_IN_FLIGHT) {
        shed += 1;
        continue;
      }
      const t0 = process.hrtime.bigint();
      const verdict = decider.decide(cost, Number(t0 / 1000n));
      if (typeof verdict === 'boolean') {
        settle(verdict, Number(t0 / 1000n), cost, Number(process.hrtime.bigint() - t0));
        continue;
      }
      inFlight += 1;
      verdict.then(
        (admitted) => {
          const t1 = process.hrtime.bigint();
          inFlight -= 1;
          settle(admitted, Number(t1 / 1000n), cost, Number(t1 - t0));
        },
        () => {
          inFlight -= 1;
          errors += 1;
        },
      );
    }
    await sleep(1);
  }
  for (const deadline = Date.now() + DRAIN_MS; inFlight > 0 && Date.now() < deadline;) await sleep(5);
  const roundTrips = decider.roundTrips();
  return {
    type: 'done',
    name: config.name,
    decisions,
    admittedTokens,
    shed,
    errors: errors + inFlight,
    roundTrips,
    latency: histogram.sparse(),
  };
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
  const done = await drive(decider, config, (tUs, cost) => {
    pending += `${tUs} ${cost} -\n`;
  });
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
