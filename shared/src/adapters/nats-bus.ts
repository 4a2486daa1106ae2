/**
 * The NATS adapter: the only file in tokenlease that imports `nats`.
 *
 * It moves bytes and reports connection events; it makes no decisions.
 * Moving to another NATS client (or another bus) means rewriting this file.
 * Connections reconnect forever with a short wait, so a restarted server is
 * picked up again without the caller doing anything.
 *
 * Logins and TLS are nats.js's own (its authenticators and TLS options);
 * this file only reads the seed and creds files they take. Servers reach
 * nats.js without credentials (resolveNatsOptions strips them), and every
 * server name this file reports is redacted again, for connections it did
 * not make (busFromConnection).
 */
import { readFileSync } from 'node:fs';
import {
  connect,
  credsAuthenticator,
  Events,
  ErrorCode,
  RequestStrategy,
  nkeyAuthenticator,
  tokenAuthenticator,
  usernamePasswordAuthenticator,
  type Authenticator,
  type ConnectionOptions,
  type Msg,
  type NatsError,
  type Status,
  type Subscription,
  type TlsOptions,
} from 'nats';
import type * as nats from 'nats';
import { TokenleaseError, type SharedErrorCode } from '../errors.js';
import { classifyNatsFailure, natsFailureMessage } from '../core/nats-failure.js';
import { NATS_ENV, resolveNatsOptions, type NatsConnectOptions, type NatsField } from '../core/nats-options.js';
import { redactUrlList } from '../core/redact.js';

/** NatsConnection — a connection made with nats.js's `connect`, to hand to busFromConnection: nats.js's own type. */
export type NatsConnection = nats.NatsConnection;

/** ReplyPort — answers one request; returns false when the request carried no reply subject. */
export interface ReplyPort {
  /** respond — sends `payload` to the reply subject; false when there is none. */
  respond(payload: Uint8Array): boolean;
  /** The subject a reply goes to, as the request named it; null when it named none. */
  readonly replySubject: string | null;
}

/** Serving — a subscription `serve` made. */
export interface Serving {
  /**
   * stop — drains the subscription: the messages already delivered are
   * handled, no more arrive, and it resolves once the server confirmed.
   * With `drain` false it is dropped at once, without waiting on the
   * server (one that does not answer would hold a drain until the
   * connection itself is given up).
   */
  stop(drain?: boolean): Promise<void>;
}

/** BusHandler — what `serve` hands each message: its subject, its bytes, and where to answer it. */
export type BusHandler = (subject: string, payload: Uint8Array, reply: ReplyPort) => void;

/** BusEvent — news of the connection: lost (`disconnect`), back (`reconnect`), or an `error` the server reported (a refused subscription among them). */
export type BusEvent =
  | { readonly type: 'disconnect'; readonly server: string }
  | { readonly type: 'reconnect'; readonly server: string }
  | { readonly type: 'error'; readonly message: string };

/** Bus — request/reply and queue-group service over one connection. */
export interface Bus {
  /** request — one request; rejects with TokenleaseError `bus-timeout`, `bus-no-responders`, `bus-closed` or `bus-failure`. */
  request(subject: string, payload: Uint8Array, timeoutMs: number): Promise<Uint8Array>;
  /**
   * gather — one request answered by any number of responders: the replies
   * that arrive within `windowMs` (at most `repliesMax`). Rejects like
   * `request` when none can arrive (`bus-no-responders`, `bus-closed`, …);
   * resolves with no replies when responders exist but none answered in time.
   */
  gather(subject: string, payload: Uint8Array, windowMs: number, repliesMax: number): Promise<Uint8Array[]>;
  /** publish — one message that wants no reply; false when it could not be handed to the connection (closed or draining). */
  publish(subject: string, payload: Uint8Array): boolean;
  /**
   * serve — delivers each message on `subject` (wildcards allowed) to one
   * member of `queue`, or, with a null queue, every message to this
   * subscriber. A subscription the server refuses (permissions) is reported
   * as an `error` event and delivers nothing.
   */
  serve(subject: string, queue: string | null, handler: BusHandler): Serving;
  /** onEvent — calls `listener` with every BusEvent from now on. */
  onEvent(listener: (event: BusEvent) => void): void;
  /** flush — resolves once the server has processed everything sent so far (so a new subscription is in place); rejects when it cannot be reached. */
  flush(): Promise<void>;
  /** drain — finishes in-flight deliveries, then closes. */
  drain(): Promise<void>;
  /** close — closes the connection now, without draining. */
  close(): Promise<void>;
}

/** BusOptions — how a Bus's connection names itself to the server and how often it tries to reconnect. */
export interface BusOptions {
  /** Client name shown by the server. */
  readonly name: string;
  /** Wait between reconnect attempts, ms (default 250). */
  readonly reconnectWaitMs?: number;
}

