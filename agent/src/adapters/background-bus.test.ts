/**
 * BackgroundBus: requests fail at once until the connection is made, the
 * attempts go on (and are told) until one succeeds, subscriptions and
 * listeners asked for before it are carried over, and closing stops it.
 */
import { describe, expect, it } from 'vitest';
import type { Bus, BusEvent, BusHandler } from '@tokenlease/shared/nats';
import { BackgroundBus } from './background-bus.js';

/** A connected bus that answers every request with `answer` and records what it was asked. */
function fakeBus(answer: Uint8Array): Bus & { served: string[]; listeners: number; closed: boolean } {
  const fake = {
    served: [] as string[],
    listeners: 0,
    closed: false,
    request: () => Promise.resolve(answer),
    gather: () => Promise.resolve([answer]),
    publish: () => true,
    serve: (subject: string, _queue: string | null, _handler: BusHandler) => {
      fake.served.push(subject);
      return { stop: () => Promise.resolve() };
    },
    onEvent: () => {
      fake.listeners += 1;
    },
    flush: () => Promise.resolve(),
    drain: () => Promise.resolve(),
    close: () => {
      fake.closed = true;
      return Promise.resolve();
    },
  };
  return fake;
}

const until = async (done: () => boolean, ms = 5000): Promise<void> => {
  for (const end = Date.now() + ms; !done() && Date.now() < end;) await new Promise((resolve) => setTimeout(resolve, 10));
};

describe('BackgroundBus', () => {
  it('fails requests until connected, tells each failed attempt, then carries subscriptions and listeners over', async () => {
    const answer = new Uint8Array([1]);
    const inner = fakeBus(answer);
    let attempts = 0;
    const bus = new BackgroundBus(() => {
      attempts += 1;
      return attempts < 3 ? Promise.reject(new Error(`attempt ${attempts} refused`)) : Promise.resolve(inner);
    }, 'nats://127.0.0.1:1');
    const events: BusEvent[] = [];
    bus.onEvent((e) => events.push(e));
    bus.serve('a.>', null, () => undefined);
    const stopped = bus.serve('b.>', null, () => undefined);
    await stopped.stop();
    await expect(bus.request('x', new Uint8Array(), 100)).rejects.toMatchObject({ code: 'bus-no-responders' });
    expect(bus.publish('x', new Uint8Array())).toBe(false);
    await until(() => bus.connected);
    expect(bus.connected).toBe(true);
    expect(attempts).toBe(3);
    expect(events).toEqual([
      { type: 'error', message: 'attempt 1 refused' },
      { type: 'error', message: 'attempt 2 refused' },
      { type: 'reconnect', server: 'nats://127.0.0.1:1' },
    ]);
    expect(inner.served).toEqual(['a.>']);
    expect(inner.listeners).toBe(1);
    await expect(bus.request('x', new Uint8Array(), 100)).resolves.toBe(answer);
    await bus.close();
    expect(inner.closed).toBe(true);
  });

  it('stops trying when closed, and closes a connection that comes after', async () => {
    let attempts = 0;
    const bus = new BackgroundBus(() => {
      attempts += 1;
      return Promise.reject(new Error('down'));
    }, 'nats://127.0.0.1:1');
    await until(() => attempts >= 1);
    await bus.close();
    const seen = attempts;
    await new Promise((resolve) => setTimeout(resolve, 700));
    expect(attempts).toBe(seen);

    const late = fakeBus(new Uint8Array());
    let resolveOpen: (bus: Bus) => void = () => undefined;
    const closing = new BackgroundBus(() => new Promise<Bus>((resolve) => (resolveOpen = resolve)), 'nats://127.0.0.1:1');
    await closing.close();
    resolveOpen(late);
    await until(() => late.closed);
    expect(late.closed).toBe(true);
    expect(closing.connected).toBe(false);
  });
});
