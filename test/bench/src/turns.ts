/**
 * Lease counts measured in turns, for the scaling probes (lease-scaling.ts,
 * row-sketch.ts): one child process per count, so that no count inherits
 * another's heap, all opened and warmed up before any is timed; then they
 * renew by turns, one child at a time, each for `turnMs` of its own CPU
 * time, the order reversed every pass.
 *
 * On this development machine (a VM sharing its host) a count's figure
 * moved by a factor of two between minutes: the same 1k probe gave 190k
 * and 359k acquires per CPU second in consecutive rounds of 1 s, and the
 * share of 100k against 1k, measured by rounds one count after another,
 * ranged from ×0.46 to ×1.0 the same afternoon. Taking turns of 200 ms,
 * the counts meet the same minutes, and three runs gave ×0.644, ×0.643
 * and ×0.637. A child's caches are cooled by the others' turns, each turn
 * beginning with its working set to fetch again: a few thousand misses,
 * well under a millisecond of a 200-ms turn, and the same for every count
 * but for the size of that set.
 *
 * A child is told to take its turn by TURN_SIGNAL: it renews, prints the
 * turn's figures as one JSON line, and waits again; after its last turn it
 * prints what it measures last (its floor) and ends.
 */
import { GCProfiler } from 'node:v8';
import { spawnNode, stop, type Child } from '@tokenlease/harness/processes';
import type { LeaseCount } from './lease-scaling.js';

/** TURN_SIGNAL — a child's cue to take its turn (Node.js leaves it to programs; SIGUSR1 would start its inspector). */
const TURN_SIGNAL = 'SIGUSR2';
/** READY — the line a child prints once its leases are open and warmed up. */
const READY = 'ready';
/** OPEN_TIMEOUT_MS — how long a child may take to open its leases, ms. */
const OPEN_TIMEOUT_MS = 120_000;
/** TURN_TIMEOUT_MS — how long a turn may take on the wall clock, ms. */
const TURN_TIMEOUT_MS = 60_000;

/** Renewed — what renewing for a while did: renewals timed and their CPU time, ms. */
export interface Renewed {
  readonly calls: number;
  readonly cpuMs: number;
}

/** TurnLine — a child's line after turn `turn`: its renewals, their CPU time, and the collector's time meanwhile, µs. */
interface TurnLine extends Renewed {
  readonly turn: number;
  readonly gcUs: number;
}

/**
 * serveTurns — (in a child, once its leases are open and warmed up) prints
 * READY, then at each TURN_SIGNAL renews for `turnMs` of CPU time with
 * `renew` and prints the turn's line; after `turns` turns prints `{ last:
 * last() }` and resolves.
 */
export function serveTurns(renew: (ms: number) => Renewed, turnMs: number, turns: number, last: () => unknown): Promise<void> {
  let turn = 0;
  let done = (): void => undefined;
  const served = new Promise<void>((resolve) => (done = resolve));
  const takeTurn = (): void => {
    const profiler = new GCProfiler();
    profiler.start();
    const { calls, cpuMs } = renew(turnMs);
    const gcUs = profiler.stop().statistics.reduce((sum, s) => sum + s.cost, 0);
    turn += 1;
    const line: TurnLine = { turn, calls, cpuMs, gcUs };
    process.stdout.write(`${JSON.stringify(line)}\n`);
    if (turn < turns) return;
    process.off(TURN_SIGNAL, takeTurn);
    process.stdout.write(`${JSON.stringify({ last: last() })}\n`);
    done();
  };
  process.on(TURN_SIGNAL, takeTurn);
  process.stdout.write(`${READY}\n`);
  // A signal's listener does not keep the process running on its own.
  const waiting = setInterval(() => undefined, 2 ** 30);
  return served.finally(() => clearInterval(waiting));
}

/** CountTurns — one count's figures over all its turns, and what its child measured last. */
export interface CountTurns<L> {
  readonly leases: LeaseCount;
  readonly calls: number;
  readonly cpuMs: number;
  /** Renewals per CPU second over all its turns. */
  readonly perSecond: number;
  /** The collector's time over the turns, µs. */
  readonly gcUs: number;
  /** Each turn's renewals per CPU second, in order. */
  readonly perTurn: readonly number[];
  readonly last: L;
}

function turnOf(line: string): TurnLine | null {
  if (!line.startsWith('{"turn":')) return null;
  return JSON.parse(line) as TurnLine;
}

/**
 * takeTurns — starts a child of `script` with `args(n)` for each of
 * `counts` (named `name`-n), waits until each is ready, then gives them
 * `turns` turns each, one child at a time, the order reversed every pass;
 * returns each count's figures. A child that fails or falls silent fails
 * the run; every child is stopped before this returns.
 */
export async function takeTurns<L>(
  name: string,
  script: string,
  counts: readonly LeaseCount[],
  args: (n: LeaseCount) => readonly string[],
  turns: number,
): Promise<CountTurns<L>[]> {
  const children = counts.map((leases) => ({
    leases,
    child: spawnNode(`${name}-${leases}`, script, [...args(leases)]),
    lines: [] as TurnLine[],
  }));
  try {
    for (const { child } of children) await child.waitForLine((line) => line === READY, OPEN_TIMEOUT_MS);
    for (let turn = 1; turn <= turns; turn += 1) {
      const order = turn % 2 === 1 ? children : [...children].reverse();
      for (const c of order) {
        c.child.proc.kill(TURN_SIGNAL);
        const line = await c.child.waitForLine((l) => turnOf(l)?.turn === turn, TURN_TIMEOUT_MS);
        c.lines.push(turnOf(line) as TurnLine);
      }
    }
    return await Promise.all(children.map(({ leases, child, lines }) => counted<L>(leases, child, lines)));
  } finally {
    await Promise.all(children.map(({ child }) => stop(child)));
  }
}

async function counted<L>(leases: LeaseCount, child: Child, lines: readonly TurnLine[]): Promise<CountTurns<L>> {
  const lastLine = await child.waitForLine((line) => line.startsWith('{"last":'), TURN_TIMEOUT_MS);
  const { code } = await child.exited;
  if (code !== 0) throw new Error(`${child.name} ended with code ${code}: ${child.stderr()}`);
  const sum = (f: (t: TurnLine) => number): number => lines.reduce((s, t) => s + f(t), 0);
  const perSecond = (r: Renewed): number => Math.round(r.calls / (r.cpuMs / 1000));
  const calls = sum((t) => t.calls);
  const cpuMs = sum((t) => t.cpuMs);
  return {
    leases,
    calls,
    cpuMs,
    perSecond: perSecond({ calls, cpuMs }),
    gcUs: sum((t) => t.gcUs),
    perTurn: lines.map(perSecond),
    last: (JSON.parse(lastLine) as { last: L }).last,
  };
}
