/**
 * The protocol codec's cost in process, for the capacity part of `npm run
 * bench:compare`: ns per `decodeRequest` of a simulated agent's renewal and
 * per `encodeMessage` of a grant like the coordinator's, median and p99
 * over batches (measure.ts, timeCalls), with their sizes. Beside the
 * JSON-parsing responder's CPU per reply, it says how much of a grant's
 * cost the JSON codec is.
 */
import { decodeRequest, encodeMessage, type Reply } from '@tokenlease/shared';
import { seededRandom } from '@tokenlease/shared/testing';
import { timeCalls } from '../measure.js';
import { SimulatedAgents } from '../simulated-agents.js';
import { formatNumber, round } from './report.js';

const AGENTS = 2000;
const BATCHES = 200;
const BATCH_SIZE = 1000;

/** CodecRow — ns per decode of a renewal and per encode of a grant, and their sizes. */
export interface CodecRow {
  readonly table: 'codec';
  readonly requestBytes: number;
  readonly decodeRequestNsMedian: number;
  readonly decodeRequestNsP99: number;
  readonly grantBytes: number;
  readonly encodeGrantNsMedian: number;
  readonly encodeGrantNsP99: number;
}

/** A grant as the coordinator sends one on a pool of the capacity part. */
const GRANT: Reply = {
  v: 2,
  kind: 'grant',
  seq: 1,
  leaseId: 'f7zvrp-1jk.0000002s',
  tokensGranted: 100,
  tokensHeld: 469,
  ttlMs: 20_000,
  epoch: 920_424_085,
  maxLeaseTokens: 1000,
  capacityTokens: 1_000_000_000,
  refillTokens: 1_000_000_000,
  refillPeriodMs: 1000,
  retryAfterMs: 0,
};

/** codecCost — the codec's figures; throws if a renewal does not decode. */
export function codecCost(): CodecRow {
  const agents = new SimulatedAgents(AGENTS, seededRandom(2026), 'cap2000', 100);
  const requests = Array.from({ length: AGENTS }, (_, i) => agents.request(i, Math.floor(performance.now())));
  let next = 0;
  let failed = 0;
  const decode = timeCalls(
    (n) => {
      for (let i = 0; i < n; i += 1) if (!decodeRequest(requests[(next = (next + 1) % AGENTS)] as Uint8Array).ok) failed += 1;
    },
    BATCHES,
    BATCH_SIZE,
  );
  if (failed > 0) throw new Error(`codec cost: ${failed} renewals did not decode`);
  let seq = 0;
  let bytes = 0;
  const encode = timeCalls(
    (n) => {
      for (let i = 0; i < n; i += 1) bytes += encodeMessage({ ...GRANT, seq: (seq += 1) }).byteLength;
    },
    BATCHES,
    BATCH_SIZE,
  );
  if (bytes === 0) throw new Error('codec cost: no grant encoded');
  return {
    table: 'codec',
    requestBytes: (requests[0] as Uint8Array).byteLength,
    decodeRequestNsMedian: round(decode.nsMedian),
    decodeRequestNsP99: round(decode.nsP99),
    grantBytes: encodeMessage(GRANT).byteLength,
    encodeGrantNsMedian: round(encode.nsMedian),
    encodeGrantNsP99: round(encode.nsP99),
  };
}

/** codecLine — the figures in one line. */
export function codecLine(c: CodecRow): string {
  return `codec in process: decodeRequest of a ${c.requestBytes}-byte renewal ${formatNumber(c.decodeRequestNsMedian)} ns median (p99 ${formatNumber(c.decodeRequestNsP99)}); encodeMessage of a ${c.grantBytes}-byte grant ${formatNumber(c.encodeGrantNsMedian)} ns median (p99 ${formatNumber(c.encodeGrantNsP99)})`;
}
