import { DetectorConfig } from '../../core/detect/detector-config.type';

/** The daemon's configuration, validated once at start-up (schemas/config.schema.json). */
export interface PipemorphConfig {
  /** `tls`: PEM files for rediss:// (CA to trust, client certificate and key for mutual TLS); "" = not used. */
  redis: { url: string; tls: { caFile: string; certFile: string; keyFile: string } };
  http: { host: string; port: number };
  ingest: {
    consumerGroup: string;
    batchSize: number;
    blockMs: number;
    claimIdleMs: number;
    streamMaxLen: number;
    rejectedMaxLen: number;
    /** Bytes of a refused message kept in a rejected stream (the rest is cut, the size recorded). */
    rejectedCopyBytes: number;
    /** Approximate bound of the registrations stream (trimmed by maintenance). */
    registrationsMaxLen: number;
    controlMaxLen: number;
    historyIterations: number;
    /** A report more than this many iterations ahead of the job's progress (plus what elapsed time explains) is refused. */
    maxIterationJump: number;
    /** Liveness fails when the ingest loop has not completed a pass for this long. */
    stallTimeoutMs: number;
  };
  detection: DetectorConfig;
  /** `maxPlanCells`: largest stages x microbatches accepted at registration (planning time grows linearly with it). */
  /** `gpuSendsInFlight`, `delegateCopyOverhead`: the rank transport predictions and plans are made for (docs/protocol.md sec. 3.2). */
  control: {
    planner: 'adaptive' | 'search';
    searchBudgetMs: number;
    minGain: number;
    maxDelegateQueues: number;
    minReplanIntervalMs: number;
    maxPlanCells: number;
    gpuSendsInFlight: number;
    delegateCopyOverhead: number;
  };
  remap: {
    enabled: boolean;
    minGain: number;
    migrationMsPerNode: number;
    amortizeIterations: number;
    searchBudgetMs: number;
    minIntervalMs: number;
    extraLeadIterations: number;
  };
  handshake: { prepareTimeoutMs: number; minLeadIterations: number; leadMs: number; retryBackoffMs: number };
  jobs: { leaseMs: number; discoveryIntervalMs: number; staleRankMs: number; staleJobMs: number; maintenanceCron: string; ownerId: string };
}

export const PIPEMORPH_CONFIG = Symbol('PIPEMORPH_CONFIG');
