/**
 * Links the fleet names slow around one job, in the job's rank numbers (issue 31, step 4): every
 * link from a rank of `from` to a rank of `to` runs through suspect `suspect` and is priced at
 * `extraMs` where the job has not measured it itself.
 */
export interface FleetSlowGroup {
  suspect: string;
  from: number[];
  to: number[];
  extraMs: number;
}
