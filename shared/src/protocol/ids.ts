/**
 * Identifiers of the protocol and of the configuration: agent ids, lease ids,
 * agent classes, coordinator member names. One form for all of them: 1 to
 * ID_LENGTH_MAX printable ASCII characters without spaces (0x21–0x7e), so
 * an id is one word in a log line, a Redis hash field or a command line.
 */
import { ID_LENGTH_MAX } from './limits.js';

const ID_PATTERN = /^[\x21-\x7e]+$/;

/** ID_FORM — the form of an id in words, for error messages. */
export const ID_FORM = `1 to ${ID_LENGTH_MAX} printable ASCII characters without spaces`;

/** isProtocolId — whether `value` is a string of 1 to ID_LENGTH_MAX printable ASCII characters without spaces. */
export function isProtocolId(value: unknown): value is string {
  return typeof value === 'string' && value.length >= 1 && value.length <= ID_LENGTH_MAX && ID_PATTERN.test(value);
}
