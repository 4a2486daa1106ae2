/**
 * What `npm run bench:compare` prints for the fleet: one row per system,
 * every figure also as a ratio to tokenlease's strict chunk leases
 * (BASELINE), as a Markdown table (pasted into BENCHMARKS.md as it is) and
 * as JSON objects, one a line. Pure: figures in, text out.
 *
 * A ratio is the row's figure over the baseline's; null where the
 * baseline's figure is 0 (over-admission of a system that kept the
 * envelope, round-trips of local buckets) or either is not a number.
 */
import type { SystemRun } from './fleet-run.js';
import { BASELINE, FLEET } from './systems.js';

/** FleetFigures — the figures of one system that get a ratio. */
export interface FleetFigures {
  readonly decisionsPerSecond: number;
  readonly latencyP50Us: number;
  readonly latencyP99Us: number;
  /** CPU of clients and servers over the traffic, per million decisions, s. */
  readonly cpuSecondsPerMillionDecisions: number;
  readonly roundTripsPer1000Admissions: number;
  readonly admittedTokens: number;
  /** B + r·T over the run. */
  readonly idealTokens: number;
  /** admittedTokens / idealTokens. */
  readonly admittedOfIdeal: number;
  /** Tokens over B + r·T in the worst window of the merged admission logs; 0 when the envelope held. */
  readonly overAdmittedTokens: number;
}

/** FleetRow — one system's JSON row. */
export interface FleetRow extends FleetFigures {
  readonly table: 'fleet';
  readonly system: string;
  readonly label: string;
  readonly durationS: number;
  readonly decisions: number;
  /** Arrivals not decided: more than a client's limit were waiting for replies. */
  readonly shed: number;
  readonly errors: number;
  readonly cpuSecondsClients: number;
  readonly cpuSecondsServers: number;
  /** Largest admitted − (B + r·T) over every window, tokens (negative: the room left in the tightest window). */
  readonly worstExcessTokens: number;
  readonly envelopeViolations: number;
  /** Admissions stayed within B + r·T in every window. */
  readonly keptEnvelope: boolean;
  /** …within the system's own promise, B + A + r·T (the same as keptEnvelope without an allowance). */
  readonly keptPromise: boolean;
  readonly allowanceTokens: number;
  /** The most tokens any window of WINDOW's W (1 s) held: how far a bucket of B = N, r = N/W is from a strict window of N per W. */
  readonly fullestWindowTokens: number;
  readonly ratios: Readonly<Record<keyof FleetFigures, number | null>>;
}

const FIGURES: ReadonlyArray<keyof FleetFigures> = [
  'decisionsPerSecond',
  'latencyP50Us',
  'latencyP99Us',
  'cpuSecondsPerMillionDecisions',
  'roundTripsPer1000Admissions',
  'admittedTokens',
  'idealTokens',
  'admittedOfIdeal',
  'overAdmittedTokens',
];

/** round — `x` to 4 significant digits (integers above 9,999 kept whole). */
export function round(x: number): number {
  if (!Number.isFinite(x) || x === 0) return x;
  return Math.abs(x) >= 10_000 ? Math.round(x) : Number(x.toPrecision(4));
}

/** fleetFigures — a run's figures (no ratios yet). */
export function fleetFigures(run: SystemRun): FleetFigures {
  const seconds = run.durationMs / 1000;
  const idealTokens = FLEET.capacityTokens + FLEET.refillPerSecond * seconds;
  const cpu = run.cpuSecondsClients + run.cpuSecondsServers;
  return {
    decisionsPerSecond: round(run.decisions / seconds),
    latencyP50Us: round(run.latency.quantileNs(0.5) / 1000),
    latencyP99Us: round(run.latency.quantileNs(0.99) / 1000),
    cpuSecondsPerMillionDecisions: round(run.decisions === 0 ? Number.NaN : (cpu / run.decisions) * 1e6),
    roundTripsPer1000Admissions: round(run.admittedTokens === 0 ? Number.NaN : (run.roundTrips / run.admittedTokens) * 1000),
    admittedTokens: run.admittedTokens,
    idealTokens,
    admittedOfIdeal: round(run.admittedTokens / idealTokens),
    overAdmittedTokens: round(Math.max(0, run.envelope.worstExcessTokens)),
  };
}

/** ratio — `x / baseline`, null where that means nothing. */
export function ratio(x: number, baseline: number): number | null {
  if (!Number.isFinite(x) || !Number.isFinite(baseline) || baseline === 0) return null;
  return round(x / baseline);
}

