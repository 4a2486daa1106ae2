import { describe, expect, it } from 'vitest';
import {
  anchorOf,
  commandReference,
  defaultText,
  flagsText,
  HELP_WIDTH,
  INFO_GROUP,
  knobCount,
  optionsHelp,
  settingsTable,
  valueText,
} from './command-line-text.js';
import type { CommandLine, Setting, SettingGroup } from './command-line.js';
import { filePath, integerIn, oneOf, text } from './setting-values.js';

const LEVEL: Setting = {
  flag: 'level',
  env: 'X_LEVEL',
  value: oneOf(['info', 'debug'], 'level'),
  default: 'info',
  description: 'how much',
};
const WAIT: Setting = {
  flag: 'wait-ms',
  env: 'X_WAIT_MS',
  value: integerIn(1, 500, 'ms'),
  default: { derived: 'a tenth of the TTL' },
  description: 'how long to wait for a server to accept the connection and the login, per server, however slow it is to answer',
};
const KEY: Setting = { flag: 'key', short: 'k', value: filePath('PEM file'), required: true, secret: 'file', description: 'the key' };
const PASSWORD: Setting = { flag: 'password', env: 'X_PASSWORD', value: text('pw', 'text'), secret: 'value', description: 'a | b' };
const SWITCH: Setting = { flag: 'memory', value: null, description: 'no store' };
const ALONE: Setting = { flag: null, env: 'X_ALONE', value: text('v', 'text'), description: 'read alone' };

const SHARED: SettingGroup = { title: 'Shared group', settings: [WAIT, PASSWORD] };
const FIRST: CommandLine = {
  bin: 'first',
  synopsis: '--key <file> [options]',
  summary: 'The first.',
  groups: [{ title: 'First', settings: [KEY, LEVEL, SWITCH, ALONE] }, SHARED, INFO_GROUP],
};
const SECOND: CommandLine = {
  bin: 'second',
  synopsis: '[options]',
  summary: 'The second.',
  groups: [{ title: 'Second', settings: [LEVEL] }, SHARED, INFO_GROUP],
};

describe('what a setting reads as', () => {
  it.each<[string, Setting, string, string, string]>([
    ['an enum: its values, from its JSON Schema', LEVEL, '`info`, `debug`', '`info`', '--level <level>'],
    [
      'an integer: its range and unit, from its JSON Schema; a derived default in words',
      WAIT,
      'integer of ms in [1, 500]',
      'a tenth of the TTL',
      '--wait-ms <ms>',
    ],
    ['a file holding a secret, required, with a short flag', KEY, 'PEM file; holds a secret', 'required', '-k, --key <file>'],
    ['a secret, with no default', PASSWORD, 'text; a secret', '—', '--password <pw>'],
    ['a switch', SWITCH, 'none: a switch', '—', '--memory'],
    ['a variable read alone', ALONE, 'text', '—', ''],
  ])('%s', (_name, setting, value, fallback, flags) => {
    expect([valueText(setting), defaultText(setting), flagsText(setting)]).toEqual([value, fallback, flags]);
  });
});

describe('optionsHelp', () => {
  const help = optionsHelp(FIRST);
  it('lists every group and flag, each flag with its variable beside it and then what it does, its value and default', () => {
    expect(help).toContain('First:\n  -k, --key <file>\n      the key (PEM file; holds a secret; required)\n');
    expect(help).toContain('  --level <level>   X_LEVEL\n      how much (info, debug; default: info)\n');
    expect(help).toContain('  (no flag)         X_ALONE\n');
    expect(help).toContain('Information:\n  -h, --help\n');
  });

  it(`wraps what a setting does at ${HELP_WIDTH} columns, indented`, () => {
    const lines = help.split('\n');
    expect(Math.max(...lines.map((line) => line.length))).toBeLessThanOrEqual(HELP_WIDTH);
    const wait = lines.findIndex((line) => line.startsWith('  --wait-ms'));
    expect(lines.slice(wait + 1, wait + 3).every((line) => line.startsWith('      '))).toBe(true);
    expect(help).not.toContain('`');
  });
});

describe('the reference', () => {
  it('is a table per group, cells escaped', () => {
    expect(settingsTable([PASSWORD])).toEqual([
      '| flag | environment | value | default | description |',
      '| --- | --- | --- | --- | --- |',
      '| `--password <pw>` | `X_PASSWORD` | text; a secret | — | a \\| b |',
    ]);
    expect(settingsTable([KEY, ALONE]).slice(2)).toEqual([
      '| `-k`, `--key <file>` |  | PEM file; holds a secret | required | the key |',
      '| none | `X_ALONE` | text | — | read alone |',
    ]);
  });

  it('shows a shared group once, under the first command, and links it from the next', () => {
    const shown = new Map<SettingGroup, string>();
    const first = commandReference(FIRST, shown);
    const second = commandReference(SECOND, shown);
    expect(first).toContain('### Shared group');
    expect(second).not.toContain('### Shared group');
    expect(second).toContain('Shared group: the 2 settings of [Shared group](#shared-group) above.');
    expect(first.slice(0, 5)).toEqual(['## first', '', 'The first.', '', '`first --key <file> [options]`']);
    expect(first.at(-1)).toBe(
      '5 flags and 4 environment variables (1 of them without a flag), and `-h`, `--help` (the usage, every option, examples) and `-V`, `--version`.',
    );
  });

  it('counts knobs without --help and --version', () => {
    expect(knobCount(FIRST)).toEqual({ flags: 5, variables: 4, variablesAlone: 1 });
    expect(knobCount(SECOND)).toEqual({ flags: 3, variables: 3, variablesAlone: 0 });
  });

  it('links headings as GitHub anchors them', () => {
    expect(anchorOf('Durable mode')).toBe('durable-mode');
    expect(anchorOf('NATS')).toBe('nats');
  });
});
