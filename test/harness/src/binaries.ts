/**
 * Where tests get the servers they start themselves: a binary on this
 * machine, else a container through testcontainers.
 */
import { accessSync, constants } from 'node:fs';
import { delimiter, join } from 'node:path';

/** findExecutable — the path of an executable `name` on PATH or in the usual system folders (/usr/sbin, /usr/local/bin, /usr/bin), or null. */
export function findExecutable(name: string): string | null {
  const dirs = [...(process.env['PATH'] ?? '').split(delimiter), '/usr/sbin', '/usr/local/bin', '/usr/bin'];
  for (const dir of dirs) {
    if (dir === '') continue;
    const candidate = join(dir, name);
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // not here
    }
  }
  return null;
}

/**
 * loadTestcontainers — testcontainers, once a Docker engine answers; else
 * an Error saying `howTo` (what to install instead) and why.
 */
export async function loadTestcontainers(howTo: string): Promise<typeof import('testcontainers')> {
  try {
    const testcontainers = await import('testcontainers');
    await testcontainers.getContainerRuntimeClient();
    return testcontainers;
  } catch (error) {
    throw new Error(`${howTo} (${error instanceof Error ? error.message : String(error)})`);
  }
}
