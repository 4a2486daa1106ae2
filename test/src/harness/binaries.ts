/**
 * findExecutable — the path of an executable `name` on PATH or in the usual
 * system folders (/usr/sbin, /usr/local/bin, /usr/bin), or null.
 */
import { accessSync, constants } from 'node:fs';
import { delimiter, join } from 'node:path';

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
