export { checkEnvelope, EnvelopeWatch, worstWindowRatio, type Admission, type EnvelopeReport, type EnvelopeWindow } from './envelope.js';
export { propertySeed, seedFromEnv } from './seed.js';
export { seededRandom, type Random } from './random.js';
export { thrown } from './thrown.js';
export { acquireRequest, TEST_LEASE_SECRET } from './requests.js';
export { checkAcrossChange, fasterRate, type ChangeReport, type Regime } from './envelope-change.js';
export { checkWindows, WindowLog, WindowWatch, type FullestWindow, type WindowReport } from './window.js';
export { checkInFlight, InFlightLog, type Hold, type InFlightReport } from './in-flight.js';
