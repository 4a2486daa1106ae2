/**
 * npm run bench:compare — tokenlease side by side with what users would
 * pick instead, on the same machine in the same run, so that the ratios
 * hold where absolute numbers do not (see args.ts for the flags):
 *
 * 1. fleet: one workload (systems.ts) through each system in turn, on a
 *    private NATS and a private Redis (no fsync) started here, so that
 *    every server's CPU time is the run's own (fleet-run.ts, report.ts);
 * 2. window: the same workload through the systems that promise N per W
 *    in every window (a tokenlease window pool, a Redis sliding-window
 *    log), judged over every window (window-report.ts);
 * 3. saturation: every fleet and window system again, its clients
 *    deciding in a closed loop as fast as it lets them: decisions per
 *    second sustained, and servers' CPU per million decisions apart from
 *    the clients' (saturation-report.ts);
 * 4. hot path: the fast path next to its neighbours in one process
 *    (hot-path.ts);
 * 5. capacity: the coordinator's grants per second, latency and CPU per
 *    grant against live agents, beside a trivial NATS responder's and a
 *    JSON-parsing responder's, driven alike by one load client
 *    (capacity.ts), and the codec's own cost in process (codec-cost.ts);
 * 6. tree: simulated agents renewing straight on a root coordinator, then
 *    the same agents split under relays: requests reaching the root, and
 *    agents served (tree-scale.ts).
 *
 * Human output: tables and the envelope and window lines on stdout. With
 * --json, only JSON on stdout (one object a line: a "fleet" row per system,
 * a "window" row per window system, a "saturation" row per system, then the
 * "hot-path", "capacity" and "tree" rows) and the tables on stderr. Exit 1 when a tokenlease row exceeded its
 * own promise (B + A + r·T, or N per W) or a measurement failed; a
 * competitor that over-admits is a finding, not a failure.
 */
import { availableParallelism, loadavg } from 'node:os';
import { startPrivateNats } from '@tokenlease/harness/nats';
import { stopAll } from '@tokenlease/harness/processes';
import { startPrivateRedis } from '@tokenlease/harness/redis';
import { COMPARE_USAGE, CompareArgsError, parseCompareArgs, type CompareArgs } from './args.js';
import { capacityRows, capacityTable, startCapacity } from './capacity.js';
import { codecCost, codecLine } from './codec-cost.js';
import { runSystem, type FleetServers, type SystemRun } from './fleet-run.js';
import { hotPathRows, hotPathTable } from './hot-path.js';
import { envelopeLine, fleetRows, fleetTable } from './report.js';
import { saturationHeading, saturationLine, saturationRows, saturationTable } from './saturation-report.js';
import { treeRows, treeTable } from './tree-scale.js';
import { BASELINE, FLEET, SYSTEMS, WINDOW, WINDOW_BASELINE, WINDOW_SYSTEMS, type System } from './systems.js';
import { windowLine, windowRows, windowTable } from './window-report.js';

function parse(): CompareArgs | null {
  try {
    const args = parseCompareArgs(process.argv.slice(2));
    if (!args.help) return args;
    console.log(COMPARE_USAGE);
    return null;
  } catch (error) {
    if (!(error instanceof CompareArgsError)) throw error;
    console.error(`bench:compare: ${error.message}`);
    process.exit(2);
  }
}

/** runEach — the `systems` named in `names` through the workload in turn (in a closed loop, given `inFlight`); `tag` keeps each part's subjects and keys apart. */
async function runEach(
  systems: readonly System[],
  names: readonly string[],
  args: CompareArgs,
  servers: FleetServers,
  tag: string,
  inFlight?: number,
): Promise<SystemRun[]> {
  const runs: SystemRun[] = [];
  const how = inFlight === undefined ? '' : ' at saturation';
  for (const [i, system] of systems.filter((s) => names.includes(s.name)).entries()) {
    console.error(`bench:compare: ${system.name}${how} for ${args.durationMs / 1000} s...`);
    runs.push(await runSystem(system, servers, args.durationMs, `${process.pid}${tag}${i}`, inFlight));
  }
  return runs;
}