function busError(error: unknown, subject: string): TokenleaseError {
  const code = (error as Partial<NatsError>).code;
  const map: Record<string, SharedErrorCode> = {
    [ErrorCode.Timeout]: 'bus-timeout',
    [ErrorCode.NoResponders]: 'bus-no-responders',
    [ErrorCode.ConnectionClosed]: 'bus-closed',
    [ErrorCode.ConnectionDraining]: 'bus-closed',
  };
  const mapped = (code !== undefined ? map[code] : undefined) ?? 'bus-failure';
  const text = error instanceof Error ? error.message : String(error);
  return new TokenleaseError(mapped, `request on ${subject} failed: ${text}`, { cause: error });
}

class NatsBus implements Bus {
  private readonly listeners: Array<(event: BusEvent) => void> = [];

  constructor(private readonly nc: NatsConnection) {
    void this.watchStatus();
  }

  async request(subject: string, payload: Uint8Array, timeoutMs: number): Promise<Uint8Array> {
    try {
      const msg = await this.nc.request(subject, payload, { timeout: timeoutMs });
      return msg.data;
    } catch (error) {
      throw busError(error, subject);
    }
  }

  async gather(subject: string, payload: Uint8Array, windowMs: number, repliesMax: number): Promise<Uint8Array[]> {
    const replies: Uint8Array[] = [];
    try {
      const messages = await this.nc.requestMany(subject, payload, {
        maxWait: windowMs,
        strategy: RequestStrategy.Timer,
        noMux: true,
      });
      for await (const msg of messages) {
        replies.push(msg.data);
        if (replies.length >= repliesMax) break;
      }
    } catch (error) {
      if (replies.length === 0) throw busError(error, subject);
    }
    return replies;
  }

  publish(subject: string, payload: Uint8Array): boolean {
    try {
      this.nc.publish(subject, payload);
      return true;
    } catch {
      return false;
    }
  }

  serve(subject: string, queue: string | null, handler: BusHandler): Serving {
    const sub: Subscription = this.nc.subscribe(subject, {
      ...(queue === null ? {} : { queue }),
      callback: (error, msg: Msg) => {
        if (error) {
          this.emit({ type: 'error', message: error.message });
          return;
        }
        const replySubject = msg.reply === undefined || msg.reply === '' ? null : msg.reply;
        handler(msg.subject, msg.data, { respond: (data) => msg.respond(data), replySubject });
      },
    });
    return {
      stop: async (drain = true) => {
        if (drain) return sub.drain();
        sub.unsubscribe();
      },
    };
  }

  onEvent(listener: (event: BusEvent) => void): void {
    this.listeners.push(listener);
  }

  async flush(): Promise<void> {
    try {
      await this.nc.flush();
    } catch (error) {
      throw busError(error, '(flush)');
    }
  }

  async drain(): Promise<void> {
    if (!this.nc.isClosed()) await this.nc.drain();
  }

  async close(): Promise<void> {
    if (!this.nc.isClosed()) await this.nc.close();
  }

  private emit(event: BusEvent): void {
    for (const listener of this.listeners) listener(event);
  }

  private async watchStatus(): Promise<void> {
    for await (const status of this.nc.status()) {
      if (status.type === Events.Disconnect) this.emit({ type: 'disconnect', server: serverOf(status) });
      else if (status.type === Events.Reconnect) this.emit({ type: 'reconnect', server: serverOf(status) });
      else if (status.type === Events.Error) this.emit({ type: 'error', message: errorOf(status) });
    }
  }
}

/** The server a Disconnect or Reconnect names, redacted (only Update, not read, carries an object). */
function serverOf(status: Status): string {
  return redactUrlList(typeof status.data === 'object' ? JSON.stringify(status.data) : String(status.data));
}

/** An Error status in words: its code, or for a permissions violation what the server refused. */
function errorOf(status: Status): string {
  const code = typeof status.data === 'object' ? JSON.stringify(status.data) : String(status.data);
  const context = status.permissionContext;
  if (context === undefined) return code;
  return `permissions violation: ${context.operation} to ${JSON.stringify(context.subject)} refused by the server`;
}

/** busFromConnection — a Bus over a connection the caller made with nats.js; closing the Bus closes it. */
export function busFromConnection(nc: NatsConnection): Bus {
  return new NatsBus(nc);
}

/** The name of a setting for a message: where it came from, else its environment variable. */
function nameOf(options: NatsConnectOptions, field: NatsField): string {
  return options.sources[field] ?? NATS_ENV[field];
}

/**
 * readSetting — the bytes of the file a setting names; `invalid-nats-options`
 * naming the setting when unreadable. Neither the message nor a cause holds
 * the path (Node's error does: it may be a secret given by mistake).
 */
