/**
 * The sliding-window check: over every window [a, a + W) however placed,
 * the fleet admitted at most N tokens (two admissions W or more apart never
 * share a window). Test support only (`@tokenlease/shared/testing`), the
 * judge of window pools at every test level, as `checkEnvelope` is of
 * bucket pools.
 *
 * Exact and linear: instants are whole microseconds, and the admissions of
 * the last W are kept in a queue, so the fullest window ending at each
 * admission is known in O(1) amortized.
 */
import type { Admission } from './envelope.js';

/** FullestWindow — the fullest window found: it starts at the first admission `fromUs` and holds `admittedTokens` up to `toUs`. */
export interface FullestWindow {
  readonly fromUs: number;
  readonly toUs: number;
  readonly admittedTokens: number;
}

/**
 * WindowLog — the admissions of the last W, oldest first: what a sliding
 * window holds now, and when a cost more would fit. The check below keeps
 * one, and so does the sweep's exact per-request sliding-window log.
 */
export class WindowLog {
  private readonly times: number[] = [];
  private readonly costs: number[] = [];
  private head = 0;
  /** Tokens admitted in the window ending at the last `expire`. */
  inWindow = 0;

  constructor(readonly windowUs: number) {}

  /** oldestUs — the first admission still in the window (undefined when none is). */
  get oldestUs(): number | undefined {
    return this.times[this.head];
  }

  /** expire — drops the admissions W or more before `nowUs`. */
  expire(nowUs: number): void {
    while (this.head < this.times.length && (this.times[this.head] as number) <= nowUs - this.windowUs) {
      this.inWindow -= this.costs[this.head] as number;
      this.head += 1;
    }
    if (this.head > 1024 && this.head * 2 > this.times.length) {
      this.times.splice(0, this.head);
      this.costs.splice(0, this.head);
      this.head = 0;
    }
  }

  /** add — `cost` admitted at `tUs` (not before the last one). */
  add(tUs: number, cost: number): void {
    this.times.push(tUs);
    this.costs.push(cost);
    this.inWindow += cost;
  }

  /** readyAtUs — the first instant from `nowUs` (after `expire(nowUs)`) at which `cost` more fits under `limitTokens` (Infinity: never). */
  readyAtUs(cost: number, limitTokens: number, nowUs: number): number {
    let excess = this.inWindow + cost - limitTokens;
    if (excess <= 0) return nowUs;
    for (let i = this.head; i < this.times.length; i += 1) {
      excess -= this.costs[i] as number;
      if (excess <= 0) return (this.times[i] as number) + this.windowUs;
    }
    return Infinity;
  }
}

/** WindowWatch — the check, one admission at a time, in time order; `admit` throws an Error for an admission earlier than the last. */
export class WindowWatch {
  private readonly log: WindowLog;
  private lastUs = -Infinity;
  /** fullest — the window that held the most tokens so far (null before any admission). */
  fullest: FullestWindow | null = null;
  admittedTokens = 0;
  /** violations — admissions that ended a window holding more than N. */
  violations = 0;

  /** WindowWatch — a watch of at most `limitTokens` per window of `windowUs` µs. */
  constructor(
    readonly limitTokens: number,
    readonly windowUs: number,
  ) {
    this.log = new WindowLog(windowUs);
  }

  /** admit — records `cost` tokens admitted at `tUs`; returns how far the window ending here is over N, in tokens (> 0: a violation). */
  admit(tUs: number, cost: number): number {
    if (tUs < this.lastUs) throw new Error(`admissions out of order: ${tUs} µs after ${this.lastUs} µs`);
    this.lastUs = tUs;
    const log = this.log;
    log.expire(tUs);
    log.add(tUs, cost);
    this.admittedTokens += cost;
    if (this.fullest === null || log.inWindow > this.fullest.admittedTokens) {
      this.fullest = { fromUs: log.oldestUs as number, toUs: tUs, admittedTokens: log.inWindow };
    }
    const excess = log.inWindow - this.limitTokens;
    if (excess > 0) this.violations += 1;
    return excess;
  }

  /** ok — whether every window so far held at most N. */
  get ok(): boolean {
    return this.violations === 0;
  }
}

export interface WindowReport {
  readonly admissions: number;
  readonly admittedTokens: number;
  /** The most tokens any window of W held. */
  readonly fullestTokens: number;
  readonly fullest: FullestWindow | null;
  readonly violations: number;
  readonly ok: boolean;
}

/** checkWindows — the check over a whole log of admissions, in any order (sorted by time first, stably). */
export function checkWindows(admissions: readonly Admission[], limitTokens: number, windowUs: number): WindowReport {
  const watch = new WindowWatch(limitTokens, windowUs);
  const sorted = [...admissions].sort((a, b) => a.tUs - b.tUs);
  for (const a of sorted) watch.admit(a.tUs, a.cost);
  return {
    admissions: sorted.length,
    admittedTokens: watch.admittedTokens,
    fullestTokens: watch.fullest?.admittedTokens ?? 0,
    fullest: watch.fullest,
    violations: watch.violations,
    ok: watch.ok,
  };
}
