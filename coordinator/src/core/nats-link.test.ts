/** NatsLink: up from the start, down on a disconnect, up on a reconnect, unmoved by anything else. */
import { describe, expect, it } from 'vitest';
import { NatsLink } from './nats-link.js';

describe('NatsLink', () => {
  it('starts up', () => {
    expect(new NatsLink().up).toBe(true);
  });

  it.each([
    ['a disconnect puts it down', ['disconnect'], [false]],
    ['a reconnect brings it back', ['disconnect', 'reconnect'], [false, true]],
    ['an error leaves it up', ['error'], [true]],
    ['an error leaves it down', ['disconnect', 'error'], [false, false]],
    ['a second disconnect changes nothing', ['disconnect', 'disconnect', 'reconnect'], [false, false, true]],
    ['a reconnect while up changes nothing', ['reconnect', 'disconnect'], [true, false]],
    ['an event it does not know leaves it as it was', ['disconnect', 'staleConnection'], [false, false]],
  ])('%s; each event says where it left it', (_what, events, said) => {
    const link = new NatsLink();
    expect(events.map((type) => link.event(type))).toEqual(said);
    expect(link.up).toBe(said.at(-1));
  });
});
