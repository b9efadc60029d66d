import { InputError } from '../../core/input-error';
import { constantDelay } from './constant-delay';
import { DelayModel } from './delay-model.type';
import { DelayStep, stepDelay } from './step-delay';
import { dynamicDelay, PAPER_TRACES } from './dynamic-delay';

/** The forms parseDelaySpec understands, for error messages. */
const FORMS = 'none | const:LINK=MS,... | step:ITERATION@LINK=MS,... | dynamic:A|B|C[:seed=N][:links=L,...][:mean=MS][:std=MS]';

const INTEGER = /^\d+$/;
/** Plain decimals only: Number() would also take '', '0x1e' or '1e3'. */
const DECIMAL = /^\d+(\.\d+)?$/;

function parseLink(text: string, links: number, where: string): number {
  if (!INTEGER.test(text)) throw new InputError(`${where}: link "${text}" is not a non-negative integer`);
  const link = Number(text);
  if (link >= links) throw new InputError(`${where}: link ${link} does not exist (links are 0..${links - 1})`);
  return link;
}

function parseMs(text: string, where: string): number {
  if (!DECIMAL.test(text)) throw new InputError(`${where}: delay "${text}" is not a number of ms >= 0`);
  return Number(text);
}

/** Splits "a,b,c", rejecting empty items so "0,,3" is an error rather than silently two links. */
function items(list: string, where: string): string[] {
  const parts = list.split(',').map((part) => part.trim());
  if (parts.some((part) => part === '')) throw new InputError(`${where}: empty item in "${list}"`);
  return parts;
}

function parseConst(body: string, links: number): DelayModel {
  const delays: Record<number, number> = {};
  for (const item of items(body, 'const')) {
    const where = `const "${item}"`;
    const m = /^([^=]*)=(.*)$/.exec(item);
    if (!m) throw new InputError(`${where}: expected LINK=MS`);
    const link = parseLink(m[1].trim(), links, where);
    if (link in delays) throw new InputError(`${where}: link ${link} is given twice`);
    delays[link] = parseMs(m[2].trim(), where);
  }
  return constantDelay(delays);
}

function parseStep(body: string, links: number): DelayModel {
  const steps: DelayStep[] = [];
  for (const item of items(body, 'step')) {
    const where = `step "${item}"`;
    const m = /^([^@=]*)@([^@=]*)=(.*)$/.exec(item);
    if (!m) throw new InputError(`${where}: expected ITERATION@LINK=MS`);
    if (!INTEGER.test(m[1].trim())) throw new InputError(`${where}: iteration "${m[1].trim()}" is not a non-negative integer`);
    steps.push({ fromIteration: Number(m[1].trim()), links: [parseLink(m[2].trim(), links, where)], delayMs: parseMs(m[3].trim(), where) });
  }
  return stepDelay(steps);
}

function parseDynamic(body: string, links: number): DelayModel {
  const [traceName, ...options] = body.split(':').map((part) => part.trim());
  if (traceName !== 'A' && traceName !== 'B' && traceName !== 'C') throw new InputError(`dynamic: trace "${traceName}" is not A, B or C`);
  let seed = 1;
  let meanMs = 30;
  let stdMs = 10;
  let chosen: number[] = Array.from({ length: links }, (_, link) => link);
  const seen = new Set<string>();
  for (const option of options) {
    const m = /^([a-z]+)=(.*)$/.exec(option);
    if (!m) throw new InputError(`dynamic: option "${option}" is not KEY=VALUE`);
    const [, key, value] = m;
    const where = `dynamic option "${option}"`;
    if (seen.has(key)) throw new InputError(`${where}: "${key}" is given twice`);
    seen.add(key);
    switch (key) {
      case 'seed':
        if (!INTEGER.test(value)) throw new InputError(`${where}: seed "${value}" is not a non-negative integer`);
        seed = Number(value);
        break;
      case 'links': {
        chosen = items(value, where).map((text) => parseLink(text, links, where));
        if (new Set(chosen).size !== chosen.length) throw new InputError(`${where}: a link is given twice`);
        break;
      }
      case 'mean':
        meanMs = parseMs(value, where);
        break;
      case 'std':
        stdMs = parseMs(value, where);
        break;
      default:
        throw new InputError(`${where}: unknown option "${key}" (seed, links, mean, std)`);
    }
  }
  return dynamicDelay({ links: chosen, meanMs, stdMs, intervalMs: PAPER_TRACES[traceName], seed });
}

/**
 * Parses the one-line delay syntax of the demo and benchmarks, for a pipeline with `links` links:
 * "none", "const:2=30", "const:0=60,6=60", "step:15@2=30,85@2=0" (iteration@link=ms),
 * "dynamic:A", "dynamic:B:seed=7", "dynamic:C:links=0,3" (defaults: all links, seed 1, mean 30 ms,
 * std 10 ms). Trace files are not a spec: the caller reads the file and calls parseDelayTrace, which
 * keeps this module free of I/O.
 */
export function parseDelaySpec(spec: string, links: number): DelayModel {
  if (!Number.isInteger(links) || links < 0) throw new InputError(`delay spec: link count ${links} is not a non-negative integer`);
  const text = spec.trim();
  if (text === 'none') return constantDelay({});
  const colon = text.indexOf(':');
  const kind = colon < 0 ? text : text.slice(0, colon);
  const body = colon < 0 ? '' : text.slice(colon + 1).trim();
  if (kind === 'trace') throw new InputError('delay spec: "trace:" is not supported here; read the trace file and parse it with parseDelayTrace');
  if (kind !== 'const' && kind !== 'step' && kind !== 'dynamic') throw new InputError(`delay spec "${text}" is not one of: ${FORMS}`);
  if (body === '') throw new InputError(`delay spec "${text}": nothing after "${kind}:" (${FORMS})`);
  if (kind === 'const') return parseConst(body, links);
  if (kind === 'step') return parseStep(body, links);
  return parseDynamic(body, links);
}
