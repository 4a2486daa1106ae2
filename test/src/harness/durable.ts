/**
 * Durable-mode evidence for tests: what durable coordinators logged (pino
 * JSON lines: ownership events, grants at debug level) and what Redis
 * accepted (its append-only file, replayed in order).
 *
 * Why the append-only file: a fenced write that Redis refuses changes
 * nothing, so it is not in the file; a write Redis accepts is, in the order
 * Redis applied it, together with the claims (`HSET owner`) and the lapses
 * (`DEL owner`, which Redis logs when a record expires). Replaying it tells,
 * for every lease record ever written, which epoch owned the pool at that
 * moment: the store's own account of fencing, with no clock involved. It
 * needs a private Redis (`startPrivateRedis`, `appendonly yes`) whose file
 * was not rewritten during the test.
 */
import { appendFileSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { createConnection } from 'node:net';
import { join } from 'node:path';
import type { Child } from './processes.js';

/** LogRecord — one parsed JSON log line of a child and its index in `child.lines`. */
export interface LogRecord {
  readonly index: number;
  readonly msg: string;
  readonly fields: Readonly<Record<string, unknown>>;
}

/** logRecords — the JSON lines `child` wrote to stdout so far (other lines are skipped). */
export function logRecords(child: Child): LogRecord[] {
  const records: LogRecord[] = [];
  child.lines.forEach((line, index) => {
    const record = parseLogLine(line, index);
    if (record !== null) records.push(record);
  });
  return records;
}

function parseLogLine(line: string, index: number): LogRecord | null {
  if (!line.startsWith('{')) return null;
  try {
    const fields = JSON.parse(line) as Record<string, unknown>;
    return typeof fields['msg'] === 'string' ? { index, msg: fields['msg'], fields } : null;
  } catch {
    return null;
  }
}

/** keepLog — copies `child`'s stdout, past and future lines, to the file `path` (to read after a failure). */
export function keepLog(child: Child, path: string): void {
  writeFileSync(path, child.lines.map((line) => `${line}\n`).join(''));
  child.onLine((line) => appendFileSync(path, `${line}\n`));
}

/** OwnershipEvent — a coordinator's word on one pool: it owns it, handed it over, or stepped down. */
export interface OwnershipEvent {
  readonly index: number;
  readonly kind: 'owned' | 'handed-over' | 'stepped-down';
  readonly epoch: number;
  /** The whole line: "pool owned" tells what the owner took over (`leases`, `levelTokens`, `leasedTokens`). */
  readonly fields: Readonly<Record<string, unknown>>;
}

const OWNERSHIP_KINDS: Readonly<Record<string, OwnershipEvent['kind']>> = {
  'pool owned': 'owned',
  'pool handed over': 'handed-over',
  'stepped down': 'stepped-down',
};

/** ownershipEvents — `child`'s ownership events for `pool`, in log order. */
export function ownershipEvents(child: Child, pool: string): OwnershipEvent[] {
  return logRecords(child).flatMap((r) => {
    const kind = OWNERSHIP_KINDS[r.msg];
    return kind === undefined || r.fields['pool'] !== pool ? [] : [{ index: r.index, kind, epoch: Number(r.fields['epoch']), fields: r.fields }];
  });
}

/** isRunning — the process has not exited (a stopped process still counts). */
export function isRunning(child: Child): boolean {
  return child.proc.exitCode === null && child.proc.signalCode === null;
}

/** currentOwner — the running coordinator whose last word on `pool` was "pool owned", with that epoch (highest epoch if several claim it). */
export function currentOwner(children: readonly Child[], pool: string): { readonly child: Child; readonly epoch: number } | undefined {
  let best: { child: Child; epoch: number } | undefined;
  for (const child of children) {
    if (!isRunning(child)) continue;
    const last = ownershipEvents(child, pool).at(-1);
    if (last?.kind === 'owned' && (best === undefined || last.epoch > best.epoch)) best = { child, epoch: last.epoch };
  }
  return best;
}

/** waitForOwned — the first "pool owned" line of `child` for `pool` with an epoch above `aboveEpoch` (past or future). */
export async function waitForOwned(child: Child, pool: string, aboveEpoch: number, timeoutMs: number): Promise<OwnershipEvent> {
  const test = (line: string): boolean => {
    const r = parseLogLine(line, 0);
    return r !== null && r.msg === 'pool owned' && r.fields['pool'] === pool && Number(r.fields['epoch']) > aboveEpoch;
  };
  await child.waitForLine(test, timeoutMs);
  const event = ownershipEvents(child, pool).find((e) => e.kind === 'owned' && e.epoch > aboveEpoch);
  if (event === undefined) throw new Error(`${child.name}: matched a "pool owned" line that is no longer in its log`);
  return event;
}

/** GrantLine — a debug "grant" line: a reply the coordinator sent, at host monotonic `tUs`. */
export interface GrantLine {
  readonly index: number;
  readonly leaseId: string;
  readonly seq: number;
  readonly epoch: number;
  readonly tokensGranted: number;
  readonly tUs: number;
}

/** grantLines — every grant `child` logged (needs `--log-level debug`), repeats of a retried reply included. */
export function grantLines(child: Child): GrantLine[] {
  return logRecords(child).flatMap((r) =>
    r.msg !== 'grant'
      ? []
      : [{ index: r.index, leaseId: String(r.fields['leaseId']), seq: Number(r.fields['seq']), epoch: Number(r.fields['epoch']), tokensGranted: Number(r.fields['tokensGranted']), tUs: Number(r.fields['tUs']) }],
  );
}

/** procState — the scheduler state letter of `pid` from /proc (`T`: stopped), or null when unknown. */
export function procState(pid: number): string | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) || null;
  } catch {
    return null;
  }
}

