/**
 * The hostile client of the crowded-pool bench (crowded-pool.ts), run as a
 * child process: `node hostile-client.js <natsUrl> <prefix> <pool> <count> <holdMs>`.
 *
 * Sends `count` acquires to `pool`, each from a distinct agent id with its
 * own secret, wanting a token and willing to wait `holdMs`, as requests with a
 * long timeout, and never waits for a reply before sending the next; one
 * shed at the coordinator's intake is sent again after the wait its
 * answer names, so that all of them end up held. Prints
 * JSON lines: `{"type":"sending"}` before the first, `{"type":"sent",
 * "count","ms"}` once NATS has them all, and on SIGTERM `{"type":"done",
 * "answered"}`: how many were answered (so were not held) by then.
 */
import { decodeReply, encodeMessage, subjectFor, type LeaseRequest } from '@tokenlease/shared';
import { connectBus } from '@tokenlease/shared/nats';

/** Longer than any bench runs: a request is never given up while the bench measures. */
const REQUEST_TIMEOUT_MS = 120_000;
/** Requests handed to the connection before letting it write them out. */
const CHUNK = 1000;

function emit(line: object): void {
  process.stdout.write(`${JSON.stringify(line)}\n`);
}

async function main(): Promise<void> {
  const [natsUrl = '', prefix = '', pool = '', countText = '', holdText = ''] = process.argv.slice(2);
  const count = Number(countText);
  const holdMs = Number(holdText);
  if (!Number.isSafeInteger(count) || count < 1 || !Number.isSafeInteger(holdMs) || holdMs < 1)
    throw new Error(`usage: hostile-client <natsUrl> <prefix> <pool> <count> <holdMs>; got ${countText} ${holdText}`);
  const bus = await connectBus(natsUrl, { name: 'tokenlease-bench-hostile' });
  const subject = subjectFor(prefix, 'acquire', pool);
  let answered = 0;
  let closing = false;
  process.once('SIGTERM', () => {
    closing = true;
    emit({ type: 'done', answered });
    void bus.close().finally(() => process.exit(0));
  });
  emit({ type: 'sending' });
  const startMs = performance.now();
  for (let i = 0; i < count; i += 1) {
    const req: LeaseRequest = {
      v: 2,
      op: 'acquire',
      agentId: `hostile-${i}`,
      pool,
      leaseSecret: `h${i.toString(36).padStart(23, '0')}`,
      seq: 1,
      leaseId: null,
      tokensLeft: 0,
      tokensWanted: 1,
      demandPerSecond: 1,
      holdMs,
    };
    const send = (): void => {
      bus.request(subject, encodeMessage(req), REQUEST_TIMEOUT_MS).then(
        (bytes) => {
          // Shed at the coordinator's intake (more than its turn allows): asks again when told.
          const reply = decodeReply(bytes);
          if (reply.ok && reply.value.kind === 'error' && reply.value.code === 'unavailable' && !closing) {
            setTimeout(send, reply.value.retryAfterMs);
          } else if (!closing) answered += 1;
        },
        () => undefined,
      );
    };
    send();
    if (i % CHUNK === CHUNK - 1) await new Promise((resolve) => setImmediate(resolve));
  }
  await bus.flush();
  emit({ type: 'sent', count, ms: Math.round(performance.now() - startMs) });
}

main().catch((error: unknown) => {
  process.stderr.write(`hostile-client: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exit(1);
});
