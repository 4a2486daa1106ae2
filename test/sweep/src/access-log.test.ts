/**
 * Access logs as traces: an nginx JSON log and an Envoy JSON log, realistic
 * lines with many fields written as requests complete (out of order by up
 * to a few seconds), replay to the very arrivals of the equivalent
 * tokenlease trace, keys hashed as the middleware hashes them; each kind of
 * bad line is named by file, line and field, and no error shows a value of
 * the line (a raw key least of all).
 */
import { hashedKeyName } from '@tokenlease/shared/key-hash';
import { seededRandom } from '@tokenlease/shared/testing';
import { describe, expect, it } from 'vitest';
import { ACCESS_LOG_DEFAULTS, parseTraceFields, type AccessLogFormat, type TraceFields } from './trace-fields.js';
import { readTraceLines, TOKENLEASE_SOURCE, type TraceSource } from './trace-source.js';
import { TraceError, type Trace } from './trace.js';

const SECRET = new TextEncoder().encode('the-service-key-secret');
const RAW_KEYS = ['sk_live_alpha_7Qx', 'sk_live_bravo_9Zt', 'sk_live_charlie_3Lp', 'sk_live_delta_0Mn'];
const HOSTS = ['api-1', 'api-2', 'api-3'];
const START_MS = 1_764_662_400_000;

const source = (format: AccessLogFormat, fields: TraceFields): TraceSource => ({
  format,
  fields,
  hashKey: (raw) => hashedKeyName(SECRET, 'key', raw),
});
const nginxFields = parseTraceFields('nginx-json', ['key=http_x_api_key']);
const envoyFields = parseTraceFields('envoy-json', ['key=request_headers.x-api-key']);
const keep = { instancesMax: 100, keyOnly: null, keepKeys: true };

interface Request {
  readonly tMs: number;
  readonly host: number;
  readonly key: string | null;
  /** How long it took: the log line is written at tMs + durationMs. */
  readonly durationMs: number;
}

/** requests — 300 requests at distinct ms, 3 hosts, 4 keys and some without one, each taking up to 3 s. */
function requests(): Request[] {
  const random = seededRandom(35);
  let tMs = START_MS + 123;
  return Array.from({ length: 300 }, (_, i) => {
    tMs += 1 + Math.floor(random.next() * 20);
    const keyAt = Math.floor(random.next() * 5);
    return { tMs, host: i % 3, key: RAW_KEYS[keyAt] ?? null, durationMs: Math.floor(random.next() * 3000) };
  });
}

/** completed — the requests in the order their log lines are written: as they complete. */
const completed = (all: readonly Request[]): Request[] => [...all].sort((a, b) => a.tMs + a.durationMs - (b.tMs + b.durationMs));

function nginxLine(r: Request, i: number): string {
  return JSON.stringify({
    msec: i % 2 === 0 ? (r.tMs / 1000).toFixed(3) : Number((r.tMs / 1000).toFixed(3)),
    time_iso8601: new Date(Math.floor(r.tMs / 1000) * 1000).toISOString().replace('.000Z', '+00:00'),
    hostname: HOSTS[r.host],
    remote_addr: `203.0.113.${r.host + 7}`,
    request: `GET /v1/items?page=${i % 9} HTTP/1.1`,
    status: i % 17 === 0 ? 429 : 200,
    body_bytes_sent: 512 + i,
    request_time: r.durationMs / 1000,
    http_user_agent: 'Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0',
    http_x_api_key: r.key ?? '',
    upstream_addr: `10.0.0.${r.host + 5}:8080`,
    upstream_response_time: ((r.durationMs - 1) / 1000).toFixed(3),
  });
}

function envoyLine(r: Request, i: number): string {
  return JSON.stringify({
    start_time: new Date(r.tMs).toISOString(),
    method: 'POST',
    path: `/v1/orders/${i}`,
    protocol: 'HTTP/2',
    response_code: 200,
    response_flags: '-',
    bytes_received: 154,
    bytes_sent: 226,
    duration: r.durationMs,
    upstream_service_time: String(r.durationMs),
    x_forwarded_for: '10.0.35.28',
    user_agent: 'nsq2http',
    request_id: `cc21d9b0-cf5c-432b-8c7e-${String(i).padStart(12, '0')}`,
    authority: 'locations',
    upstream_host: HOSTS[r.host],
    request_headers: r.key === null ? {} : { 'x-api-key': r.key },
  });
}

/** tokenleaseLine — the same request in the tokenlease format, its key hashed. */
function tokenleaseLine(r: Request): string {
  return JSON.stringify({ tMs: r.tMs, instance: HOSTS[r.host], ...(r.key === null ? {} : { key: hashedKeyName(SECRET, 'key', r.key) }) });
}

/** keyed — a trace's arrivals with each arrival's key name (not its index, which follows the lines' order). */
function keyed(trace: Trace): unknown {
  const names = trace.keys?.names ?? [];
  return trace.workload.arrivals.map((a, i) => ({ ...a, key: names[trace.keys?.ofArrival[i] ?? -1] ?? null }));
}

