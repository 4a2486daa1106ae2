/**
 * npm run chaos -- [--json] [--short] [--seed N] [--only name,name] [--help]
 *
 * Runs every chaos scenario (or those --only names, as the rows name them)
 * against real processes and prints one row per scenario (or JSON). Exits 1
 * if any fault was not verified or any check failed, or a scenario could not
 * run (NOT RUN: network namespaces not permitted; with
 * TOKENLEASE_NETNS_UNAVAILABLE=skip such rows are printed but do not fail
 * the run), 2 with one line for a bad flag (args.ts).
 */
import { netnsSkipped } from '@tokenlease/harness/netns';
import { seedFromEnv } from '@tokenlease/shared/testing';
import { CHAOS_USAGE, ChaosArgsError, parseChaosArgs, type ChaosArgs } from './args.js';
import { SCENARIOS, type ScenarioRow } from './scenarios.js';
import { rowProblems } from './verdict.js';

const COLUMNS: Array<[string, (r: ScenarioRow) => string]> = [
  ['scenario', (r) => r.scenario],
  ['fault verified', (r) => (r.notRun !== null ? 'NOT RUN' : r.faultVerified ? 'yes' : 'NO')],
  ['admitted', (r) => String(r.admitted)],
  ['envelope violations', (r) => String(r.envelopeViolations)],
  ['worst window', (r) => r.worstWindowRatio.toFixed(3)],
  ['expiry violations', (r) => String(r.expiryViolations)],
  ['reclaim ms', (r) => (r.reclaimMs === null ? '-' : String(r.reclaimMs))],
  ['takeover ms', (r) => (r.takeoverMs === null ? '-' : String(r.takeoverMs))],
  ['recovery ms', (r) => (r.recoveryMs === null ? '-' : String(r.recoveryMs))],
  ['stranded / held', (r) => (r.strandedTokens === null ? '-' : `${r.strandedTokens} / ${r.heldTokens ?? '?'}`)],
  ['stray grants', (r) => (r.strayGrants === null ? '-' : String(r.strayGrants))],
  ['slots back ms', (r) => (r.slotsBackMs === null ? '-' : String(r.slotsBackMs))],
];

function table(rows: readonly ScenarioRow[]): string {
  const widths = COLUMNS.map(([h, f]) => Math.max(h.length, ...rows.map((r) => f(r).length)));
  const line = (cells: string[]): string =>
    cells.map((c, i) => (i === 0 ? c.padEnd(widths[i] as number) : c.padStart(widths[i] as number))).join('  ');
  return [
    line(COLUMNS.map(([h]) => h)),
    line(widths.map((w) => '-'.repeat(w))),
    ...rows.map((r) => line(COLUMNS.map(([, f]) => f(r)))),
  ].join('\n');
}

/** parse — the validated command line, or null after printing the usage (--help); exits 2 with one line for a bad flag. */
function parse(): ChaosArgs | null {
  try {
    const args = parseChaosArgs(process.argv.slice(2));
    if (!args.help) return args;
    console.log(CHAOS_USAGE);
    return null;
  } catch (error) {
    if (!(error instanceof ChaosArgsError)) throw error;
    console.error(`chaos: ${error.message}`);
    process.exit(2);
  }
}

async function main(): Promise<number> {
  const args = parse();
  if (args === null) return 0;
  const seed = args.seed ?? seedFromEnv();
  process.stderr.write(`chaos: SEED=${seed}${args.short ? ' (short)' : ''}\n`);
  const rows: ScenarioRow[] = [];
  for (const name of args.only) {
    process.stderr.write(`  ${name}…\n`);
    rows.push(await SCENARIOS[name]({ short: args.short, seed }));
  }
  const notRun = rows.filter((r) => r.notRun !== null);
  const problems = rows.filter((r) => r.notRun === null).flatMap(rowProblems);
  if (args.json) console.log(JSON.stringify(rows));
  else {
    console.log(table(rows));
    for (const r of rows) console.log(`${r.scenario}: ${r.note}`);
  }
  for (const p of problems) console.error(`FAILED: ${p}`);
  for (const r of notRun) console.error(`NOT RUN: ${r.scenario}: ${r.notRun ?? ''}`);
  const failed = new Set(problems.map((p) => p.split(':')[0])).size;
  console.error(`${rows.length - failed - notRun.length} passed, ${failed} failed, ${notRun.length} not run`);
  // A scenario that could not run fails the run too, unless the configuration says to skip it (docs/tools.md).
  return problems.length === 0 && (notRun.length === 0 || netnsSkipped()) ? 0 : 1;
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    console.error(`chaos: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
    process.exit(2);
  },
);
