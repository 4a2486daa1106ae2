/**
 * The simulator's events and timing constants.
 */
import type { Reply } from '@tokenlease/shared';
import type { Arrival } from './workload.js';

/** ReplyTo — where a coordinator reply goes: the agent, its slot, and which attempt of which request. */
export interface ReplyTo {
  readonly id: string;
  readonly slot: number;
  readonly seq: number;
  readonly attempt: number;
}

export type Event =
  | { readonly k: 'agent-start'; readonly slot: number; readonly incarnation: number }
  | { readonly k: 'agent-stop'; readonly slot: number; readonly incarnation: number; readonly crash: boolean }
  | { readonly k: 'agent-tick'; readonly id: string; readonly gen: number }
  | { readonly k: 'arrival'; readonly arrival: Arrival }
  | { readonly k: 'to-coordinator'; readonly to: ReplyTo; readonly subject: string; readonly bytes: Uint8Array }
  | { readonly k: 'to-agent'; readonly to: ReplyTo; readonly reply: Reply }
  | { readonly k: 'attempt-failed'; readonly to: ReplyTo; readonly code: string }
  | { readonly k: 'coordinator-tick'; readonly id: number; readonly gen: number }
  | { readonly k: 'coordinator-up' }
  | { readonly k: 'write-landed'; readonly id: number }
  | { readonly k: 'step-down'; readonly id: number }
  | { readonly k: 'fault'; readonly index: number }
  | { readonly k: 'resume'; readonly id: string }
  | { readonly k: 'take-deadline'; readonly id: string }
  | { readonly k: 'audit' };

export const POOL = 'pool';
export const PREFIX = 'tokenlease';
export const AGENT_TICK_US_MAX = 100_000;
export const COORDINATOR_TICK_US_MAX = 250_000;
export const CLOSE_PHASE_US = 3_000_000;
export const VIOLATIONS_KEPT = 20;
export const AUDIT_EVERY_US = 250_000;

