/**
 * BackgroundBus: a Bus whose connection is still being opened, so that a
 * service boots while NATS is down (AgentOptions.connectInBackground).
 *
 * Rules:
 * - Until the first connection, every request fails at once with
 *   `bus-no-responders` (a coordinator cannot be reached), so limiters
 *   apply what they apply when no coordinator answers: the lease in hand
 *   (none yet), the fallback rate, the middleware's `unavailable` policy.
 * - It tries again and again, 250 ms after a failure and doubling to 5 s,
 *   until it connects or is closed; each failure is told as an `error`
 *   event (the message names the servers, never a credential), then the
 *   first connection as a `reconnect`. From then on it is the connection's
 *   own Bus, which reconnects by itself.
 * - A subscription asked for before the connection is made on it when it
 *   comes; events are told to listeners added at any time.
 * - Closing stops the attempts and closes the connection if one was made.
 */
import { TokenleaseError } from '@tokenlease/shared';
import type { Bus, BusEvent, BusHandler, Serving } from '@tokenlease/shared/nats';

const RETRY_FIRST_MS = 250;
const RETRY_MAX_MS = 5000;

export class BackgroundBus implements Bus {
  private inner: Bus | null = null;
  private closed = false;
  private readonly listeners: Array<(event: BusEvent) => void> = [];
  private readonly pending: Array<{
    subject: string;
    queue: string | null;
    handler: BusHandler;
    stopped: boolean;
    stop?: (drain?: boolean) => Promise<void>;
  }> = [];
  private retryTimer: NodeJS.Timeout | null = null;

  /** `open` makes one attempt at the connection; `servers` names them in errors (no credentials). */
  constructor(
    private readonly open: () => Promise<Bus>,
    private readonly servers: string,
  ) {
    this.attempt(RETRY_FIRST_MS);
  }

  /** connected — whether the first connection was made. */
  get connected(): boolean {
    return this.inner !== null;
  }

  request(subject: string, payload: Uint8Array, timeoutMs: number): Promise<Uint8Array> {
    return this.inner?.request(subject, payload, timeoutMs) ?? Promise.reject(this.notYet(subject));
  }

  gather(subject: string, payload: Uint8Array, windowMs: number, repliesMax: number): Promise<Uint8Array[]> {
    return this.inner?.gather(subject, payload, windowMs, repliesMax) ?? Promise.reject(this.notYet(subject));
  }

  publish(subject: string, payload: Uint8Array): boolean {
    return this.inner?.publish(subject, payload) ?? false;
  }

  serve(subject: string, queue: string | null, handler: BusHandler): Serving {
    if (this.inner !== null) return this.inner.serve(subject, queue, handler);
    const entry: (typeof this.pending)[number] = { subject, queue, handler, stopped: false };
    this.pending.push(entry);
    return {
      stop: async (drain?: boolean) => {
        entry.stopped = true;
        await entry.stop?.(drain);
      },
    };
  }

  onEvent(listener: (event: BusEvent) => void): void {
    this.listeners.push(listener);
    this.inner?.onEvent(listener);
  }

  flush(): Promise<void> {
    return this.inner?.flush() ?? Promise.reject(this.notYet('(flush)'));
  }

  async drain(): Promise<void> {
    this.stopTrying();
    await this.inner?.drain();
  }

  async close(): Promise<void> {
    this.stopTrying();
    await this.inner?.close();
  }

  private stopTrying(): void {
    this.closed = true;
    if (this.retryTimer !== null) clearTimeout(this.retryTimer);
    this.retryTimer = null;
  }

  private attempt(nextWaitMs: number): void {
    this.open().then(
      (bus) => {
        if (this.closed) {
          void bus.close();
          return;
        }
        this.inner = bus;
        for (const listener of this.listeners) bus.onEvent(listener);
        for (const entry of this.pending.splice(0)) {
          if (entry.stopped) continue;
          const sub = bus.serve(entry.subject, entry.queue, entry.handler);
          entry.stop = (drain?: boolean) => sub.stop(drain);
        }
        this.tell({ type: 'reconnect', server: this.servers });
      },
      (error: unknown) => {
        if (this.closed) return;
        this.tell({ type: 'error', message: error instanceof Error ? error.message : String(error) });
        this.retryTimer = setTimeout(() => {
          this.retryTimer = null;
          if (!this.closed) this.attempt(Math.min(RETRY_MAX_MS, nextWaitMs * 2));
        }, nextWaitMs);
      },
    );
  }

  private tell(event: BusEvent): void {
    for (const listener of this.listeners) listener(event);
  }

  private notYet(subject: string): TokenleaseError {
    return new TokenleaseError('bus-no-responders', `request on ${subject} failed: not connected to NATS (${this.servers}) yet`);
  }
}
