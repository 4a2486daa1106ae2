/**
 * Unit conversions of the agent. Clock readings and durations inside the
 * agent are µs; options and the wire speak ms; demand is per second.
 */

/** US_PER_MS — microseconds in a millisecond. */
export const US_PER_MS = 1000;

/** US_PER_SECOND — microseconds in a second. */
export const US_PER_SECOND = 1_000_000;
