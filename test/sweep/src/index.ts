/**
 * @tokenlease/sweep — the lease-size sweep as a library: its flags, its run
 * and its recommendation. `tokenlease-sweep` (main.ts) prints the table,
 * JSON or an HTML report.
 */
export { parseSweepArgs, sweepArgsToArgv, SWEEP_DEFAULTS, USAGE as SWEEP_USAGE, type SweepArgs } from './args.js';
export { SweepArgsError } from './args-error.js';
export { runSweep, type SweepInput } from './run-sweep.js';
export { describeRecommendation, recommend } from './recommend.js';
export { runWindowSweep, renderWindowTable, type SweepWindow, type WindowRow } from './window-sweep.js';
export { SlidingLog, centralLog, localLogs } from './window-log.js';
