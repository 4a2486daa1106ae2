/**
 * Bounds of protocol v2 fields. A message outside them is refused with
 * `bad-request` before it reaches any state.
 */
/** MESSAGE_BYTES_MAX — the largest message, bytes; operators' tools read replies up to OPERATOR_REPLY_BYTES_MAX. */
export const MESSAGE_BYTES_MAX = 4096;
/** ID_LENGTH_MAX — the longest id a message may carry (an agent's, a lease's, an agent class), characters. */
export const ID_LENGTH_MAX = 128;
/** Largest token count on the wire; each pool enforces its own tighter limits. */
export const WIRE_TOKENS_MAX = 2 ** 52;
/** SEQ_MAX — the largest sequence number. */
export const SEQ_MAX = Number.MAX_SAFE_INTEGER;
/** CLOCK_MS_MAX — the largest clock reading an acquire may carry, ms (2^52: a monotonic clock never gets there). */
export const CLOCK_MS_MAX = 2 ** 52;

/** HOLD_MS_MAX — the longest hold a request may ask for, ms. */
export const HOLD_MS_MAX = 60_000;
/**
 * HOLD_MS_DEFAULT — how long a lease client (an agent's keeper, a relay's
 * uplink) asks a coordinator to hold its request while the pool is short,
 * ms. One default for both: a held request keeps its place in the pool's
 * turns only while it is held, so a client that asks for a shorter hold
 * drops out of the turns sooner and gets less than its share.
 */
export const HOLD_MS_DEFAULT = 200;
/** DEMAND_PER_SECOND_MAX — the largest demand a request may state, tokens per second. */
export const DEMAND_PER_SECOND_MAX = 1e12;
/** Largest fleet weight a request may state (a relay: Σ its live downstream leases' weights). */
export const FLEET_WEIGHT_MAX = 1_000_000;
/** DURATION_MS_MAX — the longest duration a message may carry (a TTL, a period, a wait), ms: one day. */
export const DURATION_MS_MAX = 86_400_000;
/** MESSAGE_TEXT_LENGTH_MAX — the longest free text a message may carry (an error reply's message), characters. */
export const MESSAGE_TEXT_LENGTH_MAX = 512;
/** A lease secret: 22 to 128 characters of base64url (22 characters carry 128 bits). */
export const LEASE_SECRET_LENGTH_MIN = 22;
/** LEASE_SECRET_LENGTH_MAX — the longest lease secret, characters (see LEASE_SECRET_LENGTH_MIN). */
export const LEASE_SECRET_LENGTH_MAX = 128;
