/**
 * The checks the simulator makes after every admission: the envelope
 * B + A + r·T (EnvelopeWatch) and, for a window pool, at most N in every
 * window of W (WindowWatch), both of `@tokenlease/shared/testing`,
 * re-exported for simulation.ts.
 */
export { EnvelopeWatch, WindowWatch } from '@tokenlease/shared/testing';