function readSetting(options: NatsConnectOptions, field: NatsField, path: string): Uint8Array {
  try {
    return readFileSync(path);
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    const name = nameOf(options, field);
    throw new TokenleaseError(
      'invalid-nats-options',
      `cannot read the file of ${name} (${typeof code === 'string' ? code : 'unreadable'})`,
      {
        field: name,
      },
    );
  }
}

function authenticatorOf(options: NatsConnectOptions): Authenticator | undefined {
  const auth = options.auth;
  if (auth.kind === 'user-password') return usernamePasswordAuthenticator(auth.user, auth.password);
  if (auth.kind === 'token') return tokenAuthenticator(auth.token);
  if (auth.kind === 'nkey') {
    const text = new TextDecoder().decode(readSetting(options, 'nkeyFile', auth.seedFile));
    const seed = text.split(/\s+/).find((word) => /^SU[A-Z2-7]{50,}$/.test(word));
    if (seed === undefined) {
      const name = nameOf(options, 'nkeyFile');
      throw new TokenleaseError('invalid-nats-options', `the file of ${name} holds no user NKey seed (a word starting with SU)`, {
        field: name,
      });
    }
    return nkeyAuthenticator(new TextEncoder().encode(seed));
  }
  if (auth.kind === 'creds') {
    const creds = readSetting(options, 'credsFile', auth.credsFile);
    const text = new TextDecoder().decode(creds);
    if (!text.includes('BEGIN NATS USER JWT') || !text.includes('BEGIN USER NKEY SEED')) {
      const name = nameOf(options, 'credsFile');
      throw new TokenleaseError('invalid-nats-options', `the file of ${name} is no creds file (a user JWT and its NKey seed)`, {
        field: name,
      });
    }
    return credsAuthenticator(creds);
  }
  return undefined;
}

/** The TLS options for nats.js; each file is checked readable first, so a typo is one line naming the setting. */
function tlsOf(options: NatsConnectOptions): TlsOptions | undefined {
  const tls = options.tls;
  if (tls === null) return undefined;
  const files: Array<['caFile' | 'certFile' | 'keyFile', string | null]> = [
    ['caFile', tls.caFile],
    ['certFile', tls.certFile],
    ['keyFile', tls.keyFile],
  ];
  const out: TlsOptions = {};
  for (const [field, path] of files) {
    if (path === null) continue;
    readSetting(options, field, path); // nats.js reads it again; this only turns a typo into one line naming the setting
    out[field] = path;
  }
  return out;
}

/**
 * openNatsConnection — a nats.js connection made with `options` (see
 * resolveNatsOptions): for a caller that wants the connection itself, to
 * share it with its own code and hand it to `Agent.connect({ connection })`
 * or busFromConnection. Rejects within the connect timeout (per server
 * tried) with one-line TokenleaseErrors holding no secret:
 * `invalid-nats-options` for a seed, creds or TLS file that cannot be
 * used, `bus-auth-failed`, `bus-tls-failed`, `bus-connect-timeout` or
 * `bus-unreachable` (see nats-failure.ts).
 */
export async function openNatsConnection(options: NatsConnectOptions, busOptions: BusOptions): Promise<NatsConnection> {
  const authenticator = authenticatorOf(options);
  const tls = tlsOf(options);
  const connectOptions: ConnectionOptions = {
    servers: [...options.servers],
    name: busOptions.name,
    maxReconnectAttempts: -1,
    reconnectTimeWait: busOptions.reconnectWaitMs ?? 250,
    reconnectJitter: 50,
    pingInterval: 10_000,
    timeout: options.connectTimeoutMs,
    ...(authenticator === undefined ? {} : { authenticator }),
    ...(tls === undefined ? {} : { tls }),
    ...(options.inboxPrefix === null ? {} : { inboxPrefix: options.inboxPrefix }),
  };
  try {
    return await connect(connectOptions);
  } catch (error) {
    const failure = classifyNatsFailure(error, options);
    throw new TokenleaseError(failure.code, natsFailureMessage(options, failure), { cause: error });
  }
}

/** connectNats — a Bus on a new connection made with `options`; rejects as openNatsConnection does. */
export async function connectNats(options: NatsConnectOptions, busOptions: BusOptions): Promise<Bus> {
  return new NatsBus(await openNatsConnection(options, busOptions));
}

/**
 * connectBus — a Bus on the NATS servers at `url` (comma-separated for
 * several; credentials inside it are used and never shown), with no other
 * setting read from anywhere. Rejects as connectNats does.
 */
export async function connectBus(url: string, options: BusOptions): Promise<Bus> {
  const names = { ...NATS_ENV, url: 'the NATS URL' };
  return connectNats(resolveNatsOptions([{ settings: { url }, names }]), options);
}
