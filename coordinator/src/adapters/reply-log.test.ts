/**
 * ReplyLog: refusals logged once per pool and code per interval, with the
 * count held back; requests whose reply would go to another identity's
 * inbox dropped before they are handled, counted and logged the same way.
 */
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import type { Reply } from '@tokenlease/shared';
import type { ReplyPort } from '@tokenlease/shared/nats';
import { parseCoordinatorConfig } from '../core/config.js';
import type { Delivery } from '../core/pool.js';
import { REFUSAL_KEYS_MAX, ReplyLog } from './reply-log.js';

function setup(): { log: ReplyLog; lines: Array<Record<string, unknown>>; clock: { ms: number }; sent: number[] } {
  const lines: Array<Record<string, unknown>> = [];
  const logger = pino({ level: 'debug' }, { write: (line: string) => lines.push(JSON.parse(line) as Record<string, unknown>) });
  const clock = { ms: 0 };
  return { log: new ReplyLog(logger, 'tokenlease', () => clock.ms, 1000), lines, clock, sent: [] };
}

const refusal = (sent: number[], code: 'bad-request' | 'unknown-pool' | 'clock-drift'): Delivery<ReplyPort> => {
  const reply: Reply = { v: 2, kind: 'error', seq: 1, code, fault: 'peer', message: 'no', retryAfterMs: 0 };
  return { to: { respond: (bytes: Uint8Array) => sent.push(bytes.byteLength) > 0, replySubject: '_INBOX.x' }, reply };
};

describe('ReplyLog', () => {
  it('counts and logs the answer to a request that named no reply subject, but encodes and sends nothing', () => {
    const { log, lines } = setup();
    const replied: string[] = [];
    log.observer = { replied: (_pool, reply) => replied.push(reply.kind), handled: () => {}, wrote: () => {}, dropped: () => {} };
    let responded = 0;
    const to: ReplyPort = { respond: () => (responded += 1) > 0, replySubject: null };
    const reply: Reply = { v: 2, kind: 'error', seq: 1, code: 'bad-request', fault: 'peer', message: 'no', retryAfterMs: 0 };
    log.send([{ to, reply }], 0, { pool: 'api' });
    expect(responded).toBe(0);
    expect(replied).toEqual(['error']);
    expect(lines.map((l) => l['event'])).toEqual(['request-refused']);
  });

  it('sends every refusal but logs one line per pool and code per interval, then the count', () => {
    const { log, lines, clock, sent } = setup();
    for (let i = 0; i < 500; i += 1) log.send([refusal(sent, 'bad-request')], 0, { pool: 'api' });
    log.send([refusal(sent, 'unknown-pool')], 0, { subject: 'tokenlease.v2.acquire.nosuch.anon' });
    expect(sent).toHaveLength(501);
    expect(lines.map((l) => [l['event'], l['pool'], l['code']])).toEqual([
      ['request-refused', 'api', 'bad-request'],
      ['request-refused', 'nosuch', 'unknown-pool'],
    ]);
    clock.ms = 999;
    log.flush();
    expect(lines).toHaveLength(2);
    clock.ms = 1000;
    log.flush();
    expect(lines[2]).toMatchObject({ event: 'request-refused', pool: 'api', code: 'bad-request', refused: 499 });
    log.send([refusal(sent, 'bad-request')], 0, { pool: 'api' });
    expect(lines).toHaveLength(4);
  });

  it("logs a refusal for an agent's clock as its own event, at warn, with what the coordinator measured", () => {
    const { log, lines, sent } = setup();
    log.send([refusal(sent, 'clock-drift')], 0, { pool: 'api' });
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({ event: 'clock-drift', level: 40, pool: 'api', code: 'clock-drift', fault: 'peer', reason: 'no' });
  });

  it('counts refusals of pools beyond REFUSAL_KEYS_MAX under pool "*"', () => {
    const { log, lines, sent } = setup();
    for (let i = 0; i < REFUSAL_KEYS_MAX + 50; i += 1) log.send([refusal(sent, 'unknown-pool')], 0, { pool: `p${i}` });
    expect(lines).toHaveLength(REFUSAL_KEYS_MAX + 1);
    expect(lines.at(-1)).toMatchObject({ pool: '*', code: 'unknown-pool' });
  });
});

describe('ReplyLog.screened', () => {
  const bound = parseCoordinatorConfig('screen.yaml', { bindIdentity: true, pools: { api: { capacity: 10, refill: '10/s' } } });
  const secret = 'the-lease-secret-of-the-payload';
  const payload = new TextEncoder().encode(JSON.stringify({ leaseSecret: secret }));

  it('hands on requests whose reply goes to their own inbox; drops the rest unhandled, counted, logged at a bounded rate', () => {
    const { log, lines, clock } = setup();
    const drops: string[] = [];
    log.observer = { replied: () => undefined, handled: () => undefined, wrote: () => undefined, dropped: (reason) => drops.push(reason) };
    const handled: string[] = [];
    const handler = log.screened(
      () => bound,
      (subject) => handled.push(subject),
    );
    const responded: number[] = [];
    const port = (replySubject: string | null): ReplyPort => ({ respond: () => responded.push(1) > 0, replySubject });
    handler('tokenlease.v2.acquire.api.checkout', payload, port('_INBOX_checkout.abc.1'));
    handler('tokenlease.v2.report.api.checkout', payload, port(null));
    for (let i = 0; i < 300; i += 1) handler('tokenlease.v2.acquire.api.checkout', payload, port(`_INBOX_search.stolen${i}`));
    expect(handled).toEqual(['tokenlease.v2.acquire.api.checkout', 'tokenlease.v2.report.api.checkout']);
    expect(responded).toEqual([]);
    expect(drops).toHaveLength(300);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({ event: 'request-dropped', pool: 'api', code: 'reply-elsewhere', refusedBefore: 0 });
    expect(String(lines[0]?.['reason'])).toContain('is not under identity "checkout"');
    clock.ms = 1000;
    log.flush();
    expect(lines[1]).toMatchObject({ event: 'request-dropped', pool: 'api', code: 'reply-elsewhere', refused: 299 });
    expect(JSON.stringify(lines)).not.toContain(secret);
  });
});
