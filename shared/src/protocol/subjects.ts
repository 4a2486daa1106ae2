/**
 * Subjects of protocol v2: `<prefix>.v2.<op>.<pool>.<identity>`.
 *
 * A pool name and an identity are each one NATS subject token: 1 to
 * POOL_NAME_LENGTH_MAX printable ASCII characters other than `.`, `*` and
 * `>`. So no name can address a wildcard or another pool's subject. The
 * prefix is one or more such tokens joined by dots.
 *
 * The identity token is the sender's, as the bus vouches for it: NATS
 * permissions let each user publish only under its own identity, so a
 * coordinator that binds identities (`bindIdentity`) knows who sent a
 * request. Without such permissions it is whatever the sender wrote
 * (ANONYMOUS_IDENTITY by default).
 */
import { TokenleaseError } from '../errors.js';

/** PROTOCOL_VERSION — the protocol this package speaks: the `v2` of every subject, the `v` of every message. */
export const PROTOCOL_VERSION = 2;
/** ANONYMOUS_IDENTITY — the identity token of a sender that names none. */
export const ANONYMOUS_IDENTITY = 'anon';
/** POOL_NAME_LENGTH_MAX — the longest pool name or identity token, characters. */
export const POOL_NAME_LENGTH_MAX = 128;
/** DEFAULT_SUBJECT_PREFIX — the subject prefix when none is configured. */
export const DEFAULT_SUBJECT_PREFIX = 'tokenlease';
/** COORDINATOR_QUEUE_GROUP — the queue group coordinators serve requests in, so that one of them gets each (durable mode: configured pools'). */
export const COORDINATOR_QUEUE_GROUP = 'tokenlease-coordinators';

/**
 * ownerQueueGroup — the queue group a durable coordinator serves a pool it
 * owns under `epoch` in: one of its own (`tokenlease-owner.<epoch>`), so
 * that should two members be subscribed at once (a deposed or cut-off one
 * whose subscription NATS keeps), each gets every request rather than half
 * of them going only to the one that cannot answer.
 */
export function ownerQueueGroup(epoch: number): string {
  return `tokenlease-owner.${epoch}`;
}

/** Op — a request's operation; `pools` and `reload` are operators' (operator.ts), on the pool token `_`. */
export type Op = 'acquire' | 'return' | 'report' | 'status' | 'pools' | 'reload';
const OPS: ReadonlySet<string> = new Set<Op>(['acquire', 'return', 'report', 'status', 'pools', 'reload']);

/** operatorSubject — the subject of the operator op `op` under `identity` (its pool token is `_`). */
export function operatorSubject(prefix: string, op: 'pools' | 'reload', identity: string = ANONYMOUS_IDENTITY): string {
  return subjectFor(prefix, op, '_', identity);
}

/** operatorServiceSubject — what every coordinator subscribes to, each on its own, for the operator op `op`. */
export function operatorServiceSubject(prefix: string, op: 'pools' | 'reload'): string {
  return `${prefix}.v${PROTOCOL_VERSION}.${op}._.*`;
}

/** isOperatorOp — whether `op` is an operator op (answered by every coordinator on its own subscription, not by the pool's owner). */
export function isOperatorOp(op: Op): op is 'pools' | 'reload' {
  return op === 'pools' || op === 'reload';
}

/**
 * isOperatorSubject — whether `subject` is one of the operator subscriptions'
 * (operatorServiceSubject): a v2 subject under `prefix` of an operator op on
 * the pool token `_`. An operator op on any other pool token is not: no
 * operator subscription receives it, so the service that does must answer
 * it (with a refusal) rather than leave it to time out.
 */
export function isOperatorSubject(prefix: string, subject: string): boolean {
  // Asked of every request as it is taken in, before its turn: one whose pool token is not `_` is answered without a parse.
  if (!subject.includes('._.')) return false;
  const parts = parseSubject(prefix, subject);
  return parts !== null && isOperatorOp(parts.op) && parts.pool === '_';
}

/** poolNameProblem — why `name` is not a valid pool name, or null when it is. */
export function poolNameProblem(name: unknown): string | null {
  if (typeof name !== 'string') return 'must be a string';
  if (name.length < 1 || name.length > POOL_NAME_LENGTH_MAX) {
    return `must be 1 to ${POOL_NAME_LENGTH_MAX} characters long`;
  }
  for (let i = 0; i < name.length; i += 1) {
    const c = name.charCodeAt(i);
    if (c <= 0x20 || c >= 0x7f) return 'may hold only printable ASCII without spaces';
    if (c === 0x2e || c === 0x2a || c === 0x3e) return "may not contain '.', '*' or '>'";
  }
  return null;
}

