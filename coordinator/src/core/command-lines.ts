/**
 * The command lines of @tokenlease/coordinator's three bins, described
 * once (shared command-line.ts says what a setting is): tokenlease-
 * coordinator, tokenlease-relay and the operator CLI `tokenlease`. Each is
 * built from shared pieces (the NATS group every command takes, the Redis
 * group, the log level, the HTTP endpoint, the grant signing key) and
 * settings of its own. The bins take their parseArgs options, `--help` and
 * the check of every value from here; docs/reference/command-line.md is
 * written from here (command-line-reference.ts).
 *
 * Rules:
 * - A setting shared by two bins is one object, so it reads and checks
 *   the same in both.
 * - Rules across settings (`--memory` excludes `--redis`, `--agent` needs
 *   `status POOL`) stay with the bin that applies them.
 */
import { ANONYMOUS_IDENTITY, DEFAULT_SUBJECT_PREFIX } from '@tokenlease/shared';
import {
  filePath,
  hostPort,
  INFO_GROUP,
  integerIn,
  matching,
  NATS_GROUP,
  oneOf,
  subjectToken,
  subjectTokens,
  type CommandLine,
  type Setting,
  type SettingGroup,
} from '@tokenlease/shared/command-line';
import { DEFAULT_OWNERSHIP_TTL_MS } from './ownership-driver.js';
import { REDIS_GROUP, REDIS_PREFIX } from './redis-settings.js';

/** LOG_LEVELS — the levels the logger takes, least verbose first. */
export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

/** LOG_LEVEL — `--log-level`/LOG_LEVEL. */
export const LOG_LEVEL = {
  flag: 'log-level',
  env: 'LOG_LEVEL',
  value: oneOf(LOG_LEVELS, 'level'),
  default: 'info',
  description: 'how much to log, as pino JSON lines on stdout',
} as const satisfies Setting;

/** HTTP — `--http host:port`: the operations endpoint (operations.ts). */
export const HTTP = {
  flag: 'http',
  value: hostPort(),
  default: { derived: 'no HTTP endpoint' },
  description: 'serve `/metrics`, `/healthz`, `/readyz` and the status page on this address',
} as const satisfies Setting;

/** GRANT_SIGNING_KEY — `--grant-signing-key`/TOKENLEASE_GRANT_SIGNING_KEY (grant-signer.ts). */
export const GRANT_SIGNING_KEY = {
  flag: 'grant-signing-key',
  env: 'TOKENLEASE_GRANT_SIGNING_KEY',
  value: filePath('PEM file of an Ed25519 private key'),
  default: { derived: 'grants go unsigned' },
  secret: 'file',
  description: 'sign every grant with this key, so agents given its public half refuse grants it did not sign',
} as const satisfies Setting;

/** OWNERSHIP_TTL_MS_MIN, OWNERSHIP_TTL_MS_MAX — the ownership TTLs `--ownership-ttl-ms` takes, ms. */
export const OWNERSHIP_TTL_MS_MIN = 30;
export const OWNERSHIP_TTL_MS_MAX = 600_000;

/** COORDINATOR_SETTINGS — the settings tokenlease-coordinator alone takes, by field. */
export const COORDINATOR_SETTINGS = {
  config: {
    flag: 'config',
    short: 'c',
    value: filePath('YAML when its name ends in `.yaml` or `.yml`, else JSON'),
    required: true,
    description: 'the pools file: the pools, templates and caps to serve; SIGHUP reads it again',
  },
  memory: {
    flag: 'memory',
    value: null,
    description: 'keep the pools in memory, one coordinator, even when `REDIS_URL` is set; excludes `--redis`',
  },
  ownershipTtlMs: {
    flag: 'ownership-ttl-ms',
    value: integerIn(OWNERSHIP_TTL_MS_MIN, OWNERSHIP_TTL_MS_MAX, 'ms'),
    default: String(DEFAULT_OWNERSHIP_TTL_MS),
    description: "how long a pool's ownership lasts without renewal: a dead owner's pools are taken over after it",
  },
  member: {
    flag: 'member',
    value: matching(
      /^[\x21-\x7e]{1,128}$/,
      'must be 1 to 128 printable ASCII characters without spaces',
      'name',
      '1 to 128 printable ASCII characters, no spaces',
    ),
    default: { derived: '`<host>-<pid>-<random>`' },
    description: "this coordinator's name among the members sharing the Redis",
  },
} as const satisfies Readonly<Record<string, Setting>>;

/** RELAY_SETTINGS — the settings tokenlease-relay alone takes, by field. */
export const RELAY_SETTINGS = {
  config: {
    flag: 'config',
    short: 'c',
    value: filePath('YAML when its name ends in `.yaml` or `.yml`, else JSON'),
    required: true,
    description: "the relay file: the root's prefix, its own, the pools it serves and its uplink; SIGHUP reads it again",
  },
  relayId: {
    flag: 'relay-id',
    value: matching(
      /^[A-Za-z0-9_-]{1,64}$/,
      'must be 1 to 64 characters of [A-Za-z0-9_-]',
      'name',
      '1 to 64 characters of `[A-Za-z0-9_-]`',
    ),
    default: { derived: '`<host>-<pid>`' },
    description: "this relay's name: in its upstream agent ids, its status and its pool listings",
  },
} as const satisfies Readonly<Record<string, Setting>>;

