/**
 * Command lines described once. A command is groups of settings; each
 * setting says its flag, short flag, environment variable twin, value form
 * (a zod schema, setting-values.ts), default, whether it is secret, and
 * what it does in one line. From that come the options node:util's
 * parseArgs takes, the check of every value, `--help`
 * (command-line-text.ts) and the reference pages of docs/reference/.
 *
 * Rules:
 * - A setting is given by its flag, else by its environment variable. An
 *   empty variable counts as unset; an empty flag is given, and its value
 *   form says whether it may be empty.
 * - A value its form refuses reads `<name> <predicate>, got "<value>"`:
 *   the flag or variable that gave it, then the form's one message. The
 *   value is left out when it is empty or the setting is secret (a secret,
 *   or the path of a file holding one: a path says where a secret lives,
 *   and may be the secret itself, given by mistake).
 * - Rules across settings (one login, a certificate needs its key, two
 *   flags that exclude each other) are the resolvers', not here.
 * - Pure: the flags and the environment are parameters.
 */
import { assertInvariant } from '../errors.js';
import type { ValueForm } from './setting-values.js';

/** SettingDefault — what a setting is when not given: its value as written, or a sentence saying how it is derived. */
export type SettingDefault = string | { readonly derived: string };

/** Secrecy — `value`: the value is a secret (never shown; best given by the variable, as flags show in the process list); `file`: it names a file holding one (its path is never shown). */
export type Secrecy = 'value' | 'file';

/** Setting — one setting of a command line. */
export interface Setting<T = unknown> {
  /** The flag without its dashes (`nats-user`); null for a variable read alone. */
  readonly flag: string | null;
  /** A one-letter short flag (`c` for `-c`). */
  readonly short?: string;
  /** The environment variable twin (`NATS_USER`): the flag wins over it. */
  readonly env?: string;
  /** The value form; null for a switch, a flag that takes no value. */
  readonly value: ValueForm<T> | null;
  readonly default?: SettingDefault;
  /** The command refuses to run without it. */
  readonly required?: boolean;
  readonly secret?: Secrecy;
  /** What it does, in one line: lower case, no final period. */
  readonly description: string;
}

/** SettingGroup — settings that go together (the NATS connection, Redis): shared by commands as one object. */
export interface SettingGroup {
  readonly title: string;
  readonly settings: readonly Setting[];
}

/** CommandLine — a command: its name, how it is called, what it does, and its settings. */
export interface CommandLine {
  readonly bin: string;
  /** The call after the name: `--config <file> [options]`. */
  readonly synopsis: string;
  /** What it does, in one sentence. */
  readonly summary: string;
  /** Its own settings first; a group shared with another command is the same object. */
  readonly groups: readonly SettingGroup[];
}

/** ParseArgsOption — one option in the shape node:util's parseArgs takes. */
export interface ParseArgsOption {
  readonly type: 'string' | 'boolean';
  readonly short?: string;
}

/** commandSettings — every setting of `command`, in order. */
export function commandSettings(command: CommandLine): Setting[] {
  return command.groups.flatMap((group) => group.settings);
}

/** parseArgsOptions — the options of `settings` for parseArgs: a string per valued flag, a boolean per switch (variables alone have none). */
export function parseArgsOptions(settings: readonly Setting[]): Record<string, ParseArgsOption> {
  const options: Record<string, ParseArgsOption> = {};
  for (const setting of settings) {
    if (setting.flag === null) continue;
    const type = setting.value === null ? 'boolean' : 'string';
    options[setting.flag] = setting.short === undefined ? { type } : { type, short: setting.short };
  }
  return options;
}

/** Given — a setting's text as given, and the flag or variable that gave it (`--redis-ca`, REDIS_CA). */
export interface Given {
  readonly value: string;
  readonly name: string;
}

/** givenSetting — `setting` from parseArgs `flags`, else from `env` (an empty variable is unset); null when neither gives it. */
export function givenSetting(
  setting: Setting,
  flags: Readonly<Record<string, unknown>>,
  env: Readonly<Record<string, string | undefined>>,
): Given | null {
  const flag = setting.flag !== null && Object.prototype.hasOwnProperty.call(flags, setting.flag) ? flags[setting.flag] : undefined;
  if (typeof flag === 'string') return { value: flag, name: `--${setting.flag}` };
  const variable = setting.env !== undefined && Object.prototype.hasOwnProperty.call(env, setting.env) ? env[setting.env] : undefined;
  return variable === undefined || variable === '' ? null : { value: variable, name: setting.env as string };
}

/** Checked — a value its form took, or the one-line refusal. */
export type Checked<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly message: string };

/** checkSetting — `value`, given under `name`, through the value form of `setting` (see the module's rules for the refusal). */
export function checkSetting<T>(setting: Setting<T>, name: string, value: unknown): Checked<T> {
  assertInvariant(setting.value !== null, `--${setting.flag} is a switch: it has no value to check`);
  const parsed = setting.value.safeParse(value);
  if (parsed.success) return { ok: true, value: parsed.data };
  const predicate = parsed.error.issues[0]?.message ?? 'is not valid';
  const shown = setting.secret === undefined && value !== '' ? `, got ${JSON.stringify(value)}` : '';
  return { ok: false, message: `${name} ${predicate}${shown}` };
}

/** readSetting — `setting` from `flags` over `env`, checked; undefined when neither gives it. */
export function readSetting<T>(
  setting: Setting<T>,
  flags: Readonly<Record<string, unknown>>,
  env: Readonly<Record<string, string | undefined>>,
): Checked<T | undefined> {
  const given = givenSetting(setting, flags, env);
  return given === null ? { ok: true, value: undefined } : checkSetting(setting, given.name, given.value);
}
