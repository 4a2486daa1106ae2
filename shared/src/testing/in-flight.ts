/**
 * The in-flight check of concurrency pools: at no instant were more than N
 * requests started and not yet released or timed out. Test support only
 * (`@tokenlease/shared/testing`), the judge of concurrency pools as
 * `checkEnvelope` is of bucket pools and `checkWindows` of window pools.
 *
 * A request holds its slot over `[startUs, min(endUs, startUs + holdUs))`:
 * the agent counts it released at the hold bound D whatever the work does,
 * so a request still running past D no longer counts. Intervals are
 * half-open: a slot released at t and taken again at t is one in flight.
 * Exact: instants are whole microseconds, and the check sorts the ends and
 * starts once, O(n log n).
 */

/**
 * Hold — one request's slot: taken at `startUs`, released at `endUs`
 * (Infinity: never released, so it times out), counted at most `holdUs`
 * (absent: the check's bound; an agent whose clock runs slow holds a little
 * longer in true time, and says so here).
 */
export interface Hold {
  readonly startUs: number;
  readonly endUs: number;
  readonly holdUs?: number;
}

/** InFlightReport — the most requests in flight at once, when first, and whether that stayed within the limit. */
export interface InFlightReport {
  readonly ok: boolean;
  readonly limit: number;
  readonly peak: number;
  /** The first instant the peak was reached, µs (NaN with no holds). */
  readonly peakAtUs: number;
  readonly holds: number;
  /** Σ of every hold's counted length, µs: over a span of time, the mean in flight is this divided by the span. */
  readonly heldUs: number;
}

/**
 * checkInFlight — whether `holds`, each counted at most `holdUs`, ever had
 * more than `limit` in flight at once. Throws on a hold that ends before
 * it starts or an instant that is not a whole number of µs.
 */
export function checkInFlight(holds: Iterable<Hold>, limit: number, holdUs: number): InFlightReport {
  if (!Number.isSafeInteger(holdUs) || holdUs < 1) throw new RangeError(`holdUs must be a positive integer, got ${holdUs}`);
  const starts: number[] = [];
  const stops: number[] = [];
  let heldUs = 0;
  for (const h of holds) {
    if (!Number.isSafeInteger(h.startUs)) throw new RangeError(`a hold's startUs must be whole µs, got ${h.startUs}`);
    if (h.endUs < h.startUs) throw new RangeError(`a hold ends at ${h.endUs} µs, before it starts at ${h.startUs} µs`);
    starts.push(h.startUs);
    const stopUs = Math.min(h.endUs, h.startUs + (h.holdUs ?? holdUs));
    stops.push(stopUs);
    heldUs += stopUs - h.startUs;
  }
  starts.sort((a, b) => a - b);
  stops.sort((a, b) => a - b);
  let inFlight = 0;
  let peak = 0;
  let peakAtUs = Number.NaN;
  let j = 0;
  for (const t of starts) {
    // Half-open: whatever stops at or before t is no longer in flight when t starts.
    while (j < stops.length && (stops[j] as number) <= t) {
      inFlight -= 1;
      j += 1;
    }
    inFlight += 1;
    if (inFlight > peak) {
      peak = inFlight;
      peakAtUs = t;
    }
  }
  return { ok: peak <= limit, limit, peak, peakAtUs, holds: starts.length, heldUs };
}

/**
 * InFlightLog — holds recorded as they happen: `start` returns a ticket,
 * `end` closes it (a second `end`, or one after the hold bound, changes
 * nothing the check sees); `check` judges everything recorded so far, the
 * holds still open counted as running to their bound.
 */
export class InFlightLog {
  private readonly startsUs: number[] = [];
  private readonly endsUs: number[] = [];
  private readonly boundsUs: number[] = [];

  constructor(
    readonly limit: number,
    readonly holdUs: number,
  ) {}

  /** start — a request took a slot at `atUs`, counted at most `holdUs`; the ticket to `end` it with. */
  start(atUs: number, holdUs = this.holdUs): number {
    this.startsUs.push(atUs);
    this.boundsUs.push(holdUs);
    this.endsUs.push(Infinity);
    return this.startsUs.length - 1;
  }

  /** end — the request of `ticket` released its slot at `atUs` (the first end counts). */
  end(ticket: number, atUs: number): void {
    if (this.endsUs[ticket] === Infinity) this.endsUs[ticket] = Math.max(atUs, this.startsUs[ticket] as number);
  }

  get size(): number {
    return this.startsUs.length;
  }

  check(): InFlightReport {
    const holds: Hold[] = this.startsUs.map((startUs, i) => ({
      startUs,
      endUs: this.endsUs[i] as number,
      holdUs: this.boundsUs[i] as number,
    }));
    return checkInFlight(holds, this.limit, this.holdUs);
  }
}
