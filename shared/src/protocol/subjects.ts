/**
 * Subjects of protocol v1: `<prefix>.v1.<op>.<pool>`.
 *
 * A pool name is one NATS subject token: 1 to POOL_NAME_LENGTH_MAX printable
 * ASCII characters other than `.`, `*` and `>`. So no name can address a
 * wildcard or another pool's subject. The prefix is one or more such tokens
 * joined by dots.
 */
import { TokenleaseError } from '../errors.js';

export const PROTOCOL_VERSION = 1;
export const POOL_NAME_LENGTH_MAX = 128;
export const DEFAULT_SUBJECT_PREFIX = 'tokenlease';
export const COORDINATOR_QUEUE_GROUP = 'tokenlease-coordinators';

export type Op = 'acquire' | 'return' | 'report' | 'status';
const OPS: ReadonlySet<string> = new Set<Op>(['acquire', 'return', 'report', 'status']);

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

/** subjectFor — the subject of `op` on `pool`; throws for an invalid pool name. */
export function subjectFor(prefix: string, op: Op, pool: string): string {
  assertPoolName(pool);
  return `${prefix}.v${PROTOCOL_VERSION}.${op}.${pool}`;
}

/** serviceSubject — the wildcard a coordinator subscribes to for every op and pool. */
export function serviceSubject(prefix: string): string {
  return `${prefix}.v${PROTOCOL_VERSION}.*.*`;
}

/** poolSubject — the wildcard for every op on one pool: what the owner of that pool alone subscribes to. */
export function poolSubject(prefix: string, pool: string): string {
  assertPoolName(pool);
  return `${prefix}.v${PROTOCOL_VERSION}.*.${pool}`;
}

/** CATCH_ALL_QUEUE_GROUP — the queue group of the coordinators serving names that are no configured pool (durable mode). */
export const CATCH_ALL_QUEUE_GROUP = 'tokenlease-catch-all';

export interface SubjectParts {
  readonly op: Op;
  readonly pool: string;
}

/** parseSubject — the op and pool of a request subject under `prefix`, or null when it is not one. */
export function parseSubject(prefix: string, subject: string): SubjectParts | null {
  const head = `${prefix}.v${PROTOCOL_VERSION}.`;
  if (!subject.startsWith(head)) return null;
  const rest = subject.slice(head.length);
  const dot = rest.indexOf('.');
  if (dot < 0) return null;
  const op = rest.slice(0, dot);
  const pool = rest.slice(dot + 1);
  if (!OPS.has(op) || poolNameProblem(pool) !== null) return null;
  return { op: op as Op, pool };
}