/** assertPoolName — throws `TokenleaseError('invalid-pool-name')` for a name `poolNameProblem` rejects. */
export function assertPoolName(name: string): void {
  const problem = poolNameProblem(name);
  if (problem !== null) {
    throw new TokenleaseError('invalid-pool-name', `pool name ${JSON.stringify(name)} ${problem}`, { pool: name });
  }
}

/** assertSubjectPrefix — each dot-separated token of `prefix` must be a valid subject token. */
export function assertSubjectPrefix(prefix: string): void {
  const bad = prefix.split('.').some((token) => poolNameProblem(token) !== null);
  if (bad) {
    throw new TokenleaseError('invalid-subject', `subject prefix ${JSON.stringify(prefix)} is not dot-joined subject tokens`);
  }
}

/** assertIdentity — throws `TokenleaseError('invalid-identity')` unless `identity` is one subject token. */
export function assertIdentity(identity: string): void {
  const problem = poolNameProblem(identity);
  if (problem !== null) throw new TokenleaseError('invalid-identity', `identity ${JSON.stringify(identity)} ${problem}`);
}

/** subjectFor — the subject of `op` on `pool` sent under `identity`; throws for an invalid pool name or identity. */
export function subjectFor(prefix: string, op: Op, pool: string, identity: string = ANONYMOUS_IDENTITY): string {
  assertPoolName(pool);
  assertIdentity(identity);
  return `${prefix}.v${PROTOCOL_VERSION}.${op}.${pool}.${identity}`;
}

/** serviceSubject — the wildcard a coordinator subscribes to for every op, pool and identity. */
export function serviceSubject(prefix: string): string {
  return `${prefix}.v${PROTOCOL_VERSION}.*.*.*`;
}

/** poolSubject — the wildcard for every op on one pool: what the owner of that pool alone subscribes to. */
export function poolSubject(prefix: string, pool: string): string {
  assertPoolName(pool);
  return `${prefix}.v${PROTOCOL_VERSION}.*.${pool}.*`;
}

/** legacySubject — every subject of protocol v1 under `prefix`: a coordinator answers them `unsupported-version`. */
export function legacySubject(prefix: string): string {
  return `${prefix}.v1.>`;
}

/** subjectVersion — the protocol version a subject under `prefix` names (`<prefix>.v<n>.…`), or null when it names none. */
export function subjectVersion(prefix: string, subject: string): number | null {
  if (!subject.startsWith(`${prefix}.v`)) return null;
  const rest = subject.slice(prefix.length + 2);
  const dot = rest.indexOf('.');
  const digits = dot < 0 ? rest : rest.slice(0, dot);
  return /^[1-9]\d{0,5}$/.test(digits) ? Number(digits) : null;
}

/** CATCH_ALL_QUEUE_GROUP — the queue group of the coordinators serving names that are no configured pool (durable mode). */
export const CATCH_ALL_QUEUE_GROUP = 'tokenlease-catch-all';

/** SubjectParts — what parseSubject reads from a request subject: its op, pool and identity tokens. */
export interface SubjectParts {
  readonly op: Op;
  readonly pool: string;
  readonly identity: string;
}

/**
 * The last subject parseSubject read, with its answer: a request's subject is
 * asked for by its screening, its handling and its metrics in turn, and is
 * read once. (The answer is frozen: nobody may change what a later caller gets.)
 */
let lastParsed: { prefix: string; subject: string; parts: SubjectParts | null } = { prefix: '', subject: '', parts: null };

/** parseSubject — the op, pool and identity of a v2 request subject under `prefix`, or null when it is not one. */
export function parseSubject(prefix: string, subject: string): SubjectParts | null {
  if (lastParsed.subject === subject && lastParsed.prefix === prefix) return lastParsed.parts;
  const parts = readSubject(prefix, subject);
  lastParsed = { prefix, subject, parts };
  return parts;
}

function readSubject(prefix: string, subject: string): SubjectParts | null {
  const head = `${prefix}.v${PROTOCOL_VERSION}.`;
  if (!subject.startsWith(head)) return null;
  const parts = subject.slice(head.length).split('.');
  if (parts.length !== 3) return null;
  const [op, pool, identity] = parts as [string, string, string];
  if (!OPS.has(op) || poolNameProblem(pool) !== null || poolNameProblem(identity) !== null) return null;
  return Object.freeze({ op: op as Op, pool, identity });
}
