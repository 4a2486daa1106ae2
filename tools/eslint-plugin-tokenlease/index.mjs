/**
 * eslint-plugin-tokenlease — the architecture rules of the house style,
 * checked on the syntax tree (see each rule's file for what it reports):
 * - pure-core: cores load no I/O and read no clock, timer or random source;
 * - package-boundaries: agent -> shared <- coordinator, test may use all,
 *   and no package imports itself by its public name;
 * - single-importer: nats and ioredis each have one importing file.
 */
import packageBoundaries from './package-boundaries.mjs';
import pureCore from './pure-core.mjs';
import singleImporter from './single-importer.mjs';

export default {
  meta: { name: 'eslint-plugin-tokenlease' },
  rules: {
    'package-boundaries': packageBoundaries,
    'pure-core': pureCore,
    'single-importer': singleImporter,
  },
};
