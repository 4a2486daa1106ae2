/**
 * Reload plans: each reason a reload is refused, the fault that is thrown
 * instead, what an applied file changes, and the reports — outcome, log
 * line and the operator's reply, bounded as the protocol bounds it.
 */
import { describe, expect, it } from 'vitest';
import { MESSAGE_TEXT_LENGTH_MAX, NAMES_LIST_MAX } from '@tokenlease/shared';
import { CoordinatorError } from '../errors.js';
import { parseCoordinatorConfig, type CoordinatorConfig } from './config.js';
import { CoordinatorCore } from './coordinator-core.js';
import { STANDARD_POOL_FIELDS } from './pool.fixtures.js';
import { planReload, RELOAD_COORDINATOR_NAME_MAX, reloadApplied, reloadRefused, type ReloadApply, type ReloadPlan } from './reload-plan.js';

const PATH = '/etc/tokenlease/pools.yaml';
const WHO = { trigger: 'SIGHUP', coordinator: 'c1' };
const HELD = { added: [], removed: [], changed: [], rekinded: [] };

function config(pools: readonly string[], top: Readonly<Record<string, unknown>> = {}): CoordinatorConfig {
  return parseCoordinatorConfig(PATH, { ...top, pools: Object.fromEntries(pools.map((name) => [name, STANDARD_POOL_FIELDS])) });
}

const CURRENT = new CoordinatorCore<string>(config(['a', 'b']), 1, 0);

function applied(plan: ReloadPlan): ReloadApply {
  if (plan.kind !== 'apply') throw new Error(`not applied: ${JSON.stringify(plan)}`);
  return plan;
}

describe('planReload', () => {
  const refused: [what: string, load: Parameters<typeof planReload>[1], reason: string][] = [
    [
      'a file that does not load',
      { ok: false, error: new CoordinatorError('config-unreadable', `cannot read ${PATH}: ENOENT`) },
      `cannot read ${PATH}: ENOENT`,
    ],
    [
      'a file that does not validate',
      { ok: false, error: new CoordinatorError('config-invalid', `${PATH}: pools.a.capacity must be at least 1`) },
      `${PATH}: pools.a.capacity must be at least 1`,
    ],
    [
      'a file the core cannot take without a restart',
      { ok: true, config: config(['a'], { subjectPrefix: 'other' }) },
      `${PATH}: subjectPrefix changes from "tokenlease" to "other": that needs a restart`,
    ],
  ];
  it.each(refused)('refuses %s, with the reason an operator reads', (_what, load, reason) => {
    expect(planReload(CURRENT, load, PATH)).toEqual({ kind: 'refuse', reason });
  });

  it('throws any other failure to load instead of refusing it (a fault, logged as reload-failed)', () => {
    const error = new Error('EMFILE: too many open files');
    expect(planReload(CURRENT, { ok: false, error }, PATH)).toEqual({ kind: 'fail', error });
    expect(planReload(CURRENT, { ok: false, error: 'a string' }, PATH)).toEqual({ kind: 'fail', error: 'a string' });
  });

  it('applies a file that validates, saying what it adds, removes and changes', () => {
    const next = parseCoordinatorConfig(PATH, { pools: { a: { ...STANDARD_POOL_FIELDS, capacity: 50 }, c: STANDARD_POOL_FIELDS } });
    const plan = applied(planReload(CURRENT, { ok: true, config: next }, PATH));
    expect(plan).toEqual({
      kind: 'apply',
      config: next,
      diff: { added: ['c'], removed: ['b'], changed: ['a'], otherChanged: false },
      outcome: 'applied',
      message: `applied ${PATH}`,
    });
  });

  it('applies a file that changes nothing but the rest of the configuration as applied', () => {
    const plan = applied(planReload(CURRENT, { ok: true, config: config(['a', 'b'], { quietPeriodMs: 5000 }) }, PATH));
    expect(plan.diff).toEqual({ added: [], removed: [], changed: [], otherChanged: true });
    expect(plan.outcome).toBe('applied');
  });

  it('applies a file that changes nothing as unchanged (served from then on all the same)', () => {
    const same = config(['a', 'b']);
    const plan = applied(planReload(CURRENT, { ok: true, config: same }, PATH));
    expect(plan).toMatchObject({ config: same, outcome: 'unchanged', message: `${PATH} changes nothing` });
  });
});

describe('reload reports', () => {
  it('a refusal: counted refused, logged at error with its trigger and reason, answered with no names', () => {
    expect(reloadRefused('bad file', WHO)).toEqual({
      outcome: 'refused',
      log: {
        level: 'error',
        fields: { event: 'reload-refused', trigger: 'SIGHUP', reason: 'bad file' },
        message: 'configuration reload refused: nothing changed',
      },
      reply: { v: 2, kind: 'reload', coordinator: 'c1', outcome: 'refused', message: 'bad file', added: [], removed: [], changed: [] },
    });
  });

  it('an applied file: counted as its outcome, logged at info with every name, what is held and the instant', () => {
    const plan = applied(planReload(CURRENT, { ok: true, config: config(['a', 'c']) }, PATH));
    const report = reloadApplied(plan, { summary: { ...HELD, added: ['c'] }, atUs: 1_500_000.4 }, { ...WHO, trigger: 'operator' });
    expect(report.outcome).toBe('applied');
    expect(report.log).toEqual({
      level: 'info',
      fields: {
        event: 'reloaded',
        trigger: 'operator',
        outcome: 'applied',
        added: ['c'],
        removed: ['b'],
        changed: [],
        held: { ...HELD, added: ['c'] },
        tUs: 1_500_000,
      },
      message: 'configuration reloaded',
    });
    expect(report.reply).toEqual({
      v: 2,
      kind: 'reload',
      coordinator: 'c1',
      outcome: 'applied',
      message: `applied ${PATH}`,
      added: ['c'],
      removed: ['b'],
      changed: [],
    });
  });

  it('bounds the reply as the protocol does; the log line keeps every name', () => {
    const many = Array.from({ length: NAMES_LIST_MAX + 5 }, (_, i) => `p${i}`);
    const plan = applied(planReload(CURRENT, { ok: true, config: config(many) }, PATH));
    const longName = 'c'.repeat(RELOAD_COORDINATOR_NAME_MAX + 10);
    const report = reloadApplied(plan, { summary: HELD, atUs: 0 }, { ...WHO, coordinator: longName });
    expect(report.reply.added).toHaveLength(NAMES_LIST_MAX);
    expect(report.log.fields['added']).toHaveLength(many.length);
    expect(report.reply.coordinator).toBe('c'.repeat(RELOAD_COORDINATOR_NAME_MAX));
    const refusal = reloadRefused('x'.repeat(MESSAGE_TEXT_LENGTH_MAX + 1), WHO);
    expect(refusal.reply.message).toHaveLength(MESSAGE_TEXT_LENGTH_MAX);
    expect(refusal.log.fields['reason']).toHaveLength(MESSAGE_TEXT_LENGTH_MAX + 1);
  });
});
