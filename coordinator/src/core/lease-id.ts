/**
 * The form of the lease ids a lease table issues: `<prefix><row>.<serial>`,
 * row and serial in base 36, the serial at least SERIAL_DIGITS_MIN digits.
 *
 * Rules:
 * - The prefix is the pool's epoch (and restart count), so no two owners of
 *   a pool issue the same id; the serial counts the table's leases, so no
 *   two of its leases share an id; the row is where the table keeps the
 *   lease while it lives, so a renewal finds its lease by one array read
 *   (lease-table.ts, `find`).
 * - Every id issued is longer than 10 characters. V8's JSON.parse interns
 *   string values of up to 10 characters: a lookup in the process's table
 *   of interned strings, which holds every live lease's id and misses the
 *   cache with each request at 100k leases.
 * - `read` accepts only the canonical form of an id (no leading zero in the
 *   row, and in the serial only as padding to SERIAL_DIGITS_MIN digits), so
 *   two ids that read alike are the same string: a lease is named by its
 *   row and serial without reading its id's characters.
 */

/** SERIAL_DIGITS_MIN — the serial's digits at least (zero-padded): with the shortest prefix and row, 12 characters. */
export const SERIAL_DIGITS_MIN = 8;

const DOT = 0x2e;
const DIGIT_0 = 0x30;
const DIGIT_9 = 0x39;
const LOWER_A = 0x61;
const LOWER_Z = 0x7a;

/** leaseIdPrefix — the prefix of the ids a pool's table issues under `epoch` after `restarts` restarts of it in that epoch. */
export function leaseIdPrefix(epoch: number, restarts: number): string {
  return restarts === 0 ? `${epoch.toString(36)}-` : `${epoch.toString(36)}.${restarts.toString(36)}-`;
}

/** LeaseIdForm — issues and reads the ids of one lease table (`prefix`: its pool's epoch, and restart count). */
export class LeaseIdForm {
  /** The row and serial the last successful `read` found. */
  row = -1;
  serial = -1;
  /** The digits `readPart` read last. */
  private part = 0;
  /** The id `read` was given last, and its answer. */
  private lastId: string | null = null;
  private lastRead = false;

  constructor(readonly prefix: string) {}

  /** issue — the id of the lease `serial`, kept in `row`. */
  issue(row: number, serial: number): string {
    return `${this.prefix}${row.toString(36)}.${serial.toString(36).padStart(SERIAL_DIGITS_MIN, '0')}`;
  }

  /**
   * read — whether `leaseId` is an id of this form (this prefix, canonical
   * digits); if so its row and serial are left in `row` and `serial`.
   * Reads the characters in place: no substring, no allocation; the id
   * read last is answered again without reading it (each step of a
   * request that asks of its lease id asks of the same string).
   */
  read(leaseId: string): boolean {
    if (leaseId !== this.lastId) {
      this.lastId = leaseId;
      this.lastRead = this.parse(leaseId);
    }
    return this.lastRead;
  }

  /** parse — `read` without its memory of the last id. */
  private parse(leaseId: string): boolean {
    const prefix = this.prefix;
    if (!leaseId.startsWith(prefix)) return false;
    const dot = this.readPart(leaseId, prefix.length);
    if (dot < 0 || leaseId.charCodeAt(dot) !== DOT) return false;
    if (dot - prefix.length > 1 && leaseId.charCodeAt(prefix.length) === DIGIT_0) return false;
    const row = this.part;
    const end = this.readPart(leaseId, dot + 1);
    const digits = end - dot - 1;
    if (end !== leaseId.length || digits < SERIAL_DIGITS_MIN) return false;
    if (digits > SERIAL_DIGITS_MIN && leaseId.charCodeAt(dot + 1) === DIGIT_0) return false;
    this.row = row;
    this.serial = this.part;
    return true;
  }

  /** readPart — reads base-36 digits of `text` from `start` into `part`; returns where they end (-1: none, or past the safe integers). */
  private readPart(text: string, start: number): number {
    let value = 0;
    let i = start;
    for (; i < text.length; i += 1) {
      const c = text.charCodeAt(i);
      const digit = c >= DIGIT_0 && c <= DIGIT_9 ? c - DIGIT_0 : c >= LOWER_A && c <= LOWER_Z ? c - LOWER_A + 10 : -1;
      if (digit < 0) break;
      value = value * 36 + digit;
      // Past the safe integers no id was issued (nor would one be read exactly).
      if (value > Number.MAX_SAFE_INTEGER) return -1;
    }
    this.part = value;
    return i === start ? -1 : i;
  }
}
