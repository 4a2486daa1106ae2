/**
 * Reading traces: good JSON Lines and CSV become the simulator's arrivals
 * (one slot per instance, times to the µs exactly, from the trace's start or
 * since the epoch, cost 1 by default); several files merge by time, stably;
 * every kind of bad line stops the read with a TraceError naming the file,
 * the line and the field; so do the whole trace's limits (span, instances,
 * emptiness).
 */
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { BY_KEY_COLUMNS } from './by-key.js';
import {
  TRACE_COST_MAX,
  TRACE_ID_CHARS_MAX,
  TRACE_LINE_CHARS_MAX,
  TRACE_SPAN_MS_MAX,
  TRACE_TIME_MS_MAX,
  TraceError,
  type Trace,
  type TraceReadOptions,
} from './trace.js';
import { readTraceFiles } from './trace-file.js';
import { readTraceLines, TOKENLEASE_SOURCE } from './trace-source.js';

const options = (instancesMax = 100, keyOnly: string | null = null): TraceReadOptions => ({ instancesMax, keyOnly, keepKeys: false });
const readFiles = (files: readonly (readonly [string, string])[], instancesMax = 100): Trace =>
  readTraceLines(
    files.map(([path, text]) => [path, text.split('\n')] as const),
    TOKENLEASE_SOURCE,
    options(instancesMax),
  );
const read = (text: string, instancesMax = 100): Trace => readFiles([['t.jsonl', text]], instancesMax);

/** refusal — the TraceError reading `text` (or several files) throws, as `{ code, file, line, field, message }`. */
function refusal(
  text: string | readonly (readonly [string, string])[],
  instancesMax = 100,
): { code: string; file: string; line: number; field: string | null; message: string } {
  try {
    if (typeof text === 'string') read(text, instancesMax);
    else readFiles(text, instancesMax);
  } catch (error) {
    if (!(error instanceof TraceError)) throw error;
    return { code: error.code, file: error.file, line: error.line, field: error.field, message: error.message };
  }
  throw new Error('the trace was accepted');
}

