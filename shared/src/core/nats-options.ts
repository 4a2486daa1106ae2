/**
 * NATS connection settings: from the environment, command-line flags or a
 * caller's options to one validated NatsConnectOptions. The one place the
 * coordinator CLI, the agent, the demo and the test tools read them.
 *
 * Rules:
 * - Settings come in layers, highest first (flags or options, then the
 *   environment). Each field is taken from the highest layer that has it,
 *   except the login: it is taken whole from the highest layer that names
 *   any (a user and password, a token, an NKey seed file, a creds file, or
 *   credentials inside that layer's URL), so a stale NATS_TOKEN never mixes
 *   with a `--nats-user` given on the command line. Credentials inside a
 *   URL count only when that URL is the one in use.
 * - Within that layer, one mechanism: two are refused, and so is a user
 *   without a password or a client certificate without its key.
 * - Servers leave here without credentials (`nats://host:port`, or
 *   `tls://host:port`); the credentials are in `auth` alone, so nothing
 *   that prints a server can print a secret. No message here holds a
 *   secret value nor the path of a credential file: settings are named
 *   (`NATS_PASSWORD`, `--nats-nkey`), URLs are shown redacted or by
 *   position. An NKey seed or creds given where its file's path belongs
 *   is refused as such, unshown.
 * - Each value is checked by its form in nats-settings.ts (a timeout's
 *   range, an inbox prefix's tokens, a file path that is a secret
 *   itself); the rules across settings above are kept here.
 * - An empty environment variable counts as unset.
 * - Pure: the environment is a parameter and no file is read here; the
 *   NATS adapter reads the seed, creds and TLS files when it connects.
 */
import type { z } from 'zod';
import { TokenleaseError } from '../errors.js';
import { checkSetting, type Setting } from './command-line.js';
import { DEFAULT_NATS_URL, NATS_CONNECT_TIMEOUT_MS_DEFAULT, NATS_ENV, NATS_SETTINGS } from './nats-settings.js';
import { redactUrl } from './redact.js';

export {
  DEFAULT_NATS_URL,
  NATS_CONNECT_TIMEOUT_MS_DEFAULT,
  NATS_CONNECT_TIMEOUT_MS_MAX,
  NATS_CONNECT_TIMEOUT_MS_MIN,
  NATS_ENV,
} from './nats-settings.js';

/** NatsSettings — the settings of one layer as given; every field is optional. */
export interface NatsSettings {
  /** Server URL, or several separated by commas; credentials may stand inside (`nats://user:pass@host`, `nats://token@host`). */
  readonly url?: string | undefined;
  readonly user?: string | undefined;
  readonly password?: string | undefined;
  readonly token?: string | undefined;
  /** Path of a file holding a user NKey seed (`SU…`). */
  readonly nkeyFile?: string | undefined;
  /** Path of a creds file (a user JWT and its NKey seed). */
  readonly credsFile?: string | undefined;
  /** Path of the PEM bundle of CAs to trust for the server's certificate. */
  readonly caFile?: string | undefined;
  /** Path of the client certificate (PEM), for servers that verify clients (mutual TLS). */
  readonly certFile?: string | undefined;
  /** Path of the client certificate's private key (PEM). */
  readonly keyFile?: string | undefined;
  /** Subject prefix of this client's reply inboxes (default `_INBOX`): dot-joined subject tokens. */
  readonly inboxPrefix?: string | undefined;
  /** Longest wait for a server to accept the connection and the login, ms; per server tried. */
  readonly connectTimeoutMs?: string | number | undefined;
}

/** NatsField — one NATS setting, by its name in NatsSettings. */
export type NatsField = keyof NatsSettings;

/** NatsLayer — the settings of one place, and the name each has there (for messages). */
export interface NatsLayer {
  readonly settings: NatsSettings;
  readonly names: Readonly<Record<NatsField, string>>;
}

const NATS_PORT_DEFAULT = 4222;

