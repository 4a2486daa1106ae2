/**
 * The demo's NATS flags, handed on to the processes it starts. Those
 * read their NATS settings from the environment (NATS_URL, NATS_USER, …),
 * so each flag given becomes its variable, by the rule the CLI follows: a
 * flag wins over its variable, and a login named by the flags replaces
 * the environment's whole. The settings are validated here first, so a
 * bad one is one line before anything starts.
 */
import { natsEnvLayer, natsFlagLayer, resolveNatsOptions, NATS_ENV, type NatsField } from '@tokenlease/shared/nats';

const LOGIN_FIELDS: readonly NatsField[] = ['user', 'password', 'token', 'nkeyFile', 'credsFile'];

/** natsFlagsIntoEnv — writes the NATS flags among parseArgs `values` into `env`; throws TokenleaseError('invalid-nats-options'). */
export function natsFlagsIntoEnv(values: Readonly<Record<string, unknown>>, env: NodeJS.ProcessEnv): void {
  const flags = natsFlagLayer(values);
  resolveNatsOptions([flags, natsEnvLayer(env)]);
  const flagsLogIn = resolveNatsOptions([flags], { url: 'nats://127.0.0.1' }).auth.kind !== 'none';
  if (flagsLogIn) for (const field of LOGIN_FIELDS) delete env[NATS_ENV[field]];
  for (const [field, value] of Object.entries(flags.settings)) {
    if (typeof value === 'string') env[NATS_ENV[field as NatsField]] = value;
  }
}