/** waitForProcState — polls until `test(procState(pid))`; false after `timeoutMs`. */
export async function waitForProcState(pid: number, test: (state: string | null) => boolean, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (test(procState(pid))) return true;
    if (Date.now() > deadline) return false;
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

type Resp = string | number | null | Resp[] | Error;

/** parseResp — one RESP value of `buf` from `at`, or null when `buf` ends first. */
function parseResp(buf: Buffer, at: number): { value: Resp; next: number } | null {
  const eol = buf.indexOf('\r\n', at);
  if (eol < 0) return null;
  const head = buf.toString('latin1', at + 1, eol);
  const type = String.fromCharCode(buf[at] ?? 0);
  if (type === '+') return { value: head, next: eol + 2 };
  if (type === '-') return { value: new Error(head), next: eol + 2 };
  if (type === ':') return { value: Number(head), next: eol + 2 };
  const n = Number(head);
  if (type === '$') {
    if (n < 0) return { value: null, next: eol + 2 };
    if (buf.length < eol + 2 + n + 2) return null;
    return { value: buf.toString('utf8', eol + 2, eol + 2 + n), next: eol + 2 + n + 2 };
  }
  if (type === '*') {
    const items: Resp[] = [];
    let next = eol + 2;
    for (let i = 0; i < n; i += 1) {
      const item = parseResp(buf, next);
      if (item === null) return null;
      items.push(item.value);
      next = item.next;
    }
    return { value: n < 0 ? null : items, next };
  }
  throw new Error(`not RESP at byte ${at}: ${JSON.stringify(buf.toString('latin1', at, at + 40))}`);
}

/** redisCommand — sends one command to the Redis at `url` (no auth) on a fresh connection and returns the reply. */
export function redisCommand(url: string, args: readonly string[]): Promise<Resp> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = createConnection({ host: hostname, port: Number(port || 6379) });
    let buf = Buffer.alloc(0);
    socket.setTimeout(2000, () => socket.destroy(new Error(`Redis at ${url} did not answer ${args[0]}`)));
    socket.once('error', reject);
    socket.on('data', (chunk: Buffer) => {
      buf = Buffer.concat([buf, chunk]);
      const reply = parseResp(buf, 0);
      if (reply === null) return;
      socket.end();
      if (reply.value instanceof Error) reject(reply.value);
      else resolve(reply.value);
    });
    socket.write(`*${args.length}\r\n${args.map((a) => `$${Buffer.byteLength(a)}\r\n${a}\r\n`).join('')}`);
  });
}

