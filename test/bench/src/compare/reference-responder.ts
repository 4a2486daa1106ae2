/**
 * The comparison's reference responders for the capacity figures, each in a
 * process of its own as the coordinator is, so the three are measured
 * alike:
 *
 *   NATS_URL=nats://… node reference-responder.js <subject> fixed|parse
 *
 * - `fixed`: the trivial responder. It answers every request with the same
 *   grant, encoded once at start: the NATS client's own cost per request
 *   and nothing else, the floor any responder in Node pays.
 * - `parse`: the JSON-parsing responder. It decodes each request with the
 *   protocol's own codec (every field validated) and encodes a grant of
 *   that request (its seq and lease id): the floor of a responder that
 *   speaks the protocol, without any pool behind it.
 *
 * Prints {"type":"ready"} once its subscription is in place; runs until
 * SIGTERM.
 */
import { decodeRequest, encodeMessage, type Reply } from '@tokenlease/shared';
import { connectNats, natsEnvLayer, resolveNatsOptions } from '@tokenlease/shared/nats';

/** MODES — what a reference responder does with a request. */
const MODES = ['fixed', 'parse'];

/** grantOf — the grant both responders answer with, for the request of `seq` on lease `leaseId`. */
function grantOf(seq: number, leaseId: string): Reply {
  return {
    v: 2,
    kind: 'grant',
    seq,
    leaseId,
    tokensGranted: 10,
    tokensHeld: 100,
    ttlMs: 10_000,
    epoch: 1,
    maxLeaseTokens: 1000,
    capacityTokens: 1_000_000_000,
    refillTokens: 1_000_000_000,
    refillPeriodMs: 1000,
    retryAfterMs: 0,
  };
}

async function main(): Promise<void> {
  const subject = process.argv[2] ?? '';
  const mode = process.argv[3];
  if (mode === undefined || !MODES.includes(mode)) throw new Error(`mode must be one of ${MODES.join(', ')}, not ${mode}`);
  const fixed = encodeMessage(grantOf(1, 'fixed-lease'));
  const bus = await connectNats(resolveNatsOptions([natsEnvLayer(process.env)]), { name: `tokenlease-bench-${mode}` });
  bus.serve(subject, null, (_subject, payload, reply) => {
    if (mode === 'fixed') {
      reply.respond(fixed);
      return;
    }
    const request = decodeRequest(payload);
    if (!request.ok || request.value.op !== 'acquire') {
      reply.respond(fixed);
      return;
    }
    reply.respond(encodeMessage(grantOf(request.value.seq, request.value.leaseId ?? `lease-${request.value.agentId}`)));
  });
  await bus.flush();
  process.once('SIGTERM', () => {
    void bus.close().then(() => process.exit(0));
  });
  process.stdout.write(`${JSON.stringify({ type: 'ready' })}\n`);
}

main().catch((error: unknown) => {
  process.stderr.write(`reference-responder: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exit(1);
});
