import { describe, expect, it } from 'vitest';
import { checkSetting, commandSettings, INFO_GROUP, knobCount, optionsHelp, type CommandLine } from '@tokenlease/shared/command-line';
import { COMMAND_LINES, COORDINATOR_COMMAND, OPERATOR_COMMAND, RELAY_COMMAND } from './command-lines.js';

const NATS_FLAGS = [
  'nats',
  'nats-user',
  'nats-password',
  'nats-token',
  'nats-nkey',
  'nats-creds',
  'nats-ca',
  'nats-cert',
  'nats-key',
  'nats-inbox-prefix',
  'nats-connect-timeout-ms',
];

/** FLAGS_BEFORE — every flag each bin took before its command line was described once (issue #30): none may go without an alias. */
const FLAGS_BEFORE: ReadonlyMap<CommandLine, readonly string[]> = new Map([
  [
    COORDINATOR_COMMAND,
    [
      'config',
      'log-level',
      ...NATS_FLAGS,
      'redis',
      'redis-user',
      'redis-password',
      'redis-ca',
      'redis-cert',
      'redis-key',
      'redis-replicas',
      'redis-replica-timeout-ms',
      'memory',
      'ownership-ttl-ms',
      'member',
      'redis-prefix',
      'http',
      'grant-signing-key',
      'help',
      'version',
    ],
  ],
  [RELAY_COMMAND, ['config', 'relay-id', 'log-level', 'http', 'grant-signing-key', ...NATS_FLAGS, 'help', 'version']],
  [
    OPERATOR_COMMAND,
    [...NATS_FLAGS, 'json', 'prefix', 'identity', 'agent', 'timeout-ms', 'window-ms', 'interval-ms', 'count', 'help', 'version'],
  ],
]);

describe.each(COMMAND_LINES.map((command) => [command.bin, command] as const))('%s', (_bin, command) => {
  const settings = commandSettings(command);

  it('keeps every flag it took, and has no flag, short flag or variable twice', () => {
    const flags = settings.flatMap((s) => (s.flag === null ? [] : [s.flag]));
    expect(flags).toEqual(expect.arrayContaining([...(FLAGS_BEFORE.get(command) ?? [])]));
    for (const names of [
      flags,
      settings.flatMap((s) => (s.short === undefined ? [] : [s.short])),
      settings.flatMap((s) => (s.env === undefined ? [] : [s.env])),
    ]) {
      expect(new Set(names).size).toBe(names.length);
    }
    expect(command.groups).toContain(INFO_GROUP);
  });

  it('has defaults its own forms take', () => {
    for (const setting of settings) {
      if (typeof setting.default !== 'string' || setting.value === null) continue;
      expect(checkSetting(setting, `--${setting.flag}`, setting.default), setting.flag ?? '').toMatchObject({ ok: true });
    }
  });

  it('lists every flag and variable in --help', () => {
    const help = optionsHelp(command);
    for (const setting of settings) {
      if (setting.flag !== null) expect(help).toContain(`--${setting.flag}`);
      if (setting.env !== undefined) expect(help).toContain(setting.env);
    }
  });
});

describe('the knobs (issue #30: how many there were and are)', () => {
  it.each([
    ['tokenlease-coordinator', COORDINATOR_COMMAND, { flags: 27, variables: 21, variablesAlone: 0 }],
    ['tokenlease-relay', RELAY_COMMAND, { flags: 16, variables: 13, variablesAlone: 0 }],
    ['tokenlease', OPERATOR_COMMAND, { flags: 19, variables: 11, variablesAlone: 0 }],
  ] as const)('%s: as many flags and variables as before, --help and --version aside', (_bin, command, count) => {
    expect(knobCount(command)).toEqual(count);
  });
});