async function configGet(url: string, name: string): Promise<string> {
  const reply = await redisCommand(url, ['CONFIG', 'GET', name]);
  const value = Array.isArray(reply) ? reply[1] : undefined;
  if (typeof value !== 'string') throw new Error(`CONFIG GET ${name}: unexpected reply ${JSON.stringify(reply)}`);
  return value;
}

/**
 * readAppendOnlyCommands — every command in the append-only file of the
 * (private, Redis 7) server at `url`, in the order Redis applied them.
 * Throws unless the file holds the whole history (no rewrite happened).
 */
export async function readAppendOnlyCommands(url: string): Promise<string[][]> {
  const dir = join(await configGet(url, 'dir'), await configGet(url, 'appenddirname'));
  const manifestPath = join(dir, `${await configGet(url, 'appendfilename')}.manifest`);
  if (!existsSync(manifestPath)) throw new Error(`no append-only manifest at ${manifestPath}: is appendonly on (Redis 7)?`);
  const files = readFileSync(manifestPath, 'utf8')
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => {
      const [, name, , seq, , type] = line.trim().split(/\s+/);
      return { name: name ?? '', seq: Number(seq), type: type ?? '' };
    });
  if (files.some((f) => f.type === 'b' && f.seq !== 1)) throw new Error(`the append-only file was rewritten (${manifestPath}): the write history is incomplete`);
  const commands: string[][] = [];
  for (const file of files.filter((f) => f.type === 'i')) {
    const buf = readFileSync(join(dir, file.name));
    let at = 0;
    while (at < buf.length) {
      const item = parseResp(buf, at);
      if (item === null) throw new Error(`${file.name}: truncated at byte ${at}`);
      if (!Array.isArray(item.value)) throw new Error(`${file.name}: a command that is not an array at byte ${at}`);
      commands.push(item.value.map(String));
      at = item.next;
    }
  }
  return commands;
}

/** StoredGrant — a lease record Redis accepted, with the grant it carried and who owned the pool then. */
export interface StoredGrant {
  /** Index of the command in the append-only file: the order Redis applied it in. */
  readonly position: number;
  readonly agentId: string;
  readonly leaseId: string;
  readonly lastSeq: number;
  /** The grant kept as the lease's last reply; null while its request was held. */
  readonly grant: { readonly seq: number; readonly epoch: number; readonly tokensGranted: number } | null;
  /** The pool's owner record when Redis applied the write; null when there was none. */
  readonly owner: { readonly member: string; readonly epoch: number } | null;
}

/** StoredClaim — an owner record Redis accepted, and the pool's state as the claiming member read it. */
export interface StoredClaim {
  readonly position: number;
  readonly member: string;
  readonly epoch: number;
  /** Lease records kept at the claim, the sum of their bounds, and the kept level (null: no record of the pool). */
  readonly leases: number;
  readonly leasedTokens: number;
  readonly levelTokens: number | null;
}

/** StoreHistory — a pool's ownership changes and lease writes as Redis applied them. */
export interface StoreHistory {
  readonly claims: readonly StoredClaim[];
  readonly writes: readonly StoredGrant[];
}

