/**
 * Log lines read as data: lines as the coordinator (pino) and agent
 * processes print them, matched by their fields; and every event name the
 * tools wait for is one the coordinator really logs: its adapters, or the
 * log commands of its drivers (ownership, relay) that the adapters carry out.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import { COORDINATOR_EVENTS, logEvents, matchesFields, parseLogLine } from './log-events.js';

const POOL_OWNED = '{"level":30,"time":1764500000000,"pid":7,"event":"pool-owned","pool":"api","epoch":3,"leases":1,"msg":"pool owned"}';
const RECONNECT =
  '{"level":40,"time":1764500000001,"event":"nats-connection","connection":{"type":"reconnect","server":"127.0.0.1:4222"},"msg":"nats connection event"}';
const AGENT_RECONNECT = '{"type":"event","name":"agent0","event":"reconnect"}';
const READY = '{"type":"ready","name":"agent0","pid":9,"agentId":"agent0-9"}';

describe('parseLogLine', () => {
  it.each<[string, string, boolean]>([
    ['a pino line', POOL_OWNED, true],
    ['an agent line', READY, true],
    ['plain text', 'coordinator serving', false],
    ['a JSON array', '[1,2]', false],
    ['broken JSON', '{"event":', false],
    ['a JSON string', '"serving"', false],
  ])('%s', (_name, line, parsed) => {
    expect(parseLogLine(line) !== null).toBe(parsed);
  });
});

describe('matching lines by their fields', () => {
  const lines = ['coordinator serving', POOL_OWNED, RECONNECT, AGENT_RECONNECT, READY];

  it.each<[string, Parameters<typeof logEvents>[1], number[]]>([
    ['a coordinator event', { event: 'pool-owned' }, [1]],
    ['a coordinator event of one pool', { event: 'pool-owned', pool: 'api' }, [1]],
    ['not another pool', { event: 'pool-owned', pool: 'search' }, []],
    ['a number field', { event: 'pool-owned', epoch: 3 }, [1]],
    ['a nested field', { event: 'nats-connection', connection: { type: 'reconnect' } }, [2]],
    ['not another nested value', { event: 'nats-connection', connection: { type: 'disconnect' } }, []],
    ["an agent's event line", { type: 'event', event: 'reconnect' }, [3]],
    ["an agent's ready line", { type: 'ready' }, [4]],
  ])('%s', (_name, match, indices) => {
    expect(logEvents(lines, match).map((e) => e.index)).toEqual(indices);
  });

  it('never matches on the words of a message', () => {
    expect(logEvents(['{"msg":"pool owned","pool":"api"}'], { event: 'pool-owned' })).toEqual([]);
  });

  it('does not take a field from the prototype, or a nested match from a plain value', () => {
    expect(matchesFields({}, { toString: 'x' })).toBe(false);
    expect(matchesFields({ connection: 'reconnect' }, { connection: { type: 'reconnect' } })).toBe(false);
  });
});

describe('the coordinator event names', () => {
  it("are all logged by the coordinator's adapters or its drivers' log commands", () => {
    const dist = dirname(createRequire(import.meta.url).resolve('@tokenlease/coordinator'));
    const logged = new Set<string>();
    for (const folder of [join(dist, 'adapters'), join(dist, 'core')]) {
      for (const file of readdirSync(folder).filter((name) => name.endsWith('.js'))) {
        for (const [, name] of readFileSync(join(folder, file), 'utf8').matchAll(/\bevent: '([a-z-]+)'/g)) logged.add(name ?? '');
      }
    }
    expect(COORDINATOR_EVENTS.filter((name) => !logged.has(name))).toEqual([]);
  });
});
