/**
 * package-boundaries — dependencies between workspace packages point one way.
 *
 * Options: `name` (this package's public name), `dir` (its folder) and
 * `forbidden` (the names it must not import). Reports an import of a
 * forbidden package, an import of the package itself by its public name
 * (which would load its built output instead of the source beside it), and a
 * relative path that leaves the package's folder (which would reach into
 * another package around its public entry).
 */
import { dirname, isAbsolute, relative, resolve } from 'node:path';
import { isRelative, moduleVisitors, packageName } from './modules.mjs';

export default {
  meta: {
    type: 'problem',
    docs: { description: 'keeps imports between workspace packages pointing one way' },
    schema: [
      {
        type: 'object',
        properties: {
          name: { type: 'string' },
          dir: { type: 'string' },
          forbidden: { type: 'array', items: { type: 'string' } },
        },
        required: ['name', 'dir'],
        additionalProperties: false,
      },
    ],
    messages: {
      forbidden:
        '{{self}} must not depend on {{other}}: dependencies point agent -> shared <- coordinator, tools on the product, never back.',
      self: '{{self}} imports itself by its public name; use a relative path.',
      outside: "'{{specifier}}' leaves the folder of {{self}}; import another package by its public name.",
    },
  },
  create(context) {
    const { name: self, dir, forbidden = [] } = context.options[0];
    const from = dirname(context.filename);
    return moduleVisitors((node, specifier) => {
      if (specifier === null) return;
      const other = packageName(specifier);
      if (other === self) context.report({ node, messageId: 'self', data: { self } });
      else if (other !== null && forbidden.includes(other)) context.report({ node, messageId: 'forbidden', data: { self, other } });
      else if (isRelative(specifier) || specifier.startsWith('/')) {
        const path = relative(dir, resolve(from, specifier));
        if (path === '..' || path.startsWith('../') || isAbsolute(path))
          context.report({ node, messageId: 'outside', data: { self, specifier } });
      }
    });
  },
};
