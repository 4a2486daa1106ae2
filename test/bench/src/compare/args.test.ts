/**
 * The comparison's command line: defaults, each flag, and one clear line
 * for anything it refuses.
 */
import { describe, expect, it } from 'vitest';
import { thrown } from '@tokenlease/shared/testing';
import { CompareArgsError, PARTS, parseCompareArgs } from './args.js';
import { BASELINE, SYSTEMS, WINDOW_BASELINE, WINDOW_SYSTEMS } from './systems.js';

const ALL = [...SYSTEMS, ...WINDOW_SYSTEMS].map((s) => s.name);

describe('parseCompareArgs', () => {
  it('runs every system and part for 10 s by default', () => {
    expect(parseCompareArgs([])).toEqual({
      durationMs: 10_000,
      systems: ALL,
      saturationSystems: ALL,
      parts: [...PARTS],
      treeAgents: 10_000,
      measureMs: null,
      json: false,
      help: false,
    });
  });

  it.each<[string[], Partial<ReturnType<typeof parseCompareArgs>>]>([
    [['--duration', '2'], { durationMs: 2000 }],
    [['--duration', '0.5'], { durationMs: 500 }],
    [['--duration', '600'], { durationMs: 600_000 }],
    [['--json'], { json: true }],
    [['-h'], { help: true }],
    [['--only', 'redis-lua'], { systems: [BASELINE, 'redis-lua', WINDOW_BASELINE] }],
    [['--only', 'local-buckets,rlf-redis'], { systems: [BASELINE, 'rlf-redis', 'local-buckets', WINDOW_BASELINE] }],
    [['--only', BASELINE], { systems: [BASELINE, WINDOW_BASELINE] }],
    [['--only', 'redis-window-log'], { systems: [BASELINE, WINDOW_BASELINE, 'redis-window-log'] }],
    [['--only', 'tokenlease-window-lease-20'], { systems: [BASELINE, WINDOW_BASELINE, 'tokenlease-window-lease-20'] }],
    [['--only', 'tokenlease-window-reports'], { systems: [BASELINE, WINDOW_BASELINE, 'tokenlease-window-reports'] }],
    [['--parts', 'capacity,fleet'], { parts: ['fleet', 'capacity'] }],
    [['--parts', 'tree,saturation'], { parts: ['saturation', 'tree'] }],
    [['--parts', 'window'], { parts: ['window'] }],
    [['--parts', 'tree', '--tree-agents', '20000'], { parts: ['tree'], treeAgents: 20_000 }],
    [
      ['--quick'],
      {
        durationMs: 1000,
        treeAgents: 1000,
        measureMs: 500,
        saturationSystems: [BASELINE, 'redis-lua', WINDOW_BASELINE, 'redis-window-log'],
      },
    ],
    [
      ['--quick', '--only', 'rlf-redis'],
      { systems: [BASELINE, 'rlf-redis', WINDOW_BASELINE], saturationSystems: [BASELINE, WINDOW_BASELINE] },
    ],
    [['--quick', '--duration', '2', '--tree-agents', '3000'], { durationMs: 2000, treeAgents: 3000, measureMs: 500 }],
  ])('%j', (argv, expected) => {
    expect(parseCompareArgs(argv)).toMatchObject(expected);
  });

  it.each<[string[], string]>([
    [['--fast'], "Unknown option '--fast'"],
    [['json'], 'see --help'],
    [['--duration', '0'], '--duration'],
    [['--duration', '601'], '--duration'],
    [['--duration', '-1'], '--duration'],
    [['--duration', '1e3'], '--duration'],
    [['--duration', 'ten'], '--duration'],
    [['--only', 'redis'], '--only: unknown ["redis"]'],
    [['--only', ''], '--only'],
    [['--parts', 'fleet,all'], '--parts: unknown ["all"]'],
    [['--tree-agents', '0'], '--tree-agents'],
    [['--tree-agents', '100001'], '--tree-agents'],
    [['--tree-agents', '1e4'], '--tree-agents'],
  ])('refuses %j on one line', (argv, fragment) => {
    const error = thrown(CompareArgsError, () => parseCompareArgs(argv));
    expect(error.message).toContain(fragment);
    expect(error.message).not.toContain('\n');
  });
});
