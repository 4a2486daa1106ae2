/**
 * The NATS adapter: the only file in tokenlease that imports `nats`.
 *
 * It moves bytes and reports connection events; it makes no decisions.
 * Moving to another NATS client (or another bus) means rewriting this file.
 * Connections reconnect forever with a short wait, so a restarted server is
 * picked up again without the caller doing anything.
 */
import { connect, Events, ErrorCode, RequestStrategy, type Msg, type NatsConnection, type NatsError, type Subscription } from 'nats';
import { TokenleaseError, type SharedErrorCode } from '../errors.js';

/** ReplyPort — answers one request; returns false when the request carried no reply subject. */
export interface ReplyPort {
  respond(payload: Uint8Array): boolean;
}

export type BusHandler = (subject: string, payload: Uint8Array, reply: ReplyPort) => void;

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
  /** serve — delivers each message on `subject` (wildcards allowed) to one member of `queue`. */
  serve(subject: string, queue: string, handler: BusHandler): { stop(): Promise<void> };
  onEvent(listener: (event: BusEvent) => void): void;
  /** flush — resolves once the server has processed everything sent so far (so a new subscription is in place); rejects when it cannot be reached. */
  flush(): Promise<void>;
  /** drain — finishes in-flight deliveries, then closes. */
  drain(): Promise<void>;
  close(): Promise<void>;
}

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

  serve(subject: string, queue: string, handler: BusHandler): { stop(): Promise<void> } {
    const sub: Subscription = this.nc.subscribe(subject, {
      queue,
      callback: (error, msg: Msg) => {
        if (error) {
          this.emit({ type: 'error', message: error.message });
          return;
        }
        handler(msg.subject, msg.data, { respond: (data) => msg.respond(data) });
      },
    });
    return { stop: () => sub.drain() };
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
      // Disconnect and Reconnect carry the server, Error its code; only Update (not read) carries an object.
      const server = typeof status.data === 'object' ? JSON.stringify(status.data) : String(status.data);
      if (status.type === Events.Disconnect) this.emit({ type: 'disconnect', server });
      else if (status.type === Events.Reconnect) this.emit({ type: 'reconnect', server });
      else if (status.type === Events.Error) this.emit({ type: 'error', message: server });
    }
  }
}

/**
 * connectBus — connects to the NATS servers at `url` (comma-separated for
 * several). Rejects with `bus-unreachable` naming the URL when no server
 * answers the first attempt.
 */
export async function connectBus(url: string, options: BusOptions): Promise<Bus> {
  const servers = url
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s.length > 0);
  try {
    const nc = await connect({
      servers,
      name: options.name,
      maxReconnectAttempts: -1,
      reconnectTimeWait: options.reconnectWaitMs ?? 250,
      reconnectJitter: 50,
      pingInterval: 10_000,
    });
    return new NatsBus(nc);
  } catch (error) {
    const text = error instanceof Error ? error.message : String(error);
    throw new TokenleaseError('bus-unreachable', `cannot reach NATS at ${url}: ${text}`, { cause: error });
  }
}
