#!/usr/bin/env node
/**
 * tokenlease — the operator's command line.
 *
 *   tokenlease status [POOL] [--agent ID]   a pool's credit (and one agent's lease); without POOL every pool held
 *   tokenlease pools                        every pool every coordinator holds (durable mode: each its own)
 *   tokenlease watch POOL                   a refreshing view of one pool (--interval-ms, --count)
 *   tokenlease reload                       every coordinator re-reads its configuration file
 *
 * Its options (OPERATOR_COMMAND in core/command-lines.ts, which `--help`
 * and docs/reference/command-line.md are written from): --json, the NATS
 * flags and variables, --prefix, --identity (its replies then come to
 * `_INBOX_<identity>`, the inbox the shipped permission model lets it
 * read, unless --nats-inbox-prefix or NATS_INBOX_PREFIX says otherwise),
 * --timeout-ms (a single answer), --window-ms (how long answers of every
 * coordinator are gathered), --interval-ms and --count. A coordinator
 * over its listing budget answers a page `unavailable` with a wait: the
 * page is asked again after it, at most LISTING_RETRIES times; so is a
 * page none answered within the window while coordinators are there (one
 * busy with other listings may answer late).
 *
 * Exit status: 0 done; 1 NATS unreachable or no coordinator answered;
 * 2 usage; 3 the coordinator refused the request (e.g. an unknown pool);
 * 4 a coordinator refused the reload (its file did not validate).
 */
import { parseArgs } from 'node:util';
import {
  ANONYMOUS_IDENTITY,
  DEFAULT_SUBJECT_PREFIX,
  decodeOperatorReply,
  encodeMessage,
  operatorSubject,
  poolNameProblem,
  subjectFor,
  TokenleaseError,
  type PoolList,
  type PoolStatus,
  type ReloadOutcome,
  type Reply,
  type Request,
} from '@tokenlease/shared';
import { readSetting, type Setting } from '@tokenlease/shared/command-line';
import { type Bus } from '@tokenlease/shared/nats';
import {
  OPERATOR_COMMAND,
  OPERATOR_INTERVAL_MS_DEFAULT,
  OPERATOR_SETTINGS,
  OPERATOR_TIMEOUT_MS_DEFAULT,
  OPERATOR_WINDOW_MS_DEFAULT,
} from '../core/command-lines.js';
import { formatPools, formatReload, formatStatus, formatWatch, mergePages, type HeldBy } from '../core/operator-view.js';
import { connectWith } from './connection.js';
import { commandOptions, helpText, packageVersion, usageText } from './cli-common.js';

const USAGE = usageText(OPERATOR_COMMAND);

const help = (): string =>
  helpText(
    OPERATOR_COMMAND,
    [
      'commands:\n' +
        "  status [POOL]   a pool's credit (and one agent's lease with --agent ID); without POOL every pool held\n" +
        '  pools           every pool every coordinator holds, and which holds it\n' +
        '  watch POOL      a refreshing view of one pool, every --interval-ms, --count times (default: until stopped)\n' +
        '  reload          every coordinator re-reads its configuration file, and says what changed\n' +
        'pools and reload are operator commands: a coordinator with operatorIdentities (or bindIdentity) answers them\n' +
        'only under an identity it names there (--identity).\n' +
        'exit: 0 done, 1 NATS unreachable or no coordinator answered, 2 usage, 3 refused (e.g. an unknown pool),\n' +
        '4 a coordinator refused the reload',
    ],
    'examples:\n' +
      '  tokenlease status api\n' +
      '  tokenlease pools --json\n' +
      '  tokenlease watch api --interval-ms 500 --count 20\n' +
      '  NATS_USER=ops NATS_PASSWORD=... tokenlease reload --identity ops',
  );

