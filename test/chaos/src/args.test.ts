/**
 * The chaos runner's command line: scenarios by the names their rows
 * print, and one clear line for anything else.
 */
import { describe, expect, it } from 'vitest';
import { thrown } from '@tokenlease/shared/testing';
import { ChaosArgsError, CHAOS_USAGE, parseChaosArgs, SCENARIO_NAMES, type ChaosArgs } from './args.js';
import { SCENARIOS } from './scenarios.js';

const refusal = (argv: string[]): ChaosArgsError => thrown(ChaosArgsError, () => parseChaosArgs(argv));

describe('parseChaosArgs', () => {
  it.each<[string[], Partial<ChaosArgs>]>([
    [[], { only: [...SCENARIO_NAMES], short: false, json: false, seed: null, help: false }],
    [['--short', '--only', 'kill-agents,pause-agent'], { only: ['kill-agents', 'pause-agent'], short: true }],
    [['--only', 'churn-agents,kill-agents,churn-agents'], { only: ['churn-agents', 'kill-agents'] }],
    [['--seed', '7', '--json'], { seed: 7, json: true }],
    [['--seed', '4294967295'], { seed: 2 ** 32 - 1 }],
    [['-h'], { help: true }],
  ])('%j', (argv, expected) => {
    expect(parseChaosArgs(argv)).toMatchObject(expected);
  });

  it.each<[string[], string, string]>([
    [['--only', 'killAgents'], '--only', 'unknown scenario "killAgents"; known: kill-agents, pause-agent, restart-nats'],
    [['--only', 'kill-agents,bogus'], '--only', 'unknown scenario "bogus"'],
    [['--only', ''], '--only', 'unknown scenario ""'],
    [['--seed', 'seven'], '--seed', 'whole number'],
    [['--seed', '-1'], '(arguments)', 'see --help'],
    [['--seed', '4294967296'], '--seed', '[0, 4294967295]'],
    [['--fast'], '(arguments)', "Unknown option '--fast'"],
    [['kill-agents'], '(arguments)', 'see --help'],
  ])('refuses %j on one line naming %s', (argv, flag, fragment) => {
    const error = refusal(argv);
    expect(error.flag).toBe(flag);
    expect(error.message).toContain(fragment);
    expect(error.message).not.toContain('\n');
  });

  it('names every scenario the runner has, and the usage lists them', () => {
    expect(Object.keys(SCENARIOS).sort()).toEqual([...SCENARIO_NAMES].sort());
    for (const name of SCENARIO_NAMES) expect(CHAOS_USAGE).toContain(name);
  });
});
