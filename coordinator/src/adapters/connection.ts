/**
 * How the command-line tools connect to NATS: the flags they share and the
 * one connect path behind them. The operator CLI (`tokenlease`) takes its
 * connection from here; options added for the coordinator (credentials,
 * TLS) belong here too, so both tools accept the same ones.
 *
 * URLs are printed without their credentials.
 */
import { connectBus, type Bus } from '@tokenlease/shared';

/** CONNECTION_OPTIONS — the parseArgs options of a NATS connection. */
export const CONNECTION_OPTIONS = {
  nats: { type: 'string' },
} as const;

/** CONNECTION_USAGE — how those options read in a usage line. */
export const CONNECTION_USAGE = '[--nats <url>]';

export interface ConnectionFlags {
  readonly nats?: string | undefined;
}

/** natsUrlOf — `--nats`, else `$NATS_URL`, else nats://127.0.0.1:4222. */
export function natsUrlOf(flags: ConnectionFlags): string {
  return flags.nats ?? process.env['NATS_URL'] ?? 'nats://127.0.0.1:4222';
}

/** shownUrl — `url` without user and password, for messages. */
export function shownUrl(url: string): string {
  return url
    .split(',')
    .map((one) => one.replace(/\/\/[^@/]*@/, '//'))
    .join(',');
}

/** connectWith — a bus on the connection `flags` name; rejects with TokenleaseError('bus-unreachable'). */
export function connectWith(flags: ConnectionFlags, clientName: string): Promise<Bus> {
  return connectBus(natsUrlOf(flags), { name: clientName });
}
