/**
 * The envelope check the simulator makes after every admission: the one
 * EnvelopeWatch of `@tokenlease/shared/testing`, re-exported for
 * simulation.ts.
 */
export { EnvelopeWatch } from '@tokenlease/shared/testing';
