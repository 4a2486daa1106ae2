/**
 * The coordinator's clock: the host-wide monotonic clock (CLOCK_MONOTONIC via
 * process.hrtime) in whole microseconds. Host-wide, so that admission logs
 * of several processes on one machine can be merged against it.
 */
export function hostMonoNowUs(): number {
  return Number(process.hrtime.bigint() / 1000n);
}
