/**
 * The intake loop: requests off the bus go into one FairIntake
 * (core/fair-intake.ts) as they arrive, and are screened and handled
 * from it in turns per identity, a slice of the event loop at a time. The
 * bus is read again between slices, so a request that arrives behind a
 * flood is taken in, and handled in its turn, within about one slice.
 * Given `readAhead`, a slice takes its requests in batches and names each
 * batch to it before handling the first (core/read-ahead.ts). A
 * request a full intake sheds is answered `unavailable` with a retry hint
 * at once, and counted and logged like any refusal.
 */
import { isOperatorSubject } from '@tokenlease/shared';
import type { BusHandler, ReplyPort } from '@tokenlease/shared/nats';
import type { Logger } from 'pino';
import type { CoordinatorConfig } from '../core/config.js';
import { FairIntake, shedReply } from '../core/fair-intake.js';
import { READ_AHEAD_MAX } from '../core/read-ahead.js';
import type { ReplyLog } from './reply-log.js';

/** INTAKE_SLICE_MS — the longest the loop handles requests before it lets the bus be read again. */
export const INTAKE_SLICE_MS = 5;

interface Message {
  readonly subject: string;
  readonly payload: Uint8Array;
  readonly port: ReplyPort;
  readonly handle: BusHandler;
}

export interface IntakeLoop {
  /**
   * through — a bus handler that takes each request in, and in its turn
   * screens it (ReplyLog.screened) and has `handle` handle it. Operator
   * requests (`pools`, `reload`) are operations.ts's, which screens them
   * on its own subscriptions: they are left alone, unless `operatorOps`.
   */
  through(handle: BusHandler, operatorOps?: boolean): BusHandler;
  /** drainNow — handles every request queued, in turns, now (before a stop). */
  drainNow(): void;
}

/** IntakeOptions — the intake's size, its clock, and what a service owes once per slice. */
export interface IntakeOptions {
  /** Requests queued in all before shedding (FairIntake's default when absent). */
  readonly capacity?: number;
  /** The clock slices are timed by, ms (default performance.now). */
  readonly nowMs?: () => number;
  /**
   * Called once after each slice that handled a request (and after
   * drainNow): work a service owes once per batch rather than once per
   * request, such as re-arming its timer (no timer fires within a slice).
   */
  readonly afterSlice?: () => void;
  /**
   * Given the payloads of the next requests the loop will handle (up to
   * READ_AHEAD_MAX, in the order it will hand them over) before the first
   * is handled: CoordinatorCore.readAhead. With it the loop takes requests
   * in batches of that many, and a slice ends after the batch in which its
   * time ran out.
   */
  readonly readAhead?: (payloads: readonly Uint8Array[]) => void;
}

/**
 * intakeLoop — one intake for every subscription of a service; what a
 * handler throws is logged (`request-failed`) and the loop goes on with the
 * next request.
 */
export function intakeLoop(
  replies: ReplyLog,
  config: () => CoordinatorConfig,
  nowUs: () => number,
  logger: Logger,
  { capacity, nowMs = () => performance.now(), afterSlice = () => {}, readAhead }: IntakeOptions = {},
): IntakeLoop {
  const intake = new FairIntake<Message>(capacity);
  const tellShed = replies.screened(config, (subject, payload, port) =>
    replies.send([{ to: port, reply: shedReply(payload) }], nowUs(), { subject }),
  );
  let scheduled = false;

  const batchMax = readAhead === undefined ? 1 : READ_AHEAD_MAX;
  const batch: Message[] = [];
  const drain = (untilMs: number): void => {
    let handled = false;
    for (;;) {
      for (let m = intake.take(); m !== undefined; m = batch.length < batchMax ? intake.take() : undefined) batch.push(m);
      if (batch.length === 0) break;
      handled = true;
      handleBatch(batch, readAhead, logger);
      batch.length = 0;
      if (nowMs() >= untilMs) break;
    }
    if (!handled) return;
    try {
      afterSlice();
    } catch (error) {
      logger.error({ event: 'request-failed', err: error }, 'internal error after handling requests');
    }
  };
  const slice = (): void => {
    scheduled = false;
    drain(nowMs() + INTAKE_SLICE_MS);
    if (intake.size > 0) schedule();
  };
  const schedule = (): void => {
    if (scheduled) return;
    scheduled = true;
    setImmediate(slice);
  };

  return {
    through(handle: BusHandler, operatorOps = false): BusHandler {
      // Taking in does as little as it can (reading must outpace a flood): screening and all else come in the request's turn.
      const screened = replies.screened(config, handle);
      return (subject, payload, port) => {
        if (!operatorOps && isOperatorSubject(config().subjectPrefix, subject)) return;
        // The identity is the subject's last token (a malformed subject is the core's to refuse, in its turn).
        const offered = intake.offer(subject.slice(subject.lastIndexOf('.') + 1), { subject, payload, port, handle: screened });
        const shed = offered.shed;
        // One that names no reply subject has nobody to tell; one whose reply may not go where it asks is dropped as screening drops it.
        if (shed !== null && shed.port.replySubject !== null) tellShed(shed.subject, shed.payload, shed.port);
        schedule();
      };
    },
    drainNow: () => drain(Infinity),
  };
}

/** handleBatch — names the batch's payloads to `readAhead` (when given), then has each request's handler handle it; what either throws is logged. */
function handleBatch(batch: readonly Message[], readAhead: IntakeOptions['readAhead'], logger: Logger): void {
  if (readAhead !== undefined) {
    try {
      readAhead(batch.map((m) => m.payload));
    } catch (error) {
      logger.error({ event: 'request-failed', err: error }, 'internal error while reading requests ahead');
    }
  }
  for (const m of batch) {
    try {
      m.handle(m.subject, m.payload, m.port);
    } catch (error) {
      logger.error({ event: 'request-failed', err: error, subject: m.subject }, 'internal error while handling a request');
    }
  }
}
