/**
 * A command line in words, written from its settings (command-line.ts):
 * the options part of `--help`, and the Markdown of its section of
 * docs/reference/command-line.md.
 *
 * Rules:
 * - What a value is comes from its form: an integer's range and an
 *   enum's values from the form's JSON Schema (zod's), anything else from
 *   the `description` the form carries; a secret says so.
 * - Deterministic: the same command gives the same text, byte for byte.
 * - `--help` is plain text (backticks dropped), wrapped at HELP_WIDTH;
 *   the reference is Markdown tables, `|` escaped in cells, and a group
 *   already shown under an earlier command is linked, not repeated.
 * - Knobs are counted apart from `--help` and `--version` (INFO_GROUP).
 */
import { z } from 'zod';
import { commandSettings, type CommandLine, type Setting, type SettingGroup } from './command-line.js';
import { valueMeta } from './setting-values.js';

/** INFO_GROUP — `--help` and `--version`, which every command takes; not counted as knobs. */
export const INFO_GROUP: SettingGroup = {
  title: 'Information',
  settings: [
    { flag: 'help', short: 'h', value: null, description: 'print the usage, every option, examples and where the docs are; then exit' },
    { flag: 'version', short: 'V', value: null, description: 'print the version; then exit' },
  ],
};

/** HELP_WIDTH — the column `--help` wraps its descriptions at. */
export const HELP_WIDTH = 100;

/** valueText — what `setting`'s value is, in Markdown (`integer of ms in [100, 600000]`, `` `info`, `debug` ``, `file`). */
export function valueText(setting: Setting): string {
  if (setting.value === null) return 'none: a switch';
  const schema = z.toJSONSchema(setting.value, { io: 'output', unrepresentable: 'any' });
  const { placeholder, description } = valueMeta(setting.value);
  const words = Array.isArray(schema.enum)
    ? schema.enum.map((value) => `\`${String(value)}\``).join(', ')
    : schema.type === 'integer'
      ? `integer${placeholder === 'n' ? '' : ` of ${placeholder}`} in [${String(schema.minimum)}, ${String(schema.maximum)}]`
      : (description ?? 'text');
  return setting.secret === 'value' ? `${words}; a secret` : setting.secret === 'file' ? `${words}; holds a secret` : words;
}

/** defaultText — `setting`'s default in Markdown: its value as code, a derived one's sentence, `required`, or `—` for none. */
export function defaultText(setting: Setting): string {
  if (setting.required === true) return 'required';
  const given = setting.default;
  if (given === undefined) return '—';
  return typeof given === 'string' ? `\`${given}\`` : given.derived;
}

/** flagsText — how `setting`'s flags read: `-c, --config <file>`, `--memory`; '' for a variable read alone. */
export function flagsText(setting: Setting): string {
  if (setting.flag === null) return '';
  const value = setting.value === null ? '' : ` <${valueMeta(setting.value).placeholder}>`;
  return `${setting.short === undefined ? '' : `-${setting.short}, `}--${setting.flag}${value}`;
}

/** knobCount — how many flags and environment variables `command` has, `--help` and `--version` aside. */
export function knobCount(command: CommandLine): { readonly flags: number; readonly variables: number; readonly variablesAlone: number } {
  const settings = command.groups.filter((group) => group !== INFO_GROUP).flatMap((group) => group.settings);
  return {
    flags: settings.filter((s) => s.flag !== null).length,
    variables: settings.filter((s) => s.env !== undefined).length,
    variablesAlone: settings.filter((s) => s.flag === null).length,
  };
}