/** NatsAuth — how the client logs in; the secrets live here and nowhere else. */
export type NatsAuth =
  | { readonly kind: 'none' }
  | { readonly kind: 'user-password'; readonly user: string; readonly password: string }
  | { readonly kind: 'token'; readonly token: string }
  | { readonly kind: 'nkey'; readonly seedFile: string }
  | { readonly kind: 'creds'; readonly credsFile: string };

/** NatsTls — TLS asked for by the client: files to trust and present (null: none given). */
export interface NatsTls {
  readonly caFile: string | null;
  readonly certFile: string | null;
  readonly keyFile: string | null;
}

/** NatsConnectOptions — one validated way to connect. */
export interface NatsConnectOptions {
  /** `nats://host:port` or `tls://host:port`, without credentials. */
  readonly servers: readonly string[];
  readonly auth: NatsAuth;
  /** Null: no TLS asked for (a server that requires it still gets it, trusting the system's CAs). */
  readonly tls: NatsTls | null;
  /** Null: the client's default, `_INBOX`. */
  readonly inboxPrefix: string | null;
  readonly connectTimeoutMs: number;
  /** Where each setting in use came from (`NATS_CA`, `--nats-creds`, …), for messages. */
  readonly sources: Readonly<Partial<Record<NatsField, string>>>;
}

function invalid(field: string, message: string): TokenleaseError {
  return new TokenleaseError('invalid-nats-options', message, { field });
}

/** NATS_OPTION_NAMES — how an options object names each setting (the agent's): `natsUrl`, `inboxPrefix`, the rest under `nats.`. */
export const NATS_OPTION_NAMES: Readonly<Record<NatsField, string>> = {
  url: 'natsUrl',
  user: 'nats.user',
  password: 'nats.password',
  token: 'nats.token',
  nkeyFile: 'nats.nkeyFile',
  credsFile: 'nats.credsFile',
  caFile: 'nats.caFile',
  certFile: 'nats.certFile',
  keyFile: 'nats.keyFile',
  inboxPrefix: 'inboxPrefix',
  connectTimeoutMs: 'nats.connectTimeoutMs',
};

/** natsOptionsLayer — the settings an options object gives, named as NATS_OPTION_NAMES says. */
export function natsOptionsLayer(settings: NatsSettings): NatsLayer {
  return { settings, names: NATS_OPTION_NAMES };
}

/** natsEnvLayer — the settings in `env` (NATS_URL, NATS_USER, …); empty variables count as unset. */
export function natsEnvLayer(env: Readonly<Record<string, string | undefined>>): NatsLayer {
  const settings: Record<string, string> = {};
  for (const [field, name] of Object.entries(NATS_ENV)) {
    const value = Object.prototype.hasOwnProperty.call(env, name) ? env[name] : undefined;
    if (value !== undefined && value !== '') settings[field] = value;
  }
  return { settings, names: NATS_ENV };
}

interface ParsedServer {
  readonly server: string;
  readonly tls: boolean;
  /** The credentials it carried, as one login, or null. */
  readonly login: NatsAuth | null;
}

function parseServer(entry: string, index: number, name: string): ParsedServer {
  const where = `entry ${index + 1} of ${name} (${redactUrl(entry)})`;
  const text = entry.includes('://') ? entry : `nats://${entry}`;
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw invalid(name, `${where} is not a URL (expected nats://host:port or tls://host:port)`);
  }
  const scheme = url.protocol.slice(0, -1);
  if (scheme !== 'nats' && scheme !== 'tls') throw invalid(name, `${where} has scheme ${scheme}://; expected nats:// or tls://`);
  if (url.hostname === '') throw invalid(name, `${where} names no host`);
  if (url.pathname !== '' && url.pathname !== '/') throw invalid(name, `${where} has a path; expected nats://host:port`);
  const port = url.port === '' ? NATS_PORT_DEFAULT : Number(url.port);
  return { server: `${scheme}://${url.hostname}:${port}`, tls: scheme === 'tls', login: loginInUrl(text, where, name) };
}

