/**
 * Re-exports, followed to where a name is defined: what pure-core asks of a
 * module a core imports from another package or folder, so that a clock or
 * an I/O library reached through an entry point's re-export
 * (`import { hostClock } from '@tokenlease/shared'`, where the entry
 * re-exports `./adapters/host-clock.js`) is seen as what it is.
 *
 * Only the repository's own TypeScript sources are followed: a relative
 * path, or an `@tokenlease/*` package (its package.json `exports` entry,
 * `dist/x.js` read as `src/x.ts`). Files are parsed with TypeScript's parser
 * once per lint run and their exports kept.
 */
import { readFileSync, existsSync } from 'node:fs';
import { isBuiltin } from 'node:module';
import { dirname, join, resolve, sep } from 'node:path';
import ts from 'typescript';
import { isRelative, packageName } from './modules.mjs';

const SCOPE = '@tokenlease/';

/** Exports of one parsed file: names defined here, names taken on from a module, and `export *` modules. */
function parseExports(file) {
  const text = readFileSync(file, 'utf8');
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, false, ts.ScriptKind.TS);
  const local = new Set();
  const forwarded = new Map(); // exported name -> { from, name } (name '*': the whole module, as a namespace)
  const stars = [];
  const imported = new Map(); // local binding -> { from, name }
  const exportsLocal = []; // [exported, local]
  const exported = (node) => node.modifiers?.some((m) => m.kind === ts.SyntaxKind.ExportKeyword) ?? false;
  const isDefault = (node) => node.modifiers?.some((m) => m.kind === ts.SyntaxKind.DefaultKeyword) ?? false;
  for (const statement of source.statements) {
    if (ts.isImportDeclaration(statement) && ts.isStringLiteral(statement.moduleSpecifier)) {
      const from = statement.moduleSpecifier.text;
      const clause = statement.importClause;
      if (clause?.name) imported.set(clause.name.text, { from, name: 'default' });
      const bindings = clause?.namedBindings;
      if (bindings && ts.isNamespaceImport(bindings)) imported.set(bindings.name.text, { from, name: '*' });
      if (bindings && ts.isNamedImports(bindings))
        for (const element of bindings.elements)
          imported.set(element.name.text, { from, name: (element.propertyName ?? element.name).text });
    } else if (ts.isExportDeclaration(statement)) {
      const from = statement.moduleSpecifier && ts.isStringLiteral(statement.moduleSpecifier) ? statement.moduleSpecifier.text : null;
      const clause = statement.exportClause;
      if (clause === undefined && from !== null) stars.push(from);
      else if (clause && ts.isNamespaceExport(clause) && from !== null) forwarded.set(clause.name.text, { from, name: '*' });
      else if (clause && ts.isNamedExports(clause))
        for (const element of clause.elements) {
          const name = (element.propertyName ?? element.name).text;
          if (from !== null) forwarded.set(element.name.text, { from, name });
          else exportsLocal.push([element.name.text, name]);
        }
    } else if (ts.isExportAssignment(statement)) {
      local.add('default');
    } else if (exported(statement)) {
      if (isDefault(statement)) local.add('default');
      else if (ts.isVariableStatement(statement))
        for (const declaration of statement.declarationList.declarations) {
          if (ts.isIdentifier(declaration.name)) local.add(declaration.name.text);
        }
      else if (statement.name) local.add(statement.name.text);
    }
  }
  // `import { x } from 'm'; export { x }` forwards x as surely as `export { x } from 'm'`.
  for (const [name, binding] of exportsLocal) {
    if (imported.has(binding)) forwarded.set(name, imported.get(binding));
    else local.add(name);
  }
  return { local, forwarded, stars };
}

/**
 * ReexportTracer — answers, for a module a file imports and the names it
 * takes, which of them are defined in an adapter or come from a Node
 * built-in or an I/O library, and through which file.
 */
