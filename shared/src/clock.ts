/**
 * @tokenlease/shared/clock — the process's monotonic clock, in whole
 * microseconds: what adapters hand their cores as `now`. An entry of its
 * own, so that no core can reach a clock through the package's main entry.
 *
 * @module @tokenlease/shared/clock
 */
export { hostMonoNowUs } from './adapters/host-clock.js';