/** The credentials before the last `@` of a URL (the rule redactUrl follows): `user:password`, or a lone token. */
function loginInUrl(text: string, where: string, name: string): NatsAuth | null {
  const rest = text.slice(text.indexOf('://') + 3);
  const at = rest.lastIndexOf('@');
  if (at < 0) return null;
  const userinfo = rest.slice(0, at);
  const colon = userinfo.indexOf(':');
  try {
    if (colon < 0) return userinfo === '' ? null : { kind: 'token', token: decodeURIComponent(userinfo) };
    const user = decodeURIComponent(userinfo.slice(0, colon));
    if (user === '') throw invalid(name, `${where} has a password without a user name`);
    return { kind: 'user-password', user, password: decodeURIComponent(userinfo.slice(colon + 1)) };
  } catch (error) {
    if (error instanceof TokenleaseError) throw error;
    throw invalid(name, `${where} has credentials that are not valid percent-encoding`);
  }
}

function sameLogin(a: NatsAuth, b: NatsAuth): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

const LOGIN_FIELDS: readonly NatsField[] = ['user', 'password', 'token', 'nkeyFile', 'credsFile'];

/** Login — a login named by a layer: what it is, how to describe where it came from, and the setting to blame. */
interface Login {
  readonly auth: NatsAuth;
  readonly from: string;
  readonly field: string;
}

/** The login named by one layer (null: it names none); the URL's credentials count when `servers` came from this layer. */
function layerLogin(layer: NatsLayer, servers: readonly ParsedServer[] | null): Login | null {
  const s = layer.settings;
  const n = layer.names;
  const named: Login[] = [];
  if (s.user !== undefined || s.password !== undefined) {
    if (s.user === undefined || s.user === '') throw invalid(n.user, `${n.password} is given without a user name (${n.user})`);
    if (s.password === undefined) throw invalid(n.password, `${n.user} is given without a password (${n.password})`);
    named.push({ auth: { kind: 'user-password', user: s.user, password: s.password }, from: `${n.user} and ${n.password}`, field: n.user });
  }
  if (s.token !== undefined)
    named.push({ auth: { kind: 'token', token: checked('token', s.token, n.token) }, from: n.token, field: n.token });
  if (s.nkeyFile !== undefined)
    named.push({ auth: { kind: 'nkey', seedFile: checked('nkeyFile', s.nkeyFile, n.nkeyFile) }, from: n.nkeyFile, field: n.nkeyFile });
  if (s.credsFile !== undefined)
    named.push({
      auth: { kind: 'creds', credsFile: checked('credsFile', s.credsFile, n.credsFile) },
      from: n.credsFile,
      field: n.credsFile,
    });
  const inUrl = (servers ?? []).flatMap((p) => (p.login === null ? [] : [p.login]));
  if (inUrl.length > 0) {
    const first = inUrl[0] as NatsAuth;
    if (inUrl.some((login) => !sameLogin(login, first))) throw invalid(n.url, `the servers in ${n.url} carry different credentials`);
    named.push({ auth: first, from: `the credentials in ${n.url}`, field: n.url });
  }
  if (named.length > 1)
    throw invalid(named[1]?.field ?? n.url, `more than one way to log in: ${named.map((x) => x.from).join(', ')}; give one`);
  return named[0] ?? null;
}

/** NatsValue — the type of a field's value once its form took it. */
type NatsValue<F extends NatsField> = z.output<(typeof NATS_SETTINGS)[F]['value']>;

/** checked — the value of `field` given under `name`, through its value form (nats-settings.ts); refused naming `name`. */
function checked<F extends NatsField>(field: F, value: string | number, name: string): NatsValue<F> {
  const result = checkSetting(NATS_SETTINGS[field] as Setting<NatsValue<F>>, name, value);
  if (!result.ok) throw invalid(name, result.message);
  return result.value;
}

/**
 * resolveNatsOptions — one NatsConnectOptions from `layers`, highest
 * first (see the module's rules). `defaults` fills what no layer gives:
 * the URL (DEFAULT_NATS_URL) and the inbox prefix (the client's own).
 * Throws TokenleaseError('invalid-nats-options') naming the setting.
 */
