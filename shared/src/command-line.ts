/**
 * @tokenlease/shared/command-line — command lines described once: settings
 * with their flags, environment variables, value forms (zod schemas),
 * defaults and secrecy, read and checked from parseArgs values and the
 * environment, and written out as `--help` and as reference tables; and
 * the NATS group every command takes. Pure: nothing here reads the
 * process's arguments or environment, or loads the `nats` client.
 */
export {
  checkSetting,
  commandSettings,
  givenSetting,
  parseArgsOptions,
  readSetting,
  type Checked,
  type CommandLine,
  type Given,
  type ParseArgsOption,
  type Secrecy,
  type Setting,
  type SettingDefault,
  type SettingGroup,
} from './core/command-line.js';
export {
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
} from './core/command-line-text.js';
export {
  filePath,
  hostPort,
  integerIn,
  matching,
  nonEmptyText,
  oneOf,
  subjectToken,
  subjectTokens,
  text,
  valueMeta,
  type HostPort,
  type ValueForm,
  type ValueMeta,
} from './core/setting-values.js';
export { NATS_GROUP, NATS_SETTINGS } from './core/nats-settings.js';
