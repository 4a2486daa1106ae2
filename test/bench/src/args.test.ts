/**
 * The bench's command line: --json, --quick and --help, and one clear line for
 * anything else.
 */
import { describe, expect, it } from 'vitest';
import { thrown } from '@tokenlease/shared/testing';
import { BenchArgsError, parseBenchArgs, type BenchArgs } from './args.js';

describe('parseBenchArgs', () => {
  it.each<[string[], BenchArgs]>([
    [[], { json: false, quick: false, help: false }],
    [['--json'], { json: true, quick: false, help: false }],
    [['--quick', '--json'], { json: true, quick: true, help: false }],
    [['-h'], { json: false, quick: false, help: true }],
    [['--help', '--json'], { json: true, quick: false, help: true }],
  ])('%j', (argv, expected) => {
    expect(parseBenchArgs(argv)).toEqual(expected);
  });

  it.each<[string[], string]>([
    [['--fast'], "Unknown option '--fast'"],
    [['json'], 'see --help'],
    [['--json=yes'], 'see --help'],
  ])('refuses %j on one line', (argv, fragment) => {
    const error = thrown(BenchArgsError, () => parseBenchArgs(argv));
    expect(error.message).toContain(fragment);
    expect(error.message).not.toContain('\n');
  });
});
