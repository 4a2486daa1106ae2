/**
 * SimCoordinator: one memory-mode coordinator process in the simulator: the
 * real CoordinatorCore and its ticks, on the virtual clock. (A durable
 * process runs the real ownership driver: sim-member.ts.)
 *
 * A crash loses the memory, the held requests and the unsent replies.
 */
import type { CoordinatorConfig, CoordinatorCore, Delivery } from '@tokenlease/coordinator/internal';
import { COORDINATOR_TICK_US_MAX, type Event, type ReplyTo } from './sim-events.js';

/** CoordinatorHost — what a coordinator process needs from the simulation. */
export interface CoordinatorHost {
  push(atUs: number, event: Event): void;
  /** send — puts replies a process of `epoch` produced at `producedUs` on the network now; `perUs`: how many of its own µs the producing process counts per true µs (1 unless it drifts). */
  send(deliveries: readonly Delivery<ReplyTo>[], producedUs: number, epoch: number, perUs?: number): void;
  /** failed — the core threw: a broken invariant. */
  failed(message: string): void;
  /** violation — a check failed; the run goes on. */
  violation(message: string): void;
}

export class SimCoordinator {
  /** Subscribed to the pool: gets requests and ticks. */
  serving = true;
  private tickGen = 0;

  constructor(
    readonly id: number,
    readonly core: CoordinatorCore<ReplyTo>,
    private readonly host: CoordinatorHost,
  ) {}

  receive(to: ReplyTo, subject: string, bytes: Uint8Array, nowUs: number): void {
    this.send(
      this.guard(() => this.core.receive(subject, bytes, to, nowUs)),
      nowUs,
    );
    this.scheduleTick(nowUs);
  }

  /** reload — the core serves `config` from `nowUs` on; replies of requests it held go out. */
  reload(config: CoordinatorConfig, nowUs: number): void {
    if (!this.serving) return;
    this.send(
      this.guard(() => {
        const out: Delivery<ReplyTo>[] = [];
        this.core.reconfigure(config, nowUs, (_pool, held) => out.push(...held));
        return out;
      }),
      nowUs,
    );
    this.scheduleTick(nowUs);
  }

  /** tick — the core's tick, if `gen` is still the scheduled one. */
  tick(gen: number, nowUs: number): void {
    if (gen !== this.tickGen || !this.serving) return;
    this.send(
      this.guard(() => this.core.tick(nowUs)),
      nowUs,
    );
    this.scheduleTick(nowUs);
  }

  scheduleTick(nowUs: number): void {
    if (!this.serving) return;
    this.tickGen += 1;
    const at = Math.min(nowUs + COORDINATOR_TICK_US_MAX, Math.max(nowUs + 1, this.core.nextDeadlineUs()));
    this.host.push(at, { k: 'coordinator-tick', id: this.id, gen: this.tickGen });
  }

  /** crash — the process dies. */
  crash(): void {
    this.serving = false;
  }

  private send(deliveries: Delivery<ReplyTo>[], nowUs: number): void {
    if (deliveries.length > 0) this.host.send(deliveries, nowUs, this.core.epoch);
  }

  private guard(f: () => Delivery<ReplyTo>[]): Delivery<ReplyTo>[] {
    try {
      const out = f();
      // The core contains a pool's fault and serves on; in a simulation any fault is a bug.
      const fault = this.core.takeFaults()[0];
      if (fault !== undefined)
        this.host.failed(`pool ${fault.pool} failed: ${fault.error instanceof Error ? fault.error.message : String(fault.error)}`);
      return out;
    } catch (error) {
      this.host.failed(`coordinator failed: ${error instanceof Error ? error.message : String(error)}`);
      return [];
    }
  }
}
