/**
 * The NATS flags every command takes (the coordinator CLI, the demo, the
 * chaos runner): one flag per setting of nats-settings.ts, each the
 * environment variable's twin (`--nats-user` and NATS_USER). A flag wins
 * over its variable; see resolveNatsOptions for how the login is chosen.
 */
import { parseArgsOptions, type ParseArgsOption } from './command-line.js';
import type { NatsField, NatsLayer } from './nats-options.js';
import { NATS_FLAGS, NATS_GROUP } from './nats-settings.js';

export { NATS_FLAGS } from './nats-settings.js';

/** NATS_FLAG_OPTIONS — the flags in the shape node:util's parseArgs takes (every one a string). */
export const NATS_FLAG_OPTIONS: Readonly<Record<string, ParseArgsOption>> = parseArgsOptions(NATS_GROUP.settings);

/** natsFlagLayer — the NATS settings among parseArgs `values` (other flags are ignored). */
export function natsFlagLayer(values: Readonly<Record<string, unknown>>): NatsLayer {
  const settings: Record<string, string> = {};
  for (const [field, flag] of Object.entries(NATS_FLAGS)) {
    const value = Object.prototype.hasOwnProperty.call(values, flag) ? values[flag] : undefined;
    if (typeof value === 'string') settings[field] = value;
  }
  const names = Object.fromEntries(Object.entries(NATS_FLAGS).map(([field, flag]) => [field, `--${flag}`])) as Record<NatsField, string>;
  return { settings, names };
}
