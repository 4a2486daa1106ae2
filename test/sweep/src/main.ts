/**
 * npm run sweep -- [flags]   (npm run sweep -- --help lists them)
 *
 * Simulates the user's fleet for every lease size × TTL × usage-report
 * interval (chunk leases) and
 * refresh interval × TTL (rate leases) on identical arrivals, next to a round-trip-per-request central bucket and
 * independent local buckets, then prints a table (or --json), recommends
 * the cheapest setting that reaches the utilization target, and can write
 * an HTML report with charts (--html FILE). With --window N/W it sweeps a
 * strict sliding-window pool instead, against an exact central per-request
 * sliding-window log, every row checked for at most N in every window of W
 * (window-sweep.ts). With --trace FILE ... it replays a recorded trace or
 * access logs (trace.ts) instead of a workload, and with --by-key adds a
 * report over every key (by-key.ts); the whole trace is read and checked
 * before the first run, so a bad line reports nothing. Exits 2 with one line
 * for a bad flag or a bad trace. With --json, stdout holds only the JSON.
 */
import { writeFileSync } from 'node:fs';
import { formatRate } from '@tokenlease/shared';
import { SweepArgsError } from './args-error.js';
import { AGENTS_MAX, demandLabel, parseSweepArgs, sweepArgsToArgv, USAGE, type SweepArgs } from './args.js';
import { byKey, renderByKey, type ByKeyReport } from './by-key.js';
import { renderHtml } from './html.js';
import { describeRecommendation, recommend } from './recommend.js';
import { arrivalsOf, runSweep, type SweepInput } from './run-sweep.js';
import { tokenleaseSettings } from './settings.js';
import { renderTable } from './table.js';
import { TraceError, type TraceKeys } from './trace.js';
import { traceSource } from './trace-args.js';
import { describeTraceFields } from './trace-fields.js';
import { readTraceFiles } from './trace-file.js';
import { KEY_SECRET_ENV } from './trace-key-hash.js';
import { formatWhatIf, renderWhatIf, whatIf } from './what-if.js';
import { formatWindow } from './window-args.js';
import { renderWindowTable, runWindowSweep, type SweepWindow } from './window-sweep.js';
import { formatConcurrency, type SweepConcurrency } from './concurrency-args.js';
import { concurrencyRecommendation, renderConcurrencyTable, runConcurrencySweep } from './concurrency-sweep.js';
import { formatDurationUs } from './duration.js';
import { formatPercent } from './format.js';

function parse(): SweepArgs | null {
  try {
    const args = parseSweepArgs(process.argv.slice(2), undefined, { keySecretEnv: process.env[KEY_SECRET_ENV] });
    if (args.help) {
      console.log(USAGE);
      return null;
    }
    return args;
  } catch (error) {
    if (error instanceof SweepArgsError) {
      console.error(`sweep: ${error.message}`);
      process.exit(2);
    }
    throw error;
  }
}

/** Traced — the sweep's arguments with what a trace adds: its arrivals, fleet and span, and its keys for --by-key. */
type Traced = SweepArgs & SweepInput & { readonly traceKeys: TraceKeys | null };

/** withTrace — `args` with the trace's arrivals, fleet and span when --trace is given; exits 2 on a bad trace. */
async function withTrace(args: SweepArgs): Promise<Traced> {
  if (args.tracePaths.length === 0) return { ...args, traceKeys: null };
  try {
    const trace = await readTraceFiles(args.tracePaths, traceSource(args), {
      instancesMax: AGENTS_MAX,
      keyOnly: args.traceKey,
      keepKeys: args.byKeyTop !== null,
    });
    return { ...args, agents: trace.instances.length, durationMs: trace.durationMs, trace: trace.workload, traceKeys: trace.keys };
  } catch (error) {
    if (error instanceof TraceError) {
      console.error(`sweep: --trace ${error.message}`);
      process.exit(2);
    }
    throw error;
  }
}

