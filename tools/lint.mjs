#!/usr/bin/env node
// Structural lint for one workspace package: `node tools/lint.mjs <package>`.
// Keeps the rules of the house style that a type checker cannot see:
// - cores (src/core, shared/src/protocol) stay pure: no I/O imports, no clock,
//   no timers, no randomness;
// - dependencies point one way (agent -> shared <- coordinator; test may use all);
// - a package never imports itself through its public name;
// - `nats` and `ioredis` are each imported by their one adapter file only;
// - source files stay under 400 lines.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(fileURLToPath(new URL('..', import.meta.url)));
const pkg = process.argv[2];
const forbiddenDeps = {
  shared: ['@tokenlease/agent', '@tokenlease/coordinator', '@tokenlease/test'],
  agent: ['@tokenlease/coordinator', '@tokenlease/test'],
  coordinator: ['@tokenlease/agent', '@tokenlease/test'],
  test: [],
};
if (!(pkg in forbiddenDeps)) {
  console.error(`usage: lint.mjs <${Object.keys(forbiddenDeps).join('|')}>`);
  process.exit(2);
}

const IMPURE = [
  [/from\s+['"](node:[^'"]+|nats|ioredis|pino|yaml)['"]/, 'imports I/O'],
  [/\bDate\.now\s*\(|\bnew Date\s*\(/, 'reads the wall clock'],
  [/\bsetTimeout\s*\(|\bsetInterval\s*\(|\bsetImmediate\s*\(/, 'starts a timer'],
  [/\bperformance\.now\s*\(|\bprocess\.hrtime/, 'reads a clock'],
  [/\bMath\.random\s*\(/, 'draws randomness'],
];
const NATS_ADAPTER = 'shared/src/adapters/nats-bus.ts';
const REDIS_ADAPTER = 'coordinator/src/adapters/redis-store.ts';
const MAX_LINES = 400;

function* sources(dir) {
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) yield* sources(path);
    else if (name.endsWith('.ts')) yield path;
  }
}

const problems = [];
for (const path of sources(join(root, pkg, 'src'))) {
  const rel = relative(root, path);
  const isTest = rel.endsWith('.test.ts') || rel.endsWith('.fixtures.ts');
  const text = readFileSync(path, 'utf8');
  const lines = text.split('\n');
  const pure = !isTest && (rel.includes('/src/core/') || rel.startsWith('shared/src/protocol/'));
  lines.forEach((line, i) => {
    const where = `${rel}:${i + 1}`;
    if (pure) {
      for (const [pattern, what] of IMPURE) if (pattern.test(line)) problems.push(`${where}: a pure core ${what}: ${line.trim()}`);
    }
    for (const dep of forbiddenDeps[pkg]) {
      if (line.includes(`'${dep}'`) || line.includes(`"${dep}"`)) problems.push(`${where}: ${pkg} must not depend on ${dep}`);
    }
    if (/from\s+['"]@tokenlease\/([a-z]+)['"]/.exec(line)?.[1] === pkg) problems.push(`${where}: imports its own package by name; use a relative path`);
    if (/from\s+['"]nats['"]/.test(line) && rel !== NATS_ADAPTER) problems.push(`${where}: nats is imported only by ${NATS_ADAPTER}`);
    if (/from\s+['"]ioredis['"]/.test(line) && rel !== REDIS_ADAPTER) problems.push(`${where}: ioredis is imported only by ${REDIS_ADAPTER}`);
  });
  if (!isTest && lines.length > MAX_LINES) problems.push(`${rel}: ${lines.length} lines; split it (limit ${MAX_LINES})`);
}

if (problems.length > 0) {
  console.error(problems.join('\n'));
  console.error(`lint: ${problems.length} problem(s) in ${pkg}`);
  process.exit(1);
}
console.log(`lint: ${pkg} ok`);
