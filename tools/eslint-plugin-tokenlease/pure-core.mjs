/**
 * pure-core — a core does no I/O and reads no clock: time and randomness are
 * parameters, so the simulator and the unit tests can drive it.
 *
 * Applied to core files only (the configuration says which). Reports:
 * - a module load of a Node built-in (`node:*` or a bare `fs`), of a library
 *   listed in the `modules` option (I/O: nats, ioredis, pino, yaml), of a
 *   relative path into an `adapters/` folder, or of a name that is not a
 *   constant string (it could be any of these);
 * - a name imported or re-exported from one of the repository's own
 *   modules (a relative path or an `@tokenlease/*` entry) that is defined in
 *   an adapter, or comes from a Node built-in or an I/O library, however
 *   many re-exports lie between (reexports.mjs; needs the `root` option);
 * - a use of a global timer, clock or random source: setTimeout and its
 *   kin, Date.now(), Date(), new Date() without arguments, performance.*,
 *   process.*, Math.random, crypto.*.
 *
 * It works on the syntax tree and the scopes ESLint builds, so comments and
 * strings never match, a local variable that shadows a global is left alone,
 * and the disguises of a global are seen through: `globalThis.Date`,
 * `global['Math']`, `(Math).random`, `Math?.random`, `(Math as any).random`,
 * `const { random } = Math`. A watched global that escapes as a plain value
 * (`const M = Math`, `globalThis[name]`) is reported too: past that point its
 * uses cannot be followed.
 */
import { isBuiltin } from 'node:module';
import { posix } from 'node:path';
import { constantString, isRelative, moduleVisitors, packageName } from './modules.mjs';
import { ReexportTracer } from './reexports.mjs';

/** Names of the global object: a constant member of one is that global. */
const GLOBAL_OBJECTS = new Set(['globalThis', 'global', 'window', 'self']);

const CALL = Symbol('called');
const NEW_WITHOUT_ARGUMENTS = Symbol('constructed without arguments');
const ANY = Symbol('any other use');

/**
 * What a use of each watched global is (a message id). A function is one
 * whatever is done with it; an object is judged by the member read, by
 * being called or constructed, and ANY covers every other use. An object
 * without ANY may be used otherwise (Math.max, new Date(ms), instanceof Date)
 * but not passed around, where its members could no longer be followed.
 */
const WATCHED = new Map([
  ['setTimeout', 'timer'],
  ['setInterval', 'timer'],
  ['setImmediate', 'timer'],
  ['queueMicrotask', 'timer'],
  ['clearTimeout', 'timer'],
  ['clearInterval', 'timer'],
  ['clearImmediate', 'timer'],
  ['Date', { now: 'clock', [CALL]: 'clock', [NEW_WITHOUT_ARGUMENTS]: 'clock' }],
  ['performance', { [ANY]: 'clock' }],
  ['process', { hrtime: 'clock', uptime: 'clock', nextTick: 'timer', [ANY]: 'host' }],
  ['Math', { random: 'random' }],
  ['crypto', { getRandomValues: 'random', randomUUID: 'random', randomInt: 'random', randomBytes: 'random', [ANY]: 'host' }],
]);

/** Expressions that only tell the compiler something and leave the value as it is. */
const TRANSPARENT = new Set([
  'TSAsExpression',
  'TSNonNullExpression',
  'TSSatisfiesExpression',
  'TSTypeAssertion',
  'TSInstantiationExpression',
  'ChainExpression',
]);

/** memberKey — the name a member expression reads when it is a constant; null otherwise. */
function memberKey(member) {
  if (!member.computed) return member.property.type === 'Identifier' ? member.property.name : null;
  const { property } = member;
  if (property.type === 'Literal' && (typeof property.value === 'string' || typeof property.value === 'number'))
    return String(property.value);
  return constantString(property);
}

/** propertyKey — the key of a destructuring property when it is a constant; null for a rest or a computed key. */
function propertyKey(property) {
  if (property.type !== 'Property') return null;
  if (!property.computed && property.key.type === 'Identifier') return property.key.name;
  return memberKey({ computed: true, property: property.key });
}