/** ratiosOf — each named figure of `figures` over the baseline's (`ratio`). */
export function ratiosOf<F extends { readonly [K in keyof F]: number }>(
  figures: F,
  base: F,
  names: ReadonlyArray<keyof F>,
): Record<keyof F, number | null> {
  return Object.fromEntries(names.map((f) => [f, ratio(figures[f], base[f])])) as Record<keyof F, number | null>;
}

/** fleetRows — the JSON rows of `runs`, ratios to the BASELINE run's figures; throws without a baseline run. */
export function fleetRows(runs: readonly SystemRun[]): FleetRow[] {
  const base = runs.find((r) => r.system.name === BASELINE);
  if (base === undefined) throw new Error(`no ${BASELINE} run to take ratios against`);
  const baseFigures = fleetFigures(base);
  return runs.map((run) => {
    const figures = fleetFigures(run);
    const ratios = ratiosOf(figures, baseFigures, FIGURES);
    return {
      table: 'fleet',
      system: run.system.name,
      label: run.system.label,
      durationS: run.durationMs / 1000,
      decisions: run.decisions,
      shed: run.shed,
      errors: run.errors,
      cpuSecondsClients: round(run.cpuSecondsClients),
      cpuSecondsServers: round(run.cpuSecondsServers),
      ...figures,
      worstExcessTokens: round(run.envelope.worstExcessTokens),
      envelopeViolations: run.envelope.violations,
      keptEnvelope: run.envelope.ok,
      keptPromise: run.promise.ok,
      allowanceTokens: run.system.allowanceTokens,
      fullestWindowTokens: run.windows.fullestTokens,
      ratios,
    };
  });
}

/** formatNumber — a figure for the table: thousands separated, 3 significant digits below 100. */
export function formatNumber(x: number | null): string {
  if (x === null || Number.isNaN(x)) return '–';
  if (Math.abs(x) >= 100) return Math.round(x).toLocaleString('en-US');
  return x === 0 ? '0' : String(Number(x.toPrecision(3)));
}

/** RatedRow — a table row: its system, label, figures and each figure's ratio to the baseline's. */
export type RatedRow<F> = {
  readonly system: string;
  readonly label: string;
  readonly ratios: { readonly [K in keyof F]: number | null };
} & {
  readonly [K in keyof F]: number | null;
};

/**
 * ratedTable — `rows` as a Markdown table under `head` (the first column is
 * the label), one column per figure, with its ratio to the baseline's in
 * parentheses except on the `baseline` system's own row.
 */
export function ratedTable<F>(
  head: readonly string[],
  figures: readonly (keyof F)[],
  rows: readonly RatedRow<F>[],
  baseline: string,
): string[] {
  const cell = (row: RatedRow<F>, figure: keyof F): string =>
    row.system === baseline ? formatNumber(row[figure]) : `${formatNumber(row[figure])} (×${formatNumber(row.ratios[figure])})`;
  return [
    `| ${head.join(' | ')} |`,
    `|${head.map(() => ' --- ').join('|')}|`,
    ...rows.map((row) => `| ${[row.label, ...figures.map((f) => cell(row, f))].join(' | ')} |`),
  ];
}

/** fleetTable — the rows as a Markdown table, ratios to the baseline in parentheses. */
export function fleetTable(rows: readonly FleetRow[]): string[] {
  const head = [
    'system',
    'decisions/s',
    'p50 µs',
    'p99 µs',
    'CPU s per M decisions',
    'round-trips per 1k admitted',
    'admitted / B + r·T',
    'over B + r·T, tokens',
  ];
  const figures: Array<keyof FleetFigures> = [
    'decisionsPerSecond',
    'latencyP50Us',
    'latencyP99Us',
    'cpuSecondsPerMillionDecisions',
    'roundTripsPer1000Admissions',
    'admittedOfIdeal',
    'overAdmittedTokens',
  ];
  return ratedTable(head, figures, rows, BASELINE);
}

/** envelopeLine — which systems kept B + r·T in every window, and which did not (by how much). */
export function envelopeLine(rows: readonly FleetRow[]): string {
  const kept = rows.filter((r) => r.keptEnvelope).map((r) => r.system);
  const over = rows
    .filter((r) => !r.keptEnvelope)
    .map((r) => {
      const own = r.allowanceTokens > 0 ? `; its own B + A + r·T ${r.keptPromise ? 'kept' : 'exceeded'}` : '';
      return `${r.system} (by ${formatNumber(r.overAdmittedTokens)} tokens${own})`;
    });
  return `envelope B + r·T over every window of the merged admission logs: kept by ${kept.join(', ') || 'none'}; exceeded by ${over.join(', ') || 'none'}`;
}
