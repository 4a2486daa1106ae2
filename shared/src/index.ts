/**
 * @tokenlease/shared — the protocol, its limits and codec, and the exact
 * integer token arithmetic both sides compute with. Nothing here opens a
 * connection or reads a clock: reaching NATS is `@tokenlease/shared/nats`,
 * the process's clock `@tokenlease/shared/clock`, and the fixtures tests
 * share are `@tokenlease/shared/testing`.
 *
 * @module @tokenlease/shared
 */
export { TokenleaseError, assertInvariant, invariantBroken, type SharedErrorCode, type ErrorDetails } from './errors.js';

// Token arithmetic: rates, the exact bucket, integer units over whole microseconds.
export {
  RATE_PERIOD_MS_MAX,
  RATE_TEXT_PATTERN,
  RATE_TOKENS_MAX,
  formatRate,
  makeRate,
  parseRate,
  tokensPerSecond,
  type Rate,
} from './core/rate.js';
export { TIME_US_MAX, UNITS_MAX, assertTimeUs, refillUnits, tokenScale, waitUs, wholeTokens, type TokenScale } from './core/token-scale.js';
export { ExactBucket, type TakeResult } from './core/bucket.js';
export { REDACTED, redactUrl, redactUrlList } from './core/redact.js';
export { nameHash32 } from './core/name-hash.js';

// The protocol: subjects, messages, the bounds every field is checked against, the codec.
export {
  ANONYMOUS_IDENTITY,
  CATCH_ALL_QUEUE_GROUP,
  COORDINATOR_QUEUE_GROUP,
  ownerQueueGroup,
  DEFAULT_SUBJECT_PREFIX,
  POOL_NAME_LENGTH_MAX,
  PROTOCOL_VERSION,
  assertIdentity,
  assertPoolName,
  assertSubjectPrefix,
  isOperatorOp,
  isOperatorSubject,
  legacySubject,
  operatorServiceSubject,
  operatorSubject,
  parseSubject,
  poolNameProblem,
  poolSubject,
  serviceSubject,
  subjectFor,
  subjectVersion,
  type Op,
  type SubjectParts,
} from './protocol/subjects.js';
export type {
  AgentLease,
  ErrorCode,
  ErrorReply,
  LeaseGrant,
  LeaseRate,
  LeaseReport,
  LeaseRequest,
  LeaseReturn,
  PoolStatus,
  Reply,
  Request,
  RequestOf,
  ReturnReceipt,
  StatusQuery,
} from './protocol/messages.js';
export {
  DEMAND_PER_SECOND_MAX,
  DURATION_MS_MAX,
  HOLD_MS_DEFAULT,
  CLOCK_MS_MAX,
  HOLD_MS_MAX,
  ID_LENGTH_MAX,
  LEASE_SECRET_LENGTH_MAX,
  LEASE_SECRET_LENGTH_MIN,
  MESSAGE_BYTES_MAX,
  MESSAGE_TEXT_LENGTH_MAX,
  SEQ_MAX,
  WIRE_TOKENS_MAX,
  FLEET_WEIGHT_MAX,
} from './protocol/limits.js';
export { ID_FORM, isProtocolId } from './protocol/ids.js';
export { GRANT_SIGNATURE_PATTERN, grantSigningText, type GrantBinding } from './protocol/grant-signature.js';
export { decodeOperatorReply, decodeReply, decodeRequest, encodeMessage, type DecodeFailure, type Decoded } from './protocol/codec.js';
export { CALLS_MAX, NO_CALLS, type CallCounts } from './protocol/calls.js';
export type { Fields } from './protocol/fields.js';
export {
  NAMES_LIST_MAX,
  OPERATOR_POOL_TOKEN,
  OPERATOR_REPLY_BYTES_MAX,
  POOLS_PAGE_MAX,
  readOperatorReply,
  readOperatorRequest,
  type PoolList,
  type PoolSummary,
  type PoolsQuery,
  type ReloadCommand,
  type ReloadOutcome,
} from './protocol/operator.js';

// The lease client: the rules every client of a coordinator (an agent's keeper, a relay's uplink) keeps alike.
export { SECRET_PATTERN, grantProblem, type GrantCheckLimits } from './core/lease-client-grant.js';
export { expectedLimitsFormProblem, expectedLimitsProblem, type ExpectedLimits } from './core/expected-limits.js';
export { clientLeaseEndUs, seqAbove, staleSeqFloor } from './core/lease-client.js';
export {
  DRIFT_MARGIN_MAX,
  LEASE_CLIENT_DEFAULTS,
  LEASE_CLIENT_MS_BOUNDS,
  leaseClientSettingProblem,
  type LeaseClientSettings,
} from './core/lease-client-settings.js';
