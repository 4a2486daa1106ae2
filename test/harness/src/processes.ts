/**
 * Child processes started by tests and the demo. Every process started here
 * is registered and stopped by `stopAll` (and killed at exit), so a failing
 * test leaves nothing behind. Nothing here signals a process it did not start.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { appendFileSync, writeFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { setTimeout as sleep } from 'node:timers/promises';

export interface Child {
  readonly name: string;
  readonly proc: ChildProcess;
  readonly pid: number;
  /** Resolves when the process has exited and what it wrote is read (`lines`, `stderr()`), with its code or signal. */
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Lines written to stdout so far. */
  readonly lines: string[];
  /** waitForLine — resolves with the first stdout line (past or future) matching `test`. */
  waitForLine(test: (line: string) => boolean, timeoutMs: number): Promise<string>;
  onLine(listener: (line: string) => void): void;
  stderr(): string;
}

const running = new Set<Child>();
/** OUTPUT_DRAIN_MS — how long `exited` waits, after the exit, for the output pipes to close, ms. */
const OUTPUT_DRAIN_MS = 2000;

process.once('exit', () => {
  for (const child of running) child.proc.kill('SIGKILL');
});

/** spawnNode — runs a Node.js script as a registered child (through `via`, as spawnProcess says). */
export function spawnNode(
  name: string,
  script: string,
  args: readonly string[],
  env: NodeJS.ProcessEnv = {},
  via: readonly string[] = [],
): Child {
  return spawnProcess(name, process.execPath, [script, ...args], env, via);
}

/**
 * spawnProcess — runs `command` as a registered child with piped
 * stdout/stderr. A non-empty `via` is a command prefix that execs the
 * command in another place (netns.ts: `ip netns exec <ns>`), so the child's
 * pid is still the command's own.
 */
export function spawnProcess(
  name: string,
  command: string,
  args: readonly string[],
  env: NodeJS.ProcessEnv = {},
  via: readonly string[] = [],
): Child {
  const [first, ...rest] = [...via, command, ...args] as [string, ...string[]];
  const proc = spawn(first, rest, {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  if (proc.pid === undefined) throw new Error(`could not start ${name} (${command})`);
  const lines: string[] = [];
  const listeners: Array<(line: string) => void> = [];
  let stderrText = '';
  proc.stderr?.on('data', (chunk: Buffer) => {
    stderrText = (stderrText + chunk.toString()).slice(-20_000);
  });
  const stdoutLines = createInterface({ input: proc.stdout });
  stdoutLines.on('line', (line) => {
    lines.push(line);
    if (lines.length > 50_000) lines.splice(0, 10_000);
    for (const listener of listeners) listener(line);
  });
  // 'exit' can come before the last of stdout and stderr is read: `exited` waits for both to end too
  // (at most OUTPUT_DRAIN_MS, in case a grandchild still holds the pipes), so what the process said is all there.
  const outputRead = Promise.all([
    new Promise((done) => stdoutLines.once('close', done)),
    new Promise((done) => (proc.stderr === null ? done(undefined) : proc.stderr.once('close', done))),
  ]);
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    proc.once('exit', (code, signal) => {
      running.delete(child);
      void Promise.race([outputRead, sleep(OUTPUT_DRAIN_MS)]).then(() => resolve({ code, signal }));
    });
  });
  const child: Child = {
    name,
    proc,
    pid: proc.pid,
    exited,
    lines,
    onLine: (listener) => listeners.push(listener),
    stderr: () => stderrText,
    waitForLine: (test, timeoutMs) =>
      new Promise((resolve, reject) => {
        const found = lines.find(test);
        if (found !== undefined) return resolve(found);
        const timer = setTimeout(
          () => reject(new Error(`${name}: no matching line within ${timeoutMs} ms; stderr: ${stderrText.slice(-2000)}`)),
          timeoutMs,
        );
        listeners.push((line) => {
          if (test(line)) {
            clearTimeout(timer);
            resolve(line);
          }
        });
        void exited.then(({ code, signal }) => {
          clearTimeout(timer);
          reject(new Error(`${name} exited (code ${code}, signal ${signal}) before the expected line; stderr: ${stderrText.slice(-2000)}`));
        });
      }),
  };
  running.add(child);
  return child;
}

/** keepLog — copies `child`'s stdout, past and future lines, to the file `path` (to read after a failure). */
export function keepLog(child: Child, path: string): void {
  writeFileSync(path, child.lines.map((line) => `${line}\n`).join(''));
  child.onLine((line) => appendFileSync(path, `${line}\n`));
}

/** stop — SIGTERM, then SIGKILL after `graceMs`; resolves once the process is gone. */
export async function stop(child: Child, graceMs = 3000): Promise<void> {
  if (child.proc.exitCode !== null || child.proc.signalCode !== null) return;
  child.proc.kill('SIGTERM');
  const timer = setTimeout(() => child.proc.kill('SIGKILL'), graceMs);
  await child.exited;
  clearTimeout(timer);
}

/** stopAll — stops every child still running. */
export async function stopAll(): Promise<void> {
  await Promise.all([...running].map((child) => stop(child)));
}