const plain = (markdown: string): string => markdown.replace(/`/g, '');

/** defaultFact — the default as `--help` says it: `required`, `default: 5000`, or nothing. */
function defaultFact(setting: Setting): string[] {
  if (setting.required === true) return ['required'];
  return setting.default === undefined ? [] : [`default: ${defaultText(setting)}`];
}

/** wrap — `text` in lines of at most `width` characters (a longer word stands alone), each after `indent`. */
function wrap(text: string, indent: string, width: number): string[] {
  const lines: string[] = [];
  let line = '';
  for (const word of text.split(' ')) {
    if (line !== '' && indent.length + line.length + 1 + word.length > width) {
      lines.push(indent + line);
      line = word;
    } else line = line === '' ? word : `${line} ${word}`;
  }
  return [...lines, indent + line];
}

/**
 * optionsHelp — the options part of `--help`: each group under its title,
 * each setting on a line with its variable, then what it does, its value
 * and its default, wrapped.
 */
export function optionsHelp(command: CommandLine): string {
  const label = (setting: Setting): string => (setting.flag === null ? '(no flag)' : flagsText(setting));
  const column = Math.max(...commandSettings(command).map((setting) => label(setting).length)) + 2;
  const lines = ['options (each flag with its environment variable; the flag wins, an empty variable is unset):'];
  for (const group of command.groups) {
    lines.push(`${group.title}:`);
    for (const setting of group.settings) {
      lines.push(setting.env === undefined ? `  ${label(setting)}` : `  ${label(setting).padEnd(column)}${setting.env}`);
      const facts = setting.value === null ? [] : [valueText(setting), ...defaultFact(setting)];
      const about = facts.length === 0 ? setting.description : `${setting.description} (${facts.join('; ')})`;
      lines.push(...wrap(plain(about), '      ', HELP_WIDTH));
    }
  }
  return lines.join('\n');
}

const cell = (text: string): string => text.replace(/\|/g, '\\|');

/** settingsTable — a Markdown table of `settings`: flag, environment variable, value, default, description. */
export function settingsTable(settings: readonly Setting[]): string[] {
  return [
    '| flag | environment | value | default | description |',
    '| --- | --- | --- | --- | --- |',
    ...settings.map((s) => {
      const flags = s.flag === null ? 'none' : `\`${flagsText(s).replace(', ', '`, `')}\``;
      const env = s.env === undefined ? '' : `\`${s.env}\``;
      return `| ${[flags, env, valueText(s), defaultText(s), s.description].map(cell).join(' | ')} |`;
    }),
  ];
}

/** anchorOf — the anchor GitHub gives a heading of plain words: lower case, punctuation dropped, spaces to hyphens. */
export function anchorOf(heading: string): string {
  return heading
    .toLowerCase()
    .replace(/[^\p{L}\p{N} _-]/gu, '')
    .replace(/ /g, '-');
}

/**
 * commandReference — the Markdown section of `command`, without a blank
 * line before or after: its name as a level-2 heading, what it does, how
 * it is called, its own settings (the first group), then each other group
 * under a level-3 heading, or a line linking to it when `shown` has it (a
 * group already shown above: its anchor); groups shown here are added to
 * `shown`. A line with the count of its knobs, and `--help` and
 * `--version`, ends it.
 */
export function commandReference(command: CommandLine, shown: Map<SettingGroup, string>): string[] {
  const [own, ...rest] = command.groups.filter((group) => group !== INFO_GROUP);
  const lines = [`## ${command.bin}`, '', command.summary, '', `\`${command.bin} ${command.synopsis}\``];
  if (own !== undefined) lines.push('', ...settingsTable(own.settings));
  for (const group of rest) {
    const anchor = shown.get(group);
    if (anchor !== undefined) {
      lines.push('', `${group.title}: the ${group.settings.length} settings of [${group.title}](#${anchor}) above.`);
      continue;
    }
    lines.push('', `### ${group.title}`, '', ...settingsTable(group.settings));
    shown.set(group, anchorOf(group.title));
  }
  const count = knobCount(command);
  const alone = count.variablesAlone === 0 ? 'each the twin of a flag' : `${count.variablesAlone} of them without a flag`;
  lines.push(
    '',
    `${count.flags} flags and ${count.variables} environment variables (${alone}), ` +
      'and `-h`, `--help` (the usage, every option, examples) and `-V`, `--version`.',
  );
  return lines;
}
