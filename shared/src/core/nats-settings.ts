/**
 * The NATS settings every command takes (the coordinator, the relay, the
 * operator CLI, the demo, the chaos runner), described once: for each its
 * flag, its environment variable twin (`--nats-user` and NATS_USER), its
 * value form, default and secrecy. nats-options.ts resolves them (the
 * login is taken whole from one layer; see resolveNatsOptions) and checks
 * each value with the form given here; the agent's options go through the
 * same forms.
 */
import type { Setting, SettingGroup } from './command-line.js';
import type { NatsField } from './nats-options.js';
import { filePath, integerIn, nonEmptyText, subjectTokens, text } from './setting-values.js';

/** DEFAULT_NATS_URL — the server used when no layer names one. */
export const DEFAULT_NATS_URL = 'nats://127.0.0.1:4222';
/** NATS_CONNECT_TIMEOUT_MS_DEFAULT — the connect timeout when none is set, ms. */
export const NATS_CONNECT_TIMEOUT_MS_DEFAULT = 5000;
/** NATS_CONNECT_TIMEOUT_MS_MIN — the shortest connect timeout accepted, ms. */
export const NATS_CONNECT_TIMEOUT_MS_MIN = 100;
/** NATS_CONNECT_TIMEOUT_MS_MAX — the longest connect timeout accepted, ms. */
export const NATS_CONNECT_TIMEOUT_MS_MAX = 600_000;

const NO_LOGIN = { derived: 'no login, or the one inside the URL' } as const;

/** NATS_SETTINGS — each NATS setting, in the order `--help` and the reference list them. */
export const NATS_SETTINGS = {
  url: {
    flag: 'nats',
    env: 'NATS_URL',
    value: text('url,...', '`nats://` or `tls://` URLs, comma-separated; a login may stand inside'),
    default: DEFAULT_NATS_URL,
    description: 'the NATS servers; the URLs are shown without their credentials',
  },
  user: {
    flag: 'nats-user',
    env: 'NATS_USER',
    value: text('name', 'text'),
    default: NO_LOGIN,
    description: 'log in as this user, with its password',
  },
  password: {
    flag: 'nats-password',
    env: 'NATS_PASSWORD',
    value: text('password', 'text'),
    secret: 'value',
    description: "the user's password",
  },
  token: {
    flag: 'nats-token',
    env: 'NATS_TOKEN',
    value: nonEmptyText('token', 'text'),
    default: NO_LOGIN,
    secret: 'value',
    description: 'log in with this token',
  },
  nkeyFile: {
    flag: 'nats-nkey',
    env: 'NATS_NKEY',
    value: filePath('file holding a user NKey seed, `SU…`', true),
    default: NO_LOGIN,
    secret: 'file',
    description: 'log in with the NKey seed in this file',
  },
  credsFile: {
    flag: 'nats-creds',
    env: 'NATS_CREDS',
    value: filePath('creds file: a user JWT and its NKey seed', true),
    default: NO_LOGIN,
    secret: 'file',
    description: 'log in with this creds file',
  },
  caFile: {
    flag: 'nats-ca',
    env: 'NATS_CA',
    value: filePath('PEM file'),
    default: { derived: "the system's CAs" },
    description: "use TLS, trusting these CAs for the server's certificate",
  },
  certFile: {
    flag: 'nats-cert',
    env: 'NATS_CERT',
    value: filePath('PEM file'),
    description: 'present this client certificate (mutual TLS), with its key',
  },
  keyFile: {
    flag: 'nats-key',
    env: 'NATS_KEY',
    value: filePath('PEM file'),
    secret: 'file',
    description: "the client certificate's private key",
  },
  inboxPrefix: {
    flag: 'nats-inbox-prefix',
    env: 'NATS_INBOX_PREFIX',
    value: subjectTokens('prefix', 'subject tokens, dot-joined'),
    default: { derived: '`_INBOX`, or `_INBOX_<identity>` for the operator CLI or a relay with an identity' },
    description: "the subject prefix of this client's reply inboxes",
  },
  connectTimeoutMs: {
    flag: 'nats-connect-timeout-ms',
    env: 'NATS_CONNECT_TIMEOUT_MS',
    value: integerIn(NATS_CONNECT_TIMEOUT_MS_MIN, NATS_CONNECT_TIMEOUT_MS_MAX, 'ms'),
    default: String(NATS_CONNECT_TIMEOUT_MS_DEFAULT),
    description: 'longest wait for a server to accept the connection and the login, per server',
  },
} as const satisfies Readonly<Record<NatsField, Setting & { readonly flag: string; readonly env: string }>>;

/** NATS_GROUP — the NATS settings as one group of a command line. */
export const NATS_GROUP: SettingGroup = { title: 'NATS', settings: Object.values(NATS_SETTINGS) };

/** NATS_ENV — the environment variable of each setting. */
export const NATS_ENV: Readonly<Record<NatsField, string>> = fieldMap((setting) => setting.env);

/** NATS_FLAGS — the flag of each setting, without its leading dashes. */
export const NATS_FLAGS: Readonly<Record<NatsField, string>> = fieldMap((setting) => setting.flag);

function fieldMap(of: (setting: { readonly flag: string; readonly env: string }) => string): Record<NatsField, string> {
  return Object.fromEntries(Object.entries(NATS_SETTINGS).map(([field, setting]) => [field, of(setting)])) as Record<NatsField, string>;
}
