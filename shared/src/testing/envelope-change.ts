/**
 * The envelope across a configuration change (the coordinator's promise
 * when a pool's limits change without a restart, coordinator/src/core/
 * pool-reconfigure.ts). With the change applied at t₀, the old envelope
 * (B₁ + r₁·T) and the new one (B₂ + r₂·T), and the old lease TTL:
 *
 * - every window that ends by t₀ keeps the old envelope;
 * - every window that starts at or after t₀ + TTL₁ keeps the new one;
 * - every other window (it spans the change or its settling) keeps
 *   max(B₁, B₂) + max(r₁, r₂)·T.
 *
 * Each is checked exactly with `checkEnvelope` over the admissions that can
 * bound such windows; the third is checked over all of them, which also
 * covers the first two classes with the wider envelope. B is whatever
 * bound the caller promises (capacity + allowance for a pool with one).
 */
import type { Rate } from '../core/rate.js';
import { checkEnvelope, type Admission, type EnvelopeReport } from './envelope.js';

/** Regime — an envelope: its bound B (tokens) and its refill rate. */
export interface Regime {
  readonly boundTokens: number;
  readonly rate: Rate;
}

/** ChangeReport — the three checks, and whether all held. */
export interface ChangeReport {
  readonly before: EnvelopeReport;
  readonly after: EnvelopeReport;
  readonly spanning: EnvelopeReport;
  readonly ok: boolean;
}

/** fasterRate — the larger of two rates, compared exactly (tokens per ms cross-multiplied). */
export function fasterRate(a: Rate, b: Rate): Rate {
  return BigInt(a.tokens) * BigInt(b.periodMs) >= BigInt(b.tokens) * BigInt(a.periodMs) ? a : b;
}

/**
 * checkAcrossChange — the three classes of windows of `admissions` around
 * a change applied at `changeAtUs` from `before` to `after`, where leases
 * of the old configuration last at most `settleUs` (its TTL) after it.
 */
export function checkAcrossChange(
  admissions: readonly Admission[],
  changeAtUs: number,
  settleUs: number,
  before: Regime,
  after: Regime,
): ChangeReport {
  const early = admissions.filter((a) => a.tUs <= changeAtUs);
  const late = admissions.filter((a) => a.tUs >= changeAtUs + settleUs);
  const beforeReport = checkEnvelope(early, before.boundTokens, before.rate);
  const afterReport = checkEnvelope(late, after.boundTokens, after.rate);
  const spanning = checkEnvelope(admissions, Math.max(before.boundTokens, after.boundTokens), fasterRate(before.rate, after.rate));
  return { before: beforeReport, after: afterReport, spanning, ok: beforeReport.ok && afterReport.ok && spanning.ok };
}
