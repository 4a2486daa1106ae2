/**
 * Traffic shapes for agents under test and in the demo, driven by a seeded
 * Random so a run can be replayed. Arrivals are Poisson at the shape's
 * current rate; each arrival asks for a cost drawn from [costMin, costMax].
 */
import type { Random } from '@tokenlease/shared/testing';

export type Traffic =
  | { readonly kind: 'steady'; readonly perSecond: number; readonly costMin?: number; readonly costMax?: number }
  | {
      readonly kind: 'bursty';
      readonly perSecond: number;
      readonly onMs: number;
      readonly offMs: number;
      readonly costMin?: number;
      readonly costMax?: number;
    }
  | {
      /** Steady Poisson arrivals at each phase's rate until its `untilMs` (from the start), then the next phase's; none after the last. */
      readonly kind: 'phased';
      readonly phases: readonly { readonly untilMs: number; readonly perSecond: number }[];
      readonly costMin?: number;
      readonly costMax?: number;
    }
  | {
      readonly kind: 'random';
      readonly perSecondMax: number;
      readonly changeEveryMs: number;
      readonly costMin?: number;
      readonly costMax?: number;
    };

/**
 * Arrivals — yields the costs of the requests that arrived up to a given
 * instant. Candidates arrive as a Poisson process at the shape's peak rate;
 * each is kept with probability (rate now / peak rate) (thinning), which
 * gives a Poisson process that follows the shape.
 */
export class Arrivals {
  private nextUs: number;
  private randomRatePerSecond = 0;
  private nextChangeUs: number;
  private readonly peakPerSecond: number;

  constructor(
    private readonly traffic: Traffic,
    private readonly random: Random,
    private readonly startUs: number,
  ) {
    this.peakPerSecond =
      traffic.kind === 'random'
        ? traffic.perSecondMax
        : traffic.kind === 'phased'
          ? Math.max(0, ...traffic.phases.map((p) => p.perSecond))
          : traffic.perSecond;
    this.nextChangeUs = startUs;
    this.nextUs = startUs + this.gapUs();
  }

  /** due — costs of the arrivals at or before `nowUs`, in order. */
  due(nowUs: number): number[] {
    const costs: number[] = [];
    const { costMin = 1, costMax = 1 } = this.traffic;
    while (this.nextUs <= nowUs) {
      if (this.random.next() * this.peakPerSecond < this.rateAt(this.nextUs)) {
        costs.push(this.random.int(costMin, costMax));
      }
      this.nextUs += this.gapUs();
    }
    return costs;
  }

  private gapUs(): number {
    if (this.peakPerSecond <= 0) return Number.MAX_SAFE_INTEGER;
    return Math.max(1, Math.round(this.random.exponential(1e6 / this.peakPerSecond)));
  }

  private rateAt(atUs: number): number {
    const t = this.traffic;
    if (t.kind === 'steady') return t.perSecond;
    if (t.kind === 'bursty') {
      const phaseUs = (atUs - this.startUs) % ((t.onMs + t.offMs) * 1000);
      return phaseUs < t.onMs * 1000 ? t.perSecond : 0;
    }
    if (t.kind === 'phased') return t.phases.find((p) => atUs - this.startUs < p.untilMs * 1000)?.perSecond ?? 0;
    if (atUs >= this.nextChangeUs) {
      this.randomRatePerSecond = this.random.next() * t.perSecondMax;
      this.nextChangeUs = atUs + t.changeEveryMs * 1000;
    }
    return this.randomRatePerSecond;
  }
}
