/**
 * `--window N/W` of the sweep: a strict sliding-window pool of at most N
 * tokens in every window of W.
 *
 * Guarantees: `parseWindow` returns whole tokens N in [1, 10^9] and a whole
 * number of milliseconds W in [1 ms, 24 h], or throws a SweepArgsError
 * naming `--window` and the accepted form. W is a duration (`1s`, `60s`,
 * `500ms`, `1m`) or a bare unit (`s`, `min`, `m`, `h`, meaning one of it).
 * `formatWindow` prints what `parseWindow` reads back to the same value.
 */
import { parseRate } from '@tokenlease/shared';
import { SweepArgsError } from './args-error.js';
import { formatDurationUs, parseDurationUs } from './duration.js';
import type { SweepWindow } from './window-sweep.js';

const LIMIT_MAX = 1_000_000_000;
const WINDOW_MS_MAX = 86_400_000;
const FORM = 'use <limit>/<window> like 100/1s, 100/60s, 5000/1m or 100/min';

/** parseWindow — `--window`'s value as a limit and a window. */
export function parseWindow(text: string): SweepWindow {
  const match = /^(\d+)\/(.+)$/.exec(text);
  if (match === null) throw new SweepArgsError('--window', `${JSON.stringify(text)} is not a window; ${FORM}`);
  const limit = Number(match[1]);
  if (!Number.isSafeInteger(limit) || limit < 1 || limit > LIMIT_MAX) {
    throw new SweepArgsError('--window', `${JSON.stringify(match[1])} is not a limit in tokens; use a whole number in [1, ${LIMIT_MAX}]`);
  }
  const windowMs = windowMsOf(match[2] ?? '');
  if (windowMs === null) {
    throw new SweepArgsError(
      '--window',
      `${JSON.stringify(match[2])} is not a window of whole milliseconds in [1ms, ${formatDurationUs(WINDOW_MS_MAX * 1000)}]; ${FORM}`,
    );
  }
  return { limitTokens: limit, windowMs };
}

/** windowMsOf — a duration like 1s or 500ms, or a bare unit like s or min, in whole ms; null when it is neither or out of range. */
function windowMsOf(text: string): number | null {
  const us = parseDurationUs(text);
  if (us !== null) return us % 1000 === 0 && us >= 1000 && us <= WINDOW_MS_MAX * 1000 ? us / 1000 : null;
  if (!/^[a-z]+$/.test(text)) return null;
  try {
    const rate = parseRate(`1/${text}`);
    return rate.periodMs <= WINDOW_MS_MAX ? rate.periodMs : null;
  } catch {
    return null;
  }
}

/** formatWindow — `N/W` as `parseWindow` reads it, W printed as a duration. */
export function formatWindow(window: SweepWindow): string {
  return `${window.limitTokens}/${formatDurationUs(window.windowMs * 1000)}`;
}
