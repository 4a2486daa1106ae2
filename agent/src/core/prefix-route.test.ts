import { describe, expect, it } from 'vitest';
import { FAILOVER_AFTER, PrefixRoute } from './prefix-route.js';

describe('PrefixRoute', () => {
  it('moves to the next prefix after requests in a row that nobody answered, and round to the first after the last', () => {
    const route = new PrefixRoute(['relay-a', 'relay-b', 'root']);
    expect(route.prefix).toBe('relay-a');
    for (let i = 1; i < FAILOVER_AFTER; i += 1) expect(route.failed('bus-no-responders')).toBe(false);
    expect(route.failed('bus-timeout')).toBe(true);
    expect(route.prefix).toBe('relay-b');
    for (let i = 0; i < FAILOVER_AFTER * 2; i += 1) route.failed('bus-timeout');
    expect(route.prefix).toBe('relay-a');
  });

  it('starts counting again at any reply, and never moves for other failures or with one prefix', () => {
    const route = new PrefixRoute(['relay-a', 'root']);
    for (let i = 1; i < FAILOVER_AFTER; i += 1) route.failed('bus-timeout');
    route.answered();
    for (let i = 1; i < FAILOVER_AFTER; i += 1) expect(route.failed('bus-timeout')).toBe(false);
    expect(route.prefix).toBe('relay-a');
    const other = new PrefixRoute(['relay-a', 'root']);
    for (let i = 0; i < 5; i += 1) expect(other.failed('bus-closed')).toBe(false);
    const single = new PrefixRoute(['root']);
    for (let i = 0; i < 5; i += 1) expect(single.failed('bus-no-responders')).toBe(false);
    expect(single.prefix).toBe('root');
  });
});
