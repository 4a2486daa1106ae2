/**
 * What `npm run bench:compare` prints for the window rows (`--parts
 * window`): systems that promise at most N tokens in every window of W
 * (WINDOW), judged over every window of the merged admission logs with
 * `checkWindows`, not against B + r·T; every figure also as a ratio to
 * tokenlease's window pool (WINDOW_BASELINE). Pure: figures in, text out.
 *
 * The ideal is N·⌈T/W⌉: the most any system may admit in T under N per W
 * (T cut into ⌈T/W⌉ windows of W, none holding more than N).
 */
import type { SystemRun } from './fleet-run.js';
import { fleetFigures, formatNumber, ratedTable, ratiosOf, round } from './report.js';
import { WINDOW, WINDOW_BASELINE } from './systems.js';

/** WindowFigures — the figures of one window row that get a ratio. */
export interface WindowFigures {
  readonly decisionsPerSecond: number;
  readonly latencyP50Us: number;
  readonly latencyP99Us: number;
  readonly cpuSecondsPerMillionDecisions: number;
  readonly roundTripsPer1000Admissions: number;
  readonly admittedTokens: number;
  /** N·⌈T/W⌉. */
  readonly idealTokens: number;
  /** admittedTokens / idealTokens. */
  readonly admittedOfIdeal: number;
  /** The most tokens any window of W held. */
  readonly fullestWindowTokens: number;
  /** Tokens over N in the fullest window; 0 when every window held at most N. */
  readonly overAdmittedTokens: number;
}

/** WindowRow — one window row's JSON. */
export interface WindowRow extends WindowFigures {
  readonly table: 'window';
  readonly system: string;
  readonly label: string;
  readonly limitTokens: number;
  readonly windowMs: number;
  readonly durationS: number;
  readonly decisions: number;
  readonly shed: number;
  readonly errors: number;
  readonly cpuSecondsClients: number;
  readonly cpuSecondsServers: number;
  /** Admissions that ended a window holding more than N. */
  readonly windowViolations: number;
  /** Every window of W held at most N. */
  readonly keptWindows: boolean;
  readonly ratios: Readonly<Record<keyof WindowFigures, number | null>>;
}

const FIGURES: ReadonlyArray<keyof WindowFigures> = [
  'decisionsPerSecond',
  'latencyP50Us',
  'latencyP99Us',
  'cpuSecondsPerMillionDecisions',
  'roundTripsPer1000Admissions',
  'admittedTokens',
  'idealTokens',
  'admittedOfIdeal',
  'fullestWindowTokens',
  'overAdmittedTokens',
];

/** windowIdealTokens — N·⌈T/W⌉ for a run of `durationMs`. */
export function windowIdealTokens(durationMs: number): number {
  return WINDOW.limitTokens * Math.ceil(durationMs / WINDOW.windowMs);
}

/** windowFigures — a run's figures against N per W (no ratios yet). */
export function windowFigures(run: SystemRun): WindowFigures {
  const f = fleetFigures(run);
  const idealTokens = windowIdealTokens(run.durationMs);
  return {
    decisionsPerSecond: f.decisionsPerSecond,
    latencyP50Us: f.latencyP50Us,
    latencyP99Us: f.latencyP99Us,
    cpuSecondsPerMillionDecisions: f.cpuSecondsPerMillionDecisions,
    roundTripsPer1000Admissions: f.roundTripsPer1000Admissions,
    admittedTokens: run.admittedTokens,
    idealTokens,
    admittedOfIdeal: round(run.admittedTokens / idealTokens),
    fullestWindowTokens: run.windows.fullestTokens,
    overAdmittedTokens: Math.max(0, run.windows.fullestTokens - WINDOW.limitTokens),
  };
}

/** windowRows — the JSON rows of `runs`, ratios to the WINDOW_BASELINE run's figures; throws without a baseline run. */
export function windowRows(runs: readonly SystemRun[]): WindowRow[] {
  const base = runs.find((r) => r.system.name === WINDOW_BASELINE);
  if (base === undefined) throw new Error(`no ${WINDOW_BASELINE} run to take ratios against`);
  const baseFigures = windowFigures(base);
  return runs.map((run) => {
    const figures = windowFigures(run);
    const ratios = ratiosOf(figures, baseFigures, FIGURES);
    return {
      table: 'window',
      system: run.system.name,
      label: run.system.label,
      limitTokens: WINDOW.limitTokens,
      windowMs: WINDOW.windowMs,
      durationS: run.durationMs / 1000,
      decisions: run.decisions,
      shed: run.shed,
      errors: run.errors,
      cpuSecondsClients: round(run.cpuSecondsClients),
      cpuSecondsServers: round(run.cpuSecondsServers),
      ...figures,
      windowViolations: run.windows.violations,
      keptWindows: run.windows.ok,
      ratios,
    };
  });
}

/** windowTable — the rows as a Markdown table, ratios to the baseline in parentheses. */
export function windowTable(rows: readonly WindowRow[]): string[] {
  const head = [
    'system',
    'decisions/s',
    'p50 µs',
    'p99 µs',
    'CPU s per M decisions',
    'round-trips per 1k admitted',
    'admitted / N·⌈T/W⌉',
    'fullest window, tokens',
    'over N, tokens',
  ];
  const figures: Array<keyof WindowFigures> = [
    'decisionsPerSecond',
    'latencyP50Us',
    'latencyP99Us',
    'cpuSecondsPerMillionDecisions',
    'roundTripsPer1000Admissions',
    'admittedOfIdeal',
    'fullestWindowTokens',
    'overAdmittedTokens',
  ];
  return ratedTable(head, figures, rows, WINDOW_BASELINE);
}

/** windowLine — which systems kept N per W in every window, and which did not (by how much, in their fullest window). */
export function windowLine(rows: readonly WindowRow[]): string {
  const kept = rows.filter((r) => r.keptWindows).map((r) => r.system);
  const over = rows
    .filter((r) => !r.keptWindows)
    .map((r) => `${r.system} (by ${formatNumber(r.overAdmittedTokens)} tokens, ${r.windowViolations} admissions over)`);
  const limit = `${WINDOW.limitTokens} per ${WINDOW.windowMs / 1000} s`;
  return `N per W (${limit}) over every window of the merged admission logs: kept by ${kept.join(', ') || 'none'}; exceeded by ${over.join(', ') || 'none'}`;
}