async function fleet(args: CompareArgs, servers: FleetServers, say: (line: string) => void): Promise<object[]> {
  const runs = await runEach(SYSTEMS, args.systems, args, servers, 'x');
  const rows = fleetRows(runs);
  const demands = FLEET.demandsPerSecond.join(', ');
  say(
    `fleet: ${FLEET.demandsPerSecond.length} client processes offering cost-1 requests at ${demands}/s; B = ${FLEET.capacityTokens}, r = ${FLEET.refillPerSecond}/s; ${args.durationMs / 1000} s each; ratios to ${BASELINE}`,
  );
  for (const line of fleetTable(rows)) say(line);
  say(envelopeLine(rows));
  const broken = rows.filter((r) => r.system.startsWith('tokenlease') && !r.keptPromise);
  if (broken.length > 0) process.exitCode = 1;
  for (const r of broken) console.error(`bench:compare: ${r.system} exceeded its envelope: ${r.envelopeViolations} admissions over it`);
  return rows;
}

async function windowPart(args: CompareArgs, servers: FleetServers, say: (line: string) => void): Promise<object[]> {
  const runs = await runEach(WINDOW_SYSTEMS, args.systems, args, servers, 'w');
  const rows = windowRows(runs);
  say(
    `window: the same clients and arrivals; at most N = ${WINDOW.limitTokens} in every window of W = ${WINDOW.windowMs / 1000} s; ${args.durationMs / 1000} s each; ratios to ${WINDOW_BASELINE}`,
  );
  for (const line of windowTable(rows)) say(line);
  say(windowLine(rows));
  const broken = rows.filter((r) => r.system.startsWith('tokenlease') && !r.keptWindows);
  if (broken.length > 0) process.exitCode = 1;
  for (const r of broken) console.error(`bench:compare: ${r.system} exceeded N per W: ${r.windowViolations} admissions over it`);
  return rows;
}

/** SATURATION_IN_FLIGHT — decisions a client of the saturation part leaves waiting for a reply at most (the round-trip systems' pipelines). */
const SATURATION_IN_FLIGHT = 64;

async function saturation(args: CompareArgs, servers: FleetServers, say: (line: string) => void): Promise<object[]> {
  const runs = await runEach([...SYSTEMS, ...WINDOW_SYSTEMS], args.saturationSystems, args, servers, 's', SATURATION_IN_FLIGHT);
  const rows = saturationRows(runs, SATURATION_IN_FLIGHT);
  say(saturationHeading(rows, FLEET.demandsPerSecond.length));
  for (const line of saturationTable(rows)) say(line);
  say(saturationLine(rows));
  const broken = rows.filter((r) => r.system.startsWith('tokenlease') && !r.keptPromise);
  if (broken.length > 0) process.exitCode = 1;
  for (const r of broken) console.error(`bench:compare: ${r.system} exceeded ${r.promise} at saturation`);
  return rows;
}

async function main(): Promise<void> {
  const args = parse();
  if (args === null) return;
  const say = args.json ? console.error : console.log;
  const nats = await startPrivateNats();
  const redis = await startPrivateRedis({ durable: false });
  try {
    // First, so that its quiet period passes while the rest is measured.
    const capacity = args.parts.includes('capacity') ? await startCapacity(nats) : null;
    const rows: object[] = [];
    if (args.parts.includes('fleet')) rows.push(...(await fleet(args, { nats, redis }, say)));
    if (args.parts.includes('window')) rows.push(...(await windowPart(args, { nats, redis }, say)));
    if (args.parts.includes('saturation')) rows.push(...(await saturation(args, { nats, redis }, say)));
    if (args.parts.includes('hot-path')) {
      const hot = await hotPathRows(nats.url);
      for (const line of hotPathTable(hot)) say(line);
      rows.push(...hot);
    }
    if (capacity !== null) {
      const capacityFigures = await capacityRows(capacity, args.measureMs ?? undefined);
      for (const line of capacityTable(capacityFigures)) say(line);
      const codec = codecCost();
      say(codecLine(codec));
      rows.push(...capacityFigures, codec);
    }
    if (args.parts.includes('tree')) {
      const tree = await treeRows(nats.url, args.treeAgents, args.measureMs ?? undefined);
      for (const line of treeTable(tree)) say(line);
      rows.push(...tree);
    }
    say(`machine: ${availableParallelism()} CPUs, load average (1 min) ${loadavg()[0]?.toFixed(2)} at the end; node ${process.version}`);
    if (args.json) for (const row of rows) process.stdout.write(`${JSON.stringify(row)}\n`);
  } finally {
    await stopAll();
    await redis.stop();
    await nats.stop();
  }
}

main().then(
  () => process.exit(process.exitCode ?? 0),
  async (error: unknown) => {
    console.error(`bench:compare: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
    await stopAll();
    process.exit(1);
  },
);
