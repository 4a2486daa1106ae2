/**
 * Reads a coordinator configuration file (JSON, or YAML for .yaml/.yml) and
 * validates it. Errors name the file; validation errors also name the pool
 * and field (see core/config.ts).
 */
import { readFile } from 'node:fs/promises';
import { parse as parseYaml } from 'yaml';
import { parseCoordinatorConfig, type CoordinatorConfig } from '../core/config.js';
import { parseRelayConfig, type RelayConfig } from '../core/relay-config.js';
import { CoordinatorError } from '../errors.js';

/** loadConfigFile — reads and validates a coordinator's configuration file (JSON, or YAML for .yaml/.yml); rejects with a CoordinatorError naming the file. */
export async function loadConfigFile(path: string): Promise<CoordinatorConfig> {
  return parseCoordinatorConfig(path, await readDocument(path));
}

/** loadRelayConfigFile — a relay's configuration file (core/relay-config.ts), read as `loadConfigFile` reads a coordinator's. */
export async function loadRelayConfigFile(path: string): Promise<RelayConfig> {
  return parseRelayConfig(path, await readDocument(path));
}

async function readDocument(path: string): Promise<unknown> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    const reason = (error as NodeJS.ErrnoException).code ?? String(error);
    throw new CoordinatorError('config-unreadable', `${path}: cannot read the configuration file (${reason})`, { cause: error });
  }
  let doc: unknown;
  try {
    doc = /\.ya?ml$/i.test(path) ? parseYaml(text) : JSON.parse(text);
  } catch (error) {
    const reason = error instanceof Error ? error.message.split('\n')[0] : String(error);
    throw new CoordinatorError('config-unreadable', `${path}: not valid ${/\.ya?ml$/i.test(path) ? 'YAML' : 'JSON'}: ${reason}`, {
      cause: error,
    });
  }
  return doc;
}