describe('access logs replay to the arrivals of the equivalent tokenlease trace', () => {
  const all = requests();
  const expected = readTraceLines([['t.jsonl', all.map(tokenleaseLine)]], TOKENLEASE_SOURCE, keep);

  it.each([
    ['nginx-json', nginxFields, nginxLine],
    ['envoy-json', envoyFields, envoyLine],
  ] as const)('%s', (format, fields, line) => {
    const lines = completed(all).map(line);
    // The log is out of order, by up to a few seconds.
    expect(lines).not.toEqual(all.map(line));
    const trace = readTraceLines([['access.log', lines]], source(format, fields), keep);
    expect(keyed(trace)).toEqual(keyed(expected));
    expect(trace.instances).toEqual(expected.instances);
    expect({ durationMs: trace.durationMs, originMs: trace.originMs }).toEqual({
      durationMs: expected.durationMs,
      originMs: all[0]?.tMs,
    });
    expect(new Set(trace.keys?.names)).toEqual(new Set(expected.keys?.names));
  });

  it('merges several access logs, one per instance, like one', () => {
    const lines = completed(all);
    const files = HOSTS.map((host, h) => [`${host}.log`, lines.filter((r) => r.host === h).map(nginxLine)] as const);
    expect(keyed(readTraceLines(files, source('nginx-json', nginxFields), keep))).toEqual(keyed(expected));
  });

  it('makes every line one instance named "log" without an instance field, and reads a numeric time in the unit given', () => {
    const fields = parseTraceFields('nginx-json', ['instance=', 'time=t:ms']);
    const trace = readTraceLines([['a.log', ['{"t":1764662400123.5}', '{"t":"1764662400120"}']]], source('nginx-json', fields), {
      ...keep,
      keepKeys: false,
    });
    expect(trace.instances).toEqual(['log']);
    expect(trace.workload.arrivals.map((a) => a.tUs)).toEqual([0, 3500]);
  });

  it('reads a mapped cost, and a key that is a number; "", "-" and null are no key', () => {
    const fields = parseTraceFields('nginx-json', ['cost=c', 'key=k']);
    const lines = [
      '{"msec":1,"hostname":"h","c":2,"k":12345}',
      '{"msec":2,"hostname":"h","c":"3","k":"-"}',
      '{"msec":3,"hostname":"h","c":1,"k":null}',
    ];
    const trace = readTraceLines([['a.log', lines]], source('nginx-json', fields), keep);
    expect(trace.workload.arrivals.map((a) => a.cost)).toEqual([2, 3, 1]);
    expect(trace.keys).toEqual({ names: [hashedKeyName(SECRET, 'key', '12345')], ofArrival: [0, -1, -1] });
  });
});

describe('bad access-log lines', () => {
  const RAW = 'sk_live_NEVER_SHOWN_5150';
  const withKey = parseTraceFields('nginx-json', ['key=http_x_api_key', 'cost=weight']);
  const good = `{"msec":"1764662400.001","hostname":"api-1","http_x_api_key":"${RAW}","weight":1}`;

  it.each([
    ['not JSON', `${good}\n{"msec":`, 2, null, 'a.log:2: is not a JSON object'],
    ['a JSON array', `${good}\n[1,2]`, 2, null, 'a.log:2: is not a JSON object'],
    ['a missing time', `{"hostname":"a","weight":1,"http_x_api_key":"${RAW}"}`, 1, 'msec', 'a.log:1: field "msec" (time) is missing'],
    [
      'a time that is no time',
      `{"msec":"soon","hostname":"a","weight":1,"http_x_api_key":"${RAW}"}`,
      1,
      'msec',
      'field "msec" (time) must be seconds',
    ],
    ['a negative time', `{"msec":-1,"hostname":"a","weight":1}`, 1, 'msec', 'field "msec" (time)'],
    ['a date without a zone', `{"msec":"2025-12-02T08:00:00","hostname":"a","weight":1}`, 1, 'msec', 'field "msec" (time)'],
    [
      'a missing instance',
      `{"msec":1,"weight":1,"http_x_api_key":"${RAW}"}`,
      1,
      'hostname',
      'field "hostname" (instance) is missing; map another',
    ],
    [
      'an instance that is an object',
      `{"msec":1,"hostname":{"${RAW}":1},"weight":1}`,
      1,
      'hostname',
      'field "hostname" (instance) must be a string',
    ],
    [
      'a key that is an object',
      `{"msec":1,"hostname":"a","weight":1,"http_x_api_key":{"raw":"${RAW}"}}`,
      1,
      'http_x_api_key',
      'must be a string or a number; it is an object',
    ],
    ['a key that is true', `{"msec":1,"hostname":"a","weight":1,"http_x_api_key":true}`, 1, 'http_x_api_key', 'it is a boolean'],
    ['a missing cost', `{"msec":1,"hostname":"a","http_x_api_key":"${RAW}"}`, 1, 'weight', 'field "weight" (cost) is missing'],
    [
      'a fractional cost',
      `{"msec":1,"hostname":"a","weight":"2.5","http_x_api_key":"${RAW}"}`,
      1,
      'weight',
      'field "weight" (cost) must be a whole number',
    ],
    [
      'a line too long',
      `{"msec":1,"hostname":"a","weight":1,"pad":"${'x'.repeat(16_384)}","http_x_api_key":"${RAW}"}`,
      1,
      null,
      'line is longer than 16384',
    ],
  ])('refuses %s, naming the line and the field, showing no value', (_, text, line, field, message) => {
    let error: unknown;
    try {
      readTraceLines([['a.log', text.split('\n')]], source('nginx-json', withKey), keep);
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(TraceError);
    expect(error).toMatchObject({ code: 'bad-line', file: 'a.log', line, field });
    const got = (error as TraceError).message;
    expect(got).toContain(message);
    expect(got).not.toContain(RAW);
    expect(got).not.toContain('soon');
    expect(got).not.toContain('\n');
  });

  it('names the defaults of each format', () => {
    expect(ACCESS_LOG_DEFAULTS.get('nginx-json')).toMatchObject({
      time: { text: 'msec' },
      timeUnit: 's',
      instance: { text: 'hostname' },
      cost: null,
      key: null,
    });
    expect(ACCESS_LOG_DEFAULTS.get('envoy-json')).toMatchObject({
      time: { text: 'start_time' },
      instance: { text: 'upstream_host' },
      cost: null,
      key: null,
    });
  });
});