describe('TraceReader', () => {
  it('reads JSON Lines: one slot per instance in order of first appearance, cost 1 by default, times to the µs', () => {
    const trace = read('{"tMs":0,"instance":"b"}\n\n{"tMs":1.5,"instance":"a","cost":3,"key":"k1"}\r\n{"tMs":1999.0004,"instance":"b"}\n');
    expect(trace.instances).toEqual(['b', 'a']);
    expect(trace.workload.arrivals).toEqual([
      { tUs: 0, agent: 0, incarnation: 0, cost: 1, waitMs: 0 },
      { tUs: 1500, agent: 1, incarnation: 0, cost: 3, waitMs: 0 },
      { tUs: 1_999_000, agent: 0, incarnation: 0, cost: 1, waitMs: 0 },
    ]);
    expect(trace.durationMs).toBe(2000);
    expect(trace.workload.presence).toEqual([
      { agent: 0, incarnation: 0, fromUs: 0, toUs: 2_000_000, crashes: false },
      { agent: 1, incarnation: 0, fromUs: 0, toUs: 2_000_000, crashes: false },
    ]);
    expect(trace.workload.demandPerSecond).toEqual([1, 1.5]);
  });

  it('reads CSV with the columns in any order, cost and key optional', () => {
    const full = read('instance,key,tMs,cost\na,k,0,2\nb,,10.25,\n');
    expect(full.workload.arrivals.map((a) => [a.tUs, a.agent, a.cost])).toEqual([
      [0, 0, 2],
      [10_250, 1, 1],
    ]);
    // Time 0 of the replay is the first arrival, rounded down to a whole ms.
    expect(read('tMs,instance\n5.25,x\n7,x\n').workload.arrivals.map((a) => a.tUs)).toEqual([250, 2000]);
  });

  it.each([
    ['a cost of 0', '{"tMs":0,"instance":"a","cost":0}', 1, 'cost', 't.jsonl:1: field "cost" must be a positive integer'],
    ['a fractional cost', '{"tMs":0,"instance":"a"}\n{"tMs":1,"instance":"a","cost":1.5}', 2, 'cost', 't.jsonl:2: field "cost"'],
    ['a cost given as text', '{"tMs":0,"instance":"a","cost":"2"}', 1, 'cost', 'field "cost"'],
    ['a missing time', '{"instance":"a"}', 1, 'tMs', `field "tMs" must be a number of ms in [0, ${TRACE_TIME_MS_MAX}]`],
    ['a negative time', '{"tMs":-1,"instance":"a"}', 1, 'tMs', 'field "tMs"'],
    ['a time past the latest', `{"tMs":${TRACE_TIME_MS_MAX + 1},"instance":"a"}`, 1, 'tMs', 'field "tMs"'],
    ['a time as text', '{"tMs":"5","instance":"a"}', 1, 'tMs', 'field "tMs"'],
    ['a time as an object', '{"tMs":{"decimal":"5"},"instance":"a"}', 1, 'tMs', 'field "tMs"'],
    ['a CSV time with a sign', 'tMs,instance\n+5,a', 2, 'tMs', 'field "tMs"'],
    [
      'a decreasing time',
      '{"tMs":5,"instance":"a"}\n{"tMs":4.999,"instance":"a"}',
      2,
      'tMs',
      't.jsonl:2: field "tMs" must not decrease: 4.999 comes after 5',
    ],
    ['a missing instance', '{"tMs":0}', 1, 'instance', 'field "instance" must be a non-empty string'],
    ['an empty instance', '{"tMs":0,"instance":""}', 1, 'instance', 'field "instance"'],
    ['a numeric instance', '{"tMs":0,"instance":7}', 1, 'instance', 'field "instance"'],
    ['a numeric key', '{"tMs":0,"instance":"a","key":7}', 1, 'key', 'field "key"'],
    ['an unknown field', '{"tMs":0,"instance":"a","user":"x"}', 1, 'user', 'field "user" is not a trace field'],
    ['a line that is not JSON', '{"tMs":0,"instance":"a"}\n{"tMs":1,', 2, null, 't.jsonl:2: is not a JSON object'],
    ['a JSON array', '{"tMs":0,"instance":"a"}\n[1]', 2, null, 'is not a JSON object'],
    ['an own __proto__ key', '{"tMs":0,"instance":"a","__proto__":{}}', 1, '__proto__', 'is not a trace field'],
    ['a CSV time that is not a number', 'tMs,instance\nsoon,a', 2, 'tMs', 't.jsonl:2: field "tMs"'],
    ['a CSV cost that is not whole', 'tMs,instance,cost\n0,a,2.5', 2, 'cost', 'field "cost" must be a positive integer'],
    ['a CSV row with a missing cell', 'tMs,instance,cost\n0,a', 2, null, 'has 2 cells; the header has 3'],
    ['a CSV row with a quote', 'tMs,instance\n0,"a"', 2, null, 'has a quote'],
    ['a CSV header with an unknown column', 'tMs,instance,user\n0,a,x', 1, null, 'header column "user" is not a trace field'],
    ['a CSV header without instance', 'tMs,cost\n0,1', 1, null, 'header lacks column "instance"'],
    ['a CSV header naming a column twice', 'tMs,instance,tMs\n0,a,0', 1, null, 'header names a column twice'],
    [
      'a line too long',
      `{"tMs":0,"instance":"${'a'.repeat(TRACE_LINE_CHARS_MAX)}"}`,
      1,
      null,
      `line is longer than ${TRACE_LINE_CHARS_MAX} characters`,
    ],
  ])('refuses %s, naming the line and the field', (_, text, line, field, message) => {
    const got = refusal(text);
    expect({ code: got.code, line: got.line, field: got.field }).toEqual({ code: 'bad-line', line, field });
    expect(got.message).toContain(message);
  });

  it('refuses more instances than the sweep simulates, at the first one too many', () => {
    const got = refusal('{"tMs":0,"instance":"a"}\n{"tMs":0,"instance":"b"}\n{"tMs":0,"instance":"a"}\n{"tMs":1,"instance":"c"}', 2);
    expect(got).toMatchObject({ code: 'too-many-instances', line: 4, field: 'instance' });
    expect(got.message).toBe('t.jsonl:4: field "instance": "c" would be instance 3; the sweep simulates at most 2 agents');
  });

  it("replays one key alone: every line still checked, only that key's arrivals kept, one slot per instance that served it", () => {
    const text =
      '{"tMs":0,"instance":"a","key":"k1"}\n{"tMs":1,"instance":"b","key":"k2","cost":4}\n{"tMs":2,"instance":"c"}\n{"tMs":3,"instance":"b","key":"k1","cost":2}';
    const one = (lines: readonly string[], key: string): Trace =>
      readTraceLines([['t.jsonl', lines]], TOKENLEASE_SOURCE, options(100, key));
    const trace = one(text.split('\n'), 'k1');
    expect(trace.instances).toEqual(['a', 'b']);
    expect(trace.workload.arrivals.map((a) => [a.tUs, a.agent, a.cost])).toEqual([
      [0, 0, 1],
      [3000, 1, 2],
    ]);
    // Another key's line is still read: a bad one stops the run, and so does time going backwards across keys.
    expect(() => one(['{"tMs":5,"instance":"a","key":"k2","cost":0}'], 'k1')).toThrow(/t.jsonl:1: field "cost"/);
    expect(() => one(['{"tMs":5,"instance":"a","key":"k2"}', '{"tMs":4,"instance":"a","key":"k1"}'], 'k1')).toThrow(
      /t.jsonl:2: field "tMs" must not decrease/,
    );
    expect(() => one(text.split('\n'), 'k9')).toThrow('t.jsonl: has no arrivals of key "k9"');
  });

  it('refuses a trace without arrivals', () => {
    expect(refusal('tMs,instance,cost\n\n')).toMatchObject({
      code: 'empty',
      line: 0,
      message: 't.jsonl: has no arrivals; a trace needs at least one line after any header',
    });
  });
});

