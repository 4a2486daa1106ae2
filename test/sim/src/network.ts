/**
 * Network model between agents and the coordinator: each message is
 * delayed (a fixed half of the mean latency plus an exponential rest, so
 * messages overtake each other), may be lost, may arrive twice, and never
 * crosses a partition (checked at send and at arrival).
 */
import type { Random } from '@tokenlease/shared/testing';

export interface NetworkSpec {
  /** Mean one-way delay, µs. */
  readonly latencyUs: number;
  readonly lossRate: number;
  readonly duplicateRate: number;
}

export interface Partition {
  readonly agents: readonly number[];
  readonly fromUs: number;
  readonly toUs: number;
}

export const CALM_NETWORK: NetworkSpec = { latencyUs: 1000, lossRate: 0, duplicateRate: 0 };

export class Network {
  constructor(
    private readonly spec: NetworkSpec,
    private readonly partitions: readonly Partition[],
    private readonly random: Random,
  ) {}

  /** cut — whether agent slot `agent` is partitioned from the coordinator at `tUs`. */
  cut(agent: number, tUs: number): boolean {
    return this.partitions.some((p) => tUs >= p.fromUs && tUs < p.toUs && p.agents.includes(agent));
  }

  /** arrivals — when the copies of a message sent at `sentUs` to or from `agent` arrive (none if lost). */
  arrivals(agent: number, sentUs: number): number[] {
    if (this.cut(agent, sentUs) || this.random.next() < this.spec.lossRate) return [];
    const copies = this.random.next() < this.spec.duplicateRate ? 2 : 1;
    const times: number[] = [];
    for (let i = 0; i < copies; i += 1) {
      const half = this.spec.latencyUs / 2;
      const at = sentUs + Math.max(1, Math.round(half + this.random.exponential(half)));
      if (!this.cut(agent, at)) times.push(at);
    }
    return times;
  }
}
