/**
 * Trace recording's cost (`npm run bench`, item 8): tryTake on the hot
 * limiter while its pool is recorded (Agent.record), timed as the
 * unrecorded loop is, and then the cost of what the recording does off the
 * request path: turning every held arrival into a line and appending it to
 * the file (ns and file bytes per arrival, from stopRecording's final
 * write of everything the timed loop noted). The buffer is sized to hold
 * the whole timed loop, so no write runs inside a timed batch and the
 * recording never overflows; the trace goes to a scratch folder, removed
 * after.
 */
import type { Agent } from '@tokenlease/agent';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { bytesPerCall, timeCalls, type Timing } from './measure.js';

/** RecordingFigures — tryTake recorded, and the write of each recorded arrival. */
export interface RecordingFigures {
  readonly take: Timing;
  readonly arrivals: number;
  readonly writeNsPerArrival: number;
  readonly bytesPerArrival: number;
}

/** Timed calls per batch (as the other fast-path loops). */
const BATCH = 1000;
/** Buffer of the timed recording: more than the warm-up (50 batches) and every batch of the largest run. */
const BUFFER_ARRIVALS = 2_000_000;

/** startRecording — `agent` recording its pool `hot` to a scratch trace, nothing written until stopped; returns the folder. */
function startRecording(agent: Agent): string {
  const dir = mkdtempSync(join(tmpdir(), 'tokenlease-bench-trace-'));
  agent.record({ path: join(dir, 'hot.jsonl'), pools: ['hot'], bufferArrivals: BUFFER_ARRIVALS, flushMs: 60_000 });
  return dir;
}

/** recordingFigures — `admit` (the hot limiter's tryTake loop) timed while `hot` is recorded, over `batches` batches, then the write. */
export async function recordingFigures(agent: Agent, admit: (n: number) => void, batches: number): Promise<RecordingFigures> {
  const dir = startRecording(agent);
  try {
    const take = timeCalls(admit, batches, BATCH);
    const arrivals = agent.recordingStats()?.pendingArrivals ?? 0;
    const start = process.hrtime.bigint();
    await agent.stopRecording();
    const writeNs = Number(process.hrtime.bigint() - start);
    const stats = agent.recordingStats();
    if (stats === null || stats.stopped !== 'stopped' || stats.writtenArrivals !== arrivals)
      throw new Error(`the bench's recording did not write every arrival: ${JSON.stringify(stats)} of ${arrivals}`);
    return {
      take,
      arrivals,
      writeNsPerArrival: Math.round(writeNs / arrivals),
      bytesPerArrival: Math.round((stats.fileBytes / arrivals) * 10) / 10,
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** recordedBytesPerCall — heap bytes per `admit` call while `hot` is recorded (in the allocation probe, under --expose-gc). */
export async function recordedBytesPerCall(agent: Agent, admit: (n: number) => void, calls: number): Promise<number> {
  const dir = startRecording(agent);
  try {
    return await bytesPerCall(admit, Math.min(calls, BUFFER_ARRIVALS / 2));
  } finally {
    await agent.stopRecording();
    rmSync(dir, { recursive: true, force: true });
  }
}