/** useOf — the node that consumes the value of `node`, past parentheses (absent from the tree) and type-only wrappers. */
function useOf(node) {
  let child = node;
  while (TRANSPARENT.has(child.parent.type)) child = child.parent;
  return { child, parent: child.parent };
}

/** destructured — the object pattern `node`'s value is destructured into, or null. */
function destructured(child, parent) {
  if (parent.type === 'VariableDeclarator' && parent.init === child && parent.id.type === 'ObjectPattern') return parent.id;
  if (parent.type === 'AssignmentExpression' && parent.right === child && parent.left.type === 'ObjectPattern') return parent.left;
  return null;
}

/** inTypeQuery — whether an identifier sits in `typeof X` in a type, which has no run-time effect. */
function inTypeQuery(identifier) {
  let node = identifier;
  while (node.parent?.type === 'TSQualifiedName') node = node.parent;
  return node.parent?.type === 'TSTypeQuery';
}

export default {
  meta: {
    type: 'problem',
    docs: { description: 'keeps cores free of I/O, timers, clocks and randomness' },
    schema: [
      {
        type: 'object',
        properties: { root: { type: 'string' }, modules: { type: 'array', items: { type: 'string' } } },
        additionalProperties: false,
      },
    ],
    messages: {
      importNode: "A core loads no Node module ('{{name}}'): an adapter passes in what it provides.",
      importIo: "A core imports no I/O library ('{{name}}'): that belongs in an adapter.",
      importAdapter: "A core imports no adapter ('{{name}}'): adapters depend on cores, not the other way round.",
      importThrough:
        'A core imports no adapter or I/O through a re-export: {{name}} comes from {{origin}}; import it in an adapter and pass it in.',
      importUnknown: 'A core loads modules by constant names only, so that what it loads can be checked.',
      timer: 'A core starts no timer ({{name}}): return the next deadline and let the adapter call tick(now).',
      clock: 'A core reads no clock ({{name}}): take now as a parameter.',
      random: 'A core draws no randomness ({{name}}): take a random source as a parameter.',
      host: 'A core uses no host facility ({{name}}): an adapter passes in what it needs.',
      unknownMember:
        '{{name}} is read here by a computed name, so a core cannot be checked not to reach a clock, timer or random source through it.',
      escape:
        '{{name}} is passed around here as a value, so a core cannot be checked not to reach a clock, timer or random source through it.',
    },
  },
  create(context) {
    const ioModules = new Set(context.options[0]?.modules ?? []);
    const sourceCode = context.sourceCode;
    const report = (node, messageId, name) => context.report({ node, messageId, data: { name } });
    const root = context.options[0]?.root;
    const tracer = root === undefined ? null : tracerFor(root, ioModules);

    /** traced — reports each name `node` takes from `specifier` that an adapter or an I/O module defines. */
    function traced(node, specifier, names) {
      if (tracer === null || specifier === null) return;
      if (!isRelative(specifier) && !specifier.startsWith('@tokenlease/')) return;
      if (isRelative(specifier) && posix.normalize(specifier).split('/').includes('adapters')) return; // reported as importAdapter
      for (const name of names) {
        const origin = tracer.through(specifier, context.filename, name, new Set());
        if (origin !== null)
          context.report({
            node,
            messageId: 'importThrough',
            data: { name: name === '*' ? 'the whole module' : `'${name}'`, origin: shown(root, origin) },
          });
      }
    }

    /** escapes — reports `name` used as a plain value: by its own kind when every use counts, else as an escape. */
    function escapes(node, name) {
      const watch = WATCHED.get(name);
      if (typeof watch === 'string') report(node, watch, name);
      else if (watch?.[ANY] !== undefined) report(node, watch[ANY], name);
      else report(node, 'escape', name);
    }

    /** member — reports a read of member `key` (null: not constant) of the watched object `name`. */
    function member(node, name, key) {
      if (key === null) return report(node, 'unknownMember', name);
      const watch = WATCHED.get(name);
      const kind = Object.hasOwn(watch, key) ? watch[key] : watch[ANY];
      if (kind !== undefined) report(node, kind, `${name}.${key}`);
    }

    /** check — judges `node`, an expression whose value is the global `name`, by what consumes it. */
    function check(node, name) {
      const watch = WATCHED.get(name);
      const isGlobalObject = GLOBAL_OBJECTS.has(name);
      if (watch === undefined && !isGlobalObject) return;
      if (typeof watch === 'string') return report(node, watch, name);
      const { child, parent } = useOf(node);
      if (parent.type === 'MemberExpression' && parent.object === child) {
        const key = memberKey(parent);
        if (!isGlobalObject) return member(parent, name, key);
        if (key === null) return report(parent, 'unknownMember', name);
        return check(parent, key);
      }
      const pattern = destructured(child, parent);
      if (pattern !== null) {
        for (const property of pattern.properties) {
          const key = propertyKey(property);
          if (key === null) report(property, 'unknownMember', name);
          else if (isGlobalObject) {
            if (WATCHED.has(key) || GLOBAL_OBJECTS.has(key)) escapes(property, key);
          } else member(property, name, key);
        }
        return;
      }
      if (isGlobalObject) return escapes(child, name);
      if (parent.type === 'CallExpression' && parent.callee === child) {
        const kind = watch[CALL] ?? watch[ANY];
        return kind === undefined ? undefined : report(parent, kind, `${name}()`);
      }
      if (parent.type === 'NewExpression' && parent.callee === child) {
        const kind = (parent.arguments.length === 0 ? watch[NEW_WITHOUT_ARGUMENTS] : undefined) ?? watch[ANY];
        return kind === undefined ? undefined : report(parent, kind, `new ${name}()`);
      }
      if (watch[ANY] !== undefined) return report(child, watch[ANY], name);
      const harmless =
        (parent.type === 'BinaryExpression' && parent.operator === 'instanceof' && parent.right === child) ||
        (parent.type === 'UnaryExpression' && parent.operator === 'typeof');
      if (!harmless) report(child, 'escape', name);
    }

    const modules = moduleVisitors((node, name) => {
      if (name === null) report(node, 'importUnknown', '');
      else if (name.startsWith('node:') || isBuiltin(name)) report(node, 'importNode', name);
      else if (ioModules.has(packageName(name))) report(node, 'importIo', name);
      else if (isRelative(name) && posix.normalize(name).split('/').includes('adapters')) report(node, 'importAdapter', name);
    });

    return {
      ...modules,
      ImportDeclaration(node) {
        modules.ImportDeclaration(node);
        const names = node.specifiers.map((s) =>
          s.type === 'ImportDefaultSpecifier' ? 'default' : s.type === 'ImportNamespaceSpecifier' ? '*' : importedName(s.imported),
        );
        traced(node.source, constantString(node.source), names);
      },
      ExportNamedDeclaration(node) {
        modules.ExportNamedDeclaration(node);
        if (node.source)
          traced(
            node.source,
            constantString(node.source),
            node.specifiers.map((s) => importedName(s.local)),
          );
      },
      ExportAllDeclaration(node) {
        modules.ExportAllDeclaration(node);
        traced(node.source, constantString(node.source), ['*']);
      },
      'Program:exit'(program) {
        // Globals: references that no scope of this file declares (`through`),
        // and those to the built-ins ESLint or TypeScript declare without a definition.
        const globalScope = sourceCode.getScope(program);
        const references = [...globalScope.through];
        for (const variable of globalScope.variables) if (variable.defs.length === 0) references.push(...variable.references);
        for (const { identifier, isTypeReference } of references) {
          if (isTypeReference === true || identifier.type !== 'Identifier' || inTypeQuery(identifier)) continue;
          check(identifier, identifier.name);
        }
      },
    };
  },
};

/** One tracer per repository and set of I/O modules, kept across files: each module is parsed once per lint run. */
const tracers = new Map();
function tracerFor(root, ioModules) {
  const key = `${root}\0${[...ioModules].join(',')}`;
  if (!tracers.has(key)) tracers.set(key, new ReexportTracer(root, ioModules));
  return tracers.get(key);
}

/** importedName — an import or export specifier's name: an identifier, or a string (`import { 'a-b' as x }`). */
function importedName(node) {
  return node.type === 'Identifier' ? node.name : String(node.value);
}

/** shown — a path as the report says it: relative to the repository, or a module's name. */
function shown(root, origin) {
  return posix.isAbsolute(origin) || origin.startsWith(root) ? posix.relative(root, origin) : `'${origin}'`;
}
