/**
 * The NATS flags every command takes (the coordinator CLI, the demo, the
 * chaos runner): one flag per setting of nats-options.ts, each the
 * environment variable's twin (`--nats-user` and NATS_USER). A flag wins
 * over its variable; see resolveNatsOptions for how the login is chosen.
 */
import { NATS_ENV, type NatsField, type NatsLayer } from './nats-options.js';

/** NATS_FLAGS — the flag of each setting, without its leading dashes. */
export const NATS_FLAGS: Readonly<Record<NatsField, string>> = {
  url: 'nats',
  user: 'nats-user',
  password: 'nats-password',
  token: 'nats-token',
  nkeyFile: 'nats-nkey',
  credsFile: 'nats-creds',
  caFile: 'nats-ca',
  certFile: 'nats-cert',
  keyFile: 'nats-key',
  inboxPrefix: 'nats-inbox-prefix',
  connectTimeoutMs: 'nats-connect-timeout-ms',
};

/** NATS_FLAG_OPTIONS — the flags in the shape node:util's parseArgs takes (every one a string). */
export const NATS_FLAG_OPTIONS: Readonly<Record<string, { readonly type: 'string' }>> = Object.fromEntries(
  Object.values(NATS_FLAGS).map((flag) => [flag, { type: 'string' as const }]),
);

/** NATS_FLAGS_USAGE — the flags for a usage message. */
export const NATS_FLAGS_USAGE =
  '[--nats <url,...>] [--nats-user <name> --nats-password <pw> | --nats-token <token> | --nats-nkey <seed file> | --nats-creds <file>]\n' +
  '         [--nats-ca <file>] [--nats-cert <file> --nats-key <file>] [--nats-inbox-prefix <prefix>] [--nats-connect-timeout-ms <ms>]';

/** NATS_ENV_USAGE — the environment variables, for a usage message. */
export const NATS_ENV_USAGE = `environment: ${Object.values(NATS_ENV).join(', ')} (a flag wins over its variable)`;

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
