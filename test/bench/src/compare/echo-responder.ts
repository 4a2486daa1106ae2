/**
 * A trivial NATS responder for the comparison's capacity figures: answers
 * every request on the subject it is given with the request's own bytes,
 * in a process of its own as the coordinator is, so the two are measured
 * alike.
 *
 *   NATS_URL=nats://… node echo-responder.js <subject>
 *
 * Prints {"type":"ready"} once its subscription is in place; runs until
 * SIGTERM.
 */
import { connectNats, natsEnvLayer, resolveNatsOptions } from '@tokenlease/shared/nats';

async function main(): Promise<void> {
  const subject = process.argv[2] ?? '';
  const bus = await connectNats(resolveNatsOptions([natsEnvLayer(process.env)]), { name: 'tokenlease-bench-echo' });
  bus.serve(subject, null, (_subject, payload, reply) => {
    reply.respond(payload);
  });
  await bus.flush();
  process.once('SIGTERM', () => {
    void bus.close().then(() => process.exit(0));
  });
  process.stdout.write(`${JSON.stringify({ type: 'ready' })}\n`);
}

main().catch((error: unknown) => {
  process.stderr.write(`echo-responder: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exit(1);
});