describe('absolute times', () => {
  /** msText — `us` µs as ms in decimal text, exactly (never through a float). */
  const msText = (us: number): string => `${Math.floor(us / 1000)}.${String(us % 1000).padStart(3, '0')}`;

  it('replays wall-clock ms from the first arrival rounded down to a whole ms, to the µs exactly', () => {
    const trace = read('{"tMs":1764662400123.456,"instance":"api-1"}\n{"tMs":1764662400124.001,"instance":"api-2","cost":2}');
    expect(trace.originMs).toBe(1_764_662_400_123);
    expect(trace.workload.arrivals.map((a) => [a.tUs, a.agent, a.cost])).toEqual([
      [456, 0, 1],
      [1001, 1, 2],
    ]);
    expect(trace.durationMs).toBe(2);
    // The latest time a trace may hold still reads to the exact µs.
    expect(
      read(`{"tMs":${TRACE_TIME_MS_MAX - 1}.999,"instance":"a"}\n{"tMs":${TRACE_TIME_MS_MAX},"instance":"a"}`).workload.arrivals.map(
        (a) => a.tUs,
      ),
    ).toEqual([999, 1000]);
  });

  it('reads CSV times from their digits, past the µs rounded half up', () => {
    const trace = read('tMs,instance\n1764662400123.4565,a\n1764662400123.4574,a');
    expect(trace.workload.arrivals.map((a) => a.tUs)).toEqual([457, 457]);
  });

  it('replays a trace shifted by any whole number of ms exactly as the trace from 0 (property)', () => {
    fc.assert(
      fc.property(
        fc.array(fc.integer({ min: 0, max: TRACE_SPAN_MS_MAX * 1000 }), { minLength: 1, maxLength: 20 }),
        fc.integer({ min: 0, max: TRACE_TIME_MS_MAX - TRACE_SPAN_MS_MAX - 1 }),
        (times, shiftMs) => {
          const sorted = [...times].sort((a, b) => a - b);
          const lines = (offsetUs: number): string =>
            sorted.map((us, i) => `{"tMs":${msText(us + offsetUs)},"instance":"i${i % 3}"}`).join('\n');
          const fromZero = read(lines(0));
          const shifted = read(lines(shiftMs * 1000));
          expect(shifted.workload).toEqual(fromZero.workload);
          expect(shifted.durationMs).toBe(fromZero.durationMs);
          expect(shifted.originMs - fromZero.originMs).toBe(shiftMs);
        },
      ),
    );
  });

  it('allows a span of 24 h and refuses one longer, naming the file and the line where it was exceeded', () => {
    const day = TRACE_SPAN_MS_MAX;
    expect(read(`{"tMs":5000.5,"instance":"a"}\n{"tMs":${5000 + day},"instance":"a"}`).durationMs).toBe(day + 1);
    const got = refusal(`{"tMs":5000.5,"instance":"a"}\n{"tMs":${5000 + day},"instance":"a"}\n{"tMs":${5000 + day}.001,"instance":"a"}`);
    expect(got).toMatchObject({ code: 'span-too-long', file: 't.jsonl', line: 3, field: 'tMs' });
    expect(got.message).toContain(`t.jsonl:3: field "tMs": this arrival comes 86400000.001 ms after the trace's first arrival`);
  });
});

