/**
 * Module references, as the rules of this plugin see them.
 *
 * A file names another module in six ways: `import`, `export ... from`
 * (type-only forms included), `import()`, `require()`, TypeScript's
 * `import x = require()`, and an `import('x')` type. moduleVisitors turns all
 * six into one callback, so that no rule forgets one.
 */

/**
 * constantString — the value of a string literal or of a template literal
 * without substitutions; null for anything else (a variable, a concatenation).
 */
export function constantString(node) {
  if (node?.type === 'Literal' && typeof node.value === 'string') return node.value;
  if (node?.type === 'TemplateLiteral' && node.expressions.length === 0) return node.quasis[0].value.cooked;
  return null;
}

/**
 * packageName — the npm package a bare specifier names: `nats` for
 * `nats/jetstream`, `@tokenlease/shared` for `@tokenlease/shared/testing`;
 * null for relative and absolute paths and for `node:` and other URL schemes.
 */
export function packageName(specifier) {
  if (specifier.startsWith('.') || specifier.startsWith('/') || specifier.includes(':')) return null;
  const parts = specifier.split('/');
  return specifier.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0];
}

/** isRelative — `./x`, `../x`, `.` or `..`. */
export function isRelative(specifier) {
  return specifier === '.' || specifier === '..' || specifier.startsWith('./') || specifier.startsWith('../');
}

/**
 * moduleVisitors — ESLint visitors that call `onModule(node, specifier)` for
 * every module the file names; `specifier` is null when it is not a constant
 * string, so which module it loads cannot be known without running the code.
 * Calls to anything named `require` count, whether the global or one made by
 * createRequire; `require.resolve` only names a path and does not.
 */
export function moduleVisitors(onModule) {
  const named = (node) => onModule(node, constantString(node));
  return {
    ImportDeclaration: (node) => named(node.source),
    ExportNamedDeclaration: (node) => node.source && named(node.source),
    ExportAllDeclaration: (node) => named(node.source),
    ImportExpression: (node) => named(node.source),
    TSExternalModuleReference: (node) => named(node.expression),
    TSImportType: (node) => named(node.source ?? node.argument?.literal),
    CallExpression(node) {
      if (node.callee.type !== 'Identifier' || node.callee.name !== 'require') return;
      const [first] = node.arguments;
      if (first === undefined || first.type === 'SpreadElement') onModule(node, null);
      else named(first);
    },
  };
}
