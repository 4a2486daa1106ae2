/**
 * Installing packages the way a user does: `npm pack` each workspace
 * package (built by its `prepack`), then `npm install <tarballs>` into a
 * fresh project, with no workspace links (third-party dependencies from the
 * registry, or npm's cache).
 */
import { execFile } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { REPO_ROOT } from './paths.js';

const run = promisify(execFile);

/** PackedFiles — what one tarball holds: its file name and the paths inside it. */
export interface PackedFiles {
  readonly dir: string;
  readonly tarball: string;
  readonly paths: readonly string[];
}

/** packWorkspaces — `npm pack` for each folder (relative to the repository root) into `destination`. */
export async function packWorkspaces(dirs: readonly string[], destination: string): Promise<PackedFiles[]> {
  mkdirSync(destination, { recursive: true });
  const packed: PackedFiles[] = [];
  for (const dir of dirs) {
    const { stdout } = await run('npm', ['pack', '--pack-destination', destination, '--json'], { cwd: join(REPO_ROOT, dir) });
    const [entry] = JSON.parse(stdout) as Array<{ filename: string; files: Array<{ path: string }> }>;
    if (entry === undefined) throw new Error(`npm pack printed no entry for ${dir}`);
    packed.push({ dir, tarball: join(destination, entry.filename), paths: entry.files.map((f) => f.path) });
  }
  return packed;
}

/** installInto — a fresh ES-module project at `app` with the tarballs installed. */
export async function installInto(app: string, tarballs: readonly string[]): Promise<void> {
  mkdirSync(app, { recursive: true });
  writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'tokenlease-user', private: true, type: 'module' }));
  await run('npm', ['install', '--no-audit', '--no-fund', '--prefer-offline', ...tarballs], { cwd: app });
}
