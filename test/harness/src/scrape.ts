/**
 * Reading what an HTTP endpoint serves: Prometheus exposition text parsed
 * into samples, and HTTP status polling (for /readyz). Bounded in time.
 */

/** Sample — one exposition line: metric name, labels, value. */
export interface Sample {
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly value: number;
}

/** parseExposition — the samples of Prometheus text format (comments skipped; label values unescaped). */
export function parseExposition(text: string): Sample[] {
  const samples: Sample[] = [];
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (match === null) throw new Error(`not an exposition line: ${line}`);
    const labels: Record<string, string> = {};
    for (const [, key, raw] of (match[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) {
      labels[key as string] = (raw as string).replace(/\\(.)/g, (_, c: string) => (c === 'n' ? '\n' : c));
    }
    samples.push({ name: match[1] as string, labels, value: Number(match[3]) });
  }
  return samples;
}

/** scrape — GETs `url` and parses it. */
export async function scrape(url: string): Promise<Sample[]> {
  const response = await fetch(url, { signal: AbortSignal.timeout(5000) });
  if (!response.ok) throw new Error(`GET ${url}: ${response.status}`);
  return parseExposition(await response.text());
}

/** valueOf — the value of `name` with exactly `labels` (a subset match of the given labels), or undefined. */
export function valueOf(samples: readonly Sample[], name: string, labels: Readonly<Record<string, string>> = {}): number | undefined {
  return samples.find((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))?.value;
}

/** sumOf — Σ of `name` over samples matching `labels`. */
export function sumOf(samples: readonly Sample[], name: string, labels: Readonly<Record<string, string>> = {}): number {
  return samples
    .filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))
    .reduce((sum, s) => sum + s.value, 0);
}

/** httpStatus — the status code of a GET of `url`, or 0 when nothing answers within 2 s. */
export async function httpStatus(url: string): Promise<number> {
  try {
    const response = await fetch(url, { signal: AbortSignal.timeout(2000) });
    await response.arrayBuffer();
    return response.status;
  } catch {
    return 0;
  }
}

/** waitForStatus — polls `url` every 100 ms until it answers `status`; returns how long that took, ms; throws after `timeoutMs`. */
export async function waitForStatus(url: string, status: number, timeoutMs: number): Promise<number> {
  const start = performance.now();
  let last = -1;
  while (performance.now() - start < timeoutMs) {
    last = await httpStatus(url);
    if (last === status) return performance.now() - start;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`${url} did not answer ${status} within ${timeoutMs} ms (last: ${last})`);
}