export function resolveNatsOptions(
  layers: readonly NatsLayer[],
  defaults: { readonly url?: string; readonly inboxPrefix?: string } = {},
): NatsConnectOptions {
  const sources: Partial<Record<NatsField, string>> = {};
  const pick = <F extends NatsField>(field: F): NatsSettings[F] | undefined => {
    for (const layer of layers) {
      const value = layer.settings[field];
      if (value !== undefined) {
        sources[field] = layer.names[field];
        return value;
      }
    }
    return undefined;
  };
  const urlLayer = layers.find((layer) => layer.settings.url !== undefined);
  const urlName = urlLayer?.names.url ?? 'the default NATS URL';
  const url = pick('url') ?? defaults.url ?? DEFAULT_NATS_URL;
  const entries = url.split(',').map((entry) => entry.trim());
  if (entries.every((entry) => entry === '')) throw invalid(urlName, `${urlName} names no server`);
  const parsed = entries.filter((entry) => entry !== '').map((entry, i) => parseServer(entry, i, urlName));

  let auth: NatsAuth = { kind: 'none' };
  for (const layer of layers) {
    const login = layerLogin(layer, layer === urlLayer ? parsed : null);
    if (login === null) continue;
    auth = login.auth;
    for (const field of LOGIN_FIELDS) if (layer.settings[field] !== undefined) sources[field] = layer.names[field];
    break;
  }

  const caFile = pick('caFile');
  const certFile = pick('certFile');
  const keyFile = pick('keyFile');
  if ((certFile === undefined) !== (keyFile === undefined)) {
    const [given, missing] = certFile === undefined ? ['keyFile', 'certFile'] : ['certFile', 'keyFile'];
    const name = (field: NatsField): string => sources[field] ?? layers[0]?.names[field] ?? NATS_ENV[field];
    throw invalid(
      name(missing as NatsField),
      `${name(given as NatsField)} is given without ${name(missing as NatsField)}: a client certificate needs its key`,
    );
  }
  const wantsTls = caFile !== undefined || certFile !== undefined || parsed.some((p) => p.tls);
  const tls: NatsTls | null = wantsTls
    ? {
        caFile: caFile === undefined ? null : checked('caFile', caFile, sources.caFile ?? 'caFile'),
        certFile: certFile === undefined ? null : checked('certFile', certFile, sources.certFile ?? 'certFile'),
        keyFile: keyFile === undefined ? null : checked('keyFile', keyFile, sources.keyFile ?? 'keyFile'),
      }
    : null;
  const inbox = pick('inboxPrefix');
  const inboxPrefix =
    inbox !== undefined ? checked('inboxPrefix', inbox, sources.inboxPrefix ?? 'inboxPrefix') : (defaults.inboxPrefix ?? null);
  const timeout = pick('connectTimeoutMs');
  const connectTimeoutMs =
    timeout === undefined
      ? NATS_CONNECT_TIMEOUT_MS_DEFAULT
      : checked('connectTimeoutMs', timeout, sources.connectTimeoutMs ?? 'connectTimeoutMs');
  return { servers: parsed.map((p) => p.server), auth, tls, inboxPrefix, connectTimeoutMs, sources };
}

/**
 * describeNatsLogin — how `options` logs in, for messages: the kind of
 * login and the settings it came from (`NATS_CREDS`, `--nats-ca`), never a
 * secret nor a file's path (a path may be the secret itself, given by
 * mistake, and names where the secret lives).
 */
export function describeNatsLogin(options: NatsConnectOptions): string {
  const auth = options.auth;
  const from = (field: NatsField): string => options.sources[field] ?? NATS_ENV[field];
  const login =
    auth.kind === 'none'
      ? 'no credentials'
      : auth.kind === 'user-password'
        ? `user ${JSON.stringify(auth.user)} with a password`
        : auth.kind === 'token'
          ? 'a token'
          : auth.kind === 'nkey'
            ? `the NKey seed file of ${from('nkeyFile')}`
            : `the creds file of ${from('credsFile')}`;
  if (options.tls === null) return login;
  const parts = [options.tls.caFile === null ? 'TLS' : `TLS trusting the CA of ${from('caFile')}`];
  if (options.tls.certFile !== null) parts.push(`the client certificate of ${from('certFile')}`);
  return `${login}, ${parts.join(', ')}`;
}
