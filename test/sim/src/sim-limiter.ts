/**
 * SimLimiter: requests reach a simulated agent as through the real Limiter
 * (agent/src/adapters/limiter.ts), and, like it, this file decides nothing:
 * - `tryTake` (an arrival with no wait) asks the agent's slot;
 * - a concurrency pool's arrival `acquire`s a slot of it (the host ends
 *   the hold: a release after the request's service time, or none);
 * - `take` arrives at the agent's real TakeQueue, on the agent's clock; a
 *   take that waits wakes the agent's driver, as Limiter does;
 * - the queue is polled after every action of the keeper (the driver
 *   serves the agent's waiters there) and at its next deadline, for which
 *   one event on the virtual clock stands in for the Limiter's timer;
 * - an agent that stops closes its queue (its waiting takes end unadmitted).
 * It books what became of each request in the run's metrics.
 */
import type { Event } from './sim-events.js';
import type { SimAgent } from './sim-agent.js';
import type { SimMetrics } from './sim-metrics.js';
import type { Arrival } from './workload.js';

/** SimLimiterHost — the simulation as a limiter sees it. */
export interface SimLimiterHost {
  /** True time now, µs. */
  readonly now: () => number;
  readonly push: (atUs: number, event: Event) => void;
  /**
   * Books the costs `agent` admitted now, together, and checks them:
   * `shadowTokens` of them were admitted only because of shadow mode (its
   * slot's would-be denials over the batch; which ones is not told apart).
   */
  readonly admitted: (agent: SimAgent, costs: readonly number[], shadowTokens: number) => void;
  /** Wakes `agent`'s driver: a take waits (Limiter's `host.wake`). */
  readonly wake: (agent: SimAgent) => void;
  /** Whether the pool is a concurrency pool: a request takes a slot (`acquire`) rather than tokens, whether or not it would wait. */
  readonly concurrency: boolean;
  /** A request of `agent` took slot `handle` now (`counted`: from its lease, not by shadow mode); the host ends it. */
  readonly held: (agent: SimAgent, handle: number, counted: boolean) => void;
}

export class SimLimiter {
  constructor(
    private readonly host: SimLimiterHost,
    private readonly m: SimMetrics,
  ) {}

  /** offer — request `a` reaches live `agent` now. */
  offer(agent: SimAgent, a: Arrival): void {
    const nowUs = this.host.now();
    const localUs = agent.localUs(nowUs);
    const slot = agent.keeper.slot;
    const shadowBefore = slot.shadowDeniedTokens;
    if (this.host.concurrency) {
      const handle = slot.acquireAt(localUs);
      if (handle === 0) {
        this.m.deniedCount += 1;
        return;
      }
      const shadowTokens = slot.shadowDeniedTokens - shadowBefore;
      this.host.admitted(agent, [1], shadowTokens);
      this.host.held(agent, handle, shadowTokens === 0);
      return;
    }
    if (a.waitMs === 0) {
      if (slot.takeAt(a.cost, localUs)) this.host.admitted(agent, [a.cost], slot.shadowDeniedTokens - shadowBefore);
      else this.m.deniedCount += 1;
      return;
    }
    const arrival = agent.takes.arrive(a.cost, a.waitMs, { cost: a.cost, arrivedUs: nowUs }, localUs);
    if (arrival.kind === 'waiting') {
      this.arm(agent);
      this.host.wake(agent);
    } else if (arrival.kind === 'admitted') {
      this.host.admitted(agent, [a.cost], slot.shadowDeniedTokens - shadowBefore);
    } else {
      this.m.deniedCount += 1; // refused (never-fits, closed): the Limiter rejects it
    }
  }

  /** poll — the take queue of `agent` admits and times out waiters now. */
  poll(agent: SimAgent): void {
    if (agent.takes.length === 0) return;
    const nowUs = this.host.now();
    const shadowBefore = agent.keeper.slot.shadowDeniedTokens;
    const { admitted, timedOut, refused } = agent.takes.poll(agent.localUs(nowUs));
    for (const take of admitted) this.m.takeWaitsMs.push((nowUs - take.arrivedUs) / 1000);
    if (admitted.length > 0) {
      const costs = admitted.map((take) => take.cost);
      this.host.admitted(agent, costs, agent.keeper.slot.shadowDeniedTokens - shadowBefore);
    }
    this.endWaits(timedOut.length + refused.length);
    this.arm(agent);
  }

  /** deadline — the event `arm` set rang; one superseded by an earlier event finds a later alarm set and does nothing. */
  deadline(agent: SimAgent): void {
    if (this.host.now() < agent.takeAlarmUs) return;
    agent.takeAlarmUs = Infinity;
    this.poll(agent);
  }

  /** close — `agent` stops: its waiting takes end unadmitted, later ones are refused. */
  close(agent: SimAgent): void {
    this.endWaits(agent.takes.close().length);
  }

  /** arm — an event at the take queue's next deadline, unless one as early is pending. */
  private arm(agent: SimAgent): void {
    const deadlineUs = agent.takes.nextDeadlineUs();
    if (deadlineUs === Infinity) return;
    const atUs = Math.max(this.host.now() + 1, agent.trueUs(deadlineUs));
    if (atUs >= agent.takeAlarmUs) return;
    agent.takeAlarmUs = atUs;
    this.host.push(atUs, { k: 'take-deadline', id: agent.id });
  }

  private endWaits(takes: number): void {
    this.m.takeTimeouts += takes;
    this.m.deniedCount += takes;
  }
}