describe('keys', () => {
  it("keeps each arrival's key, and refuses a key past the limit at its line without showing it", () => {
    const lines = [
      '{"tMs":0,"instance":"a","key":"k1"}',
      '{"tMs":1,"instance":"a"}',
      '{"tMs":2,"instance":"a","key":"k1"}',
      '{"tMs":3,"instance":"a","key":"k2"}',
    ];
    const keep = { instancesMax: 100, keyOnly: null, keepKeys: true, keysMax: 2 };
    expect(readTraceLines([['t.jsonl', lines]], TOKENLEASE_SOURCE, keep).keys).toEqual({ names: ['k1', 'k2'], ofArrival: [0, -1, 0, 1] });
    let error: unknown;
    try {
      readTraceLines([['t.jsonl', [...lines, '{"tMs":4,"instance":"a","key":"secret-k3"}']]], TOKENLEASE_SOURCE, keep);
    } catch (caught) {
      error = caught;
    }
    expect(error).toMatchObject({ code: 'too-many-keys', file: 't.jsonl', line: 5, field: 'key' });
    expect((error as Error).message).toBe('t.jsonl:5: field "key": this would be key 3; --by-key reports at most 2 distinct keys');
    expect(() => readTraceLines([['t.jsonl', ['{"tMs":0,"instance":"a"}']]], TOKENLEASE_SOURCE, keep)).toThrow('t.jsonl: has no keys');
  });
});

describe('several files', () => {
  it('merges the arrivals by time: ties keep file order, then line order; an instance is one slot across files', () => {
    const trace = readFiles([
      ['a.jsonl', '{"tMs":1000,"instance":"x"}\n{"tMs":1002,"instance":"x","cost":2}\n{"tMs":1002,"instance":"y","cost":3}'],
      ['b.csv', 'tMs,instance,cost\n1001,z,4\n1002,x,5\n1003,z,6'],
    ]);
    expect(trace.instances).toEqual(['x', 'z', 'y']);
    expect(trace.workload.arrivals.map((a) => [a.tUs, a.agent, a.cost])).toEqual([
      [0, 0, 1],
      [1000, 1, 4],
      [2000, 0, 2],
      [2000, 2, 3],
      [2000, 0, 5],
      [3000, 1, 6],
    ]);
    expect(trace.durationMs).toBe(4);
  });

  it('checks each file alone: its own time order and line numbers', () => {
    // b starts before a ends: fine; b going backwards within itself is not.
    expect(() =>
      readFiles([
        ['a.jsonl', '{"tMs":5,"instance":"x"}'],
        ['b.jsonl', '{"tMs":1,"instance":"y"}'],
      ]),
    ).not.toThrow();
    expect(
      refusal([
        ['a.jsonl', '{"tMs":5,"instance":"x"}\n{"tMs":6,"instance":"x"}'],
        ['b.jsonl', '{"tMs":1,"instance":"y"}\n{"tMs":0,"instance":"y"}'],
      ]),
    ).toMatchObject({
      code: 'bad-line',
      file: 'b.jsonl',
      line: 2,
      field: 'tMs',
    });
  });

  it('applies the limits to the whole trace, and measures the span from the earliest arrival of any file', () => {
    expect(
      refusal(
        [
          ['a.jsonl', '{"tMs":0,"instance":"x"}\n{"tMs":1,"instance":"y"}'],
          ['b.jsonl', '{"tMs":0,"instance":"z"}'],
        ],
        2,
      ),
    ).toMatchObject({
      code: 'too-many-instances',
      file: 'b.jsonl',
      line: 1,
    });
    const got = refusal([
      ['a.jsonl', `{"tMs":${TRACE_SPAN_MS_MAX + 10},"instance":"x"}`],
      ['b.jsonl', '{"tMs":9,"instance":"y"}'],
    ]);
    expect(got).toMatchObject({ code: 'span-too-long', file: 'a.jsonl', line: 1 });
    expect(
      refusal([
        ['a.jsonl', ''],
        ['b.csv', 'tMs,instance'],
      ]),
    ).toMatchObject({ code: 'empty', file: 'a.jsonl, b.csv', line: 0 });
  });
});

