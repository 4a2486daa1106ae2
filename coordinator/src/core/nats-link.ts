/**
 * NatsLink: whether the NATS connection is up, as its own events last said
 * (adapters/operations.ts feeds it the bus's events and tells the metrics,
 * `/readyz` and the status page what it says).
 *
 * Rules:
 * - It starts up: a service starts on a bus that connected.
 * - `disconnect` puts it down and `reconnect` up; any other event (an
 *   error) leaves it as it was. A second `disconnect` (or `reconnect`)
 *   changes nothing.
 * - It says nothing of the server's answers: `/readyz` also asks the
 *   server for a flush, while the link is up (readiness.ts).
 */

export class NatsLink {
  private upNow = true;

  /** up — whether the last connection event left the connection up (true before any). */
  get up(): boolean {
    return this.upNow;
  }

  /** event — the connection said `type` (`disconnect`, `reconnect`, `error`, …); returns `up` after it. */
  event(type: string): boolean {
    if (type === 'disconnect') this.upNow = false;
    else if (type === 'reconnect') this.upNow = true;
    return this.upNow;
  }
}
