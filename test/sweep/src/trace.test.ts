/**
 * Reading traces: good JSON Lines and CSV become the simulator's arrivals
 * (one slot per instance, times to the µs, cost 1 by default); every kind of
 * bad line stops the read with a TraceError naming the file, the line and
 * the field; so do the whole trace's limits (instances, emptiness).
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { readTraceLines, TRACE_LINE_CHARS_MAX, TraceError } from './trace.js';
import { readTraceFile } from './trace-file.js';

const read = (text: string, instancesMax = 100) => readTraceLines('t.jsonl', text.split('\n'), instancesMax);

/** refusal — the TraceError reading `text` throws, as `{ code, line, field, message }`. */
function refusal(text: string, instancesMax = 100): { code: string; line: number; field: string | null; message: string } {
  try {
    read(text, instancesMax);
  } catch (error) {
    if (!(error instanceof TraceError)) throw error;
    return { code: error.code, line: error.line, field: error.field, message: error.message };
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
    expect(read('tMs,instance\n5,x\n5,x\n').workload.arrivals.map((a) => a.tUs)).toEqual([5000, 5000]);
  });

  it.each([
    ['a cost of 0', '{"tMs":0,"instance":"a","cost":0}', 1, 'cost', 't.jsonl:1: field "cost" must be a positive integer'],
    ['a fractional cost', '{"tMs":0,"instance":"a"}\n{"tMs":1,"instance":"a","cost":1.5}', 2, 'cost', 't.jsonl:2: field "cost"'],
    ['a cost given as text', '{"tMs":0,"instance":"a","cost":"2"}', 1, 'cost', 'field "cost"'],
    ['a missing time', '{"instance":"a"}', 1, 'tMs', 'field "tMs" must be a number of ms in [0, 86400000]'],
    ['a negative time', '{"tMs":-1,"instance":"a"}', 1, 'tMs', 'field "tMs"'],
    ['a time past 24 h', '{"tMs":86400001,"instance":"a"}', 1, 'tMs', 'field "tMs"'],
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
    const trace = readTraceLines('t.jsonl', text.split('\n'), 100, 'k1');
    expect(trace.instances).toEqual(['a', 'b']);
    expect(trace.workload.arrivals.map((a) => [a.tUs, a.agent, a.cost])).toEqual([
      [0, 0, 1],
      [3000, 1, 2],
    ]);
    // Another key's line is still read: a bad one stops the run, and so does time going backwards across keys.
    expect(() => readTraceLines('t.jsonl', ['{"tMs":5,"instance":"a","key":"k2","cost":0}'], 100, 'k1')).toThrow(/t.jsonl:1: field "cost"/);
    expect(() =>
      readTraceLines('t.jsonl', ['{"tMs":5,"instance":"a","key":"k2"}', '{"tMs":4,"instance":"a","key":"k1"}'], 100, 'k1'),
    ).toThrow(/t.jsonl:2: field "tMs" must not decrease/);
    expect(() => readTraceLines('t.jsonl', text.split('\n'), 100, 'k9')).toThrow('t.jsonl: has no arrivals of key "k9"');
  });

  it('refuses a trace without arrivals', () => {
    expect(refusal('tMs,instance,cost\n\n')).toMatchObject({
      code: 'empty',
      line: 0,
      message: 't.jsonl: has no arrivals; a trace needs at least one line after any header',
    });
  });
});

describe('readTraceFile', () => {
  const dir = mkdtempSync(join(tmpdir(), 'trace-'));

  it('streams a file whose lines cross its chunks, with or without a final newline', async () => {
    const lines = Array.from({ length: 20_000 }, (_, i) => JSON.stringify({ tMs: i / 10, instance: `i${i % 7}`, cost: 1 + (i % 3) }));
    const path = join(dir, 'many.jsonl');
    writeFileSync(path, lines.join('\n'));
    const trace = await readTraceFile(path, 100);
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
    await expect(readTraceFile(path, 100)).rejects.toMatchObject({
      code: 'bad-line',
      line: 2,
      message: expect.stringContaining('long.jsonl:2: line is longer'),
    });
  });

  it('names a file it cannot read', async () => {
    await expect(readTraceFile(join(dir, 'absent.jsonl'), 100)).rejects.toMatchObject({ code: 'unreadable', line: 0 });
  });
});