/** Exit statuses. */
const EXIT = { ok: 0, unreachable: 1, usage: 2, refused: 3, reloadRefused: 4 } as const;
const PAGE_LIMIT = 1000;
/** LISTING_RETRIES — how many times a page refused `unavailable` (a coordinator's listing budget) is asked again. */
const LISTING_RETRIES = 20;
const WATCH_HISTORY = 60;

class Failure extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

interface Options {
  readonly json: boolean;
  readonly prefix: string;
  readonly identity: string;
  readonly timeoutMs: number;
  readonly windowMs: number;
  readonly intervalMs: number;
  readonly count: number;
  readonly agent: string | undefined;
}

/** option — `setting` from the parsed flags, checked by its form; `fallback` when not given; a refusal is a usage error. */
function option<T>(setting: Setting<T>, values: Readonly<Record<string, unknown>>, fallback: T): T {
  const read = readSetting(setting, values, process.env);
  if (!read.ok) throw new Failure(EXIT.usage, read.message);
  return read.value ?? fallback;
}

function parse(argv: readonly string[]): { command: string; args: string[]; options: Options; flags: Readonly<Record<string, unknown>> } {
  let parsed;
  try {
    parsed = parseArgs({
      args: [...argv],
      allowPositionals: true,
      strict: true,
      options: commandOptions(OPERATOR_COMMAND),
    });
  } catch (error) {
    throw new Failure(EXIT.usage, error instanceof Error ? error.message : String(error));
  }
  const { values, positionals } = parsed;
  if (values['version'] === true) throw new Failure(EXIT.ok, `tokenlease ${packageVersion()}`);
  if (values['help'] === true) throw new Failure(EXIT.ok, help());
  const [command, ...args] = positionals;
  if (command === undefined) throw new Failure(EXIT.usage, 'a command is required');
  const arity: Readonly<Record<string, readonly [number, number]>> = { status: [0, 1], pools: [0, 0], watch: [1, 1], reload: [0, 0] };
  const [least, most] = Object.hasOwn(arity, command) ? (arity[command] as readonly [number, number]) : [-1, -1];
  if (least < 0) throw new Failure(EXIT.usage, `unknown command ${JSON.stringify(command)}`);
  if (args.length < least || args.length > most)
    throw new Failure(EXIT.usage, `${command} takes ${least === most ? least : `at most ${most}`} POOL`);
  if (values['agent'] !== undefined && (command !== 'status' || args.length === 0))
    throw new Failure(EXIT.usage, '--agent needs status POOL');
  const o = OPERATOR_SETTINGS;
  const options: Options = {
    json: values['json'] === true,
    timeoutMs: option(o.timeoutMs, values, OPERATOR_TIMEOUT_MS_DEFAULT),
    windowMs: option(o.windowMs, values, OPERATOR_WINDOW_MS_DEFAULT),
    intervalMs: option(o.intervalMs, values, OPERATOR_INTERVAL_MS_DEFAULT),
    count: option(o.count, values, Number.MAX_SAFE_INTEGER),
    prefix: option(o.prefix, values, DEFAULT_SUBJECT_PREFIX),
    identity: option(o.identity, values, ANONYMOUS_IDENTITY),
    agent: option<string | undefined>(o.agent, values, undefined),
  };
  for (const pool of args) {
    const problem = poolNameProblem(pool);
    if (problem !== null) throw new Failure(EXIT.usage, `POOL ${JSON.stringify(pool)} ${problem}`);
  }
  return { command, args, options, flags: values };
}

/** decoded — a reply's bytes, validated (a reply that does not decode is the coordinator's fault, not the operator's); a refusal fails unless `refusals`. */
function decoded(bytes: Uint8Array, refusals = false): Reply {
  const d = decodeOperatorReply(bytes);
  if (!d.ok) throw new Failure(EXIT.unreachable, `unreadable reply: ${d.message}`);
  if (d.value.kind === 'error' && !refusals) throw new Failure(EXIT.refused, `refused (${d.value.code}): ${d.value.message}`);
  return d.value;
}

