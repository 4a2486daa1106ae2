/**
 * The bench figures of a service's view: per-key limiters at scale
 * (limiters.ts) and the HTTP middleware's cost (http-overhead.ts). Prints
 * its readable lines and returns the figures for the JSON line.
 */
import type { BenchScale } from './args.js';
import { httpOverheadFigures, type HttpOverheadFigures } from './http-overhead.js';
import { limiterFigures, type LimiterFigures } from './limiters.js';

/** adoptionFigures — measures at `scale`, prints one line each, returns the figures. */
export async function adoptionFigures(natsUrl: string, scale: BenchScale): Promise<LimiterFigures & HttpOverheadFigures> {
  const keys = await limiterFigures(natsUrl, scale);
  const http = await httpOverheadFigures(natsUrl, scale.httpMs);
  console.log(
    `per-key limiters: ${keys.idleLimiters} idle limiters use ${keys.idleLimitersCpuPercent}% of a core, ${keys.idleLimitersTimers} keeper timers, ${keys.bytesPerIdleLimiter} heap bytes each; ` +
      `with limiterIdleMs 1000, ${keys.limitersLeftAfterDrop} of ${keys.droppedLimiters} left 2.5 s after their last use (${keys.bytesPerDroppedLimiter} bytes each remaining)`,
  );
  console.log(
    `HTTP middleware: ${http.middlewareUsPerRequest} µs per request in process (bare handler ${http.bareUsPerRequest} µs); ` +
      `node:http over loopback ${http.httpLimitedRequestsPerSecond} req/s limited vs ${http.httpBareRequestsPerSecond} bare (${http.httpOverheadUsPerRequest} µs more per request)`,
  );
  return { ...keys, ...http };
}
