/**
 * Replica shortfall at start: whether some primary has fewer replicas
 * online than `--redis-replicas` asks each write to be confirmed by, and
 * the one warning the coordinator logs if so (every write to that
 * primary's slots would be refused as `unavailable` until enough replicas
 * confirm it).
 *
 * Rules:
 * - Nothing is said when no confirmation is asked (0), or about a primary
 *   that would not say how many replicas it has (INFO refused, as managed
 *   Redis may): silence is not a shortfall.
 * - A replica counts when the primary lists it `state=online` in
 *   `INFO replication`: one still syncing acknowledges no WAIT.
 * - Primaries are named by `host:port` as the client reached them, and by
 *   the slot ranges they serve in a cluster; never by a login.
 * - Pure: the Redis adapter asks the primaries and passes their answers.
 */

/** PrimaryReplicas — what one primary said about its replicas. */
export interface PrimaryReplicas {
  /** `host:port`, as the client reached it. */
  readonly node: string;
  /** The slot ranges it serves (`0-5460,10923`); empty for a single Redis. */
  readonly slots: string;
  /** Replicas online, or null when it would not say. */
  readonly replicas: number | null;
}

/** How many primaries short of replicas one warning names; the rest are counted. */
const NAMED_MAX = 8;

/**
 * onlineReplicas — the replicas `info` (the text of `INFO replication`)
 * lists as online, or null when it is not such a text (no
 * `connected_slaves` field).
 */
export function onlineReplicas(info: string): number | null {
  const lines = info.split(/\r?\n/);
  if (!lines.some((line) => /^connected_slaves:\d+$/.test(line))) return null;
  return lines.filter((line) => /^slave\d+:/.test(line) && /(^|[:,])state=online(,|$)/.test(line)).length;
}

/** slotRanges — the ranges of slots whose first node in `slots` (slot → node keys, primary first) is `node`, as `a-b,c`. */
export function slotRanges(slots: readonly (readonly string[] | undefined)[], node: string): string {
  const ranges: string[] = [];
  let start = -1;
  for (let slot = 0; slot <= slots.length; slot++) {
    const served = slot < slots.length && slots[slot]?.[0] === node;
    if (served && start < 0) start = slot;
    if (!served && start >= 0) {
      ranges.push(start === slot - 1 ? String(start) : `${start}-${slot - 1}`);
      start = -1;
    }
  }
  return ranges.join(',');
}

/**
 * replicaShortfall — the warning to log when some primary has fewer than
 * `required` replicas online, or null when none has (or none is asked).
 */
export function replicaShortfall(required: number, primaries: readonly PrimaryReplicas[]): string | null {
  if (required <= 0) return null;
  const short = primaries.filter((p) => p.replicas !== null && p.replicas < required);
  if (short.length === 0) return null;
  const named = short.slice(0, NAMED_MAX).map((p) => {
    const where = p.slots === '' ? p.node : `${p.node} (slots ${p.slots})`;
    return `${where} has ${p.replicas} online`;
  });
  const more = short.length > NAMED_MAX ? `, and ${short.length - NAMED_MAX} more primaries` : '';
  const them = short.length === 1 ? 'this primary' : 'these primaries';
  return (
    `each write must be confirmed by ${required} ${required === 1 ? 'replica' : 'replicas'} (--redis-replicas ${required}), ` +
    `but ${named.join('; ')}${more}: every write to ${them} will be refused as unavailable, and nothing granted from its pools, ` +
    `until enough replicas confirm it`
  );
}
