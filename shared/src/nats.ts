/**
 * @tokenlease/shared/nats — reaching NATS: one resolver for the connection
 * settings (flags, NATS_* environment, options), and the bus every process
 * speaks through. The only entry point that loads the `nats` client.
 *
 * @module @tokenlease/shared/nats
 */
export {
  DEFAULT_NATS_URL,
  NATS_CONNECT_TIMEOUT_MS_DEFAULT,
  NATS_CONNECT_TIMEOUT_MS_MAX,
  NATS_CONNECT_TIMEOUT_MS_MIN,
  NATS_ENV,
  describeNatsLogin,
  natsEnvLayer,
  natsOptionsLayer,
  NATS_OPTION_NAMES,
  resolveNatsOptions,
  type NatsAuth,
  type NatsConnectOptions,
  type NatsField,
  type NatsLayer,
  type NatsSettings,
  type NatsTls,
} from './core/nats-options.js';
export { NATS_FLAGS, NATS_FLAG_OPTIONS, natsFlagLayer } from './core/nats-flags.js';
export type { ParseArgsOption } from './core/command-line.js';
export {
  busFromConnection,
  connectBus,
  connectNats,
  openNatsConnection,
  type Bus,
  type BusEvent,
  type BusHandler,
  type BusOptions,
  type NatsConnection,
  type ReplyPort,
  type Serving,
} from './adapters/nats-bus.js';