/** ask — one request, one reply; no responder or no reply in time is status 1. */
async function ask(bus: Bus, subject: string, request: Request, timeoutMs: number): Promise<Reply> {
  try {
    return decoded(await bus.request(subject, encodeMessage(request), timeoutMs));
  } catch (error) {
    if (error instanceof TokenleaseError) throw new Failure(EXIT.unreachable, `no coordinator answered on ${subject}: ${error.code}`);
    throw error;
  }
}

/**
 * gather — one request, every coordinator's reply within the window
 * (refusals too, when `refusals`); none at all is status 1, unless
 * `noneIsEmpty` (then an empty list: the caller may ask again).
 */
async function gather(bus: Bus, subject: string, request: Request, o: Options, refusals = false, noneIsEmpty = false): Promise<Reply[]> {
  let replies: Uint8Array[];
  try {
    replies = await bus.gather(subject, encodeMessage(request), o.windowMs, 10_000);
  } catch (error) {
    if (error instanceof TokenleaseError) throw new Failure(EXIT.unreachable, `no coordinator answered on ${subject}: ${error.code}`);
    throw error;
  }
  if (replies.length === 0 && !noneIsEmpty)
    throw new Failure(EXIT.unreachable, `no coordinator answered on ${subject} within ${o.windowMs} ms`);
  return replies.map((bytes) => decoded(bytes, refusals));
}

async function status(bus: Bus, pool: string, o: Options): Promise<PoolStatus> {
  const request: Request = o.agent === undefined ? { v: 2, op: 'status', pool } : { v: 2, op: 'status', pool, agentId: o.agent };
  const reply = await ask(bus, subjectFor(o.prefix, 'status', pool, o.identity), request, o.timeoutMs);
  if (reply.kind !== 'status') throw new Failure(EXIT.unreachable, `unexpected ${reply.kind} reply`);
  return reply;
}

/**
 * page — every coordinator's page after `after`, asked again (after the
 * longest wait any gave) while one says it is over its listing budget, and
 * at once while none answered within the window (coordinators exist, since
 * NATS found responders, but a busy one may answer late), at most
 * LISTING_RETRIES times each.
 */
async function page(bus: Bus, after: string | undefined, o: Options): Promise<PoolList[]> {
  const query: Request = { v: 2, op: 'pools', pool: '_', limit: PAGE_LIMIT, ...(after === undefined ? {} : { after }) };
  for (let attempt = 0; ; attempt += 1) {
    const replies = await gather(bus, operatorSubject(o.prefix, 'pools', o.identity), query, o, true, attempt < LISTING_RETRIES);
    if (replies.length === 0) continue;
    const busy = replies.filter((r) => r.kind === 'error' && r.code === 'unavailable');
    const refused = replies.find((r) => r.kind === 'error' && (r.code !== 'unavailable' || attempt >= LISTING_RETRIES));
    if (refused?.kind === 'error') throw new Failure(EXIT.refused, `refused (${refused.code}): ${refused.message}`);
    if (busy.length === 0) return replies.filter((r): r is PoolList => r.kind === 'pools');
    const waitMs = Math.max(...busy.map((r) => (r.kind === 'error' ? r.retryAfterMs : 0)));
    await new Promise((resolve) => setTimeout(resolve, waitMs));
  }
}

async function allPools(bus: Bus, o: Options): Promise<HeldBy[]> {
  const pools: HeldBy[] = [];
  let after: string | undefined;
  for (;;) {
    const merged = mergePages(await page(bus, after, o));
    pools.push(...merged.pools);
    if (merged.next === undefined) return pools;
    after = merged.next;
  }
}

function print(text: string): void {
  process.stdout.write(`${text}\n`);
}

function publicStatus(s: PoolStatus): Omit<PoolStatus, 'v' | 'kind'> {
  const { v: _v, kind: _kind, ...rest } = s;
  return rest;
}

