/**
 * single-importer — a transport library is imported by its one adapter.
 *
 * Options: `root` (the repository's folder) and `modules`, a map from a
 * package name to the one file, relative to `root`, allowed to import it
 * (or a list of such files, where a second one has a reason to talk to the
 * library directly, said where the map is configured).
 * Every other import of that package (subpaths, type-only imports, `import()`
 * and `require()` with a constant name) is reported, so the rest of the code
 * depends on the adapter's small interface rather than on the library.
 */
import { resolve } from 'node:path';
import { moduleVisitors, packageName } from './modules.mjs';

export default {
  meta: {
    type: 'problem',
    docs: { description: 'lets only one named file import each transport library' },
    schema: [
      {
        type: 'object',
        properties: {
          root: { type: 'string' },
          modules: {
            type: 'object',
            additionalProperties: { anyOf: [{ type: 'string' }, { type: 'array', items: { type: 'string' }, minItems: 1 }] },
          },
        },
        required: ['root', 'modules'],
        additionalProperties: false,
      },
    ],
    messages: {
      elsewhere: '{{module}} is imported only by {{adapter}}; go through its interface.',
    },
  },
  create(context) {
    const { root, modules } = context.options[0];
    const here = resolve(context.filename);
    return moduleVisitors((node, specifier) => {
      const module = specifier === null ? null : packageName(specifier);
      if (module === null || !Object.hasOwn(modules, module)) return;
      const allowed = [modules[module]].flat();
      if (!allowed.some((file) => resolve(root, file) === here))
        context.report({ node, messageId: 'elsewhere', data: { module, adapter: allowed.join(' or ') } });
    });
  },
};