/** Operator CLI waits and refresh interval, ms: limits and defaults. */
export const OPERATOR_WAIT_MS_MAX = 600_000;
export const OPERATOR_INTERVAL_MS_MAX = 3_600_000;
export const OPERATOR_TIMEOUT_MS_DEFAULT = 2000;
export const OPERATOR_WINDOW_MS_DEFAULT = 500;
export const OPERATOR_INTERVAL_MS_DEFAULT = 1000;

/** OPERATOR_SETTINGS — the settings the operator CLI `tokenlease` takes besides NATS's, by field. */
export const OPERATOR_SETTINGS = {
  json: {
    flag: 'json',
    value: null,
    description: 'print JSON: one document, or for `watch` one line per refresh',
  },
  prefix: {
    flag: 'prefix',
    value: subjectTokens('subject prefix', 'subject tokens, dot-joined'),
    default: DEFAULT_SUBJECT_PREFIX,
    description: "the coordinators' subject prefix, or a relay's to ask the relay",
  },
  identity: {
    flag: 'identity',
    value: subjectToken('token', 'a subject token'),
    default: ANONYMOUS_IDENTITY,
    description: 'ask under this identity token; its replies then come to `_INBOX_<identity>`',
  },
  agent: {
    flag: 'agent',
    value: subjectToken('id', 'an agent id, a subject token'),
    description: "with `status POOL`: that agent's lease too",
  },
  timeoutMs: {
    flag: 'timeout-ms',
    value: integerIn(1, OPERATOR_WAIT_MS_MAX, 'ms'),
    default: String(OPERATOR_TIMEOUT_MS_DEFAULT),
    description: 'longest wait for a single answer: `status POOL`, `watch`',
  },
  windowMs: {
    flag: 'window-ms',
    value: integerIn(1, OPERATOR_WAIT_MS_MAX, 'ms'),
    default: String(OPERATOR_WINDOW_MS_DEFAULT),
    description: 'how long the answers of every coordinator are gathered: `pools`, `status`, `reload`',
  },
  intervalMs: {
    flag: 'interval-ms',
    value: integerIn(1, OPERATOR_INTERVAL_MS_MAX, 'ms'),
    default: String(OPERATOR_INTERVAL_MS_DEFAULT),
    description: '`watch`: the time between refreshes',
  },
  count: {
    flag: 'count',
    value: integerIn(1, Number.MAX_SAFE_INTEGER),
    default: { derived: 'until stopped' },
    description: '`watch`: how many refreshes',
  },
} as const satisfies Readonly<Record<string, Setting>>;

/** DURABLE_GROUP — the coordinator's durable mode besides the Redis connection. */
const DURABLE_GROUP: SettingGroup = {
  title: 'Durable mode',
  settings: [COORDINATOR_SETTINGS.memory, COORDINATOR_SETTINGS.ownershipTtlMs, COORDINATOR_SETTINGS.member, REDIS_PREFIX],
};

/** COORDINATOR_COMMAND — tokenlease-coordinator. */
export const COORDINATOR_COMMAND: CommandLine = {
  bin: 'tokenlease-coordinator',
  synopsis: '--config <pools.yaml|pools.json> [options]',
  summary:
    'Serves the pools of a configuration file over NATS: in memory (one coordinator), or durably in Redis, ' +
    'several coordinators sharing the pools.',
  groups: [
    { title: 'Coordinator', settings: [COORDINATOR_SETTINGS.config, LOG_LEVEL, HTTP, GRANT_SIGNING_KEY] },
    NATS_GROUP,
    REDIS_GROUP,
    DURABLE_GROUP,
    INFO_GROUP,
  ],
};

/** RELAY_COMMAND — tokenlease-relay. */
export const RELAY_COMMAND: CommandLine = {
  bin: 'tokenlease-relay',
  synopsis: '--config <relay.yaml|relay.json> [options]',
  summary: "Leases tokens of a root coordinator's pools under one identity and leases them on to the agents on its own prefix.",
  groups: [
    { title: 'Relay', settings: [RELAY_SETTINGS.config, RELAY_SETTINGS.relayId, LOG_LEVEL, HTTP, GRANT_SIGNING_KEY] },
    NATS_GROUP,
    INFO_GROUP,
  ],
};

/** OPERATOR_COMMAND — the operator CLI, tokenlease. */
export const OPERATOR_COMMAND: CommandLine = {
  bin: 'tokenlease',
  synopsis: 'status [POOL] [--agent ID] | pools | watch POOL | reload [options]',
  summary: "The operator's command line: a pool's credit, the pools every coordinator holds, a live view of one, reloads.",
  groups: [{ title: 'Operator', settings: Object.values(OPERATOR_SETTINGS) }, NATS_GROUP, INFO_GROUP],
};

/** COMMAND_LINES — the three bins, in the order the reference lists them. */
export const COMMAND_LINES: readonly CommandLine[] = [COORDINATOR_COMMAND, RELAY_COMMAND, OPERATOR_COMMAND];
