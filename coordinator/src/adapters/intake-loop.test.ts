/**
 * The intake loop on its own: requests handled a slice at a time in turns
 * per identity, a full intake's shed request answered `unavailable` with
 * its seq (or dropped unanswered where screening would drop it), a handler
 * that throws logged and the loop going on, operator requests left to
 * operations.ts, `drainNow` handling all, `afterSlice` called once a
 * slice that handled something, and `readAhead` given each batch before
 * it is handled.
 */
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { decodeReply } from '@tokenlease/shared';
import type { ReplyPort } from '@tokenlease/shared/nats';
import { parseCoordinatorConfig } from '../core/config.js';
import { READ_AHEAD_MAX } from '../core/read-ahead.js';
import { intakeLoop } from './intake-loop.js';
import { ReplyLog } from './reply-log.js';

const open = parseCoordinatorConfig('intake.yaml', { pools: { api: { capacity: 10, refill: '10/s' } } });
const bound = parseCoordinatorConfig('intake.yaml', { bindIdentity: true, pools: { api: { capacity: 10, refill: '10/s' } } });

function setup(config = open, capacity = 100, afterSlice: () => void = () => {}, readAhead?: (payloads: readonly Uint8Array[]) => void) {
  const replies = new ReplyLog(pino({ level: 'silent' }), 'tokenlease', () => 0);
  const handled: string[] = [];
  const failures: string[] = [];
  const logger = pino(
    { level: 'error' },
    {
      write: (line: string) => {
        const { subject, err } = JSON.parse(line) as { subject: string; err: { message: string } };
        failures.push(`${subject}: Error: ${err.message}`);
      },
    },
  );
  const loop = intakeLoop(
    replies,
    () => config,
    () => 0,
    logger,
    { capacity, afterSlice, ...(readAhead === undefined ? {} : { readAhead }) },
  );
  const take = loop.through((_subject, payload) => {
    const text = new TextDecoder().decode(payload);
    if (text === 'throw') throw new Error('broken');
    handled.push(text);
  });
  return { loop, take, handled, failures };
}

const subject = (identity: string): string => `tokenlease.v2.acquire.api.${identity}`;
const bytes = (text: string): Uint8Array => new TextEncoder().encode(text);
const port = (replySubject: string | null, answers: Uint8Array[] = []): ReplyPort => ({
  respond: (b) => answers.push(b) > 0,
  replySubject,
});
const turn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

describe('intakeLoop', () => {
  it('handles nothing while taking in, then each identity in turn', async () => {
    const { take, handled } = setup();
    for (let i = 0; i < 3; i += 1) take(subject('flood'), bytes(`f${i}`), port(null));
    take(subject('quiet'), bytes('q0'), port(null));
    expect(handled).toEqual([]);
    await turn();
    await turn();
    expect(handled).toEqual(['f0', 'q0', 'f1', 'f2']);
  });

  it('answers a shed request unavailable with its seq, at once, and never handles it', async () => {
    const { take, handled } = setup(open, 2);
    const answers: Uint8Array[] = [];
    for (let seq = 1; seq <= 3; seq += 1) take(subject('flood'), bytes(`{"seq":${seq}}`), port('_INBOX.flood', answers));
    expect(answers).toHaveLength(1);
    const reply = decodeReply(answers[0] ?? new Uint8Array());
    expect(reply.ok && reply.value).toMatchObject({ kind: 'error', code: 'unavailable', seq: 3, retryAfterMs: 250 });
    await turn();
    expect(handled).toEqual(['{"seq":1}', '{"seq":2}']);
  });

  it('with bound identities, drops a shed request whose reply names another identity’s inbox, unanswered', () => {
    const { take } = setup(bound, 1);
    const answers: Uint8Array[] = [];
    take(subject('flood'), bytes('{"seq":1}'), port('_INBOX_flood.a'));
    take(subject('flood'), bytes('{"seq":2}'), port('_INBOX_victim.a', answers));
    expect(answers).toEqual([]);
  });

  it('logs a handler that throws and goes on with the next request', async () => {
    const { take, handled, failures } = setup();
    take(subject('a'), bytes('throw'), port(null));
    take(subject('b'), bytes('after'), port(null));
    // Logging the first error may take the whole 5 ms slice: the next request comes in the next one.
    await turn();
    await turn();
    expect(failures).toEqual([`${subject('a')}: Error: broken`]);
    expect(handled).toEqual(['after']);
  });

  it('leaves operator requests alone unless told to take them (a legacy subscription)', async () => {
    const { loop, take, handled } = setup();
    take('tokenlease.v2.pools._.ops', bytes('listing'), port(null));
    const legacy = loop.through((_subject, payload) => handled.push(new TextDecoder().decode(payload)), true);
    legacy('tokenlease.v2.pools._.ops', bytes('legacy'), port(null));
    await turn();
    expect(handled).toEqual(['legacy']);
  });

  it('drainNow handles everything taken in, in turns', () => {
    const { loop, take, handled } = setup();
    take(subject('a'), bytes('a0'), port(null));
    take(subject('a'), bytes('a1'), port(null));
    take(subject('b'), bytes('b0'), port(null));
    loop.drainNow();
    expect(handled).toEqual(['a0', 'b0', 'a1']);
  });

  it('calls afterSlice once after each slice that handled requests, after the last of them, and not for an empty turn', async () => {
    const log: string[] = [];
    const { loop, take, handled } = setup(open, 100, () => log.push(`after ${handled.length}`));
    take(subject('a'), bytes('a0'), port(null));
    take(subject('b'), bytes('b0'), port(null));
    await turn();
    expect(log).toEqual(['after 2']);
    await turn();
    expect(log).toEqual(['after 2']);
    take(subject('a'), bytes('a1'), port(null));
    loop.drainNow();
    expect(log).toEqual(['after 2', 'after 3']);
    loop.drainNow();
    expect(log).toEqual(['after 2', 'after 3']);
  });

  it('with readAhead, hands it each batch of up to READ_AHEAD_MAX payloads, in the order they are then handled, before the first', () => {
    const text = (payload: Uint8Array): string => new TextDecoder().decode(payload);
    // The handler and readAhead write to one list, so it shows which came first.
    const run = setup(
      open,
      100,
      () => {},
      (payloads) => run.handled.push(`ahead ${payloads.map(text).join(' ')}`),
    );
    const { loop, take, handled } = run;
    const count = READ_AHEAD_MAX + 8;
    for (let i = 0; i < count / 2; i += 1) take(subject('a'), bytes(`a${i}`), port(null));
    for (let i = 0; i < count / 2; i += 1) take(subject('b'), bytes(`b${i}`), port(null));
    loop.drainNow();
    const order = Array.from({ length: count / 2 }, (_, i) => [`a${i}`, `b${i}`]).flat();
    const first = order.slice(0, READ_AHEAD_MAX);
    const rest = order.slice(READ_AHEAD_MAX);
    expect(handled).toEqual([`ahead ${first.join(' ')}`, ...first, `ahead ${rest.join(' ')}`, ...rest]);
  });

  it('logs a readAhead that throws and still handles its batch', () => {
    const { loop, take, handled, failures } = setup(
      open,
      100,
      () => {},
      () => {
        throw new Error('unreadable');
      },
    );
    take(subject('a'), bytes('a0'), port(null));
    take(subject('b'), bytes('b0'), port(null));
    loop.drainNow();
    expect(failures).toEqual(['undefined: Error: unreadable']);
    expect(handled).toEqual(['a0', 'b0']);
  });
});
