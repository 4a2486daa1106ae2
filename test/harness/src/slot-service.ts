/**
 * A child process running one service limited by a concurrency pool: a
 * node:http server whose every request takes a slot through the
 * concurrency middleware (createConcurrencyLimit) and then calls a
 * downstream over HTTP, answering with the downstream's status.
 *
 *   NATS_URL=nats://… node slot-service.js '<json SlotServiceConfig without natsUrl>'
 *
 * It connects as Agent.connect does by default (NATS_URL and the other
 * NATS_* variables). stdout, one JSON object a line: {"type":"ready","url":…}
 * once it listens on 127.0.0.1, then {"type":"done",…} on SIGTERM, when it
 * closes its agent (returning its lease) and exits 0. Killed, it returns
 * nothing: its calls in flight at the downstream run on, and its slots come
 * back only once its lease has expired and the hold bound has passed.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Agent } from '@tokenlease/agent';
import { createConcurrencyLimit } from '@tokenlease/agent/http';
import { hostMonoNowUs } from '@tokenlease/shared/clock';

export interface SlotServiceConfig {
  /** Handed to the child as NATS_URL (startSlotService). */
  readonly natsUrl: string;
  readonly subjectPrefix: string;
  readonly pool: string;
  readonly name: string;
  /** The downstream every admitted request calls (GET). */
  readonly downstreamUrl: string;
  /** How long a request may wait for a slot, ms (the middleware's waitMs); default 0. */
  readonly waitMs?: number;
}

function print(obj: object): void {
  process.stdout.write(`${JSON.stringify(obj)}\n`);
}

async function main(): Promise<void> {
  const config = JSON.parse(process.argv[2] ?? '{}') as Omit<SlotServiceConfig, 'natsUrl'>;
  const agent = await Agent.connect({
    clock: hostMonoNowUs,
    agentId: `${config.name}-${process.pid}`,
    subjectPrefix: config.subjectPrefix,
  });
  const limit = createConcurrencyLimit({ agent, pool: config.pool, waitMs: config.waitMs ?? 0, graceMs: 2000 });
  let admitted = 0;
  let refused = 0;
  let failed = 0;
  const server = createServer((req, res) => {
    void (async () => {
      if (!(await limit(req, res))) {
        refused += 1;
        return;
      }
      admitted += 1;
      try {
        const answer = await fetch(config.downstreamUrl);
        res.statusCode = answer.status;
        res.end(await answer.text());
      } catch {
        failed += 1;
        res.statusCode = 502;
        res.end('the downstream failed');
      }
    })();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  print({ type: 'ready', name: config.name, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` });
  process.once('SIGTERM', () => {
    server.close();
    void agent.close({ timeoutMs: 1000 }).finally(() => {
      print({ type: 'done', name: config.name, admitted, refused, failed });
      process.exit(0);
    });
  });
}

main().catch((error: unknown) => {
  process.stderr.write(`slot-service: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exit(1);
});
