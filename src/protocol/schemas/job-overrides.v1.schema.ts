// Generated from schemas/job-overrides.v1.schema.json by test/schema-types.test.ts; do not edit (PIPEMORPH_WRITE_SCHEMAS=1 regenerates it).
export const jobOverridesV1Schema = {
  "$schema": "http://json-schema.org/draft-07/schema#",
  "$id": "https://pipemorph.dev/schemas/job-overrides.v1.schema.json",
  "title": "Per-job detection and switching overrides (protocol v1)",
  "description": "The content of `pipemorph:{<jobId>}:overrides`, written by the operator (PUT /jobs/:id/overrides, or the operator's Redis user; never by ranks) and applied by the job's leading replica without a restart (docs/operations.md#per-job-overrides). Keys of `detection` and `control` replace the daemon's configuration of the same name for this job only; the bounds are those of config.schema.json, and the merged detection knobs must pass the daemon's own checks.",
  "type": "object",
  "additionalProperties": false,
  "required": [
    "version",
    "setBy",
    "reason"
  ],
  "properties": {
    "version": {
      "type": "integer",
      "minimum": 1,
      "maximum": 9007199254740991,
      "description": "Revision of the job's overrides. The API sets it to the stored revision plus one (a PUT body may give it: then it must be exactly that, else 409). Direct writers should do the same."
    },
    "setBy": {
      "type": "string",
      "minLength": 1,
      "maxLength": 128,
      "description": "Who wrote it (a person or a tool): kept in the job's decision log."
    },
    "reason": {
      "type": "string",
      "minLength": 1,
      "maxLength": 500,
      "description": "Why, in one line: kept in the job's decision log."
    },
    "setAt": {
      "type": "number",
      "minimum": 0,
      "description": "When it was written, ms since the Unix epoch (set by the API; optional for direct writers)."
    },
    "pauseDetection": {
      "type": "boolean",
      "description": "The detector goes on measuring and learning (windows, baselines, hysteresis) but flags no new straggler; ones flagged before stay until they recover, and a failed NIC is always flagged. Lifting it reports at once what still straggles."
    },
    "pauseSwitching": {
      "type": "boolean",
      "description": "Decisions are still made and logged, with verdict `paused`, and never published; except a NIC failure (a failed NIC without delegation stalls the job), which is taken and says so. A switch already prepared completes or aborts as usual."
    },
    "detection": {
      "type": "object",
      "additionalProperties": false,
      "minProperties": 1,
      "description": "Any key of the daemon's `detection` section (docs/operations.md#configuration).",
      "properties": {
        "windowSize": {
          "type": "integer",
          "minimum": 3,
          "maximum": 1024
        },
        "ewmaAlpha": {
          "type": "number",
          "exclusiveMinimum": 0,
          "maximum": 1
        },
        "baselineWarmup": {
          "type": "integer",
          "minimum": 1,
          "maximum": 1024
        },
        "enterAfter": {
          "type": "integer",
          "minimum": 1,
          "maximum": 1000
        },
        "leaveAfter": {
          "type": "integer",
          "minimum": 1,
          "maximum": 1000
        },
        "severeExtraMs": {
          "type": "number",
          "exclusiveMinimum": 0
        },
        "severeEnterAfter": {
          "type": "integer",
          "minimum": 1,
          "maximum": 1000
        },
        "severeChanceRate": {
          "type": "number",
          "exclusiveMinimum": 0,
          "maximum": 1
        },
        "minExtraMs": {
          "type": "number",
          "minimum": 0
        },
        "delegationThresholdMs": {
          "type": "number",
          "minimum": 0
        },
        "dpSlowRatio": {
          "type": "number",
          "exclusiveMinimum": 1
        },
        "dpMinExtraMs": {
          "type": "number",
          "minimum": 0
        },
        "computeSlowRatio": {
          "type": "number",
          "exclusiveMinimum": 1
        }
      }
    },
    "control": {
      "type": "object",
      "additionalProperties": false,
      "minProperties": 1,
      "description": "The cost-aware switching knobs of the daemon's `control` section, and minGain.",
      "properties": {
        "costAware": {
          "type": "boolean"
        },
        "switchCostMs": {
          "type": "number",
          "minimum": 0,
          "maximum": 3600000
        },
        "predictionUncertainty": {
          "type": "number",
          "minimum": 0,
          "exclusiveMaximum": 1
        },
        "stragglerPriorIterations": {
          "type": "number",
          "exclusiveMinimum": 0,
          "maximum": 100000000
        },
        "stragglerPriorWeight": {
          "type": "number",
          "exclusiveMinimum": 0,
          "maximum": 1000
        },
        "minGain": {
          "type": "number",
          "minimum": 0,
          "maximum": 1
        }
      }
    }
  }
} as const;
