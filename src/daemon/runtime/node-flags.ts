/**
 * The node flags the daemon is started with (Dockerfile, `npm start`, the test and bench launcher;
 * node-flags.spec.ts and test/ops-deploy.test.ts keep them in step).
 *
 * `--no-memory-reducer`: when a freshly started daemon goes quiet between iterations, V8's memory
 * reducer runs a few "Mark-Compact (reduce)" collections that drop hidden classes the planner's
 * optimised code depends on; that code is thrown away ("deoptimization, reason: weak objects") and
 * the next straggler decision runs unoptimised. On bench:daemon's quiet 8 x 32 trials the 5th or
 * 6th timed reaction of every fresh daemon took 28-38 ms instead of 5-8 ms, warm-up or not. The
 * heap stays bounded without it: ordinary collections still run, only idle-time shrinking is off.
 * It cannot be set from inside the process (v8.setFlagsFromString comes after the heap is made).
 */
export const DAEMON_NODE_FLAGS: readonly string[] = ['--no-memory-reducer'];

/** The daemon flags this process was not started with (empty when all are there). */
export function missingNodeFlags(execArgv: readonly string[] = process.execArgv): string[] {
  return DAEMON_NODE_FLAGS.filter((flag) => !execArgv.includes(flag));
}