async function watch(bus: Bus, pool: string, o: Options): Promise<void> {
  const levels: number[] = [];
  for (let i = 0; i < o.count; i += 1) {
    const s = await status(bus, pool, o);
    levels.push(s.levelTokens);
    if (levels.length > WATCH_HISTORY) levels.shift();
    if (o.json) print(JSON.stringify({ at: new Date().toISOString(), ...publicStatus(s) }));
    else process.stdout.write(`\x1b[H\x1b[2J${formatWatch(s, levels, new Date().toLocaleTimeString())}\n`);
    if (i + 1 < o.count) await new Promise((resolve) => setTimeout(resolve, o.intervalMs));
  }
}

async function run(command: string, args: readonly string[], o: Options, bus: Bus): Promise<number> {
  switch (command) {
    case 'status': {
      const pool = args[0];
      if (pool === undefined) {
        const pools = await allPools(bus, o);
        print(o.json ? JSON.stringify({ pools }) : formatPools(pools));
        return EXIT.ok;
      }
      const s = await status(bus, pool, o);
      print(o.json ? JSON.stringify(publicStatus(s)) : formatStatus(s));
      return EXIT.ok;
    }
    case 'pools': {
      const pools = await allPools(bus, o);
      const coordinators = [...new Set(pools.map((p) => p.coordinator))].sort();
      print(o.json ? JSON.stringify({ coordinators, pools }) : formatPools(pools));
      return EXIT.ok;
    }
    case 'watch': {
      await watch(bus, args[0] as string, o);
      return EXIT.ok;
    }
    case 'reload': {
      const request: Request = { v: 2, op: 'reload', pool: '_' };
      const outcomes = (await gather(bus, operatorSubject(o.prefix, 'reload', o.identity), request, o)).filter(
        (r): r is ReloadOutcome => r.kind === 'reload',
      );
      print(o.json ? JSON.stringify({ coordinators: outcomes.map(({ v: _v, kind: _kind, ...rest }) => rest) }) : formatReload(outcomes));
      return outcomes.some((r) => r.outcome === 'refused') ? EXIT.reloadRefused : EXIT.ok;
    }
    default:
      throw new Failure(EXIT.usage, `unknown command ${JSON.stringify(command)}`);
  }
}

async function main(): Promise<number> {
  let parsed;
  try {
    parsed = parse(process.argv.slice(2));
  } catch (error) {
    if (error instanceof Failure && error.status === EXIT.ok) {
      print(error.message);
      return EXIT.ok;
    }
    if (error instanceof Failure) {
      process.stderr.write(`tokenlease: ${error.message}\n${USAGE}\n`);
      return error.status;
    }
    throw error;
  }
  const { command, args, options, flags } = parsed;
  let bus: Bus;
  try {
    // Under an identity its replies come to the inbox that identity's NATS user may read.
    const inbox = options.identity === ANONYMOUS_IDENTITY ? undefined : `_INBOX_${options.identity}`;
    bus = await connectWith(flags, `tokenlease ${command} ${process.pid}`, inbox);
  } catch (error) {
    // The message names the server without its credentials, and no secret.
    process.stderr.write(`tokenlease: ${error instanceof Error ? error.message : String(error)}\n`);
    if (error instanceof TokenleaseError && error.code === 'invalid-nats-options') return EXIT.usage;
    return EXIT.unreachable;
  }
  process.once('SIGINT', () => void bus.close().then(() => process.exit(EXIT.ok)));
  try {
    return await run(command, args, options, bus);
  } catch (error) {
    if (!(error instanceof Failure)) throw error;
    process.stderr.write(`tokenlease: ${error.message}\n${error.status === EXIT.usage ? `${USAGE}\n` : ''}`);
    return error.status;
  } finally {
    await bus.close();
  }
}

main().then(
  // Exit once stdout has taken everything: to a pipe it writes asynchronously, and a long listing was cut short.
  (status) => process.stdout.write('', () => process.exit(status)),
  (error: unknown) => {
    process.stderr.write(`tokenlease: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    process.exit(1);
  },
);