async function main(): Promise<void> {
  const parsed = parse();
  if (parsed === null) return;
  const { traceKeys, ...args } = await withTrace(parsed);
  const replay = `npm run sweep -- ${sweepArgsToArgv(args).join(' ')}`;
  const say = args.json ? (line: string): void => void process.stderr.write(`${line}\n`) : (line: string): void => console.log(line);
  if (args.keyHash?.secretFrom === 'random' && ((args.traceFields?.key ?? null) !== null || args.traceKey !== null)) {
    process.stderr.write(
      `sweep: no key secret (--key-secret or ${KEY_SECRET_ENV}): keys are hashed under a random one, so the key names in this report mean nothing outside this run\n`,
    );
  }
  const pool =
    args.window !== null
      ? `window ${formatWindow(args.window)}`
      : args.concurrency !== null
        ? `concurrency ${formatConcurrency(args.concurrency)}, served in ${formatDurationUs(args.concurrency.serviceMs * 1000)} on average`
        : `B=${args.capacityTokens}, r=${formatRate(args.refill)}`;
  say(
    `sweep: ${args.agents} agents, ${pool}, ${args.tracePaths.length === 0 ? 'workload ' : ''}${demandLabel(args)}, ` +
      `latency ${args.latencyUs / 1000} ms, ${args.durationMs / 1000} s simulated per combination, seed ${args.seed}`,
  );
  say(`replay: ${replay}`);
  if (args.window !== null) return windowMain(args, args.window, replay, say);
  if (args.concurrency !== null) return concurrencyMain(args, args.concurrency, replay, say);
  const total = tokenleaseSettings(args).length + 2;
  let done = 0;
  const rows = runSweep(args, () => {
    done += 1;
    process.stderr.write(`\r${done}/${total} runs`);
  });
  process.stderr.write('\n');
  const recommendation = recommend(rows, args.targetUtilization);
  const limits = [{ capacityTokens: args.capacityTokens, refill: args.refill }, ...args.whatIf];
  const whatIfRows = args.whatIf.length === 0 ? [] : whatIf(arrivalsOf(args).arrivals, limits);
  const byKeyReport: ByKeyReport | null =
    traceKeys === null || args.byKeyTop === null ? null : byKey(arrivalsOf(args).arrivals, traceKeys, limits, args.byKeyTop);
  if (args.json) {
    console.log(
      JSON.stringify({
        parameters: {
          ...args,
          refill: formatRate(args.refill),
          workload: demandLabel(args),
          // The arrivals stay out of the JSON: --trace names the files they came from.
          ...(args.trace === undefined ? {} : { trace: undefined }),
          traceFields: args.traceFields === null ? null : describeTraceFields(args.traceFields),
          whatIf: formatWhatIf(args.whatIf),
        },
        replay,
        rows,
        recommendation,
        ...(whatIfRows.length === 0 ? {} : { whatIf: whatIfRows }),
        ...(byKeyReport === null ? {} : { byKey: byKeyReport }),
      }),
    );
  } else {
    console.log(renderTable(rows, { marked: recommendation.row }));
    console.log(`\n${describeRecommendation(recommendation)}`);
    if (whatIfRows.length > 0) console.log(`\n${renderWhatIf(whatIfRows)}`);
    if (byKeyReport !== null) console.log(`\n${renderByKey(byKeyReport)}`);
  }
  if (args.htmlPath !== null) {
    writeFileSync(
      args.htmlPath,
      renderHtml({ rows, args, recommendation, whatIf: whatIfRows, byKey: byKeyReport, generatedBy: `tokenlease sweep (${replay})` }),
    );
    say(`report: ${args.htmlPath}`);
  }
}

/** windowMain — the window sweep: its table (or JSON), every row checked against N per W. */
function windowMain(args: SweepArgs, window: SweepWindow, replay: string, say: (line: string) => void): void {
  const total = tokenleaseSettings({ ...args, leaseModes: ['chunk'], allowancesTokens: [0] }).length + 2;
  let done = 0;
  const rows = runWindowSweep(args, window, () => {
    done += 1;
    process.stderr.write(`\r${done}/${total} runs`);
  });
  process.stderr.write('\n');
  const fullest = Math.max(...rows.map((row) => row.fullestWindowTokens));
  if (args.json) {
    const parameters = { ...args, refill: formatRate(args.refill), workload: demandLabel(args), window: formatWindow(window) };
    console.log(JSON.stringify({ parameters, replay, rows }));
    return;
  }
  console.log(renderWindowTable(rows));
  say(`\nfullest window of any row: ${fullest} of N=${window.limitTokens} per ${formatWindow(window).split('/')[1]}`);
}

/** concurrencyMain — the concurrency sweep: its table (or JSON) and the cheapest setting reaching the target, every row checked against N in flight. */
function concurrencyMain(args: SweepArgs, pool: SweepConcurrency, replay: string, say: (line: string) => void): void {
  const total = tokenleaseSettings({ ...args, leaseModes: ['chunk'], allowancesTokens: [0] }).length + 2;
  let done = 0;
  const rows = runConcurrencySweep(args, pool, () => {
    done += 1;
    process.stderr.write(`\r${done}/${total} runs`);
  });
  process.stderr.write('\n');
  const recommended = concurrencyRecommendation(rows, args.targetUtilization);
  const peak = Math.max(...rows.map((row) => row.peakInFlight));
  if (args.json) {
    const parameters = { ...args, refill: formatRate(args.refill), workload: demandLabel(args), concurrency: formatConcurrency(pool) };
    console.log(JSON.stringify({ parameters, replay, rows, recommendation: recommended }));
    return;
  }
  console.log(renderConcurrencyTable(rows));
  say(`\nmost in flight in any row: ${peak} of N=${pool.limit}`);
  say(
    recommended === null
      ? `no lease setting reached ${formatPercent(args.targetUtilization)}% of the central semaphore's admissions: try larger leases or longer TTLs`
      : `recommended: leases of ${recommended.leaseSize} slots, TTL ${formatDurationUs((recommended.ttlMs ?? 0) * 1000)}` +
          `${recommended.reportMs === 0 || recommended.reportMs === null ? '' : `, reports every ${formatDurationUs(recommended.reportMs * 1000)}`}: ` +
          `${formatPercent(recommended.utilization)}% of the semaphore's admissions at ${recommended.roundTripsPer1k.toFixed(1)} round-trips per 1,000 requests ` +
          `(the semaphore: ${(rows.find((r) => r.strategy === 'central-semaphore')?.roundTripsPer1k ?? 0).toFixed(1)})`,
  );
}

await main();
