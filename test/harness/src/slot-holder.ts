/**
 * A child process holding slots of a concurrency pool, for chaos: `loops`
 * loops, each taking a slot, holding it `holdMs`, giving it back, and
 * taking the next, until SIGTERM.
 *
 *   NATS_URL=nats://… node slot-holder.js '<json SlotHolderConfig without natsUrl>'
 *
 * Each take and give-back is `acquireAt` / `releaseAt` at a reading of
 * the host's monotonic clock (the agent's clock here), so a logged hold is
 * the very interval the agent counted: its bound, the agent's own, is
 * never reached while `holdMs` stays under the pool's hold bound less the
 * agent's drift margin. A refused take is asked again every POLL_MS
 * (asking is what tells its keeper it wants slots).
 *
 * stdout, one JSON object a line: {"type":"ready"}, {"type":"held",
 * "holding":n,"tUs":…} each time it takes or gives back a slot (n: how many
 * it holds now), {"type":"event","event":…} for each of the agent's events
 * (a failed request, say), then
 * {"type":"done","holds":n} on SIGTERM, when it closes its agent (returning
 * its lease) and exits 0. Each finished hold is appended to `logPath` as
 * "<start µs> <end µs> <lease id>\n", in host monotonic µs, with the lease
 * the agent held when it took the slot; holds open at SIGTERM are written
 * ending then.
 */
import { closeSync, openSync, writeSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { Agent } from '@tokenlease/agent';
import { hostMonoNowUs } from '@tokenlease/shared/clock';

export interface SlotHolderConfig {
  /** Handed to the child as NATS_URL (startSlotHolder). */
  readonly natsUrl: string;
  readonly subjectPrefix: string;
  readonly pool: string;
  readonly name: string;
  /** Slots it tries to hold at once. */
  readonly loops: number;
  /** How long each hold lasts, ms. */
  readonly holdMs: number;
  readonly logPath: string;
}

/** POLL_MS — how long a loop waits after a refused take before asking again. */
const POLL_MS = 5;

function print(obj: object): void {
  process.stdout.write(`${JSON.stringify(obj)}\n`);
}

async function main(): Promise<void> {
  const config = JSON.parse(process.argv[2] ?? '{}') as Omit<SlotHolderConfig, 'natsUrl'>;
  const agent = await Agent.connect({
    clock: hostMonoNowUs,
    agentId: `${config.name}-${process.pid}`,
    subjectPrefix: config.subjectPrefix,
    onEvent: (event) => print({ type: 'event', name: config.name, event: event.type, tUs: hostMonoNowUs() }),
  });
  const limiter = agent.limiter(config.pool);
  const fd = openSync(config.logPath, 'a');
  let stopping = false;
  let holds = 0;
  let holding = 0;
  const held = (by: number): void => {
    holding += by;
    print({ type: 'held', name: config.name, holding, tUs: hostMonoNowUs() });
  };
  const loop = async (): Promise<void> => {
    while (!stopping) {
      const startUs = hostMonoNowUs();
      const handle = limiter.acquireAt(startUs);
      const leaseId = limiter.leaseId;
      held(1);
      if (handle === 0) {
        await sleep(POLL_MS);
        continue;
      }
      const deadline = performance.now() + config.holdMs;
      while (!stopping && performance.now() < deadline) await sleep(Math.min(50, Math.max(1, deadline - performance.now())));
      const endUs = hostMonoNowUs();
      limiter.releaseAt(handle, endUs);
      held(-1);
      writeSync(fd, `${startUs} ${endUs} ${leaseId ?? '-'}\n`);
      holds += 1;
    }
  };
  const loops = Array.from({ length: config.loops }, loop);
  print({ type: 'ready', name: config.name });
  process.once('SIGTERM', () => {
    stopping = true;
    void Promise.all(loops)
      .then(() => agent.close({ timeoutMs: 1000 }))
      .finally(() => {
        closeSync(fd);
        print({ type: 'done', name: config.name, holds });
        process.exit(0);
      });
  });
}

main().catch((error: unknown) => {
  process.stderr.write(`slot-holder: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exit(1);
});
