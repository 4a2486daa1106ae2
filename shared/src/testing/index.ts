export { propertySeed, seedFromEnv } from './seed.js';
export { thrown } from './thrown.js';
