import { describe, expect, it } from 'vitest';
import { onlineReplicas, replicaShortfall, slotRanges, type PrimaryReplicas } from './replica-shortfall.js';

const info = (...slaves: string[]): string =>
  [
    '# Replication',
    'role:master',
    `connected_slaves:${slaves.length}`,
    ...slaves.map((s, i) => `slave${i}:${s}`),
    'master_repl_offset:42',
    '',
  ].join('\r\n');

describe('onlineReplicas', () => {
  it.each<[string, string, number | null]>([
    ['no replica', info(), 0],
    ['one online', info('ip=127.0.0.1,port=7001,state=online,offset=42,lag=0'), 1],
    [
      'one online, one still syncing',
      info('ip=127.0.0.1,port=7001,state=online,offset=42,lag=0', 'ip=127.0.0.1,port=7002,state=wait_bgsave,offset=0,lag=0'),
      1,
    ],
    ['a state that only ends in online', info('ip=h,port=1,state=notonline,offset=0,lag=0'), 0],
    ['a replica of a replica (role:slave, no connected_slaves)', '# Replication\r\nrole:slave\r\nmaster_host:h\r\n', null],
    ['not INFO at all', 'ERR unknown command', null],
    ['empty', '', null],
  ])('%s', (_name, text, expected) => {
    expect(onlineReplicas(text)).toBe(expected);
  });
});

describe('slotRanges', () => {
  const slots = [['a:1', 'r:1'], ['a:1'], ['b:2'], undefined, ['a:1'], ['b:2'], ['a:1']];
  it.each<[string, string]>([
    ['a:1', '0-1,4,6'],
    ['b:2', '2,5'],
    ['r:1', ''],
    ['c:3', ''],
  ])('%s serves %j', (node, expected) => {
    expect(slotRanges(slots, node)).toBe(expected);
  });
});

describe('replicaShortfall', () => {
  const p = (node: string, replicas: number | null, slots = ''): PrimaryReplicas => ({ node, slots, replicas });

  it.each<[string, number, PrimaryReplicas[]]>([
    ['no confirmation asked', 0, [p('h:1', 0)]],
    ['every primary has enough', 1, [p('h:1', 1, '0-8191'), p('h:2', 2, '8192-16383')]],
    ['a primary that would not say', 2, [p('h:1', null)]],
    ['no primary at all', 1, []],
  ])('says nothing: %s', (_name, required, primaries) => {
    expect(replicaShortfall(required, primaries)).toBeNull();
  });

  it('names the single Redis that has too few, and what follows', () => {
    expect(replicaShortfall(1, [p('10.0.0.1:6379', 0)])).toBe(
      'each write must be confirmed by 1 replica (--redis-replicas 1), but 10.0.0.1:6379 has 0 online: every write to this primary ' +
        'will be refused as unavailable, and nothing granted from its pools, until enough replicas confirm it',
    );
  });

  it('names each short primary of a cluster with its slots, and only those', () => {
    const warning = replicaShortfall(2, [p('h:1', 1, '0-5460'), p('h:2', 2, '5461-10922'), p('h:3', 0, '10923-16383')]) ?? '';
    expect(warning).toContain('(--redis-replicas 2)');
    expect(warning).toContain('h:1 (slots 0-5460) has 1 online; h:3 (slots 10923-16383) has 0 online: every write to these primaries');
    expect(warning).not.toContain('h:2');
  });

  it('names at most eight primaries and counts the rest', () => {
    const many = Array.from({ length: 11 }, (_, i) => p(`h:${i}`, 0, String(i)));
    const warning = replicaShortfall(1, many) ?? '';
    expect(warning).toContain('h:7 (slots 7) has 0 online, and 3 more primaries:');
    expect(warning).not.toContain('h:8 ');
  });
});
