/**
 * The agent's connection: a Bus it was given, a nats.js connection it was
 * given, or one it opens from its options and the environment (the same
 * settings, read the same way, as the coordinator CLI: see
 * resolveNatsOptions in @tokenlease/shared). Only a connection it opened
 * is its to close.
 */
import { TokenleaseError, ANONYMOUS_IDENTITY } from '@tokenlease/shared';
import {
  busFromConnection,
  connectNats,
  natsEnvLayer,
  natsOptionsLayer,
  resolveNatsOptions,
  type Bus,
  type NatsConnection,
} from '@tokenlease/shared/nats';
import { AgentError, type AgentErrorCode } from '../errors.js';
import { BackgroundBus } from './background-bus.js';

/** AgentNatsOptions — how to log in and which TLS files to use; each overrides its environment variable (NATS_USER, …). */
export interface AgentNatsOptions {
  readonly user?: string;
  readonly password?: string;
  readonly token?: string;
  /** Path of a file holding the user's NKey seed (`SU…`). */
  readonly nkeyFile?: string;
  /** Path of a creds file (user JWT and NKey seed). */
  readonly credsFile?: string;
  /** Path of the CA bundle (PEM) that signed the server's certificate. */
  readonly caFile?: string;
  /** Path of the client certificate (PEM), for mutual TLS; needs `keyFile`. */
  readonly certFile?: string;
  readonly keyFile?: string;
  /** Longest wait for a server to accept the connection and the login, ms (default 5000). */
  readonly connectTimeoutMs?: number;
}

/** The part of AgentOptions that says how to reach NATS. */
export interface AgentConnectionOptions {
  /**
   * NATS URL(s), comma-separated, credentials allowed inside
   * (`nats://user:password@host`, `nats://token@host`); default `$NATS_URL`
   * or nats://127.0.0.1:4222. Ignored when `bus` or `connection` is given.
   */
  readonly natsUrl?: string;
  /**
   * Login and TLS (user and password, token, NKey seed file, creds file;
   * CA, client certificate and key files) and the connect timeout; each
   * overrides its environment variable (NATS_USER, NATS_PASSWORD,
   * NATS_TOKEN, NATS_NKEY, NATS_CREDS, NATS_CA, NATS_CERT, NATS_KEY,
   * NATS_CONNECT_TIMEOUT_MS), and a login given here replaces the
   * environment's whole.
   */
  readonly nats?: AgentNatsOptions;
  /**
   * Subject prefix of the agent's reply inboxes; default `$NATS_INBOX_PREFIX`,
   * else `_INBOX_<identity>` when an identity is given (what the shipped
   * permissions let its user read), else `_INBOX`.
   */
  readonly inboxPrefix?: string;
  /** An existing nats.js connection to use instead of connecting; the agent then does not close it. */
  readonly connection?: NatsConnection;
  /** An existing bus to use instead of connecting; the agent then does not close it. */
  readonly bus?: Bus;
  /** Where NATS_* settings are read from (default `process.env`; `{}` reads none). */
  readonly env?: Readonly<Record<string, string | undefined>>;
  /**
   * Start without waiting for NATS (default false): `Agent.connect` resolves
   * once the settings are checked, and the connection is opened in the
   * background, tried again (250 ms, doubling to 5 s) until it is made.
   * Until then every limiter is as with no coordinator answering: no lease,
   * so the fallback rate if one is set, else denials `no-lease`, and the
   * middleware's `unavailable` policy. Each failed attempt is an `error`
   * event, the first connection a `reconnect` event. Bad settings still
   * reject at once (`invalid-argument`).
   */
  readonly connectInBackground?: boolean;
}

/** What a failed connection's code becomes for the agent's callers. */
const CODES: ReadonlyMap<string, AgentErrorCode> = new Map<string, AgentErrorCode>([
  ['invalid-nats-options', 'invalid-argument'],
  ['bus-auth-failed', 'auth-failed'],
  ['bus-tls-failed', 'tls-failed'],
]);

/** defaultInboxPrefix — `_INBOX_<identity>` for an agent with an identity (the inbox its NATS user may read), else the client's own. */
export function defaultInboxPrefix(identity: string): string | undefined {
  return identity === ANONYMOUS_IDENTITY ? undefined : `_INBOX_${identity}`;
}

/**
 * openAgentBus — the bus for an agent of `identity` named `agentId`, and
 * whether the agent owns it. Rejects with AgentError: `invalid-argument`
 * for bad settings, `auth-failed`, `tls-failed` or `unreachable`; the
 * message names the servers without credentials.
 */
export async function openAgentBus(
  options: AgentConnectionOptions,
  identity: string,
  agentId: string,
): Promise<{ readonly bus: Bus; readonly owned: boolean }> {
  const background = options.connectInBackground;
  if (background !== undefined && typeof background !== 'boolean') {
    throw new AgentError('invalid-argument', `option connectInBackground must be true or false, got ${JSON.stringify(background)}`);
  }
  if (options.bus !== undefined) return { bus: options.bus, owned: false };
  if (options.connection !== undefined) return { bus: busFromConnection(options.connection), owned: false };
  const given = natsOptionsLayer({ ...options.nats, url: options.natsUrl, inboxPrefix: options.inboxPrefix });
  const inboxPrefix = defaultInboxPrefix(identity);
  try {
    const resolved = resolveNatsOptions(
      [given, natsEnvLayer(options.env ?? process.env)],
      inboxPrefix === undefined ? {} : { inboxPrefix },
    );
    const name = { name: `tokenlease-agent ${agentId}` };
    if (background === true) {
      const open = (): Promise<Bus> => connectNats(resolved, name);
      return { bus: new BackgroundBus(open, resolved.servers.join(',')), owned: true };
    }
    return { bus: await connectNats(resolved, name), owned: true };
  } catch (error) {
    if (!(error instanceof TokenleaseError)) throw error;
    throw new AgentError(CODES.get(error.code) ?? 'unreachable', error.message, { cause: error });
  }
}
