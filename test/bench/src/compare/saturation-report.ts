/**
 * What `npm run bench:compare` prints for the saturation part (`--parts
 * saturation`): each system's four clients deciding in a closed loop, as
 * fast as the system lets them (client.ts, driveClosedLoop), so a row says
 * how many decisions per second the system sustains on this machine and
 * what its servers spent per million of them, apart from what its clients
 * spent. Every figure also as a ratio to tokenlease's strict chunk leases
 * (BASELINE). Pure: figures in, text out.
 *
 * Each row is judged by its own promise over every window of the merged
 * admission logs: B + r·T (B + A + r·T with an allowance), or N per W for
 * a window system (WINDOW).
 */
import type { SystemRun } from './fleet-run.js';
import { fleetFigures, formatNumber, ratedTable, ratiosOf, round } from './report.js';
import { BASELINE, WINDOW } from './systems.js';

/** SaturationFigures — the figures of one system that get a ratio. */
export interface SaturationFigures {
  readonly decisionsPerSecond: number;
  readonly latencyP50Us: number;
  readonly latencyP99Us: number;
  /** The servers' CPU (coordinator and nats-server, or redis-server) per million decisions, s. */
  readonly serverCpuSecondsPerMillionDecisions: number;
  /** The client processes' CPU per million decisions, s (the deciding itself, and the load loop around it). */
  readonly clientCpuSecondsPerMillionDecisions: number;
  /** The servers' CPU over the run's time: cores they kept busy. */
  readonly serverCores: number;
  readonly roundTripsPerSecond: number;
}

/** SaturationRow — one system's JSON row. */
export interface SaturationRow extends SaturationFigures {
  readonly table: 'saturation';
  readonly system: string;
  readonly label: string;
  readonly durationS: number;
  readonly inFlight: number;
  readonly decisions: number;
  readonly errors: number;
  readonly admittedTokens: number;
  readonly cpuSecondsClients: number;
  readonly cpuSecondsServers: number;
  /** What the row is judged by: `B + r·T`, `B + A + r·T` or `N per W`. */
  readonly promise: string;
  /** Its promise held in every window of the merged admission logs. */
  readonly keptPromise: boolean;
  readonly ratios: Readonly<Record<keyof SaturationFigures, number | null>>;
}

const FIGURES: ReadonlyArray<keyof SaturationFigures> = [
  'decisionsPerSecond',
  'latencyP50Us',
  'latencyP99Us',
  'serverCpuSecondsPerMillionDecisions',
  'clientCpuSecondsPerMillionDecisions',
  'serverCores',
  'roundTripsPerSecond',
];

/** perMillion — CPU seconds per million decisions (NaN without decisions). */
function perMillion(cpuSeconds: number, decisions: number): number {
  return round(decisions === 0 ? Number.NaN : (cpuSeconds / decisions) * 1e6);
}

/** saturationFigures — a closed-loop run's figures (no ratios yet). */
export function saturationFigures(run: SystemRun): SaturationFigures {
  const f = fleetFigures(run);
  const seconds = run.durationMs / 1000;
  return {
    decisionsPerSecond: f.decisionsPerSecond,
    latencyP50Us: f.latencyP50Us,
    latencyP99Us: f.latencyP99Us,
    serverCpuSecondsPerMillionDecisions: perMillion(run.cpuSecondsServers, run.decisions),
    clientCpuSecondsPerMillionDecisions: perMillion(run.cpuSecondsClients, run.decisions),
    serverCores: round(run.cpuSecondsServers / seconds),
    roundTripsPerSecond: round(run.roundTrips / seconds),
  };
}

/** promiseOf — what a run is judged by, and whether it held. */
function promiseOf(run: SystemRun): { promise: string; keptPromise: boolean } {
  if (run.system.window === true) return { promise: 'N per W', keptPromise: run.windows.ok };
  return { promise: run.system.allowanceTokens > 0 ? 'B + A + r·T' : 'B + r·T', keptPromise: run.promise.ok };
}

/** saturationRows — the JSON rows of closed-loop `runs` (each with `inFlight` waiting at most per client), ratios to the BASELINE run's figures; throws without it. */
export function saturationRows(runs: readonly SystemRun[], inFlight: number): SaturationRow[] {
  const base = runs.find((r) => r.system.name === BASELINE);
  if (base === undefined) throw new Error(`no ${BASELINE} run to take ratios against`);
  const baseFigures = saturationFigures(base);
  return runs.map((run) => {
    const figures = saturationFigures(run);
    const ratios = ratiosOf(figures, baseFigures, FIGURES);
    return {
      table: 'saturation',
      system: run.system.name,
      label: run.system.label,
      durationS: run.durationMs / 1000,
      inFlight,
      decisions: run.decisions,
      errors: run.errors,
      admittedTokens: run.admittedTokens,
      cpuSecondsClients: round(run.cpuSecondsClients),
      cpuSecondsServers: round(run.cpuSecondsServers),
      ...figures,
      ...promiseOf(run),
      ratios,
    };
  });
}

/** saturationTable — the rows as a Markdown table, ratios to the baseline in parentheses. */
export function saturationTable(rows: readonly SaturationRow[]): string[] {
  const head = [
    'system',
    'decisions/s',
    'p50 µs',
    'p99 µs',
    'server CPU s per M decisions',
    'client CPU s per M decisions',
    'server cores busy',
    'round-trips/s',
  ];
  return ratedTable(head, FIGURES, rows, BASELINE);
}

/** saturationLine — which systems kept their own promise in every window at saturation, and which did not. */
export function saturationLine(rows: readonly SaturationRow[]): string {
  const says = (r: SaturationRow): string =>
    `${r.system} (${r.promise === 'N per W' ? `${WINDOW.limitTokens} per ${WINDOW.windowMs / 1000} s` : r.promise})`;
  const kept = rows.filter((r) => r.keptPromise).map(says);
  const broke = rows.filter((r) => !r.keptPromise).map(says);
  return `own promise over every window of the merged admission logs, at saturation: kept by ${kept.join(', ') || 'none'}; exceeded by ${broke.join(', ') || 'none'}`;
}

/** saturationHeading — the line above the table. */
export function saturationHeading(rows: readonly SaturationRow[], clients: number): string {
  const first = rows[0];
  if (first === undefined) return 'saturation: no system ran';
  return `saturation: ${clients} client processes deciding cost-1 requests in a closed loop (at most ${formatNumber(first.inFlight)} waiting for a reply each); ${first.durationS} s each; ratios to ${BASELINE}`;
}
