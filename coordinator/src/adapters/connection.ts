/**
 * How the operator CLI connects to NATS: the coordinator CLI's own flags
 * and environment variables (NATS_URL, NATS_USER, NATS_PASSWORD,
 * NATS_TOKEN, NATS_NKEY, NATS_CREDS, NATS_CA, NATS_CERT, NATS_KEY, …),
 * resolved in the one place shared/src/core/nats-options.ts keeps, so both
 * tools accept the same logins and TLS settings. Failures are one line with
 * the URL redacted.
 */
import { connectNats, natsEnvLayer, natsFlagLayer, resolveNatsOptions, type Bus } from '@tokenlease/shared/nats';

/**
 * connectWith — a bus on the connection the parsed flags and the
 * environment name, its replies under `inboxPrefix` unless they name one;
 * rejects with a TokenleaseError ('invalid-nats-options' for bad settings,
 * another code when NATS cannot be reached or refuses).
 */
export function connectWith(flags: Readonly<Record<string, unknown>>, clientName: string, inboxPrefix?: string): Promise<Bus> {
  const defaults = inboxPrefix === undefined ? {} : { inboxPrefix };
  return connectNats(resolveNatsOptions([natsFlagLayer(flags), natsEnvLayer(process.env)], defaults), { name: clientName });
}
