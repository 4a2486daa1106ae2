/**
 * Paths of the runnable entry points. Tests run from src/ under vitest, but
 * child processes run the compiled files in dist/ (built by `npm test`).
 * The harness is test/harness in the repository; what lives beside it
 * (deploy/, the other tools' dist/) is found from REPO_ROOT.
 */
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
/** The harness package's folder (the parent of src/ and dist/). */
export const HARNESS_ROOT = resolve(here, '..');
/** The repository's root folder, when the harness runs from a checkout. */
export const REPO_ROOT = resolve(HARNESS_ROOT, '..', '..');

function built(path: string): string {
  if (!existsSync(path)) throw new Error(`${path} is missing: run \`npm run build\` first (npm test builds before testing)`);
  return path;
}

/** agentProcessScript — the child agent entry point. */
export function agentProcessScript(): string {
  return built(join(HARNESS_ROOT, 'dist', 'agent-process.js'));
}

/** slotServiceScript — the entry point of a service limited by a concurrency pool (slot-service.ts). */
export function slotServiceScript(): string {
  return built(join(HARNESS_ROOT, 'dist', 'slot-service.js'));
}

/** slotHolderScript — the entry point of a process holding slots of a concurrency pool (slot-holder.ts). */
export function slotHolderScript(): string {
  return built(join(HARNESS_ROOT, 'dist', 'slot-holder.js'));
}

/** hostileClientScript — the hostile client entry point (hostile-client.ts). */
export function hostileClientScript(): string {
  return built(join(HARNESS_ROOT, 'dist', 'hostile-client.js'));
}

/** relayCliScript — the `tokenlease-relay` entry point. */
export function relayCliScript(): string {
  const require = createRequire(import.meta.url);
  const entry = require.resolve('@tokenlease/coordinator');
  return built(join(dirname(entry), 'adapters', 'relay-cli.js'));
}

/** coordinatorCliScript — the `tokenlease-coordinator` entry point. */
export function coordinatorCliScript(): string {
  const require = createRequire(import.meta.url);
  const entry = require.resolve('@tokenlease/coordinator');
  return built(join(dirname(entry), 'adapters', 'cli.js'));
}

/** securedNatsConfig — the shipped permission model, deploy/nats/secured.conf. */
export function securedNatsConfig(): string {
  const path = resolve(REPO_ROOT, 'deploy', 'nats', 'secured.conf');
  if (!existsSync(path)) throw new Error(`${path} is missing: it ships with the repository`);
  return path;
}

/** operatorCliScript — the `tokenlease` operator CLI entry point. */
export function operatorCliScript(): string {
  const require = createRequire(import.meta.url);
  const entry = require.resolve('@tokenlease/coordinator');
  return built(join(dirname(entry), 'adapters', 'operator-cli.js'));
}

/** toolScript — a tool's built entry point in the repository (test/<tool>/dist/main.js). */
export function toolScript(tool: 'demo' | 'bench' | 'sim' | 'sweep' | 'chaos'): string {
  return built(join(REPO_ROOT, 'test', tool, 'dist', 'main.js'));
}
