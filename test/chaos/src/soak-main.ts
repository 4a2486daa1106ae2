/**
 * npm run soak -- [--duration 1h] [--seed N] [--json] [--help]
 *
 * Runs the soak (soak.ts) and prints its report: the envelope's verdict,
 * the faults, and the figures that must not grow, at the start and the
 * end (every minute's in --json). Exits 1 when the verdict fails, 2 with
 * one line for a bad flag (soak-args.ts).
 */
import { seedFromEnv } from '@tokenlease/shared/testing';
import { runSoak, type Figures, type SoakReport } from './soak.js';
import { parseSoakArgs, SoakArgsError, SOAK_USAGE, type SoakArgs } from './soak-args.js';

function parse(): SoakArgs | null {
  try {
    const args = parseSoakArgs(process.argv.slice(2));
    if (!args.help) return args;
    console.log(SOAK_USAGE);
    return null;
  } catch (error) {
    if (!(error instanceof SoakArgsError)) throw error;
    console.error(`soak: ${error.message}`);
    process.exit(2);
  }
}

const mb = (bytes: number): string => `${(bytes / 1024 / 1024).toFixed(1)} MB`;

function figureLines(label: string, f: Figures): string[] {
  const lines = [
    `${label} (${Math.round(f.atMs / 1000)} s): Redis keys ${f.redisKeys ?? '?'}, NATS subscriptions ${f.natsSubscriptions ?? '?'}`,
  ];
  for (const [member, c] of Object.entries(f.coordinators)) {
    lines.push(
      `  coordinator ${member}: ${c === null ? 'no answer' : `heap ${mb(c.heapBytes)}, handles ${c.handles}, timers ${c.timers}`}`,
    );
  }
  return lines;
}

function text(r: SoakReport): string {
  return [
    `soak: SEED=${r.seed}, ${Math.round(r.durationMs / 1000)} s, ${r.agentsStarted} agents started, ${r.poolsJudged} pools judged`,
    `admitted ${r.admitted} tokens, ${r.envelopeViolations} admissions over B + r·T; faults ${JSON.stringify(r.faults)} (${r.faultsUnverified} unverified)`,
    ...figureLines('start', r.start),
    ...figureLines('end', r.end),
    r.problems.length === 0 ? 'PASSED' : `FAILED:\n${r.problems.map((p) => `  ${p}`).join('\n')}`,
  ].join('\n');
}

async function main(): Promise<number> {
  const args = parse();
  if (args === null) return 0;
  const report = await runSoak({ durationMs: args.durationMs, seed: args.seed ?? seedFromEnv() });
  if (args.json) process.stdout.write(`${JSON.stringify(report)}\n`);
  else console.log(text(report));
  return report.problems.length === 0 ? 0 : 1;
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    console.error(`soak: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
    process.exit(1);
  },
);
