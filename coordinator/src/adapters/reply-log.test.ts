/** ReplyLog: refusals logged once per pool and code per interval, with the count held back. */
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import type { Reply } from '@tokenlease/shared';
import type { ReplyPort } from '@tokenlease/shared/nats';
import type { Delivery } from '../core/pool.js';
import { REFUSAL_KEYS_MAX, ReplyLog } from './reply-log.js';

function setup(): { log: ReplyLog; lines: Array<Record<string, unknown>>; clock: { ms: number }; sent: number[] } {
  const lines: Array<Record<string, unknown>> = [];
  const logger = pino({ level: 'debug' }, { write: (line: string) => lines.push(JSON.parse(line) as Record<string, unknown>) });
  const clock = { ms: 0 };
  return { log: new ReplyLog(logger, 'tokenlease', () => clock.ms, 1000), lines, clock, sent: [] };
}

const refusal = (sent: number[], code: 'bad-request' | 'unknown-pool'): Delivery<ReplyPort> => {
  const reply: Reply = { v: 2, kind: 'error', seq: 1, code, fault: 'peer', message: 'no', retryAfterMs: 0 };
  return { to: { respond: (bytes: Uint8Array) => sent.push(bytes.byteLength) > 0 }, reply };
};

describe('ReplyLog', () => {
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

  it('counts refusals of pools beyond REFUSAL_KEYS_MAX under pool "*"', () => {
    const { log, lines, sent } = setup();
    for (let i = 0; i < REFUSAL_KEYS_MAX + 50; i += 1) log.send([refusal(sent, 'unknown-pool')], 0, { pool: `p${i}` });
    expect(lines).toHaveLength(REFUSAL_KEYS_MAX + 1);
    expect(lines.at(-1)).toMatchObject({ pool: '*', code: 'unknown-pool' });
  });
});