/** storeHistory — replays `commands` for `pool` under the key prefix `keyPrefix` (see redis-store.ts for the layout). */
export function storeHistory(commands: readonly string[][], keyPrefix: string, pool: string): StoreHistory {
  const ownerKey = `${keyPrefix}:{${pool}}:owner`;
  const levelKey = `${keyPrefix}:{${pool}}:level`;
  const leasesKey = `${keyPrefix}:{${pool}}:leases`;
  let owner: { member: string; epoch: number } | null = null;
  let levelTokens: number | null = null;
  const bounds = new Map<string, number>();
  const claims: StoredClaim[] = [];
  const writes: StoredGrant[] = [];
  commands.forEach((command, position) => {
    const name = (command[0] ?? '').toUpperCase();
    const [key, ...rest] = command.slice(1);
    if (name === 'DEL' || name === 'UNLINK') {
      const keys = command.slice(1);
      if (keys.includes(ownerKey)) owner = null;
      if (keys.includes(levelKey)) levelTokens = null;
      if (keys.includes(leasesKey)) bounds.clear();
    } else if (name === 'SET' && key === levelKey) {
      levelTokens = Number(rest[0]);
    } else if (name === 'HDEL' && key === leasesKey) {
      for (const agentId of rest) bounds.delete(agentId);
    } else if ((name === 'HSET' || name === 'HMSET') && (key === ownerKey || key === leasesKey)) {
      const pairs: Array<[string, string]> = [];
      for (let i = 0; i + 1 < rest.length; i += 2) pairs.push([rest[i] as string, rest[i + 1] as string]);
      if (key === ownerKey) {
        const fields = new Map(pairs);
        owner = { member: fields.get('member') ?? owner?.member ?? '', epoch: Number(fields.get('epoch') ?? owner?.epoch) };
        const leasedTokens = [...bounds.values()].reduce((sum, b) => sum + b, 0);
        claims.push({ position, ...owner, leases: bounds.size, leasedTokens, levelTokens });
      } else {
        for (const [agentId, json] of pairs) {
          const lease = decodeLease(json);
          bounds.set(agentId, lease.boundTokens);
          writes.push({ position, agentId, leaseId: lease.leaseId, lastSeq: lease.lastSeq, grant: lease.grant, owner });
        }
      }
    }
  });
  return { claims, writes };
}

function decodeLease(json: string): Pick<StoredGrant, 'leaseId' | 'lastSeq' | 'grant'> & { readonly boundTokens: number } {
  const lease = JSON.parse(json) as { leaseId: string; boundTokens: number; lastSeq: number; lastReply: string | null };
  const reply = lease.lastReply === null ? null : (JSON.parse(lease.lastReply) as { kind: string; seq: number; epoch: number; tokensGranted: number });
  const grant = reply === null || reply.kind !== 'grant' ? null : { seq: reply.seq, epoch: reply.epoch, tokensGranted: reply.tokensGranted };
  return { leaseId: lease.leaseId, boundTokens: lease.boundTokens, lastSeq: lease.lastSeq, grant };
}

/**
 * unfencedWrites — accepted writes that stored a grant for the first time
 * while the owner record named another epoch than the grant's: a write that
 * fencing should have refused. Empty when fencing held.
 */
export function unfencedWrites(history: StoreHistory): StoredGrant[] {
  const seen = new Set<string>();
  return history.writes.filter((w) => {
    if (w.grant === null) return false;
    const key = `${w.leaseId}#${w.grant.seq}#${w.grant.epoch}`;
    if (seen.has(key)) return false;
    seen.add(key);
    return w.owner?.epoch !== w.grant.epoch;
  });
}

/**
 * unwrittenGrants — grants that were sent (logged) although the store never
 * accepted the state behind them: no write of their lease at their sequence
 * number or later while their epoch owned the pool. A grant of tokens needs
 * exactly that; a grant of none (a renewal, or the reply a new owner makes
 * up for a request the store recorded as held) needs such a write under its
 * epoch or an earlier one. A grant listed here left before its state was
 * stored, or came from a deposed owner. Empty when write-before-reply held.
 */
export function unwrittenGrants(grants: readonly GrantLine[], history: StoreHistory): GrantLine[] {
  const written = new Map<string, Array<{ epoch: number; lastSeq: number }>>();
  for (const w of history.writes) {
    if (w.owner === null) continue;
    const list = written.get(w.leaseId) ?? [];
    list.push({ epoch: w.owner.epoch, lastSeq: w.lastSeq });
    written.set(w.leaseId, list);
  }
  return grants.filter((g) => {
    const writes = written.get(g.leaseId) ?? [];
    return !writes.some((w) => w.lastSeq >= g.seq && (g.tokensGranted > 0 ? w.epoch === g.epoch : w.epoch <= g.epoch));
  });
}
