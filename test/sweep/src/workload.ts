/**
 * Workloads the sweep can offer the fleet: `--workload NAME[:k=v,k=v]`.
 *
 * Guarantees: every workload has a `load` (offered demand in tokens as a
 * multiple of the refill rate) and a few named parameters with stated
 * units, ranges and defaults; `parseWorkload` accepts exactly those, refuses
 * anything else with a SweepArgsError naming `--workload`, and fills in the
 * defaults, so `formatWorkload` (which prints every parameter) reproduces the
 * run even if the defaults change later. The usage text is generated from
 * the same table, so the help cannot drift from the parser. A Workload has
 * the fields of the simulator's WorkloadSpec (../sim/workload.ts), whose
 * semantics the usage text describes.
 */
import { SweepArgsError } from './args-error.js';
import { formatDurationUs, parseDurationUs } from './duration.js';
import { wrapText } from './format.js';

/** WorkloadName, Workload — the simulator's demand shapes (one definition, in ../sim/workload.ts). */
export type { WorkloadName, WorkloadSpec as Workload } from '@tokenlease/sim';
import type { WorkloadName, WorkloadSpec as Workload } from '@tokenlease/sim';

interface ParamSpec {
  /** Key as typed after the colon. */
  readonly key: string;
  /** Field of the Workload it fills. */
  readonly field: string;
  /** `duration`: bare number of ms or a duration such as `2s`; stored in whole ms. */
  readonly kind: 'number' | 'integer' | 'duration';
  readonly min: number;
  readonly minExclusive: boolean;
  readonly max: number;
  readonly fallback: number;
  readonly doc: string;
}

interface WorkloadSpec {
  readonly name: WorkloadName;
  readonly summary: string;
  readonly params: readonly ParamSpec[];
  readonly build: (get: (field: string) => number) => Workload;
}

/** DEFAULT_LOAD — offered demand when `load` is not given: 1.5 × the refill rate. */
export const DEFAULT_LOAD = 1.5;

const HOUR_MS = 3_600_000;
const LOAD: ParamSpec = {
  key: 'load',
  field: 'load',
  kind: 'number',
  min: 0,
  minExclusive: true,
  max: 1000,
  fallback: DEFAULT_LOAD,
  doc: 'offered demand, multiple of the refill rate',
};
const param = (
  key: string,
  field: string,
  kind: ParamSpec['kind'],
  range: [number, number],
  fallback: number,
  doc: string,
  minExclusive = false,
): ParamSpec => ({
  key,
  field,
  kind,
  min: range[0],
  max: range[1],
  minExclusive,
  fallback,
  doc,
});

const SPECS: readonly WorkloadSpec[] = [
  {
    name: 'steady',
    summary: 'every agent offers the same demand, Poisson arrivals',
    params: [LOAD],
    build: (get) => ({ name: 'steady', load: get('load') }),
  },
  {
    name: 'bursty',
    summary: 'all agents burst together: demand load*(on+off)/on times the refill rate for `on`, then nothing for `off`',
    params: [
      param('on', 'onMs', 'duration', [1, HOUR_MS], 500, 'burst length'),
      param('off', 'offMs', 'duration', [0, HOUR_MS], 1500, 'silence between bursts'),
      LOAD,
    ],
    build: (get) => ({ name: 'bursty', load: get('load'), onMs: get('onMs'), offMs: get('offMs') }),
  },
  {
    name: 'diurnal',
    summary: 'fleet demand load*(1 + amp*sin(2*pi*t/period)) times the refill rate, spread evenly over agents',
    params: [
      param('period', 'periodMs', 'duration', [10, 24 * HOUR_MS], 30_000, 'length of one cycle'),
      param('amp', 'amplitude', 'number', [0, 1], 0.8, 'swing, fraction of the mean'),
      LOAD,
    ],
    build: (get) => ({ name: 'diurnal', load: get('load'), periodMs: get('periodMs'), amplitude: get('amplitude') }),
  },
  {
    name: 'zipf',
    summary: 'agent i (1-based) offers a share proportional to 1/i^s of the fleet demand',
    params: [param('s', 'exponent', 'number', [0, 10], 1, 'Zipf exponent (0 = steady)'), LOAD],
    build: (get) => ({ name: 'zipf', load: get('load'), exponent: get('exponent') }),
  },
  {
    name: 'churn',
    summary: 'agents come and go (exponential times), each offering load/N times the refill rate while present; each return is a new agent',
    params: [
      param('up', 'upMs', 'duration', [1, 24 * HOUR_MS], 10_000, 'mean time an agent stays'),
      param('down', 'downMs', 'duration', [0, 24 * HOUR_MS], 5000, 'mean time an agent is gone'),
      param('crash', 'crashFraction', 'number', [0, 1], 0.25, 'fraction of departures that crash (lease stranded)'),
      LOAD,
    ],
    build: (get) => ({ name: 'churn', load: get('load'), upMs: get('upMs'), downMs: get('downMs'), crashFraction: get('crashFraction') }),
  },
  {
    name: 'weighted',
    summary: 'steady streams of mixed costs: a `heavy` fraction of requests cost `ratio` tokens, the rest 1 (load counts tokens)',
    params: [
      param('heavy', 'heavyFraction', 'number', [0, 1], 0.2, 'fraction of requests that are heavy'),
      param('ratio', 'heavyRatio', 'integer', [1, 1_000_000], 10, 'cost of a heavy request, tokens'),
      LOAD,
    ],
    build: (get) => ({ name: 'weighted', load: get('load'), heavyFraction: get('heavyFraction'), heavyRatio: get('heavyRatio') }),
  },
];

