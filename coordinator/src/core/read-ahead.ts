/**
 * ReadAhead: the next few requests the adapter will hand to `receive`,
 * decoded before the first of them is handled, and the leases they name
 * read into the cache together.
 *
 * At 100k live leases no cache holds a renewal's lease record, its secret,
 * its times or its agent's clock: each read of one waits for memory, and
 * handled one request at a time, each waits behind the one before it
 * (about 0.7 µs a renewal on a 2-vCPU VM, a fifth of the renewal). Read for
 * a batch at once, in stages (every request's row, then every record, then
 * what each record points at), the waits of different requests overlap,
 * and the handling that follows finds the lines in the cache.
 *
 * Rules:
 * - It only reads. Nothing a reply says is decided here: each request is
 *   handled by `receive` in its turn, against the state as the requests
 *   before it left it, exactly as without reading ahead.
 * - A decode is kept for `receive` to take by its payload (the same bytes
 *   object, handed back unchanged), so a request read ahead is decoded once.
 *   A payload not read ahead, or whose decode was already taken, is
 *   decoded as before. Each batch replaces the last: at most
 *   READ_AHEAD_MAX decodes are kept.
 * - Work is O(1) per request: one decode, a pool by name, one row of its
 *   lease table, and a fixed set of fields.
 */
import { decodeRequest, type Decoded, type Request } from '@tokenlease/shared';
import type { LeaseRecord, LeaseTable } from './lease-table.js';

/**
 * READ_AHEAD_MAX — requests read ahead at once. A batch's records and what
 * they point at (a few lines each) must still be in the cache when the last
 * of them is handled; 16 to 64 gained alike at 100k leases, 128 less.
 */
export const READ_AHEAD_MAX = 32;

export class ReadAhead {
  private readonly payloads: (Uint8Array | null)[] = new Array<Uint8Array | null>(READ_AHEAD_MAX).fill(null);
  private readonly decodes: (Decoded<Request> | null)[] = new Array<Decoded<Request> | null>(READ_AHEAD_MAX).fill(null);
  private readonly records: (LeaseRecord | null)[] = new Array<LeaseRecord | null>(READ_AHEAD_MAX).fill(null);
  private kept = 0;
  /** The next decode `take` looks at first (requests are handled in the order read). */
  private next = 0;
  /**
   * The sum of the values the last batch read. It means nothing, but as a
   * field anyone may read, the compiler must keep the reads it sums.
   */
  lastSum = 0;
  /** Leases the last batch read (found in the row their ids name). */
  leasesRead = 0;

  /**
   * read — decodes `payloads` (the first READ_AHEAD_MAX of them), keeps the
   * decodes for `take`, and reads what the leases their requests name
   * hold; `leasesOf` gives a pool's lease table by name (undefined: no such
   * pool held).
   */
  read(payloads: readonly Uint8Array[], leasesOf: (pool: string) => LeaseTable | undefined): void {
    this.forget();
    const count = Math.min(payloads.length, READ_AHEAD_MAX);
    let found = 0;
    // Stage 1: decode, and each lease's row (the table's array of rows is small enough to stay cached).
    for (let i = 0; i < count; i += 1) {
      const payload = payloads[i] as Uint8Array;
      const decoded = decodeRequest(payload);
      this.payloads[i] = payload;
      this.decodes[i] = decoded;
      if (!decoded.ok) continue;
      const req = decoded.value;
      if (req.op !== 'acquire' && req.op !== 'return' && req.op !== 'report') continue;
      const record = leasesOf(req.pool)?.rowOf(req.leaseId);
      if (record !== undefined) this.records[found++] = record;
    }
    this.kept = count;
    let sink = 0;
    // Stage 2: the records themselves.
    for (let i = 0; i < found; i += 1) {
      const record = this.records[i] as LeaseRecord;
      sink += record.secret.length + record.agentId.length + record.lastSeq + (record.clock === null ? 0 : 1);
    }
    // Stage 3: what they point at: the strings' characters, the times (each a number object of its own once past 2^31 µs of host uptime), the clock.
    for (let i = 0; i < found; i += 1) {
      const record = this.records[i] as LeaseRecord;
      sink +=
        record.secret.charCodeAt(0) + record.agentId.charCodeAt(0) + record.expiresAtUs + record.grantedUntilUs + record.accrualFromUs;
      if (record.clock !== null) sink += record.clock.lastAcquireUs + record.clock.secret.length;
    }
    // Stage 4: the clock's own times.
    for (let i = 0; i < found; i += 1) {
      const clock = (this.records[i] as LeaseRecord).clock;
      if (clock !== null)
        sink += clock.askedUs + clock.placedUs + clock.firstAgentUs + clock.firstCoordUs + clock.lowAgentUs + clock.lowCoordUs;
      this.records[i] = null;
    }
    this.lastSum = sink;
    this.leasesRead = found;
  }

  /** take — the decode of `payload` if it was read ahead and not taken yet (it is then forgotten), else null. */
  take(payload: Uint8Array): Decoded<Request> | null {
    for (let i = this.next; i < this.kept; i += 1) {
      if (this.payloads[i] !== payload) continue;
      const decoded = this.decodes[i] as Decoded<Request>;
      this.payloads[i] = null;
      this.decodes[i] = null;
      this.next = i + 1;
      return decoded;
    }
    return null;
  }

  /** forget — drops every decode kept. */
  forget(): void {
    for (let i = 0; i < this.kept; i += 1) {
      this.payloads[i] = null;
      this.decodes[i] = null;
    }
    this.kept = 0;
    this.next = 0;
  }
}
