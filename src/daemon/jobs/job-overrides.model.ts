import { JobOverrides } from '../../protocol/job-overrides';
import { EffectiveKnobs } from '../overrides/effective-knobs';

/** How the leading replica came to a document: written through its own API, found at a poll of the key, or read when it took the job. */
export type OverridesSeen = 'api' | 'poll' | 'adoption';

/**
 * One change of a job's overrides as its leading replica handled it (GET /jobs/:id/decisions,
 * `overrideChanges`): who (setBy), what (the document, or why it was refused), when (at; setAt).
 */
export interface OverridesChange {
  /** Daemon clock when this replica applied, cleared or refused it, ms since the epoch. */
  at: number;
  /** applied: in force from now; cleared: the key was deleted, the configuration applies again; rejected: refused, what was in force stays. */
  action: 'applied' | 'cleared' | 'rejected';
  seen: OverridesSeen;
  version: number | null;
  setBy: string | null;
  reason: string | null;
  /** When the writer says it was written (the API sets it). */
  setAt: number | null;
  /** The document applied (null when cleared or rejected). */
  overrides: JobOverrides | null;
  /** Why a rejected document was refused (empty otherwise). */
  problems: string[];
}

/** Changes kept per job: the newest. */
export const OVERRIDE_CHANGES_KEPT = 32;

/**
 * A job's overrides on its leading replica: the document in force, the knobs it makes, the text
 * of the key last handled (so an unchanged key is not applied or refused again) and the newest
 * changes. Changed only by JobRuntime.applyOverrides and noteOverridesRejected.
 */
export class JobOverridesState {
  private doc: JobOverrides | null = null;
  private knobs: EffectiveKnobs | null = null;
  private text: string | null = null;
  private readonly log: OverridesChange[] = [];

  /** The document in force (null: none, the configuration applies). */
  get inForce(): JobOverrides | null {
    return this.doc;
  }

  /** The knobs in force when a document is (null: the configuration's). */
  get effective(): EffectiveKnobs | null {
    return this.knobs;
  }

  /** Whether a document is in force (decision records carry it). */
  get active(): boolean {
    return this.doc !== null;
  }

  get pauseSwitching(): boolean {
    return this.knobs?.pauseSwitching ?? false;
  }

  get pauseDetection(): boolean {
    return this.knobs?.pauseDetection ?? false;
  }

  /** The key's text last handled, applied or refused (null: absent). */
  get lastText(): string | null {
    return this.text;
  }

  /** The newest changes, oldest first. */
  get changes(): readonly OverridesChange[] {
    return this.log;
  }

  set(doc: JobOverrides | null, knobs: EffectiveKnobs | null, text: string | null): void {
    this.doc = doc;
    this.knobs = knobs;
    this.text = text;
  }

  /** A refused text: remembered (not refused again while unchanged); what is in force stays. */
  refused(text: string | null): void {
    this.text = text;
  }

  record(change: OverridesChange): void {
    this.log.push(change);
    if (this.log.length > OVERRIDE_CHANGES_KEPT) this.log.shift();
  }

  /** Takes over an earlier runtime's state (the same replica taking the job again). */
  inherit(from: JobOverridesState): void {
    this.doc = from.doc;
    this.knobs = from.knobs;
    this.text = from.text;
    this.log.push(...from.log);
  }
}