export class ReexportTracer {
  /**
   * @param {string} root the repository's folder
   * @param {Set<string>} ioModules package names of I/O libraries
   */
  constructor(root, ioModules) {
    this.root = root;
    this.ioModules = ioModules;
    this.parsed = new Map();
    this.packages = null;
  }

  /** packageDirs — `@tokenlease/<name>` → its folder, from the root's workspaces. */
  packageDirs() {
    if (this.packages !== null) return this.packages;
    this.packages = new Map();
    const workspaces = JSON.parse(readFileSync(join(this.root, 'package.json'), 'utf8')).workspaces ?? [];
    for (const dir of workspaces) {
      const manifest = join(this.root, dir, 'package.json');
      if (existsSync(manifest)) this.packages.set(JSON.parse(readFileSync(manifest, 'utf8')).name, join(this.root, dir));
    }
    return this.packages;
  }

  /** resolve — the source file `specifier` names from `fromFile`, or null when it is not one of the repository's. */
  resolve(specifier, fromFile) {
    if (isRelative(specifier)) return sourceFile(resolve(dirname(fromFile), specifier));
    const name = packageName(specifier);
    if (name === null || !name.startsWith(SCOPE)) return null;
    const dir = this.packageDirs().get(name);
    if (dir === undefined) return null;
    const manifest = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'));
    const entry = manifest.exports?.[`.${specifier.slice(name.length)}`];
    const target = typeof entry === 'string' ? entry : (entry?.default ?? entry?.import);
    if (typeof target !== 'string') return null;
    return sourceFile(join(dir, target.replace(/^\.\/dist\//, './src/')));
  }

  exportsOf(file) {
    if (!this.parsed.has(file)) this.parsed.set(file, parseExports(file));
    return this.parsed.get(file);
  }

  /** external — why a module outside the repository's sources is forbidden to a core, or null. */
  external(specifier) {
    if (specifier.startsWith('node:') || isBuiltin(specifier)) return specifier;
    return this.ioModules.has(packageName(specifier)) ? specifier : null;
  }

  /**
   * origin — where `name` exported by `file` is forbidden to a core: the
   * adapter file that defines it or the I/O module it comes from; null when
   * it is defined in a core (or comes from a library a core may use).
   * `name` '*' asks about every export of the file.
   */
  origin(file, name, seen = new Set()) {
    const key = `${file}#${name}`;
    if (seen.has(key)) return null;
    seen.add(key);
    const { local, forwarded, stars } = this.exportsOf(file);
    if (name === '*') {
      for (const n of [...local, ...forwarded.keys()]) {
        const found = this.origin(file, n, seen);
        if (found !== null) return found;
      }
      for (const from of stars) {
        const found = this.through(from, file, '*', seen);
        if (found !== null) return found;
      }
      return null;
    }
    if (local.has(name)) return isAdapterFile(file) ? file : null;
    const forward = forwarded.get(name);
    if (forward !== undefined) return this.through(forward.from, file, forward.name, seen);
    for (const from of stars) {
      const found = this.through(from, file, name, seen);
      if (found !== null) return found;
    }
    return null;
  }

  /** through — the origin of `name` taken from `specifier` by `fromFile`. */
  through(specifier, fromFile, name, seen) {
    const external = this.external(specifier);
    if (external !== null) return external;
    const target = this.resolve(specifier, fromFile);
    if (target === null) return null;
    return this.origin(target, name, seen);
  }
}

/** sourceFile — the TypeScript file a `.js` specifier (or an extensionless one, or a folder) stands for, or null. */
function sourceFile(path) {
  const candidates = [path.replace(/\.js$/, '.ts'), `${path}.ts`, join(path, 'index.ts')];
  return candidates.find((c) => c.endsWith('.ts') && existsSync(c)) ?? null;
}

/** isAdapterFile — a file in an `adapters` folder. */
function isAdapterFile(file) {
  return file.split(sep).includes('adapters');
}