describe('readTraceFile', () => {
  const dir = mkdtempSync(join(tmpdir(), 'trace-'));

  it('streams a file whose lines cross its chunks, with or without a final newline', async () => {
    const lines = Array.from({ length: 20_000 }, (_, i) => JSON.stringify({ tMs: i / 10, instance: `i${i % 7}`, cost: 1 + (i % 3) }));
    const path = join(dir, 'many.jsonl');
    writeFileSync(path, lines.join('\n'));
    const trace = await readTraceFiles([path], TOKENLEASE_SOURCE, options());
    expect(trace.workload.arrivals.length).toBe(20_000);
    expect(trace.instances.length).toBe(7);
    expect(trace.workload.arrivals.at(-1)).toEqual({
      tUs: 1_999_900,
      agent: 19_999 % 7,
      incarnation: 0,
      cost: 1 + (19_999 % 3),
      waitMs: 0,
    });
  });

  it('refuses a line too long before it has read it all', async () => {
    const path = join(dir, 'long.jsonl');
    writeFileSync(path, `{"tMs":0,"instance":"a"}\n{"tMs":1,"instance":"${'x'.repeat(1_000_000)}"}\n`);
    await expect(readTraceFiles([path], TOKENLEASE_SOURCE, options())).rejects.toMatchObject({
      code: 'bad-line',
      line: 2,
      message: expect.stringContaining('long.jsonl:2: line is longer'),
    });
  });

  it('names a file it cannot read', async () => {
    await expect(readTraceFiles([join(dir, 'absent.jsonl')], TOKENLEASE_SOURCE, options())).rejects.toMatchObject({
      code: 'unreadable',
      line: 0,
    });
  });
});

describe('the documents', () => {
  const root = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');

  it("state the reader's limits: the schema's bounds are the constants", () => {
    const schema = JSON.parse(readFileSync(resolve(root, 'test/sweep/trace.schema.json'), 'utf8')) as {
      properties: Record<string, { minimum?: number; maximum?: number; maxLength?: number }>;
    };
    expect(schema.properties['tMs']).toMatchObject({ minimum: 0, maximum: TRACE_TIME_MS_MAX });
    expect(schema.properties['cost']).toMatchObject({ minimum: 1, maximum: TRACE_COST_MAX });
    expect(schema.properties['instance']?.maxLength).toBe(TRACE_ID_CHARS_MAX);
    expect(schema.properties['key']?.maxLength).toBe(TRACE_ID_CHARS_MAX);
    expect(TRACE_TIME_MS_MAX).toBe(Math.floor(Number.MAX_SAFE_INTEGER / 1000));
  });

  it('describe every column of the per-key report as the sweep does', () => {
    const doc = readFileSync(resolve(root, 'docs/trace-format.md'), 'utf8').replace(/’/g, "'");
    for (const [name, meaning] of BY_KEY_COLUMNS)
      expect(doc).toMatch(new RegExp(`\\| \`${name}\` +\\| ${meaning.replace(/[’]/g, "'").replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} \\|`));
  });
});
