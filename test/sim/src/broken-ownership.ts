/**
 * Ownership drivers broken on purpose, to prove the simulator's checks can
 * fail: each overrides one decision point of the real OwnershipDriver
 * (coordinator/src/core/ownership-driver.ts) and nothing else.
 *
 * - `reply-before-write`: a pool's replies leave as the core makes them,
 *   before the write behind them lands (the lane still writes them).
 * - `stale-lane-acts`: the outcome of a write of an ended ownership lands on
 *   the lane of the one held now, which sends what that write did not cover
 *   (or asks the new ownership to step down).
 * - `claim-before-settle`: an ownership the store no longer renews is
 *   claimed again at once, without stepping it down first: the new claim
 *   does not wait for the old ownership's write in flight to settle, and
 *   that lane, never ended, sends what piled up behind it once its write
 *   lands, with nothing of it written.
 * - `catch-all-serves-configured`: the catch-all takes a configured pool it
 *   does not own for one of its own: it claims it on a request, as it would
 *   a template pool, and serves it, whichever member is preferred for it.
 */
import { OwnershipDriver, type Delivery, type Held, type OwnershipDriverOptions } from '@tokenlease/coordinator/internal';
import type { Broken } from './sim-config.js';
import type { ReplyTo } from './sim-events.js';

class ReplyBeforeWrite extends OwnershipDriver<ReplyTo> {
  protected override submit(pool: string, deliveries: Delivery<ReplyTo>[]): void {
    const held = this.heldOf(pool);
    if (held !== undefined) this.send(deliveries.splice(0), { pool }, undefined, held.epoch);
    super.submit(pool, deliveries);
  }
}

class StaleLaneActs extends OwnershipDriver<ReplyTo> {
  protected override landsOn(pool: string, held: Held<ReplyTo>): Held<ReplyTo> {
    return this.heldOf(pool) ?? held;
  }
}

class ClaimBeforeSettle extends OwnershipDriver<ReplyTo> {
  protected override lapsed(unit: string, _held: Held<ReplyTo>, _reason: string, then: () => void): void {
    this.claim(unit, then, () => then());
  }
}

class CatchAllServesConfigured extends OwnershipDriver<ReplyTo> {
  protected override route(pool: string | null, subject: string): ReturnType<OwnershipDriver<ReplyTo>['route']> {
    const route = super.route(pool, subject);
    if (route !== 'ignore' || pool === null) return route;
    return this.core.pool(pool) === undefined ? 'claim' : 'serve';
  }
}

/** ownershipDriver — the driver a simulated coordinator runs: the real one, or one broken as `broken` says. */
export function ownershipDriver(options: OwnershipDriverOptions, broken: Broken | undefined): OwnershipDriver<ReplyTo> {
  switch (broken) {
    case 'reply-before-write':
      return new ReplyBeforeWrite(options);
    case 'stale-lane-acts':
      return new StaleLaneActs(options);
    case 'claim-before-settle':
      return new ClaimBeforeSettle(options);
    case 'catch-all-serves-configured':
      return new CatchAllServesConfigured(options);
    default:
      return new OwnershipDriver<ReplyTo>(options);
  }
}
