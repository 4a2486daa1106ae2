/**
 * The architecture rules (tools/eslint-plugin-tokenlease) under the
 * repository's own ESLint configuration: each fires on a sample that breaks
 * it, in the files the configuration gives it, and stays quiet on samples
 * that keep it, comments and strings that merely mention a timer included.
 */
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ESLint } from 'eslint';
import tseslint from 'typescript-eslint';
import { describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../../../../', import.meta.url));

// The samples are not files of a TypeScript project, so the type-aware rules
// are turned off; the architecture rules need only the syntax tree and scopes.
const eslint = new ESLint({ cwd: root, overrideConfig: tseslint.configs.disableTypeChecked });

/** problems — `rule: message` for each report of an architecture rule (or a parse error, or an ignored file) on `code` at `path`. */
async function problems(path: string, code: string): Promise<string[]> {
  const [result] = await eslint.lintText(code, { filePath: join(root, path) });
  if (result === undefined) throw new Error(`no lint result for ${path}`);
  return result.messages
    .filter((m) => m.ruleId === null || m.ruleId.startsWith('tokenlease/'))
    .map((m) => `${m.ruleId ?? 'eslint'}: ${m.message}`);
}

const CORE = 'agent/src/core/sample.ts';

describe('tokenlease/pure-core', () => {
  const breaking: [what: string, code: string, message: RegExp][] = [
    ['a node: module', "import { readFileSync } from 'node:fs';\nreadFileSync('x');", /Node module \('node:fs'\)/],
    ['a built-in without node:', "import { join } from 'path';\njoin('a');", /Node module \('path'\)/],
    ['a type from a built-in', "import type { Socket } from 'node:net';\nexport type S = Socket;", /Node module/],
    ['a re-export of a built-in', "export { setTimeout } from 'node:timers';", /Node module/],
    ['pino', "import { pino } from 'pino';\npino();", /I\/O library \('pino'\)/],
    ['yaml', "import { parse } from 'yaml';\nparse('');", /I\/O library \('yaml'\)/],
    ['a subpath of nats', "export type { Msg } from 'nats/lib/src/mod.js';", /I\/O library/],
    [
      'an adapter',
      "import { TickTimer } from '../adapters/tick-timer.js';\nnew TickTimer();",
      /no adapter \('\.\.\/adapters\/tick-timer\.js'\)/,
    ],
    ['an adapter by a winding path', "export * from './x/../../adapters/agent.js';", /no adapter/],
    ['import() of a built-in', "export const fs = await import('node:fs');", /Node module/],
    ['import() by a template', 'export const p = await import(`pino`);', /I\/O library/],
    ['import() by a variable', "const name = 'node:fs';\nexport const m: unknown = await import(name);", /constant names only/],
    ['require()', "declare const require: (id: string) => unknown;\nexport const fs = require('fs');", /Node module/],
    ['import x = require()', "import fs = require('node:fs');\nexport const r = fs.readFileSync;", /Node module/],
    ['an import() type', "export type Redis = import('ioredis').Redis;", /I\/O library \('ioredis'\)/],
    ['setTimeout', 'setTimeout(() => {}, 1);', /no timer \(setTimeout\)/],
    ['setInterval', 'setInterval(() => {}, 1);', /no timer \(setInterval\)/],
    ['setImmediate', 'setImmediate(() => {});', /no timer \(setImmediate\)/],
    ['queueMicrotask', 'queueMicrotask(() => {});', /no timer \(queueMicrotask\)/],
    ['a timer passed as a value', 'export const later = setTimeout;', /no timer \(setTimeout\)/],
    ['Date.now()', 'export const t = Date.now();', /no clock \(Date\.now\)/],
    ['Date.now as a value', 'export const clock = Date.now;', /no clock \(Date\.now\)/],
    ['new Date()', 'export const d = new Date();', /no clock \(new Date\(\)\)/],
    ['Date()', 'export const s = Date();', /no clock \(Date\(\)\)/],
    ['performance.now()', 'export const t = performance.now();', /no clock \(performance\.now\)/],
    ['process.hrtime', 'export const t = process.hrtime.bigint();', /no clock \(process\.hrtime\)/],
    ['process.env', "export const e = process.env['X'];", /no host facility \(process\.env\)/],
    ['Math.random()', 'export const r = Math.random();', /no randomness \(Math\.random\)/],
    [
      'crypto.getRandomValues()',
      'export const r = crypto.getRandomValues(new Uint8Array(4));',
      /no randomness \(crypto\.getRandomValues\)/,
    ],
    ['crypto.randomUUID()', 'export const r = crypto.randomUUID();', /no randomness \(crypto\.randomUUID\)/],
    ["globalThis['Date'].now()", "export const t = globalThis['Date'].now();", /no clock \(Date\.now\)/],
    ['globalThis.setTimeout', 'globalThis.setTimeout(() => {}, 1);', /no timer \(setTimeout\)/],
    ['global.Math.random()', 'export const r = global.Math.random();', /no randomness \(Math\.random\)/],
    ['window.performance', 'export const t = window.performance.now();', /no clock \(performance\.now\)/],
    ['globalThis.globalThis', 'export const r = globalThis.globalThis.Math.random();', /no randomness \(Math\.random\)/],
    ['new globalThis.Date()', 'export const d = new globalThis.Date();', /no clock \(new Date\(\)\)/],
    ['(Math).random()', 'export const r = (Math).random();', /no randomness \(Math\.random\)/],
    ["Math['random']()", "export const r = Math['random']();", /no randomness \(Math\.random\)/],
    ['Math?.random()', 'export const r = Math?.random();', /no randomness \(Math\.random\)/],
    [
      '(Math as any).random()',
      '// eslint-disable-next-line @typescript-eslint/no-explicit-any\nexport const r: unknown = (Math as any).random();',
      /no randomness \(Math\.random\)/,
    ],
    ['Date!.now()', 'export const t = Date!.now();', /no clock \(Date\.now\)/],
    ['destructured from Math', 'const { random } = Math;\nexport const r = random();', /no randomness \(Math\.random\)/],
    ['destructured from globalThis', 'const { setTimeout: later } = globalThis;\nlater(() => {}, 1);', /no timer \(setTimeout\)/],
    ['Math as a value', 'const M = Math;\nexport const r = M.random();', /Math is passed around/],
    ['globalThis as a value', 'const g = globalThis;\nexport const t = g.Date.now();', /globalThis is passed around/],
    [
      'globalThis by a computed name',
      "const key = 'Date';\nexport const D: unknown = globalThis[key as 'Date'];",
      /globalThis is read here by a computed name/,
    ],
    ['Math by a computed name', "const key = 'random' as 'max';\nexport const f = Math[key];", /Math is read here by a computed name/],
    // Through re-exports: a package entry (or a folder's index) that passes on what an adapter defines.
    [
      "an adapter through a package's entry",
      "import { connectBus } from '@tokenlease/shared/nats';\nexport const c = connectBus;",
      /through a re-export: 'connectBus' comes from shared\/src\/adapters\/nats-bus\.ts/,
    ],
    [
      "an adapter's type through a package's entry",
      "import type { Bus } from '@tokenlease/shared/nats';\nexport type B = Bus;",
      /'Bus' comes from shared\/src\/adapters\/nats-bus\.ts/,
    ],
    [
      'a re-export of an entry that passes on an adapter',
      "export * from '@tokenlease/shared/nats';",
      /through a re-export: the whole module/,
    ],
    [
      'a namespace import of such an entry',
      "import * as nats from '@tokenlease/shared/nats';\nexport const n = nats;",
      /through a re-export/,
    ],
  ];
  it.each(breaking)('reports %s', async (_what, code, message) => {
    // nats and ioredis also meet single-importer; every other report here is pure-core's.
    const found = (await problems(CORE, code)).filter((p) => !p.startsWith('tokenlease/single-importer: '));
    expect(found.length, found.join('\n')).toBeGreaterThan(0);
    expect(
      found.every((p) => p.startsWith('tokenlease/pure-core: ')),
      found.join('\n'),
    ).toBe(true);
    expect(found.join('\n')).toMatch(message);
  });

  const keeping: [what: string, code: string][] = [
    [
      'comments and strings that mention them',
      "// setTimeout( and Date.now() and Math.random() are the adapters' business.\n/* performance.now() */\nexport const s = 'setTimeout(() => {}, Date.now())';",
    ],
    [
      'time and randomness as parameters',
      'export function jitter(nowMs: number, random: () => number): number {\n  return nowMs + Math.round(random() * Math.max(1, 2));\n}',
    ],
    [
      'a local that shadows a global',
      'const performance = { now: () => 0 };\nexport function f(Date: { now(): number }): number {\n  return Date.now() + performance.now();\n}',
    ],
    [
      'Date from a given instant, and its statics',
      'export const d = new Date(1_700_000_000_000);\nexport const u = Date.UTC(2024, 0, 1);\nexport const ok = d instanceof Date;',
    ],
    ['Date and Date.now in types', 'export type Clock = typeof Date.now;\nexport let when: Date | undefined;'],
    ['other globals through globalThis', 'export const n = globalThis.Number.MAX_SAFE_INTEGER;'],
    // The main entry of shared passes on no adapter: the whole of it is fit for a core.
    ['the whole of the shared entry', "import * as shared from '@tokenlease/shared';\nexport const s = shared;"],
    [
      "a core's name from an entry that also passes on adapters",
      "import { resolveNatsOptions } from '@tokenlease/shared/nats';\nexport const r = resolveNatsOptions;",
    ],
    [
      'relative and shared imports',
      "import { TokenleaseError } from '@tokenlease/shared';\nimport { slot } from './lease-slot.js';\nexport { TokenleaseError, slot };",
    ],
  ];
  it.each(keeping)('allows %s', async (_what, code) => {
    expect(await problems(CORE, code)).toEqual([]);
  });

  const impure = "import { readFileSync } from 'node:fs';\nsetTimeout(() => readFileSync('x'), Date.now() % 1000 + Math.random());";
  it.each([
    ['a core of agent', CORE, 4],
    ['a core of shared', 'shared/src/core/sample.ts', 4],
    ['the protocol', 'shared/src/protocol/sample.ts', 4],
    ['a core of coordinator', 'coordinator/src/core/sample.ts', 4],
    ['a core unit test', 'agent/src/core/sample.test.ts', 0],
    ['core fixtures', 'coordinator/src/core/pool.fixtures.ts', 0],
    ['an adapter', 'agent/src/adapters/sample.ts', 0],
    ['a file beside the cores', 'coordinator/src/errors.ts', 0],
    ['the test harness', 'test/harness/src/sample.ts', 0],
  ])('applies to %s: %s', async (_what, path, count) => {
    // In a core: the import, setTimeout, Date.now and Math.random.
    expect(await problems(path, impure)).toHaveLength(count);
  });
});

describe('tokenlease/package-boundaries', () => {
  it.each([
    [
      'agent',
      'agent/src/adapters/agent.ts',
      "import { Pool } from '@tokenlease/coordinator';",
      /must not depend on @tokenlease\/coordinator/,
    ],
    [
      'agent, dynamically',
      'agent/src/index.ts',
      "export const c: unknown = await import('@tokenlease/coordinator');",
      /must not depend on @tokenlease\/coordinator/,
    ],
    [
      'coordinator',
      'coordinator/src/adapters/cli.ts',
      "export type { Agent } from '@tokenlease/agent';",
      /must not depend on @tokenlease\/agent/,
    ],
    ['shared', 'shared/src/adapters/nats-bus.ts', "import { Agent } from '@tokenlease/agent';", /must not depend on @tokenlease\/agent/],
    [
      'shared, on coordinator',
      'shared/src/core/sample.test.ts',
      "import { Pool } from '@tokenlease/coordinator';",
      /must not depend on @tokenlease\/coordinator/,
    ],
    [
      'shared, on itself',
      'shared/src/adapters/host-clock.ts',
      "import { TokenleaseError } from '@tokenlease/shared';",
      /imports itself by its public name/,
    ],
    [
      'shared, on its testing subpath',
      'shared/src/core/bucket.test.ts',
      "import { seed } from '@tokenlease/shared/testing';",
      /imports itself/,
    ],
    ['agent, on itself', 'agent/src/core/lease-keeper.test.ts', "import { Agent } from '@tokenlease/agent';", /imports itself/],
    ['test, on itself', 'test/suite/src/integration/sample.test.ts', "import { x } from '@tokenlease/test';", /imports itself/],
    ['the simulator, on itself', 'test/sim/src/main.ts', "import { runSimulation } from '@tokenlease/sim';", /imports itself/],
    [
      'the simulator, on the harness',
      'test/sim/src/simulation.ts',
      "import { startNats } from '@tokenlease/harness/nats';",
      /must not depend on @tokenlease\/harness/,
    ],
    [
      'the sweep, on the chaos suite',
      'test/sweep/src/main.ts',
      "import { SCENARIOS } from '@tokenlease/chaos';",
      /must not depend on @tokenlease\/chaos/,
    ],
    [
      'the agent, on a tool',
      'agent/src/adapters/agent.ts',
      "import { seededRandom } from '@tokenlease/sim';",
      /must not depend on @tokenlease\/sim/,
    ],
    [
      'a relative path out of the package',
      'agent/src/adapters/agent.ts',
      "import { Pool } from '../../../coordinator/src/core/pool.js';",
      /leaves the folder of @tokenlease\/agent/,
    ],
  ])('reports %s', async (_what, path, code, message) => {
    const found = await problems(path, code);
    expect(found).toHaveLength(1);
    expect(found[0]).toMatch(/^tokenlease\/package-boundaries: /);
    expect(found[0]).toMatch(message);
  });

  it.each([
    ['agent on shared', 'agent/src/adapters/agent.ts', "import { TokenleaseError } from '@tokenlease/shared';"],
    ['coordinator on shared', 'coordinator/src/core/pool-rate.test.ts', "import { seed } from '@tokenlease/shared/testing';"],
    [
      'the integration suite on all three',
      'test/suite/src/integration/sample.test.ts',
      "import { Agent } from '@tokenlease/agent';\nimport { Pool } from '@tokenlease/coordinator';\nimport { TokenleaseError } from '@tokenlease/shared';\nexport { Agent, Pool, TokenleaseError };",
    ],
    [
      'the sweep on the simulator',
      'test/sweep/src/run-sweep.ts',
      "import { runSimulation } from '@tokenlease/sim';\nexport { runSimulation };",
    ],
    [
      'the chaos suite on the harness',
      'test/chaos/src/scenarios.ts',
      "import { startNats } from '@tokenlease/harness/nats';\nexport { startNats };",
    ],
    [
      'a relative path inside the package',
      'agent/src/core/lease-keeper.ts',
      "import { AgentError } from '../errors.js';\nexport { AgentError };",
    ],
  ])('allows %s', async (_what, path, code) => {
    expect(await problems(path, code)).toEqual([]);
  });
});

describe('tokenlease/single-importer', () => {
  it.each([
    [
      'nats in another adapter',
      'agent/src/adapters/agent.ts',
      "import { connect } from 'nats';",
      /nats is imported only by shared\/src\/adapters\/nats-bus\.ts/,
    ],
    ['a nats type in the test harness', 'test/harness/src/nats.ts', "import type { Msg } from 'nats';", /nats is imported only by/],
    [
      'ioredis by import()',
      'test/harness/src/redis.ts',
      "export const r: unknown = await import('ioredis');",
      /ioredis is imported only by coordinator\/src\/adapters\/redis-store\.ts/,
    ],
    [
      'an ioredis type in the coordinator service',
      'coordinator/src/adapters/service.ts',
      "import type { Redis } from 'ioredis';",
      /ioredis is imported only by/,
    ],
  ])('reports %s', async (_what, path, code, message) => {
    const found = await problems(path, code);
    expect(found).toHaveLength(1);
    expect(found[0]).toMatch(/^tokenlease\/single-importer: /);
    expect(found[0]).toMatch(message);
  });

  it.each([
    ['nats in its adapter', 'shared/src/adapters/nats-bus.ts', "import { connect } from 'nats';\nexport { connect };"],
    [
      'ioredis in its adapter',
      'coordinator/src/adapters/redis-store.ts',
      "import { Redis } from 'ioredis';\nexport const r: unknown = await import('ioredis');\nexport { Redis };",
    ],
    [
      'ioredis in the comparison benchmark',
      'test/bench/src/compare/redis-deciders.ts',
      "import { Redis } from 'ioredis';\nexport { Redis };",
    ],
    [
      'a comment that names them',
      'agent/src/adapters/agent.ts',
      "// import { connect } from 'nats'; import Redis from 'ioredis';\nexport {};",
    ],
  ])('allows %s', async (_what, path, code) => {
    expect(await problems(path, code)).toEqual([]);
  });
});