/** WORKLOAD_NAMES — every accepted workload name, in the order the usage text lists them. */
export const WORKLOAD_NAMES: readonly WorkloadName[] = SPECS.map((spec) => spec.name);

const NUMBER_PATTERN = /^\d+(?:\.\d+)?$/;
const FLAG = '--workload';

function specOf(name: string): WorkloadSpec {
  const spec = SPECS.find((s) => s.name === name);
  if (spec === undefined) {
    throw new SweepArgsError(
      FLAG,
      `unknown workload ${JSON.stringify(name)}; use one of ${WORKLOAD_NAMES.join(' | ')}, optionally with :k=v,k=v (see --help)`,
    );
  }
  return spec;
}

function rangeText(p: ParamSpec): string {
  const show = (value: number): string => (p.kind === 'duration' ? formatDurationUs(value * 1000) : String(value));
  return `${p.minExclusive ? '(' : '['}${show(p.min)}, ${show(p.max)}]`;
}

function readParam(workload: WorkloadName, p: ParamSpec, text: string): number {
  let value: number | null;
  if (p.kind === 'number') {
    value = NUMBER_PATTERN.test(text) ? Number(text) : null;
  } else if (p.kind === 'integer') {
    value = /^\d+$/.test(text) ? Number(text) : null;
  } else if (/^\d+$/.test(text)) {
    value = Number(text);
  } else {
    const us = parseDurationUs(text);
    value = us !== null && us % 1000 === 0 ? us / 1000 : null;
  }
  const inRange = value !== null && Number.isFinite(value) && (p.minExclusive ? value > p.min : value >= p.min) && value <= p.max;
  if (value === null || !inRange) {
    const forms = {
      duration: 'whole ms like 500, or a duration like 500ms or 2s,',
      integer: 'a whole number',
      number: 'a decimal number like 1.5',
    };
    const form = forms[p.kind];
    throw new SweepArgsError(FLAG, `${workload} parameter ${p.key}=${JSON.stringify(text)} must be ${form} in ${rangeText(p)} (${p.doc})`);
  }
  return value;
}

/**
 * parseWorkload — reads `NAME` or `NAME:k=v,k=v` (e.g. `zipf:s=1.2,load=1.5`,
 * `bursty:on=500,off=1500,load=2`). Unknown names and keys, repeated keys,
 * malformed pairs and out-of-range values throw a SweepArgsError naming
 * `--workload`; missing keys take their defaults.
 */
export function parseWorkload(text: string): Workload {
  const colon = text.indexOf(':');
  const spec = specOf(colon < 0 ? text : text.slice(0, colon));
  const given = new Map<string, number>();
  if (colon >= 0) {
    for (const pair of text.slice(colon + 1).split(',')) {
      const eq = pair.indexOf('=');
      const key = eq < 0 ? pair : pair.slice(0, eq);
      const p = spec.params.find((candidate) => candidate.key === key);
      if (eq < 0 || p === undefined) {
        const keys = spec.params.map((candidate) => `${candidate.key}=`).join(', ');
        throw new SweepArgsError(
          FLAG,
          `${JSON.stringify(pair)} is not a ${spec.name} parameter; use ${spec.name}:k=v,k=v with k one of ${keys}`,
        );
      }
      if (given.has(p.field)) throw new SweepArgsError(FLAG, `${spec.name} parameter ${key} is given twice; give it once`);
      given.set(p.field, readParam(spec.name, p, pair.slice(eq + 1)));
    }
  }
  return spec.build((field) => {
    const p = spec.params.find((candidate) => candidate.field === field);
    if (p === undefined) throw new Error(`workload table: ${spec.name} has no field ${field}`);
    return given.get(field) ?? p.fallback;
  });
}

/**
 * formatWorkload — the canonical text of a workload with every parameter
 * spelled out (`zipf:s=1,load=1.5`, `bursty:on=500ms,off=1.5s,load=1.5`);
 * `parseWorkload` reads it back to an equal value.
 */
export function formatWorkload(workload: Workload): string {
  const spec = specOf(workload.name);
  const fields = workload as unknown as Readonly<Record<string, unknown>>;
  const pairs = spec.params.map((p) => {
    const value = Number(fields[p.field]);
    return `${p.key}=${p.kind === 'duration' ? formatDurationUs(value * 1000) : String(value)}`;
  });
  return `${workload.name}:${pairs.join(',')}`;
}

/**
 * workloadUsage — the `--workload` section of the usage text: one line per
 * workload and one per parameter with its default and range.
 */
export function workloadUsage(indent: string): string {
  const lines: string[] = [];
  for (const spec of SPECS) {
    const [first = '', ...rest] = wrapText(spec.summary, `${indent}${' '.repeat(9)}`, 78);
    lines.push(`${indent}${spec.name.padEnd(9)}${first.trimStart()}`, ...rest);
    for (const p of spec.params) {
      const fallback = p.kind === 'duration' ? formatDurationUs(p.fallback * 1000) : String(p.fallback);
      lines.push(`${indent}  ${`${p.key}=${fallback}`.padEnd(14)}${p.doc} ${rangeText(p)}`);
    }
  }
  return lines.join('\n');
}
