import { DetectorConfig } from '../../core/detect/detector-config.type';

/** The daemon's configuration, validated once at start-up (schemas/config.schema.json). */
export interface PipemorphConfig {
  redis: { url: string };
  http: { host: string; port: number };
  ingest: {
    consumerGroup: string;
    batchSize: number;
    blockMs: number;
    claimIdleMs: number;
    streamMaxLen: number;
    rejectedMaxLen: number;
    controlMaxLen: number;
    historyIterations: number;
  };
  detection: DetectorConfig;
  control: { planner: 'adaptive' | 'search'; searchBudgetMs: number; minGain: number; maxDelegateQueues: number; minReplanIntervalMs: number };
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
  jobs: { leaseMs: number; discoveryIntervalMs: number; staleRankMs: number; staleJobMs: number; maintenanceCron: string };
}

export const PIPEMORPH_CONFIG = Symbol('PIPEMORPH_CONFIG');
