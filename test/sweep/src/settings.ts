/**
 * The tokenlease settings one sweep runs, in row order.
 *
 * Guarantees: chunk settings are every lease size × TTL, rate settings
 * every refresh interval × each TTL of at least twice it (so an agent
 * renews about once per interval rather than for expiry; a refresh with no
 * such TTL runs once, at a TTL of twice it), both for every allowance.
 * Chunk settings also run once per usage-report interval (keeper
 * reportMs, 0 = off); rate settings ignore it (reports apply to chunk
 * leases only) and have `reportMs` null.
 * Pure: `args.ts` counts them before anything runs, `run-sweep.ts` runs them.
 */

/** LeaseMode — the pool's lease mode: chunk leases (rows of strategy 'lease') or rate leases ('rate'). */
export type LeaseMode = 'chunk' | 'rate';

/** LEASE_MODES — every lease mode, in the order rows list them. */
export const LEASE_MODES: readonly LeaseMode[] = ['chunk', 'rate'];

/** Setting — what distinguishes one row from another of its strategy; ms and tokens (null: does not apply). */
export interface Setting {
  readonly leaseSize: number | null;
  readonly refreshMs: number | null;
  readonly ttlMs: number | null;
  readonly allowance: number;
  /** Usage-report interval (keeper reportMs) of a chunk setting, ms, 0 = off; null for rate leases and baselines. */
  readonly reportMs: number | null;
}

/** SettingsInput — the lists a sweep tries (ms and tokens). */
export interface SettingsInput {
  /** Burst allowances A to try, tokens beyond B, ascending; 0 = strict. */
  readonly allowancesTokens: readonly number[];
  /** Lease TTLs to try, ms, ascending. */
  readonly ttlsMs: readonly number[];
  /** maxLeaseTokens values to try with chunk leases, tokens, ascending. */
  readonly leaseSizesTokens: readonly number[];
  readonly leaseModes: readonly LeaseMode[];
  readonly refreshesMs: readonly number[];
  /** Usage-report intervals for chunk settings, ms, 0 = off. */
  readonly reportsMs: readonly number[];
}

/** rateTtlsMs — the TTLs a rate row of `refreshMs` runs with: those of at least twice it, or else twice it. */
export function rateTtlsMs(ttlsMs: readonly number[], refreshMs: number): number[] {
  const long = ttlsMs.filter((ttlMs) => ttlMs >= 2 * refreshMs);
  return long.length > 0 ? long : [2 * refreshMs];
}

/** tokenleaseSettings — every chunk and rate setting of `input`, in row order: by allowance, then chunk (TTL, lease size, report interval), then rate (refresh, TTL). */
export function tokenleaseSettings(input: SettingsInput): (Setting & { readonly ttlMs: number })[] {
  const settings: (Setting & { readonly ttlMs: number })[] = [];
  for (const allowance of input.allowancesTokens) {
    if (input.leaseModes.includes('chunk')) {
      for (const ttlMs of input.ttlsMs) {
        for (const leaseSize of input.leaseSizesTokens)
          for (const reportMs of input.reportsMs) settings.push({ leaseSize, refreshMs: null, ttlMs, allowance, reportMs });
      }
    }
    if (input.leaseModes.includes('rate')) {
      for (const refreshMs of input.refreshesMs)
        for (const ttlMs of rateTtlsMs(input.ttlsMs, refreshMs))
          settings.push({ leaseSize: null, refreshMs, ttlMs, allowance, reportMs: null });
    }
  }
  return settings;
}
